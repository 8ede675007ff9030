// moreau._moreau — the nanobind extension under the Python package `moreau` (python/moreau).
//
// Thin: models, options, the Simulator and zero-copy DLPack views of its buffers. Every
// tensor argument is checked here (dtype, device, shape, strides) before a pointer reaches the
// library, so a wrong tensor raises moreau.TensorError naming the argument, the expected and
// the received; never a crash. The torch-facing conveniences live in python/moreau/*.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "moreau/derivatives.h"
#include "moreau/import.h"
#include "moreau/model.h"
#include "moreau/simulator.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace moreau {
namespace {

// A wrong tensor argument: becomes moreau.TensorError (a subclass of ValueError and TypeError).
struct TensorArgError : std::exception {
  std::string message;
  explicit TensorArgError(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
};

PyObject* g_tensor_error = nullptr;

using Array = nb::ndarray<nb::device::none>;  // any DLPack tensor (torch, numpy, ...)

std::string dtype_str(nb::dlpack::dtype t) {
  const auto code = static_cast<nb::dlpack::dtype_code>(t.code);
  std::string base = code == nb::dlpack::dtype_code::Float   ? "float"
                     : code == nb::dlpack::dtype_code::Int   ? "int"
                     : code == nb::dlpack::dtype_code::UInt  ? "uint"
                     : code == nb::dlpack::dtype_code::Bool  ? "bool"
                     : code == nb::dlpack::dtype_code::Bfloat ? "bfloat"
                     : code == nb::dlpack::dtype_code::Complex ? "complex"
                                                               : "code" + std::to_string(t.code) + "_";
  if (code == nb::dlpack::dtype_code::Bool) return base;
  return base + std::to_string(t.bits);
}

nb::dlpack::dtype to_dlpack(DType t) {
  switch (t) {
    case DType::Float32: return nb::dtype<float>();
    case DType::Float64: return nb::dtype<double>();
    case DType::Int32: return nb::dtype<int32_t>();
  }
  return nb::dtype<float>();
}

std::string device_str(int type, int id) {
  if (type == nb::device::cpu::value) return "cpu";
  if (type == nb::device::cuda::value) return "cuda:" + std::to_string(id);
  if (type == nb::device::cuda_managed::value) return "cuda_managed:" + std::to_string(id);
  return "dlpack device " + std::to_string(type) + ":" + std::to_string(id);
}

int dl_device(Device d) { return d == Device::CUDA ? nb::device::cuda::value : nb::device::cpu::value; }

std::string shape_str(const Array& a) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < a.ndim(); ++i) s << (i ? ", " : "") << a.shape(i);
  if (a.ndim() == 1) s << ",";
  s << ")";
  return s.str();
}

std::string strides_str(const Array& a) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < a.ndim(); ++i) s << (i ? ", " : "") << a.stride(i);
  if (a.ndim() == 1) s << ",";
  s << ")";
  return s.str();
}

// What a tensor argument must be: on the simulator's device, in `dtype`, of shape
// `shape` (2 or 3 dims) with the field-major strides `strides` (in elements).
struct Expect {
  const char* fn;
  const char* arg;
  DType dtype;
  Device device;
  int device_id;
  std::vector<int64_t> shape, strides;
  const char* layout = "field-major: element k of environment e at k * n_env + e";
};

std::string tuple_str(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  if (v.size() == 1) s << ",";
  s << ")";
  return s.str();
}

[[noreturn]] void fail(const Expect& e, const std::string& what, const std::string& expected, const std::string& got) {
  throw TensorArgError(std::string(e.fn) + ": argument '" + e.arg + "': wrong " + what + ": expected " + expected +
                       ", got " + got);
}

// `a` as `e` says, in `dtype` (e.dtype unless given).
void* checked(const Array& a, const Expect& e, nb::dlpack::dtype dtype) {
  if (a.dtype() != dtype) fail(e, "dtype", dtype_str(dtype), dtype_str(a.dtype()));
  const int dev = dl_device(e.device), dev_id = e.device == Device::CUDA ? e.device_id : 0;
  if (a.device_type() != dev || (e.device == Device::CUDA && a.device_id() != dev_id))
    fail(e, "device", device_str(dev, dev_id), device_str(a.device_type(), a.device_id()));
  bool shape_ok = a.ndim() == e.shape.size();
  for (size_t i = 0; shape_ok && i < e.shape.size(); ++i) shape_ok = static_cast<int64_t>(a.shape(i)) == e.shape[i];
  if (!shape_ok) fail(e, "shape", tuple_str(e.shape), shape_str(a));
  // Strides only matter along dimensions longer than 1.
  for (size_t i = 0; i < e.strides.size(); ++i)
    if (e.shape[i] > 1 && a.stride(i) != e.strides[i])
      fail(e, "layout", "strides " + tuple_str(e.strides) + " (" + e.layout + ")", "strides " + strides_str(a));
  if (!a.data() && a.size() > 0) fail(e, "data", "a buffer", "a null pointer");
  return a.data();
}
void* checked(const Array& a, const Expect& e) { return checked(a, e, to_dlpack(e.dtype)); }

class PySimulator {
 public:
  PySimulator(const Model& model, const SimulatorOptions& options) : sim_(model, options) {}

  Simulator& sim() { return sim_; }
  int n_env() const { return sim_.n_env(); }

  Expect field(const char* fn, const char* arg, int width, DType dtype) {
    const SimulatorOptions& o = sim_.options();
    const int64_t n = o.n_env;
    return Expect{fn, arg, dtype, o.device, o.cuda_device, {n, width}, {1, n}};
  }
  Expect field(const char* fn, const char* arg, int width) { return field(fn, arg, width, sim_.options().dtype); }
  // (n_env,) bytes, contiguous (the dtype is given to checked).
  Expect mask(const char* fn, const char* arg) {
    const SimulatorOptions& o = sim_.options();
    Expect e{fn, arg, DType::Int32, o.device, o.cuda_device, {o.n_env}, {1}};
    e.layout = "contiguous";
    return e;
  }
  // (steps, n_env, width), each step's block field-major.
  Expect blocks(const char* fn, const char* arg, int steps, int width) {
    const SimulatorOptions& o = sim_.options();
    const int64_t n = o.n_env;
    return Expect{fn, arg, o.dtype, o.device, o.cuda_device, {steps, n, width}, {n * width, 1, n}};
  }
  // (n_env, rows, cols), contiguous: one row-major matrix per environment.
  Expect matrices(const char* fn, const char* arg, int rows, int cols) {
    const SimulatorOptions& o = sim_.options();
    Expect e{fn, arg, o.dtype, o.device, o.cuda_device, {o.n_env, rows, cols}, {int64_t{rows} * cols, cols, 1}};
    e.layout = "contiguous: one row-major matrix per environment";
    return e;
  }
  void* optional(const nb::object& obj, const Expect& e) {
    if (obj.is_none()) return nullptr;
    Array a;
    if (!nb::try_cast(obj, a))
      throw TensorArgError(std::string(e.fn) + ": argument '" + e.arg + "': expected a tensor or None, got " +
                           std::string(nb::str(nb::type_name(obj.type())).c_str()));
    return checked(a, e);
  }

  View view(const std::string& name) {
    if (name == "q") return sim_.q();
    if (name == "v") return sim_.v();
    if (name == "action") return sim_.action();
    if (name == "status") return sim_.status();
    if (name == "time") return sim_.time();
    if (name == "contact_gap") return sim_.contact_gap();
    if (name == "contact_impulse") return sim_.contact_impulse();
    if (name == "contact_active") return sim_.contact_active();
    if (name == "solver_iterations") return sim_.solver_iterations();
    if (name == "solver_residual") return sim_.solver_residual();
    if (name.rfind("param:", 0) == 0) return sim_.param(name.substr(6));
    throw Error("view: unknown buffer '" + name +
                "': expected q, v, action, status, time, contact_gap, contact_impulse, contact_active, "
                "solver_iterations, solver_residual or param:<name>");
  }

  // Gradient buffers of step_adjoint / rollout_backward, each checked (n_env x width) or None.
  Simulator::Gradients param_grads(const char* fn, const nb::object& kp, const nb::object& kd,
                                   const nb::object& added_base_mass, const nb::object& friction,
                                   const nb::object& contact_kn, const nb::object& smooth_k) {
    const int nu = sim_.model().nu;
    Simulator::Gradients g;
    g.kp = optional(kp, field(fn, "grad_kp", nu));
    g.kd = optional(kd, field(fn, "grad_kd", nu));
    g.added_base_mass = optional(added_base_mass, field(fn, "grad_added_base_mass", 1));
    g.friction = optional(friction, field(fn, "grad_friction", 1));
    g.contact_kn = optional(contact_kn, field(fn, "grad_contact_kn", 1));
    g.smooth_k = optional(smooth_k, field(fn, "grad_smooth_k", 1));
    return g;
  }

 private:
  Simulator sim_;
};

nb::dict view_info(const View& v) {
  nb::dict d;
  d["data"] = reinterpret_cast<uintptr_t>(v.data);
  d["dtype"] = dtype_name(v.dtype);
  d["device"] = device_name(v.device);
  d["device_id"] = v.device_id;
  d["shape"] = nb::make_tuple(v.shape[0], v.shape[1]);
  d["strides"] = nb::make_tuple(v.strides[0], v.strides[1]);
  return d;
}

}  // namespace
}  // namespace moreau

NB_MODULE(_moreau, m) {
  using namespace moreau;
  m.doc() = "moreau: batched differentiable rigid-body simulator (extension module; use the `moreau` package)";
  // Tensors and autograd graphs that outlive the interpreter's teardown of this module keep
  // simulators alive to the end; nanobind's exit-time leak report would only be noise.
  nb::set_leak_warnings(false);

  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  {
    nb::object bases = nb::make_tuple(nb::handle(PyExc_ValueError), nb::handle(PyExc_TypeError));
    g_tensor_error = PyErr_NewExceptionWithDoc(
        "moreau.TensorError",
        "A tensor argument of the wrong dtype, device, shape or layout (a ValueError and a TypeError).",
        bases.ptr(), nullptr);
    m.attr("TensorError") = nb::handle(g_tensor_error);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
      try {
        std::rethrow_exception(p);
      } catch (const TensorArgError& e) {
        PyErr_SetString(g_tensor_error, e.what());
      }
    });
  }

  nb::enum_<Device>(m, "Device").value("CPU", Device::CPU).value("CUDA", Device::CUDA);
  nb::enum_<DType>(m, "DType")
      .value("Float32", DType::Float32)
      .value("Float64", DType::Float64)
      .value("Int32", DType::Int32);
  nb::enum_<ContactMode>(m, "ContactMode")
      .value("None_", ContactMode::None)
      .value("Hard", ContactMode::Hard)
      .value("Soft", ContactMode::Soft)
      .value("Smooth", ContactMode::Smooth)
      .value("HardSmoothGrad", ContactMode::HardSmoothGrad);
  m.def("contact_mode_name", [](ContactMode mode) { return std::string(contact_mode_name(mode)); });
  m.def("contact_mode_from_name", &contact_mode_from_name, "name"_a);
  m.def("cuda_available", &cuda_available, "Built with CUDA and a device is present.");
  m.attr("built_with_cuda") =
#ifdef MOREAU_PY_CUDA
      true;
#else
      false;
#endif

  m.attr("STATUS_OK") = int(kStatusOk);
  m.attr("STATUS_NAN_STATE") = int(kStatusNanState);
  m.attr("STATUS_NAN_ACTION") = int(kStatusNanAction);
  m.attr("STATUS_SINGULAR_MASS") = int(kStatusSingularMass);
  m.attr("STATUS_SOLVER_NOT_CONVERGED") = int(kStatusSolverNotConverged);
  m.attr("STATUS_NAN_GRADIENT") = int(kStatusNanGradient);
  m.attr("STATUS_NO_GRADIENT") = int(kStatusNoGradient);
  m.attr("STATUS_CONTACTS_DROPPED") = int(kStatusContactsDropped);
  m.attr("STATUS_FATAL") = int(kStatusFatal);
  // Model.jnt_type values (moreau::JointType; fixed joints are merged away at compile time).
  m.attr("JOINT_FREE") = int(JointType::Free);
  m.attr("JOINT_BALL") = int(JointType::Ball);
  m.attr("JOINT_REVOLUTE") = int(JointType::Revolute);
  m.attr("JOINT_PRISMATIC") = int(JointType::Prismatic);

  // ---- Model ---------------------------------------------------------------------------
  nb::class_<Model>(m, "Model")
      .def_ro("name", &Model::name)
      .def_ro("source", &Model::source)
      .def_ro("nq", &Model::nq)
      .def_ro("nv", &Model::nv)
      .def_ro("nu", &Model::nu)
      .def_ro("nbody", &Model::nbody)
      .def_ro("ncon", &Model::ncon)
      .def_prop_ro("gravity", [](const Model& md) { return std::vector<double>(md.gravity, md.gravity + 3); })
      .def_ro("timestep", &Model::timestep)
      .def_ro("decimation", &Model::decimation)
      .def_ro("body_name", &Model::body_name)
      .def_ro("body_parent", &Model::body_parent)
      .def_ro("body_pos", &Model::body_pos)
      .def_ro("body_quat", &Model::body_quat)
      .def_ro("body_mass", &Model::body_mass)
      .def_ro("jnt_name", &Model::jnt_name)
      .def_ro("jnt_type", &Model::jnt_type)
      .def_ro("jnt_qposadr", &Model::jnt_qposadr)
      .def_ro("jnt_dofadr", &Model::jnt_dofadr)
      .def_ro("jnt_axis", &Model::jnt_axis)
      .def_ro("jnt_pos", &Model::jnt_pos)
      .def_ro("jnt_stiffness", &Model::jnt_stiffness)
      .def_ro("jnt_springref", &Model::jnt_springref)
      .def_ro("jnt_limited", &Model::jnt_limited)
      .def_ro("jnt_range", &Model::jnt_range)
      .def_ro("dof_damping", &Model::dof_damping)
      .def_ro("dof_armature", &Model::dof_armature)
      .def_ro("dof_frictionloss", &Model::dof_frictionloss)
      .def_ro("qpos0", &Model::qpos0)
      .def_ro("actuator_name", &Model::actuator_name)
      .def_ro("actuator_kp", &Model::actuator_kp)
      .def_ro("actuator_kd", &Model::actuator_kd)
      .def_ro("actuator_qposadr", &Model::actuator_qposadr)
      .def_ro("con_name", &Model::con_name)
      .def_ro("con_body", &Model::con_body)
      .def_ro("con_pos", &Model::con_pos)
      .def_ro("con_radius", &Model::con_radius)
      .def_ro("self_collisions", &Model::self_collisions)
      .def_ro("npair", &Model::npair)
      .def_ro("pair_con", &Model::pair_con)
      .def_ro("warnings", &Model::warnings)
      .def_ro("hfield_nx", &Model::hfield_nx)
      .def_ro("hfield_ny", &Model::hfield_ny)
      .def_prop_ro("hfield_origin", [](const Model& md) { return std::vector<double>(md.hfield_origin, md.hfield_origin + 2); })
      .def_prop_ro("hfield_spacing", [](const Model& md) { return std::vector<double>(md.hfield_spacing, md.hfield_spacing + 2); })
      .def_ro("hfield_height", &Model::hfield_height)
      .def("body_index", &Model::body_index, "name"_a)
      .def("joint_index", &Model::joint_index, "name"_a)
      .def("actuator_index", &Model::actuator_index, "name"_a)
      .def("total_mass", &Model::total_mass)
      .def("__repr__", [](const Model& md) {
        return "<moreau.Model '" + md.name + "' nq=" + std::to_string(md.nq) + " nv=" + std::to_string(md.nv) +
               " nu=" + std::to_string(md.nu) + " nbody=" + std::to_string(md.nbody) +
               " ncon=" + std::to_string(md.ncon) + ">";
      });

  m.def("load_model", &load_model, "path"_a, "A robot file by extension: .json, .urdf or .xml (MJCF).");
  m.def("load_model_from_string", &load_model_from_string, "json_text"_a, "source"_a = "<string>");
  m.def(
      "load_urdf",
      [](const std::string& path, bool fixed_base, const std::vector<std::string>& contact_bodies,
         const std::vector<std::pair<std::string, double>>& default_qpos, bool add_actuators, double kp, double kd,
         const std::string& text) {
        UrdfOptions o;
        o.fixed_base = fixed_base;
        o.contact_bodies = contact_bodies;
        o.default_qpos = default_qpos;
        o.add_actuators = add_actuators;
        o.kp = kp;
        o.kd = kd;
        return compile(text.empty() ? parse_urdf_file(path, o) : parse_urdf(text, path, o));
      },
      "path"_a, "fixed_base"_a = false, "contact_bodies"_a = std::vector<std::string>(),
      "default_qpos"_a = std::vector<std::pair<std::string, double>>(), "add_actuators"_a = true, "kp"_a = 0.0,
      "kd"_a = 0.0, "text"_a = std::string(),
      "A URDF file (or `text`, with `path` naming its source) with moreau's UrdfOptions.");
  m.def(
      "load_mjcf",
      [](const std::string& path, const std::string& text, const std::string& include_dir) {
        return compile(text.empty() ? parse_mjcf_file(path) : parse_mjcf(text, path, include_dir));
      },
      "path"_a, "text"_a = std::string(), "include_dir"_a = std::string("."),
      "An MJCF file (or `text`, with `path` naming its source).");
  m.def("export_mjcf", &export_mjcf, "model"_a);
  m.def("select_contacts", &select_contacts, "model"_a, "names"_a,
        "A copy of the model with only the named contact points, in the order given.");
  m.def("with_self_collisions", &with_self_collisions, "model"_a, "bodies"_a,
        "A copy of the model whose listed body pairs collide with each other (every contact point of "
        "the first body against every one of the second's, sphere against sphere).");
  m.def("with_heightfield", &with_heightfield, "model"_a, "height"_a, "nx"_a, "ny"_a, "dx"_a, "dy"_a,
        "origin_x"_a = 0.0, "origin_y"_a = 0.0, "A copy of the model on a heightfield ground.");

  // ---- Options ---------------------------------------------------------------------------
  nb::class_<ContactOptions>(m, "ContactOptions")
      .def(nb::init<>())
      .def_rw("mode", &ContactOptions::mode)
      .def_rw("max_iterations", &ContactOptions::max_iterations)
      .def_rw("tolerance", &ContactOptions::tolerance)
      .def_rw("speculative", &ContactOptions::speculative)
      .def_rw("substeps", &ContactOptions::substeps)
      .def_rw("condim", &ContactOptions::condim);
  nb::class_<SimulatorOptions>(m, "SimulatorOptions")
      .def(nb::init<>())
      .def_rw("n_env", &SimulatorOptions::n_env)
      .def_rw("device", &SimulatorOptions::device)
      .def_rw("dtype", &SimulatorOptions::dtype)
      .def_rw("n_threads", &SimulatorOptions::n_threads)
      .def_rw("cuda_device", &SimulatorOptions::cuda_device)
      .def_prop_rw(
          "cuda_stream", [](const SimulatorOptions& o) { return reinterpret_cast<uintptr_t>(o.cuda_stream); },
          [](SimulatorOptions& o, uintptr_t s) { o.cuda_stream = reinterpret_cast<void*>(s); })
      .def_rw("timestep", &SimulatorOptions::timestep)
      .def_rw("decimation", &SimulatorOptions::decimation)
      .def_rw("adjoint_tapes", &SimulatorOptions::adjoint_tapes)
      .def_rw("cuda_block", &SimulatorOptions::cuda_block)
      .def_rw("cuda_team", &SimulatorOptions::cuda_team)
      .def_rw("contact", &SimulatorOptions::contact);

  // ---- Simulator -------------------------------------------------------------------------
  using PS = PySimulator;
  nb::class_<PS>(m, "Simulator")
      .def(nb::init<const Model&, const SimulatorOptions&>(), "model"_a, "options"_a)
      .def_prop_ro("n_env", &PS::n_env)
      .def_prop_ro("model", [](PS& s) -> const Model& { return s.sim().model(); }, nb::rv_policy::reference_internal)
      .def_prop_ro("options", [](PS& s) { return s.sim().options(); })
      .def_prop_ro("substeps", [](PS& s) { return s.sim().substeps(); })
      .def("param_names", [](PS& s) { return s.sim().param_names(); })
      // Zero-copy view of a buffer as a DLPack tensor (torch, numpy, ...) that keeps the
      // simulator alive: shape (rows, width), strides (1, rows) in elements.
      .def(
          "view",
          [](nb::handle self, const std::string& name) {
            PS& s = nb::cast<PS&>(self);
            const View v = s.view(name);
            const size_t shape[2] = {static_cast<size_t>(v.shape[0]), static_cast<size_t>(v.shape[1])};
            const int64_t strides[2] = {v.strides[0], v.strides[1]};
            return Array(v.data, 2, shape, self, strides, to_dlpack(v.dtype), dl_device(v.device),
                         v.device == Device::CUDA ? v.device_id : 0);
          },
          "name"_a)
      .def("view_info", [](PS& s, const std::string& name) { return view_info(s.view(name)); }, "name"_a)
      .def(
          "set_param",
          [](PS& s, const std::string& name, nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu> values) {
            s.sim().set_param(name, values.data(), static_cast<int>(values.shape(0)), static_cast<int>(values.shape(1)));
          },
          "name"_a, "values"_a, "Row-major float64 (len x width) host array, len 1 or n_env.")
      .def("step", [](PS& s, int k) { s.sim().step(k); }, "k"_a = 1, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "reset",
          [](PS& s, nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> ids) {
            s.sim().reset(ids.data(), static_cast<int>(ids.shape(0)));
          },
          "env_ids"_a)
      .def(
          "reset_where",
          [](PS& s, const Array& mask) {
            const void* p = checked(mask, s.mask("reset_where", "mask"), nb::dtype<uint8_t>());
            nb::gil_scoped_release release;
            s.sim().reset_where(static_cast<const uint8_t*>(p));
          },
          "mask"_a, "(n_env,) uint8 tensor on the simulator's device: resets the environments whose byte is nonzero.")
      .def("reset_all", [](PS& s) { s.sim().reset_all(); })
      .def("synchronize", [](PS& s) { s.sim().synchronize(); }, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "step_pure",
          [](PS& s, const Array& q, const Array& v, const Array& action, const Array& q_out, const Array& v_out,
             const Array& status) {
            const Model& md = s.sim().model();
            const char* fn = "step_pure";
            const void* pq = checked(q, s.field(fn, "q", md.nq));
            const void* pv = checked(v, s.field(fn, "v", md.nv));
            const void* pu = checked(action, s.field(fn, "action", md.nu));
            void* pqo = checked(q_out, s.field(fn, "q_out", md.nq));
            void* pvo = checked(v_out, s.field(fn, "v_out", md.nv));
            auto* pst = static_cast<int32_t*>(checked(status, s.field(fn, "status", 1, DType::Int32)));
            nb::gil_scoped_release release;
            s.sim().step_pure(pq, pv, pu, pqo, pvo, pst);
          },
          "q"_a, "v"_a, "action"_a, "q_out"_a, "v_out"_a, "status"_a)
      .def(
          "step_adjoint",
          [](PS& s, const Array& q, const Array& v, const Array& action, const Array& adj_q_out,
             const Array& adj_v_out, const Array& grad_q, const Array& grad_v, const Array& grad_action,
             const Array& status, const nb::object& grad_kp, const nb::object& grad_kd,
             const nb::object& grad_added_base_mass, const nb::object& grad_friction, const nb::object& grad_contact_kn,
             const nb::object& grad_smooth_k, bool accumulate) {
            const Model& md = s.sim().model();
            const char* fn = "step_adjoint";
            const void* pq = checked(q, s.field(fn, "q", md.nq));
            const void* pv = checked(v, s.field(fn, "v", md.nv));
            const void* pu = checked(action, s.field(fn, "action", md.nu));
            const void* aq = checked(adj_q_out, s.field(fn, "adj_q_out", md.nq));
            const void* av = checked(adj_v_out, s.field(fn, "adj_v_out", md.nv));
            Simulator::Gradients g = s.param_grads(fn, grad_kp, grad_kd, grad_added_base_mass, grad_friction,
                                                   grad_contact_kn, grad_smooth_k);
            g.q = checked(grad_q, s.field(fn, "grad_q", md.nq));
            g.v = checked(grad_v, s.field(fn, "grad_v", md.nv));
            g.action = checked(grad_action, s.field(fn, "grad_action", md.nu));
            auto* pst = static_cast<int32_t*>(checked(status, s.field(fn, "status", 1, DType::Int32)));
            nb::gil_scoped_release release;
            s.sim().step_adjoint(pq, pv, pu, aq, av, g, pst, accumulate);
          },
          "q"_a, "v"_a, "action"_a, "adj_q_out"_a, "adj_v_out"_a, "grad_q"_a, "grad_v"_a, "grad_action"_a,
          "status"_a, "grad_kp"_a = nb::none(), "grad_kd"_a = nb::none(), "grad_added_base_mass"_a = nb::none(),
          "grad_friction"_a = nb::none(), "grad_contact_kn"_a = nb::none(), "grad_smooth_k"_a = nb::none(),
          "accumulate"_a = false)
      .def(
          "transition_jacobians",
          [](PS& s, const Array& q, const Array& v, const Array& action, const Array& A, const nb::object& B,
             const Array& status, bool tangent) {
            const Model& md = s.sim().model();
            const char* fn = "transition_jacobians";
            const int N = tangent ? 2 * md.nv : md.nq + md.nv;
            const void* pq = checked(q, s.field(fn, "q", md.nq));
            const void* pv = checked(v, s.field(fn, "v", md.nv));
            const void* pu = checked(action, s.field(fn, "action", md.nu));
            void* pA = checked(A, s.matrices(fn, "A", N, N));
            void* pB = s.optional(B, s.matrices(fn, "B", N, md.nu));
            auto* pst = static_cast<int32_t*>(checked(status, s.field(fn, "status", 1, DType::Int32)));
            nb::gil_scoped_release release;
            if (tangent) {
              transition_jacobians_tangent(s.sim(), pq, pv, pu, pA, pB, pst);
            } else {
              transition_jacobians(s.sim(), pq, pv, pu, pA, pB, pst);
            }
          },
          "q"_a, "v"_a, "action"_a, "A"_a, "B"_a, "status"_a, "tangent"_a = true)
      .def(
          "rollout",
          [](PS& s, int horizon, const Array& actions) {
            if (horizon < 1) throw Error("rollout: horizon: expected >= 1, got " + std::to_string(horizon));
            const void* pu = checked(actions, s.blocks("rollout", "actions", horizon, s.sim().model().nu));
            nb::gil_scoped_release release;
            s.sim().rollout(horizon, pu);
          },
          "horizon"_a, "actions"_a)
      .def(
          "rollout_backward",
          [](PS& s, const Array& adj_q, const Array& adj_v, const Array& adj_actions, const nb::object& grad_kp,
             const nb::object& grad_kd, const nb::object& grad_added_base_mass) {
            const Model& md = s.sim().model();
            const int h = s.sim().rollout_horizon();
            const char* fn = "rollout_backward";
            if (h == 0) throw Error("rollout_backward: no recorded rollout: call rollout(horizon, actions) first");
            void* aq = checked(adj_q, s.blocks(fn, "adj_q", h + 1, md.nq));
            void* av = checked(adj_v, s.blocks(fn, "adj_v", h + 1, md.nv));
            void* au = checked(adj_actions, s.blocks(fn, "adj_actions", h, md.nu));
            Simulator::Gradients g =
                s.param_grads(fn, grad_kp, grad_kd, grad_added_base_mass, nb::none(), nb::none(), nb::none());
            nb::gil_scoped_release release;
            s.sim().rollout_backward(aq, av, au, g);
          },
          "adj_q"_a, "adj_v"_a, "adj_actions"_a, "grad_kp"_a = nb::none(), "grad_kd"_a = nb::none(),
          "grad_added_base_mass"_a = nb::none())
      .def_prop_ro("rollout_horizon", [](PS& s) { return s.sim().rollout_horizon(); });
}
