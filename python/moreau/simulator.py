"""moreau.Simulator: n_env environments of one robot, with zero-copy torch views of its buffers."""
from __future__ import annotations

import os
import warnings
from typing import Optional, Union

import numpy as np
import torch

from . import _moreau
from ._checks import as_bool, as_float, as_int, check_tensor, empty_field_major, fail, field_major, same_device
from ._moreau import ContactMode, ContactOptions, DType, Device, Model, SimulatorOptions, TensorError

_ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets", "robots")

# Parameters with gradients (Simulator.Gradients): name -> width ("nu" or 1).
GRAD_PARAMS = ("kp", "kd", "added_base_mass", "friction", "contact_kn", "smooth_k")
# the parameters with one value per actuator (width nu); the others have width 1
ACTUATOR_PARAMS = ("kp", "kd", "motor_strength")

_BUFFERS = ("q", "v", "action", "status", "time", "contact_gap", "contact_impulse", "contact_active",
            "solver_iterations", "solver_residual")


def asset(name: str) -> str:
    """Path of a robot shipped with the package (assets/robots): ``asset("cube.json")``."""
    path = os.path.join(_ASSETS, name)
    if not os.path.exists(path):
        have = sorted(os.listdir(_ASSETS)) if os.path.isdir(_ASSETS) else []
        raise FileNotFoundError(f"moreau.asset: no robot '{name}' (have: {', '.join(have)})")
    return path


def load(path_or_model: Union[str, os.PathLike, Model]) -> Model:
    """A Model from a file (.json, .urdf, .xml by extension) or a Model itself."""
    if isinstance(path_or_model, Model):
        return path_or_model
    if not isinstance(path_or_model, (str, os.PathLike)):
        fail("moreau.load", "model", "type", "a path (.json, .urdf, .xml) or a moreau.Model",
             type(path_or_model).__name__)
    return load_model(path_or_model)


def _path(fn: str, x) -> str:
    if not isinstance(x, (str, os.PathLike)):
        fail(fn, "path", "type", "a file path (str or os.PathLike)", type(x).__name__)
    return os.fspath(x)


class ModelWarning(UserWarning):
    """A feature of a robot file that moreau reads but does not simulate as written (an ignored
    attribute, a joint limit not enforced, a ground plane not at z = 0, ...): one per entry of
    ``Model.warnings``, raised by the loaders."""


def _warned(model: Model) -> Model:
    """The model, after one ``ModelWarning`` per entry of its ``warnings`` (stacklevel: the
    loader's caller)."""
    for w in model.warnings:
        warnings.warn(w, ModelWarning, stacklevel=3)
    return model


def load_model(path) -> Model:
    """A Model from a file: .json (moreau's format), .urdf or .xml (MJCF), by extension. What the
    file asks for and moreau does not simulate is a ``ModelWarning``."""
    return _warned(_moreau.load_model(_path("moreau.load_model", path)))


def load_model_from_string(text: str, source: str = "<string>") -> Model:
    """A Model from the JSON text of moreau's robot format; ``source`` names it in errors."""
    if not isinstance(text, str):
        fail("moreau.load_model_from_string", "text", "type", "a str of JSON", type(text).__name__)
    return _warned(_moreau.load_model_from_string(text, str(source)))


def _compiled(fn: str, f, *args, **kwargs):
    """f(*args, **kwargs), a compiled function: nanobind's refusal of the arguments' types or
    names (its message lists the accepted signature and the types received) as moreau's error."""
    try:
        return f(*args, **kwargs)
    except TypeError as e:
        if "incompatible function arguments" not in str(e):
            raise
        raise TensorError(f"{fn}: wrong arguments: {e}") from None


def load_urdf(path, *args, **options) -> Model:
    """A Model from a URDF file (or ``text=``, ``path`` naming its source); options as
    moreau::UrdfOptions: fixed_base, contact_bodies (glob patterns), default_qpos, add_actuators,
    kp, kd."""
    return _warned(_compiled("moreau.load_urdf", _moreau.load_urdf, _path("moreau.load_urdf", path), *args, **options))


def load_mjcf(path, *args, **options) -> Model:
    """A Model from an MJCF file (or ``text=``, ``path`` naming its source; ``include_dir``)."""
    return _warned(_compiled("moreau.load_mjcf", _moreau.load_mjcf, _path("moreau.load_mjcf", path), *args, **options))


def export_mjcf(model: Model) -> str:
    """The MJCF text of a Model (MuJoCo loads it with the same dynamics)."""
    if not isinstance(model, Model):
        fail("moreau.export_mjcf", "model", "type", "a moreau.Model", type(model).__name__)
    return _moreau.export_mjcf(model)


def select_contacts(model, names) -> Model:
    """A copy of a Model (or a robot file) with only the named contact points, in the order given
    (moreau.Error for an unknown or repeated name)."""
    fn = "moreau.select_contacts"
    if not isinstance(model, (Model, str, os.PathLike)):
        fail(fn, "model", "type", "a path (.json, .urdf, .xml) or a moreau.Model", type(model).__name__)
    if isinstance(names, str) or not all(isinstance(n, str) for n in _iterable(fn, names)):
        fail(fn, "names", "type", "a sequence of contact point names (str)", type(names).__name__)
    return _compiled(fn, _moreau.select_contacts, load(model), list(names))


def with_self_collisions(model, bodies=None) -> Model:
    """A copy of a Model (or a robot file) whose body pairs collide with each other
    (docs/contact.md, "Contact between two bodies of the robot"): every contact point of one body
    against every one of the other's, sphere against sphere (box corners and cylinder rim points
    are spheres of radius 0; two of them are not paired), in every contact mode, with their
    gradients. ``bodies``: (name, name) pairs; by default the robot file's own list
    (``Model.self_collisions``: MJCF's pairs by MuJoCo's contype, conaffinity, parent and
    <exclude> rules), of which the pairs with a body without contact points are left out with a
    ``ModelWarning``. moreau.Error for an unknown body, a body paired with itself, or (given
    ``bodies``) a body without contact points."""
    fn = "moreau.with_self_collisions"
    if not isinstance(model, (Model, str, os.PathLike)):
        fail(fn, "model", "type", "a path (.json, .urdf, .xml) or a moreau.Model", type(model).__name__)
    model = load(model)
    if bodies is None:
        touching = {model.body_name[b] for b in model.con_body}
        bodies = [(a, b) for a, b in model.self_collisions if a in touching and b in touching]
        if len(bodies) < len(model.self_collisions):
            warnings.warn(f"{fn}: {len(model.self_collisions) - len(bodies)} of the robot file's "
                          f"{len(model.self_collisions)} colliding body pairs have a body without contact points "
                          f"(its collision geometry is not one moreau simulates): not simulated",
                          ModelWarning, stacklevel=2)
    if isinstance(bodies, str) or not all(isinstance(p, (tuple, list)) and len(p) == 2 and
                                          all(isinstance(n, str) for n in p) for p in _iterable(fn, bodies)):
        fail(fn, "bodies", "type", "a sequence of (body name, body name) pairs", type(bodies).__name__)
    return _compiled(fn, _moreau.with_self_collisions, model, [tuple(p) for p in bodies])


def with_heightfield(model, heights, spacing, origin=(0.0, 0.0)) -> Model:
    """A copy of a Model (or a robot file) whose ground is a heightfield (docs/terrain.md):
    ``heights`` an (ny, nx) array or tensor [m], row j at y = origin[1] + j spacing[1], column i at
    x = origin[0] + i spacing[0]; piecewise planar between the samples, the edges continued
    outward. Every environment sees it from its own origin, the per-environment parameters
    ``terrain_x`` and ``terrain_y`` (default 0). moreau.Error for a bad argument."""
    fn = "moreau.with_heightfield"
    if not isinstance(model, (Model, str, os.PathLike)):
        fail(fn, "model", "type", "a path (.json, .urdf, .xml) or a moreau.Model", type(model).__name__)
    if isinstance(heights, torch.Tensor):
        heights = heights.detach().to("cpu", torch.float64).numpy()
    h = np.asarray(heights, dtype=np.float64)
    if h.ndim != 2:
        fail(fn, "heights", "shape", "(ny, nx)", tuple(h.shape))
    sx, sy = (float(x) for x in _pair(fn, "spacing", spacing))
    ox, oy = (float(x) for x in _pair(fn, "origin", origin))
    return _compiled(fn, _moreau.with_heightfield, load(model), h.reshape(-1).tolist(), h.shape[1], h.shape[0],
                     sx, sy, ox, oy)


def _pair(fn: str, arg: str, x):
    """Two numbers, from a number (both alike) or a sequence of two."""
    if isinstance(x, (int, float)):
        return x, x
    values = list(_iterable(fn, x))
    if len(values) != 2 or not all(isinstance(v, (int, float)) for v in values):
        fail(fn, arg, "value", "a number or two numbers", x)
    return values


def _iterable(fn: str, x):
    try:
        return list(x)
    except TypeError:
        fail(fn, "names", "type", "a sequence of contact point names (str)", type(x).__name__)


def _contact_mode(mode, fn: str = "Simulator", arg: str = "contact") -> ContactMode:
    if isinstance(mode, ContactMode):
        return mode
    if isinstance(mode, str):
        return _moreau.contact_mode_from_name(mode)
    fail(fn, arg, "type", "a moreau.ContactMode or one of 'none', 'hard', 'soft', 'smooth', 'hard_smooth_grad'",
         repr(mode))


def contact_mode_name(mode) -> str:
    """The name of a contact mode ('hard', ...), from a moreau.ContactMode or a name (checked)."""
    return _moreau.contact_mode_name(_contact_mode(mode, "moreau.contact_mode_name", "mode"))


def _torch_dtype(dtype) -> torch.dtype:
    if dtype in (torch.float32, "float32", "float", DType.Float32):
        return torch.float32
    if dtype in (torch.float64, "float64", "double", DType.Float64):
        return torch.float64
    raise TypeError(f"Simulator: dtype: expected torch.float32 or torch.float64, got {dtype!r}")


class Simulator:
    """``n_env`` environments of one robot on one device (moreau::Simulator).

    Args:
        model: a ``moreau.Model`` or a robot file (.json, .urdf, .xml).
        n_env: number of environments.
        device: ``"cpu"`` or ``"cuda"`` / ``"cuda:N"`` (or a ``torch.device``).
        dtype: ``torch.float32`` or ``torch.float64`` (float64 on the CPU only).
        contact: a ``moreau.ContactOptions``, or a mode name ('none', 'hard', 'soft', 'smooth',
            'hard_smooth_grad'); ``tolerance``, ``max_iterations``, ``speculative``,
            ``substeps`` and ``condim`` override its fields (``condim`` 6: room for rolling
            friction's rows, which the parameter ``rolling_friction`` needs; default 4).
        n_threads: CPU worker threads (0 = all).
        timestep, decimation: 0 = the model's.
        adjoint_tapes: physics steps whose intermediates the CPU adjoint keeps (0 = all of a
            control step's; fewer trade memory for recomputation; docs/gradients.md).
        cuda_block: CUDA threads per block, one environment per thread (0 = 128; a multiple of 32
            up to 256; ``moreau-bench-forward --cuda-block`` measures the best).
        cuda_team: the CUDA kernels' layout: 0, one thread per environment (default); 8, a team
            of 8 lanes per environment with its scratch in shared memory (docs/gpu.md).
        cuda_stream: a ``torch.cuda.Stream`` or a raw ``cudaStream_t`` (int) that the simulator
            launches on; default: torch's current stream on that device at construction, so
            that torch work and simulator work are ordered without synchronisation.

    Buffers are exposed as torch tensors that share the simulator's memory (no copies):
    ``q`` (n_env, nq), ``v`` (n_env, nv), ``action`` (n_env, nu), ``status`` (n_env, 1) int32,
    ``time`` (n_env, 1), ``contact_gap``, ``contact_impulse`` (n_env, ncon),
    ``contact_active`` (n_env, ncon) int32, ``solver_iterations`` (n_env, 1) int32,
    ``solver_residual`` (n_env, 1). Their strides are (1, n_env): element k of environment e
    lives at k * n_env + e (field-major). Writing into them (``sim.action[:] = a``,
    ``sim.q.copy_(q)``) writes the simulator's state.
    """

    def __init__(self, model, n_env: int = 1, device="cpu", dtype=torch.float32, *, contact=None,
                 tolerance: Optional[float] = None, max_iterations: Optional[int] = None,
                 speculative: Optional[bool] = None, substeps: Optional[int] = None,
                 condim: Optional[int] = None, n_threads: int = 0,
                 timestep: float = 0.0, decimation: int = 0, adjoint_tapes: int = 0, cuda_block: int = 0,
                 cuda_team: int = 0, cuda_stream=None):
        model = load(model)
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            dev = None
        if dev is None or dev.type not in ("cpu", "cuda"):
            fail("Simulator", "device", "value", "'cpu' or 'cuda[:N]'", repr(device))
        o = SimulatorOptions()
        o.n_env = as_int("Simulator", "n_env", n_env)
        o.dtype = DType.Float64 if _torch_dtype(dtype) == torch.float64 else DType.Float32
        o.n_threads = as_int("Simulator", "n_threads", n_threads)
        o.timestep = as_float("Simulator", "timestep", timestep)
        o.decimation = as_int("Simulator", "decimation", decimation)
        o.adjoint_tapes = as_int("Simulator", "adjoint_tapes", adjoint_tapes)
        o.cuda_block = as_int("Simulator", "cuda_block", cuda_block)
        o.cuda_team = as_int("Simulator", "cuda_team", cuda_team)
        if isinstance(contact, ContactOptions):
            c = contact
        else:
            c = ContactOptions()
            if contact is not None:
                c.mode = _contact_mode(contact)
        if tolerance is not None:
            c.tolerance = as_float("Simulator", "tolerance", tolerance)
        if max_iterations is not None:
            c.max_iterations = as_int("Simulator", "max_iterations", max_iterations)
        if speculative is not None:
            c.speculative = as_bool("Simulator", "speculative", speculative)
        if substeps is not None:
            c.substeps = as_int("Simulator", "substeps", substeps)
        if condim is not None:
            c.condim = as_int("Simulator", "condim", condim)
        o.contact = c
        if dev.type == "cuda":
            if not _moreau.built_with_cuda:
                raise _moreau.Error("Simulator: device 'cuda': this moreau was built without CUDA (no nvcc at build time)")
            if not torch.cuda.is_available() or not _moreau.cuda_available():
                raise _moreau.Error("Simulator: device 'cuda': no CUDA device is available")
            index = dev.index if dev.index is not None else torch.cuda.current_device()
            dev = torch.device("cuda", index)
            o.device = Device.CUDA
            o.cuda_device = index
            if cuda_stream is None:
                cuda_stream = torch.cuda.current_stream(dev)
            o.cuda_stream = int(cuda_stream.cuda_stream if hasattr(cuda_stream, "cuda_stream") else cuda_stream)
        else:
            if cuda_stream is not None:
                fail("Simulator", "cuda_stream", "value", "None on device 'cpu'", repr(cuda_stream))
            o.device = Device.CPU
        self._sim = _moreau.Simulator(model, o)
        self._cuda_stream = o.cuda_stream if dev.type == "cuda" else None
        self._device = dev
        self._dtype = _torch_dtype(dtype)
        self._views = {}

    # ---- description ----------------------------------------------------------------
    @property
    def model(self) -> Model:
        return self._sim.model

    @property
    def options(self) -> SimulatorOptions:
        return self._sim.options

    @property
    def n_env(self) -> int:
        return self._sim.n_env

    @property
    def nq(self) -> int:
        return self._sim.model.nq

    @property
    def nv(self) -> int:
        return self._sim.model.nv

    @property
    def nu(self) -> int:
        return self._sim.model.nu

    @property
    def ncon(self) -> int:
        return self._sim.model.ncon

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def substeps(self) -> int:
        return self._sim.substeps

    def param_names(self):
        return self._sim.param_names()

    def __repr__(self):
        m = self.model
        return (f"<moreau.Simulator '{m.name}' n_env={self.n_env} device={self.device} dtype={self.dtype} "
                f"contact={_moreau.contact_mode_name(self.options.contact.mode)}>")

    # ---- zero-copy views ------------------------------------------------------------
    def view(self, name: str) -> torch.Tensor:
        """The buffer ``name`` (see the class docstring) as a torch tensor sharing its memory."""
        t = self._views.get(name)
        if t is None:
            t = torch.from_dlpack(self._sim.view(name)) if self._device.type == "cpu" else _cuda_tensor(self._sim, name)
            self._views[name] = t
        return t

    def view_info(self, name: str) -> dict:
        """The C++ View of a buffer: data pointer, dtype, device, shape and strides (elements).
        ``name`` is a buffer name or ``"param:<name>"``."""
        return self._sim.view_info(name)

    q = property(lambda self: self.view("q"), doc="(n_env, nq) positions; a view")
    v = property(lambda self: self.view("v"), doc="(n_env, nv) velocities; a view")
    action = property(lambda self: self.view("action"), doc="(n_env, nu) actions (PD targets); a view")
    status = property(lambda self: self.view("status"), doc="(n_env, 1) int32 status bits; a view")
    time = property(lambda self: self.view("time"), doc="(n_env, 1) seconds since reset; a view")
    contact_gap = property(lambda self: self.view("contact_gap"), doc="(n_env, ncon) signed distances [m]")
    contact_impulse = property(lambda self: self.view("contact_impulse"), doc="(n_env, ncon) normal impulses [N s]")
    contact_active = property(lambda self: self.view("contact_active"), doc="(n_env, ncon) int32 touching")
    solver_iterations = property(lambda self: self.view("solver_iterations"), doc="(n_env, 1) int32")
    solver_residual = property(lambda self: self.view("solver_residual"), doc="(n_env, 1) [m/s]")

    def param(self, name: str) -> torch.Tensor:
        """Parameter ``name`` as a (len, width) tensor sharing the simulator's memory (len is 1 or
        n_env, as last set). It stays valid until ``set_param`` changes that parameter's len."""
        view = self._sim.view("param:" + name)
        return torch.from_dlpack(view) if self._device.type == "cpu" else _cuda_tensor(self._sim, "param:" + name)

    def set_param(self, name: str, values) -> None:
        """Sets parameter ``name`` from a number, a (width,) or a (len, width) array or tensor
        (len 1 or n_env; any device and real dtype).

        A tensor on the simulator's device of the parameter's current (len, width) is written
        through its view (``param(name)``) on the device, cast there, after the same checks
        (finite, in range) as torch ops: no copy of the values through the host, and on CUDA one
        read of a single flag (a synchronisation). A bad value falls through to the host path,
        whose ``moreau.Error`` names it. Anything else (another device, a new len,
        ``contact_kn`` while it sets the soft contact's automatic substeps, arrays and numbers)
        is copied through the host."""
        fn = f"Simulator.set_param('{name}')"
        if isinstance(values, torch.Tensor):
            if values.dtype == torch.bool or values.is_complex():
                fail(fn, "values", "dtype", "a real tensor", values.dtype)
            if self._set_param_on_device(name, values):
                return
            arr = values.detach().to("cpu", torch.float64).numpy()
        else:
            arr = np.asarray(values)
            if arr.dtype.kind not in "iuf":
                fail(fn, "values", "type", "a number, or an array or tensor of numbers",
                     f"{type(values).__name__} of {arr.dtype}")
            arr = arr.astype(np.float64)
        arr = _param_rows(name, arr)
        if arr.ndim != 2:
            fail(fn, "values", "shape", "a number, a (width,) or a (len, width) array", tuple(arr.shape))
        self._sim.set_param(name, np.ascontiguousarray(arr))

    def _set_param_on_device(self, name: str, values: torch.Tensor) -> bool:
        """set_param's device path (see there): True when it wrote ``values``; False when the
        host path must."""
        if not same_device(values.device, self._device) or name not in self.param_names():
            return False
        c = self.options.contact
        if name == "contact_kn" and c.mode == ContactMode.Soft and c.substeps == 0 and self.ncon > 0:
            return False  # the automatic substeps follow the largest k_n: a host decision
        test = _param_range(name, self.model)
        x = _param_rows(name, values.detach())
        view = self.param(name)
        if test is None or tuple(x.shape) != tuple(view.shape):
            return False
        if not bool((torch.isfinite(x) & test(x)).all()):  # one flag read; the host path names the value
            return False
        view.copy_(x)
        return True

    # ---- stepping -------------------------------------------------------------------
    def step(self, k: int = 1) -> None:
        """Advances every environment whose status is ok by ``k`` control steps."""
        self._sim.step(as_int("Simulator.step", "k", k))

    def reset(self, env_ids=None) -> None:
        """Resets the listed environments (all when None) to the default state, zero action,
        status 0 and time 0. ``env_ids``: a sequence, array or tensor of ints on any device
        (copied through the host), or a bool tensor of shape (n_env,) on the simulator's device
        that is True where an environment is to be reset (``sim.reset(done)``): read there, with
        no host copy and no synchronisation (moreau::Simulator::reset_where)."""
        if env_ids is None:
            self._sim.reset_all()
            return
        if isinstance(env_ids, torch.Tensor) and env_ids.dtype == torch.bool:
            check_tensor("Simulator.reset", "env_ids", env_ids, dtype=torch.bool, device=self._device,
                         shapes=[(self.n_env,)])
            mask = env_ids.detach().view(torch.uint8).contiguous()  # the same bytes; a copy only if strided
            self._sim.reset_where(mask)
            stream = self._cuda_stream
            if stream is not None and stream != torch.cuda.current_stream(self._device).cuda_stream:
                # the kernel reads the mask on the simulator's stream: its memory is not reused before
                mask.record_stream(torch.cuda.ExternalStream(stream, device=self._device))
            return
        ids = env_ids.detach().cpu().numpy() if isinstance(env_ids, torch.Tensor) else np.asarray(env_ids)
        if ids.size and ids.dtype.kind not in "iu":  # a float id would be truncated: refused
            fail("Simulator.reset", "env_ids", "type", "integers", f"{type(env_ids).__name__} of {ids.dtype}")
        if ids.size and (ids.max() > np.iinfo(np.int32).max or ids.min() < np.iinfo(np.int32).min):
            fail("Simulator.reset", "env_ids", "value", f"ids in 0 .. {self.n_env - 1}", int(ids.max()))
        ids = np.ascontiguousarray(ids.reshape(-1), dtype=np.int32)
        self._sim.reset(ids)

    def synchronize(self) -> None:
        """Waits for the simulator's queued device work (no-op on the CPU)."""
        self._sim.synchronize()

    def set_state(self, q: torch.Tensor, v: torch.Tensor) -> None:
        """Copies (n_env, nq) and (n_env, nv) tensors or arrays into the state (any device and
        float dtype; cast), or (nq,) and (nv,) ones into every environment."""
        for name, x, dst in (("q", q, self.q), ("v", v, self.v)):
            x = torch.as_tensor(x)
            shapes = [tuple(dst.shape), (dst.shape[1],)]
            if tuple(x.shape) not in shapes:
                fail("Simulator.set_state", name, "shape", " or ".join(str(s) for s in shapes), tuple(x.shape))
            if not (x.is_floating_point() or x.dtype in (torch.int32, torch.int64)):
                fail("Simulator.set_state", name, "dtype", "a float (or integer) tensor", x.dtype)
            dst.copy_(x)

    def get_state(self):
        """Copies of (q, v)."""
        return self.q.clone(), self.v.clone()

    def step_pure(self, q: torch.Tensor, v: torch.Tensor, action: torch.Tensor, q_out=None, v_out=None,
                  status=None):
        """One control step (q, v, action) -> (q_out, v_out, status) that neither reads nor
        writes the simulator's state (no autograd: see moreau.torch.step). Inputs are (n_env,
        width) tensors on the simulator's device in its dtype; any layout (copied to the
        field-major layout when needed). Outputs, when given, must be field-major."""
        fn = "Simulator.step_pure"
        q = self._input(fn, "q", q, self.nq)
        v = self._input(fn, "v", v, self.nv)
        action = self._input(fn, "action", action, self.nu)
        q_out = self._new(self.nq) if q_out is None else q_out
        v_out = self._new(self.nv) if v_out is None else v_out
        status = self._new(1, torch.int32) if status is None else status
        self._sim.step_pure(q, v, action, q_out, v_out, status)
        return q_out, v_out, status

    def transition_jacobians(self, q: torch.Tensor, v: torch.Tensor, action: torch.Tensor, *, tangent: bool = True,
                             with_B: bool = True):
        """Analytic Jacobians of one control step at (q, v, action) for every environment:
        A = d(x_out)/d(x_in) (n_env, N, N) and B = d(x_out)/d(action) (n_env, N, nu), with
        x = (dq, v) in the tangent space (N = 2 nv, like MuJoCo's mjd_transitionFD; dq_out =
        q_out (-) q_out_nominal) when ``tangent``, else the raw (q, v) (N = nq + nv). Returns
        (A, B or None, status (n_env, 1)); a non-zero status marks an environment whose rows are not
        meaningful. One recompute of the step and N adjoint sweeps per environment
        (docs/gradients.md)."""
        fn = "Simulator.transition_jacobians"
        tangent, with_B = as_bool(fn, "tangent", tangent), as_bool(fn, "with_B", with_B)
        q = self._input(fn, "q", q, self.nq)
        v = self._input(fn, "v", v, self.nv)
        action = self._input(fn, "action", action, self.nu)
        N = 2 * self.nv if tangent else self.nq + self.nv
        A = torch.empty((self.n_env, N, N), dtype=self._dtype, device=self._device)
        B = torch.empty((self.n_env, N, self.nu), dtype=self._dtype, device=self._device) if with_B else None
        status = self._new(1, torch.int32)
        self._sim.transition_jacobians(q, v, action, A, B, status, tangent)
        return A, B, status

    def rollout(self, actions: torch.Tensor) -> None:
        """Recorded rollout (moreau::Simulator::rollout) of H = len(actions) steps from the
        current state; actions (H, n_env, nu). Leaves the simulator at the final state."""
        fn = "Simulator.rollout"
        check_tensor(fn, "actions", actions, dtype=self._dtype, device=self._device,
                     shapes=[(actions.shape[0] if isinstance(actions, torch.Tensor) and actions.dim() == 3 else 1,
                              self.n_env, self.nu)])
        h = actions.shape[0]
        blocks = actions.transpose(1, 2).contiguous().transpose(1, 2)
        self._rollout_actions = blocks
        self._sim.rollout(h, blocks)

    def rollout_backward(self, adj_q: torch.Tensor, adj_v: torch.Tensor, *, grad_kp=False, grad_kd=False,
                         grad_added_base_mass=False):
        """Backward over the recorded rollout. ``adj_q`` (H+1, n_env, nq), ``adj_v`` (H+1, n_env,
        nv): ∂L/∂(state t). Returns (adj_q, adj_v, adj_actions, param_grads): the total adjoint of
        each state (row 0: ∂L/∂ initial state), ∂L/∂actions (H, n_env, nu) and a dict of the
        requested parameter gradients summed over the horizon, (n_env, width) each."""
        fn = "Simulator.rollout_backward"
        grad_kp, grad_kd = as_bool(fn, "grad_kp", grad_kp), as_bool(fn, "grad_kd", grad_kd)
        grad_added_base_mass = as_bool(fn, "grad_added_base_mass", grad_added_base_mass)
        h = self._sim.rollout_horizon
        if h == 0:
            raise _moreau.Error("rollout_backward: no recorded rollout: call rollout(actions) first")
        check_tensor(fn, "adj_q", adj_q, dtype=self._dtype, device=self._device, shapes=[(h + 1, self.n_env, self.nq)])
        check_tensor(fn, "adj_v", adj_v, dtype=self._dtype, device=self._device, shapes=[(h + 1, self.n_env, self.nv)])
        aq = adj_q.transpose(1, 2).contiguous().transpose(1, 2)
        av = adj_v.transpose(1, 2).contiguous().transpose(1, 2)
        au = torch.empty((h, self.nu, self.n_env), dtype=self._dtype, device=self._device).transpose(1, 2)
        grads = {}
        for name, want, width in (("kp", grad_kp, self.nu), ("kd", grad_kd, self.nu),
                                  ("added_base_mass", grad_added_base_mass, 1)):
            if want:
                grads[name] = self._new(width)
                grads[name].zero_()
        self._sim.rollout_backward(aq, av, au, **{"grad_" + k: t for k, t in grads.items()})
        return aq, av, au, grads

    # ---- helpers --------------------------------------------------------------------
    def _new(self, width: int, dtype=None) -> torch.Tensor:
        return empty_field_major(self.n_env, width, dtype=dtype or self._dtype, device=self._device)

    def _input(self, fn: str, arg: str, x, width: int) -> torch.Tensor:
        check_tensor(fn, arg, x, dtype=self._dtype, device=self._device, shapes=[(self.n_env, width)])
        return field_major(x)


def _param_rows(name: str, x):
    """A parameter's values (array or tensor) as rows: a number (1, 1); a vector one row of width
    nu for kp, kd, one value per row for the others; other ranks unchanged."""
    if x.ndim == 0:
        return x.reshape(1, 1)
    if x.ndim == 1:
        return x.reshape(1, -1) if name in ACTUATOR_PARAMS else x.reshape(-1, 1)
    return x


def _param_range(name: str, model: Model):
    """A parameter's physical range as the library checks it (check_param_range in
    host/typed_backend.h), an elementwise torch test; None for a parameter it does not know (set
    through the host)."""
    if name in ("kp", "kd", "friction", "contact_zeta", "smooth_gmax", "motor_strength", "frictionloss_scale",
                "spin_friction", "rolling_friction", "damping_scale", "armature_scale"):
        return lambda x: x >= 0
    if name in ("contact_kn", "smooth_k"):
        return lambda x: x > 0
    if name in ("terrain_x", "terrain_y"):  # any finite origin
        return torch.isfinite
    if name == "contact_kd":
        return lambda x: (x >= 0) | (x == -1)  # -1: from contact_zeta
    if name == "added_base_mass":
        base = model.body_mass[0] if model.nbody else 0.0
        return lambda x: x + base > 0  # the base's mass plus it
    return None


def _cuda_tensor(sim, name: str) -> torch.Tensor:
    # nanobind's DLPack object on a CUDA buffer: torch takes it as is (same device, no sync
    # needed: the simulator works on the stream it was given).
    return torch.from_dlpack(sim.view(name))
