"""Wrong tensors raise moreau.TensorError (ValueError and TypeError) naming the argument, the
expected and the received; never a crash."""
import numpy as np
import pytest
import torch

import moreau
import moreau.torch as mt
from conftest import needs_torch_cuda


@pytest.fixture
def sim():
    return moreau.Simulator(moreau.asset("anymal_c.json"), n_env=4, dtype=torch.float64, contact="none")


def inputs(sim):
    return (torch.zeros(4, sim.nq, dtype=torch.float64), torch.zeros(4, sim.nv, dtype=torch.float64),
            torch.zeros(4, sim.nu, dtype=torch.float64))


def test_error_class():
    assert issubclass(moreau.TensorError, ValueError) and issubclass(moreau.TensorError, TypeError)
    assert issubclass(moreau.Error, RuntimeError)


def test_wrong_dtype(sim):
    q, v, a = inputs(sim)
    with pytest.raises(moreau.TensorError, match=r"argument 'q': wrong dtype: expected torch.float64, got torch.float32"):
        mt.step(sim, q.float(), v, a)
    with pytest.raises(moreau.TensorError, match=r"argument 'action': wrong dtype: expected torch.float64, got torch.int64"):
        mt.step(sim, q, v, a.long())


def test_wrong_shape(sim):
    q, v, a = inputs(sim)
    with pytest.raises(moreau.TensorError, match=r"argument 'v': wrong shape: expected \(4, 18\), got \(4, 17\)"):
        mt.step(sim, q, v[:, :17], a)
    with pytest.raises(moreau.TensorError, match=r"argument 'q': wrong shape: expected \(4, 19\), got \(19,\)"):
        mt.step(sim, q[0], v, a)
    with pytest.raises(moreau.TensorError, match=r"argument 'kp': wrong shape: expected \(4, 12\), got \(12,\)"):
        mt.step(sim, q, v, a, kp=torch.ones(12, dtype=torch.float64))
    with pytest.raises(moreau.TensorError, match=r"argument 'friction': wrong shape: expected \(4,\) or \(4, 1\), got \(3,\)"):
        mt.step(sim, q, v, a, friction=torch.ones(3, dtype=torch.float64))


def test_wrong_device(sim):
    q, v, a = inputs(sim)
    with pytest.raises(moreau.TensorError, match=r"argument 'v': wrong device: expected cpu, got meta"):
        mt.step(sim, q, v.to("meta"), a)


@needs_torch_cuda
def test_wrong_device_cuda(sim):
    q, v, a = inputs(sim)
    with pytest.raises(moreau.TensorError, match=r"argument 'q': wrong device: expected cpu, got cuda"):
        mt.step(sim, q.cuda(), v, a)


def test_not_a_tensor(sim):
    q, v, a = inputs(sim)
    with pytest.raises(moreau.TensorError, match=r"argument 'action': wrong type: expected a torch.Tensor, got list"):
        mt.step(sim, q, v, a.tolist())
    with pytest.raises(moreau.TensorError, match=r"argument 'q': wrong type: expected a torch.Tensor, got ndarray"):
        mt.step(sim, np.zeros((4, sim.nq)), v, a)


def test_other_layouts_are_copied_not_rejected(sim):
    q, v, a = inputs(sim)
    q[:, 2] = 5.0                       # in the air
    q[:, 3] = 1.0                       # unit quaternions (w, x, y, z)
    q1, v1 = mt.step(sim, q, v, a)                       # row-major: copied
    q2, v2 = mt.step(sim, q.t().contiguous().t(), v.t().contiguous().t(), a.t().contiguous().t())
    assert torch.equal(q1, q2) and torch.equal(v1, v2)
    big = torch.zeros(4, 2 * sim.nq, dtype=torch.float64)
    big[:, ::2] = q                                      # strided view
    q3, _ = mt.step(sim, big[:, ::2], v, a)
    assert torch.equal(q3, q1)


def test_extension_checks_layout_itself(sim):
    """The extension checks every tensor too: a row-major tensor reaching it directly is refused."""
    q, v, a = inputs(sim)
    out_q, out_v = torch.empty(4, sim.nq, dtype=torch.float64), torch.empty(4, sim.nv, dtype=torch.float64)
    status = torch.empty(4, 1, dtype=torch.int32)
    fm = lambda x: x.t().contiguous().t()  # noqa: E731
    with pytest.raises(moreau.TensorError, match=r"step_pure: argument 'q': wrong layout: expected strides \(1, 4\)"):
        sim._sim.step_pure(q, fm(v), fm(a), fm(out_q), fm(out_v), status)
    with pytest.raises(moreau.TensorError, match=r"step_pure: argument 'status': wrong dtype: expected int32, got int64"):
        sim._sim.step_pure(fm(q), fm(v), fm(a), fm(out_q), fm(out_v), status.long())
    with pytest.raises(moreau.TensorError, match=r"step_pure: argument 'q_out': wrong shape: expected \(4, 19\), got \(4, 18\)"):
        sim._sim.step_pure(fm(q), fm(v), fm(a), fm(out_v), fm(out_v), status)
    with pytest.raises(moreau.TensorError, match=r"step_adjoint: argument 'grad_kp': expected a tensor or None, got str"):
        sim._sim.step_adjoint(fm(q), fm(v), fm(a), fm(out_q), fm(out_v), fm(out_q), fm(out_v), fm(a), status,
                              grad_kp="x")


def test_step_pure_and_rollout_check_their_arguments(sim):
    q, v, a = inputs(sim)
    with pytest.raises(moreau.TensorError, match=r"Simulator.step_pure: argument 'action': wrong shape"):
        sim.step_pure(q, v, a[:2])
    with pytest.raises(moreau.TensorError, match=r"Simulator.rollout: argument 'actions': wrong shape: expected \(1, 4, 12\), got \(4, 12\)"):
        sim.rollout(a)
    with pytest.raises(moreau.Error, match="no recorded rollout"):
        sim.rollout_backward(torch.zeros(2, 4, sim.nq, dtype=torch.float64), torch.zeros(2, 4, sim.nv, dtype=torch.float64))


def test_library_errors_are_moreau_errors(tmp_path):
    with pytest.raises(moreau.Error, match="cannot open file"):
        moreau.load_model(str(tmp_path / "missing.json"))
    with pytest.raises(moreau.Error, match="expected a file name ending in"):
        moreau.load_model(str(tmp_path / "robot.yaml"))
    with pytest.raises(moreau.Error):
        moreau.Simulator(moreau.asset("cube.json"), n_env=2, contact="hard", max_iterations=0)
    with pytest.raises(moreau.Error):
        moreau.contact_mode_from_name("sticky")
    with pytest.raises(TypeError, match="dtype"):
        moreau.Simulator(moreau.asset("cube.json"), dtype=torch.int32)


@pytest.mark.skipif(moreau.cuda_available(), reason="a CUDA device is present: a CUDA simulator is no error here")
def test_a_cuda_simulator_without_a_device_is_an_error():
    with pytest.raises(moreau.Error, match="cuda"):
        moreau.Simulator(moreau.asset("cube.json"), device="cuda")


def test_set_state_checks_its_arguments(sim):
    q, v, _ = inputs(sim)
    with pytest.raises(moreau.TensorError, match=r"Simulator.set_state: argument 'v': wrong shape: expected "
                       r"\(4, 18\) or \(18,\), got \(4, 3\)"):
        sim.set_state(q, v[:, :3])
    with pytest.raises(moreau.TensorError, match=r"argument 'q': wrong dtype: expected a float \(or integer\) "
                       r"tensor, got torch.bool"):
        sim.set_state(q.bool(), v)
    q[:, 2], q[:, 3] = 1.0, 1.0
    sim.set_state(q[0].numpy(), v[0])  # one state for every environment, from numpy
    assert torch.equal(sim.q, q) and torch.equal(sim.v, v)


# Every public entry point of the package with a wrong argument: moreau's error (Error for what
# the library rejects, TensorError for a wrong argument), naming the function or parameter, the
# expected and the received, never a raw torch/numpy/nanobind error. Each case's label starts
# with the entry point's name; test_the_boundary_test_covers_every_public_function checks that
# every public function and method of moreau and moreau.torch has one.
def _entry_points(sim):
    q, v, a = inputs(sim)
    cube = moreau.asset("cube.json")
    f64 = dict(dtype=torch.float64)
    hard = moreau.ContactOptions()
    hard.mode = moreau.ContactMode.Hard
    hard.tolerance = -1.0  # a record's fields are checked where it is used
    return [
        ("Simulator: model", lambda: moreau.Simulator(42), moreau.TensorError,
         "moreau.load: argument 'model': wrong type: expected a path .* or a moreau.Model, got int"),
        ("Simulator: device", lambda: moreau.Simulator(cube, device="tpu"), moreau.TensorError,
         "Simulator: argument 'device': wrong value: expected 'cpu' or 'cuda\\[:N\\]', got 'tpu'"),
        ("Simulator: n_env type", lambda: moreau.Simulator(cube, n_env=2.5), moreau.TensorError,
         "Simulator: argument 'n_env': wrong type: expected an int, got float"),
        ("Simulator: n_env value", lambda: moreau.Simulator(cube, n_env=0), moreau.Error, "n_env: expected > 0, got 0"),
        ("Simulator: dtype", lambda: moreau.Simulator(cube, dtype=torch.int32), TypeError,
         "dtype: expected torch.float32 or torch.float64, got torch.int32"),
        ("Simulator: contact name", lambda: moreau.Simulator(cube, contact="squishy"), moreau.Error,
         "contact mode: expected one of none, hard, soft, smooth, hard_smooth_grad, got 'squishy'"),
        ("Simulator: contact type", lambda: moreau.Simulator(cube, contact=3), moreau.TensorError,
         "Simulator: argument 'contact': wrong type: expected a moreau.ContactMode or one of .*, got 3"),
        ("Simulator: contact options", lambda: moreau.Simulator(cube, contact=hard), moreau.Error,
         "Simulator: contact.tolerance: expected >= 0 \\(0 = default\\), got -1"),
        ("Simulator: tolerance", lambda: moreau.Simulator(cube, tolerance="tight"), moreau.TensorError,
         "Simulator: argument 'tolerance': wrong type: expected a number, got str"),
        ("Simulator: speculative", lambda: moreau.Simulator(cube, speculative="yes"), moreau.TensorError,
         "Simulator: argument 'speculative': wrong type: expected a bool, got str"),
        ("Simulator: substeps", lambda: moreau.Simulator(cube, contact="soft", substeps=-1), moreau.Error,
         "contact.substeps: expected >= 0 \\(0 = automatic\\), got -1"),
        ("Simulator: n_threads", lambda: moreau.Simulator(cube, n_threads=-1), moreau.Error,
         "Simulator: n_threads: expected >= 1 \\(or 0 for every hardware thread\\), got -1"),
        ("Simulator: timestep", lambda: moreau.Simulator(cube, timestep="5ms"), moreau.TensorError,
         "Simulator: argument 'timestep': wrong type: expected a number, got str"),
        ("Simulator: decimation", lambda: moreau.Simulator(cube, decimation=-1), moreau.Error,
         "decimation: expected >= 1"),
        ("Simulator: adjoint_tapes", lambda: moreau.Simulator(cube, adjoint_tapes=-3), moreau.Error,
         "adjoint_tapes: expected >= 1 \\(or 0 for all\\), got -3"),
        ("Simulator: cuda_block", lambda: moreau.Simulator(cube, cuda_block=100), moreau.Error,
         "cuda_block: expected a multiple of 32 from 32 to 256 \\(or 0 for 128\\), got 100"),
        ("Simulator: cuda_team", lambda: moreau.Simulator(cube, cuda_team=4), moreau.Error,
         "cuda_team: expected 0 \\(one thread per environment\\) or 8 \\(lanes per environment\\), got 4"),
        ("Simulator: cuda_stream on the CPU", lambda: moreau.Simulator(cube, cuda_stream=7), moreau.TensorError,
         "Simulator: argument 'cuda_stream': wrong value: expected None on device 'cpu', got 7"),
        ("Simulator: max_iterations", lambda: moreau.Simulator(cube, max_iterations="many"), moreau.TensorError,
         "argument 'max_iterations': wrong type: expected an int, got str"),
        ("Simulator.step: k type", lambda: sim.step("a"), moreau.TensorError,
         "Simulator.step: argument 'k': wrong type: expected an int, got str"),
        ("Simulator.step: k value", lambda: sim.step(-1), moreau.Error, "step: expected k >= 0, got -1"),
        ("Simulator.reset: id", lambda: sim.reset([7]), moreau.Error,
         "env id 7 at position 0 out of range: expected 0 <= id < 4"),
        ("Simulator.reset: float id", lambda: sim.reset([1.5]), moreau.TensorError,
         "Simulator.reset: argument 'env_ids': wrong type: expected integers, got list of float64"),
        ("Simulator.reset: str id", lambda: sim.reset(["a"]), moreau.TensorError,
         "Simulator.reset: argument 'env_ids': wrong type: expected integers"),
        ("Simulator.reset: mask shape", lambda: sim.reset(torch.ones(4, 1, dtype=torch.bool)), moreau.TensorError,
         "Simulator.reset: argument 'env_ids': wrong shape: expected \\(4,\\), got \\(4, 1\\)"),
        ("Simulator.reset: mask device", lambda: sim.reset(torch.ones(4, dtype=torch.bool, device="meta")),
         moreau.TensorError, "Simulator.reset: argument 'env_ids': wrong device: expected cpu, got meta"),
        ("Simulator.set_param: name", lambda: sim.set_param("bogus", torch.zeros(4)), moreau.Error,
         "unknown parameter 'bogus'"),
        ("Simulator.set_param: width", lambda: sim.set_param("kp", torch.zeros(4, 3)), moreau.Error,
         "set_param\\('kp'\\): wrong width: expected 12, got 3"),
        ("Simulator.set_param: length", lambda: sim.set_param("friction", torch.zeros(3)), moreau.Error,
         "wrong length: expected 1 or n_env = 4, got 3"),
        ("Simulator.set_param: range", lambda: sim.set_param("friction", torch.full((4,), -1.0)), moreau.Error,
         "set_param\\('friction'\\): value 0: expected >= 0, got -1"),
        ("Simulator.set_param: range on the device", lambda: sim.set_param("kd", torch.full((1, 12), -2.0, **f64)),
         moreau.Error, "set_param\\('kd'\\): value 0: expected >= 0, got -2"),
        ("Simulator.set_param: finite", lambda: sim.set_param("contact_kn", torch.full((4,), float("nan"))),
         moreau.Error, "not finite"),
        ("Simulator.set_param: type", lambda: sim.set_param("kp", "stiff"), moreau.TensorError,
         "Simulator.set_param\\('kp'\\): argument 'values': wrong type: expected a number, or an array or tensor"),
        ("Simulator.set_param: rank", lambda: sim.set_param("kp", np.zeros((1, 1, 12))), moreau.TensorError,
         "Simulator.set_param\\('kp'\\): argument 'values': wrong shape: expected a number, a \\(width,\\) or"),
        ("Simulator.param: name", lambda: sim.param("bogus"), moreau.Error, "unknown parameter 'bogus'"),
        ("Simulator.view: name", lambda: sim.view("bogus"), moreau.Error, "view: unknown buffer 'bogus'"),
        ("Simulator.view_info: name", lambda: sim.view_info("bogus"), moreau.Error, "view: unknown buffer 'bogus'"),
        ("Simulator.set_state", lambda: sim.set_state(q[:, :3], v), moreau.TensorError,
         "Simulator.set_state: argument 'q': wrong shape"),
        ("Simulator.step_pure", lambda: sim.step_pure(q, v[:, :1], a), moreau.TensorError,
         "Simulator.step_pure: argument 'v': wrong shape"),
        ("Simulator.transition_jacobians: dtype", lambda: sim.transition_jacobians(q, v, a.float()),
         moreau.TensorError, "Simulator.transition_jacobians: argument 'action': wrong dtype"),
        ("Simulator.transition_jacobians: tangent", lambda: sim.transition_jacobians(q, v, a, tangent="yes"),
         moreau.TensorError, "Simulator.transition_jacobians: argument 'tangent': wrong type: expected a bool"),
        ("Simulator.rollout", lambda: sim.rollout(torch.zeros(3, 4, 2, **f64)), moreau.TensorError,
         "argument 'actions': wrong shape"),
        ("Simulator.rollout_backward: none recorded",
         lambda: sim.rollout_backward(torch.zeros(2, 4, sim.nq, **f64), torch.zeros(2, 4, sim.nv, **f64)),
         moreau.Error, "no recorded rollout"),
        ("Simulator.rollout_backward: flag",
         lambda: sim.rollout_backward(torch.zeros(2, 4, sim.nq, **f64), torch.zeros(2, 4, sim.nv, **f64), grad_kp=1),
         moreau.TensorError, "Simulator.rollout_backward: argument 'grad_kp': wrong type: expected a bool, got int"),
        ("moreau.torch.step: kp", lambda: mt.step(sim, q, v, a, kp=torch.zeros(4, 5, **f64)), moreau.TensorError,
         "moreau.torch.step: argument 'kp': wrong shape"),
        ("moreau.torch.step: friction", lambda: mt.step(sim, q, v, a, friction=torch.zeros(3, **f64)),
         moreau.TensorError, "moreau.torch.step: argument 'friction': wrong shape"),
        ("moreau.torch.step: sim", lambda: mt.step("sim", q, v, a), moreau.TensorError,
         "moreau.torch.step: argument 'sim': wrong type: expected a moreau.Simulator, got str"),
        ("moreau.torch.step: return_status", lambda: mt.step(sim, q, v, a, return_status="yes"), moreau.TensorError,
         "moreau.torch.step: argument 'return_status': wrong type: expected a bool"),
        ("moreau.torch.Step", lambda: mt.Step.apply(sim, q, v[:, :2], a), moreau.TensorError,
         "moreau.torch.Step: argument 'v': wrong shape"),
        ("moreau.torch.rollout: actions", lambda: mt.rollout(sim, q, v, torch.zeros(3, 4, 7, **f64)),
         moreau.TensorError, "moreau.torch.rollout: argument 'actions': wrong shape"),
        ("moreau.torch.rollout: policy without horizon", lambda: mt.rollout(sim, q, v, lambda t, q, v: a),
         moreau.TensorError, "moreau.torch.rollout: argument 'horizon': wrong value: expected an int H with a policy"),
        ("moreau.torch.rollout: sim", lambda: mt.rollout(None, q, v, torch.zeros(3, 4, 12, **f64)), moreau.TensorError,
         "moreau.torch.rollout: argument 'sim': wrong type: expected a moreau.Simulator, got NoneType"),
        ("load_model: file", lambda: moreau.load_model("/nonexistent.json"), moreau.Error, "cannot open file"),
        ("load_model: type", lambda: moreau.load_model(3), moreau.TensorError,
         "moreau.load_model: argument 'path': wrong type: expected a file path"),
        ("load_model_from_string: text", lambda: moreau.load_model_from_string("{"), moreau.Error,
         "expected valid JSON"),
        ("load_model_from_string: type", lambda: moreau.load_model_from_string({}), moreau.TensorError,
         "argument 'text': wrong type: expected a str of JSON, got dict"),
        ("load_urdf: file", lambda: moreau.load_urdf(cube), moreau.Error, "malformed XML"),
        ("load_urdf: type", lambda: moreau.load_urdf(None), moreau.TensorError, "moreau.load_urdf: argument 'path'"),
        ("load_urdf: option", lambda: moreau.load_urdf(cube, stiffness=1), moreau.TensorError,
         "(?s)moreau.load_urdf: wrong arguments: .*incompatible function arguments"),
        ("load_mjcf: file", lambda: moreau.load_mjcf(cube), moreau.Error, "malformed XML"),
        ("load_mjcf: type", lambda: moreau.load_mjcf(b"x"), moreau.TensorError, "moreau.load_mjcf: argument 'path'"),
        ("load: type", lambda: moreau.load([cube]), moreau.TensorError,
         "moreau.load: argument 'model': wrong type: expected a path .* or a moreau.Model, got list"),
        ("asset", lambda: moreau.asset("nope.json"), FileNotFoundError, "moreau.asset: no robot 'nope.json'"),
        ("contact_mode_from_name", lambda: moreau.contact_mode_from_name("x"), moreau.Error, "got 'x'"),
        ("contact_mode_name", lambda: moreau.contact_mode_name(5), moreau.TensorError,
         "moreau.contact_mode_name: argument 'mode': wrong type: expected a moreau.ContactMode or one of"),
        ("export_mjcf", lambda: moreau.export_mjcf(3), moreau.TensorError,
         "moreau.export_mjcf: argument 'model': wrong type: expected a moreau.Model, got int"),
        ("select_contacts: model", lambda: moreau.select_contacts(3, ["LF_FOOT"]), moreau.TensorError,
         "moreau.select_contacts: argument 'model': wrong type: expected a path"),
        ("select_contacts: names", lambda: moreau.select_contacts(cube, 5), moreau.TensorError,
         "moreau.select_contacts: argument 'names': wrong type: expected a sequence of contact point names"),
        ("select_contacts: name", lambda: moreau.select_contacts(cube, ["nose"]), moreau.Error,
         "select_contacts: argument 'names': element 0: expected a contact point of .*, got 'nose'"),
        ("with_self_collisions: model", lambda: moreau.with_self_collisions(3, []), moreau.TensorError,
         "moreau.with_self_collisions: argument 'model': wrong type: expected a path"),
        ("with_self_collisions: bodies", lambda: moreau.with_self_collisions(cube, [("a", "b", "c")]), moreau.TensorError,
         "moreau.with_self_collisions: argument 'bodies': wrong type: expected a sequence of \\(body name, body name\\)"),
        ("with_self_collisions: unknown body", lambda: moreau.with_self_collisions(cube, [("cube", "nope")]),
         moreau.Error, "with_self_collisions: argument 'bodies': element 0: expected a body of .*, got 'nope'"),
        ("with_heightfield: model", lambda: moreau.with_heightfield(3, [[0, 0], [0, 0]], 0.1), moreau.TensorError,
         "moreau.with_heightfield: argument 'model': wrong type: expected a path"),
        ("with_heightfield: heights", lambda: moreau.with_heightfield(cube, [0, 0, 0], 0.1), moreau.TensorError,
         "moreau.with_heightfield: argument 'heights': wrong shape: expected \\(ny, nx\\)"),
        ("with_heightfield: spacing", lambda: moreau.with_heightfield(cube, [[0, 0], [0, 0]], 0.0), moreau.Error,
         "with_heightfield: argument 'dx': expected a spacing > 0"),
        # The compiled records and the Model's name lookups: nanobind checks their arguments'
        # types and its TypeError names the function, the accepted signature and the types
        # received; their values are moreau's to check where they are used (above).
        ("Model", lambda: moreau.Model(3), TypeError, "Model: no constructor defined"),  # the loaders make them
        ("Model.body_index", lambda: sim.model.body_index(3), TypeError,
         "(?s)body_index\\(\\): incompatible function arguments.*body_index\\(self, name: str\\).*Invoked with types"),
        ("Model.joint_index", lambda: sim.model.joint_index(None), TypeError, "joint_index\\(\\): incompatible"),
        ("Model.actuator_index", lambda: sim.model.actuator_index(1.0), TypeError,
         "actuator_index\\(\\): incompatible"),
        ("SimulatorOptions", lambda: setattr(moreau.SimulatorOptions(), "n_env", "many"), TypeError,
         "(?s)incompatible function arguments.*Invoked with types.*str"),
        ("ContactOptions", lambda: setattr(moreau.ContactOptions(), "tolerance", "tight"), TypeError,
         "(?s)incompatible function arguments.*Invoked with types.*str"),
    ]


# Public functions whose only arguments are none at all: nothing to reject.
_NO_ARGUMENTS = {"cuda_available", "Simulator.get_state", "Simulator.param_names", "Simulator.synchronize",
                 "Model.total_mass"}


def _public_functions():
    """The names of moreau's and moreau.torch's public functions, classes (their constructors)
    and the classes' public methods (properties and enums excluded)."""
    import enum
    import inspect

    names = set()
    for prefix, module, exported in (("", moreau, [n for n in dir(moreau) if not n.startswith("_")]),
                                     ("moreau.torch.", mt, mt.__all__)):
        for n in exported:
            obj = getattr(module, n)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            if isinstance(obj, type) and issubclass(obj, (BaseException, enum.Enum)):
                continue
            names.add(prefix + n)
            if isinstance(obj, type) and module is moreau:
                for m in dir(obj):
                    if not m.startswith("_") and callable(getattr(obj, m)) and \
                            not isinstance(inspect.getattr_static(obj, m), property):
                        names.add(f"{n}.{m}")
    return names


def test_the_boundary_test_covers_every_public_function(sim):
    covered = {label.split(":")[0] for label, *_ in _entry_points(sim)}
    public = _public_functions()
    assert "Simulator.step" in public and "moreau.torch.rollout" in public and "Model.body_index" in public
    missing = public - covered - _NO_ARGUMENTS
    assert not missing, f"public functions without a wrong-argument case in _entry_points: {sorted(missing)}"
    stale = (covered | _NO_ARGUMENTS) - public
    assert not stale, f"cases for names that are not public functions: {sorted(stale)}"


def test_every_entry_point_rejects_wrong_arguments_with_moreaus_error(sim):
    for label, call, error, message in _entry_points(sim):
        try:
            with pytest.raises(error, match=message):
                call()
        except BaseException as e:  # name the case that failed
            raise AssertionError(f"{label}: {e}") from e
