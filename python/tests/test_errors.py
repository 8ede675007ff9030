"""Wrong tensors raise moreau.TensorError (ValueError and TypeError) naming the argument, the
expected and the received; never a crash."""
import numpy as np
import pytest
import torch

import moreau
import moreau.torch as mt


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
    if torch.cuda.is_available():
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
    if not moreau.cuda_available():
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
# expected and the received, never a raw torch/numpy/nanobind error.
def _entry_points(sim):
    q, v, a = inputs(sim)
    cube = moreau.asset("cube.json")
    f64 = dict(dtype=torch.float64)
    return [
        ("Simulator model", lambda: moreau.Simulator(42), moreau.TensorError,
         "moreau.load: argument 'model': wrong type: expected a path .* or a moreau.Model, got int"),
        ("Simulator device", lambda: moreau.Simulator(cube, device="tpu"), moreau.TensorError,
         "Simulator: argument 'device': wrong value: expected 'cpu' or 'cuda\\[:N\\]', got 'tpu'"),
        ("Simulator n_env type", lambda: moreau.Simulator(cube, n_env=2.5), moreau.TensorError,
         "Simulator: argument 'n_env': wrong type: expected an int, got float"),
        ("Simulator n_env value", lambda: moreau.Simulator(cube, n_env=0), moreau.Error, "n_env: expected > 0, got 0"),
        ("Simulator dtype", lambda: moreau.Simulator(cube, dtype=torch.int32), TypeError,
         "dtype: expected torch.float32 or torch.float64, got torch.int32"),
        ("Simulator contact", lambda: moreau.Simulator(cube, contact="squishy"), moreau.Error,
         "contact mode: expected one of none, hard, soft, smooth, hard_smooth_grad, got 'squishy'"),
        ("Simulator decimation", lambda: moreau.Simulator(cube, decimation=-1), moreau.Error,
         "decimation: expected >= 1"),
        ("Simulator cuda_block", lambda: moreau.Simulator(cube, cuda_block=100), moreau.Error,
         "cuda_block: expected a multiple of 32 from 32 to 256 \\(or 0 for 128\\), got 100"),
        ("Simulator max_iterations", lambda: moreau.Simulator(cube, max_iterations="many"), moreau.TensorError,
         "argument 'max_iterations': wrong type: expected an int, got str"),
        ("step k type", lambda: sim.step("a"), moreau.TensorError,
         "Simulator.step: argument 'k': wrong type: expected an int, got str"),
        ("step k value", lambda: sim.step(-1), moreau.Error, "step: expected k >= 0, got -1"),
        ("reset id", lambda: sim.reset([7]), moreau.Error, "env id 7 at position 0 out of range: expected 0 <= id < 4"),
        ("set_param name", lambda: sim.set_param("bogus", torch.zeros(4)), moreau.Error, "unknown parameter 'bogus'"),
        ("set_param width", lambda: sim.set_param("kp", torch.zeros(4, 3)), moreau.Error,
         "set_param\\('kp'\\): wrong width: expected 12, got 3"),
        ("set_param length", lambda: sim.set_param("friction", torch.zeros(3)), moreau.Error,
         "wrong length: expected 1 or n_env = 4, got 3"),
        ("set_param range", lambda: sim.set_param("friction", torch.full((4,), -1.0)), moreau.Error,
         "set_param\\('friction'\\): value 0: expected >= 0, got -1"),
        ("set_param finite", lambda: sim.set_param("contact_kn", torch.full((4,), float("nan"))), moreau.Error,
         "not finite"),
        ("param name", lambda: sim.param("bogus"), moreau.Error, "unknown parameter 'bogus'"),
        ("view name", lambda: sim.view("bogus"), moreau.Error, "view: unknown buffer 'bogus'"),
        ("set_state", lambda: sim.set_state(q[:, :3], v), moreau.TensorError,
         "Simulator.set_state: argument 'q': wrong shape"),
        ("step_pure", lambda: sim.step_pure(q, v[:, :1], a), moreau.TensorError,
         "Simulator.step_pure: argument 'v': wrong shape"),
        ("transition_jacobians", lambda: sim.transition_jacobians(q, v, a.float()), moreau.TensorError,
         "Simulator.transition_jacobians: argument 'action': wrong dtype"),
        ("rollout", lambda: sim.rollout(torch.zeros(3, 4, 2, **f64)), moreau.TensorError,
         "argument 'actions': wrong shape"),
        ("rollout_backward", lambda: sim.rollout_backward(torch.zeros(2, 4, sim.nq, **f64),
                                                          torch.zeros(2, 4, sim.nv, **f64)),
         moreau.Error, "no recorded rollout"),
        ("torch.step kp", lambda: mt.step(sim, q, v, a, kp=torch.zeros(4, 5, **f64)), moreau.TensorError,
         "moreau.torch.step: argument 'kp': wrong shape"),
        ("torch.step friction", lambda: mt.step(sim, q, v, a, friction=torch.zeros(3, **f64)), moreau.TensorError,
         "moreau.torch.step: argument 'friction': wrong shape"),
        ("torch.rollout", lambda: mt.rollout(sim, q, v, torch.zeros(3, 4, 7, **f64)), moreau.TensorError,
         "moreau.torch.rollout: argument 'actions': wrong shape"),
        ("load_model", lambda: moreau.load_model("/nonexistent.json"), moreau.Error, "cannot open file"),
        ("load_model_from_string", lambda: moreau.load_model_from_string("{"), moreau.Error, "expected valid JSON"),
        ("load_urdf", lambda: moreau.load_urdf(cube), moreau.Error, "malformed XML"),
        ("load_mjcf", lambda: moreau.load_mjcf(cube), moreau.Error, "malformed XML"),
        ("asset", lambda: moreau.asset("nope.json"), FileNotFoundError, "moreau.asset: no robot 'nope.json'"),
        ("contact_mode_from_name", lambda: moreau.contact_mode_from_name("x"), moreau.Error, "got 'x'"),
        ("load_model type", lambda: moreau.load_model(3), moreau.TensorError,
         "moreau.load_model: argument 'path': wrong type: expected a file path"),
        ("load_urdf type", lambda: moreau.load_urdf(None), moreau.TensorError, "moreau.load_urdf: argument 'path'"),
        ("load_mjcf type", lambda: moreau.load_mjcf(b"x"), moreau.TensorError, "moreau.load_mjcf: argument 'path'"),
        ("load_model_from_string type", lambda: moreau.load_model_from_string({}), moreau.TensorError,
         "argument 'text': wrong type: expected a str of JSON, got dict"),
        ("export_mjcf", lambda: moreau.export_mjcf(3), moreau.TensorError,
         "moreau.export_mjcf: argument 'model': wrong type: expected a moreau.Model, got int"),
    ]


def test_every_entry_point_rejects_wrong_arguments_with_moreaus_error(sim):
    for label, call, error, message in _entry_points(sim):
        try:
            with pytest.raises(error, match=message):
                call()
        except BaseException as e:  # name the case that failed
            raise AssertionError(f"{label}: {e}") from e
