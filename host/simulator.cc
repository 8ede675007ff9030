// moreau host — Simulator: validates at the boundary and forwards to a backend.
#include "moreau/simulator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>

#include "host/arg_check.h"
#include "host/backend.h"

namespace moreau {

const char* device_name(Device d) {
  switch (d) {
    case Device::CPU: return "cpu";
    case Device::CUDA: return "cuda";
  }
  return "unknown";
}
const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int32: return "int32";
  }
  return "unknown";
}

#ifndef MOREAU_WITH_CUDA
bool cuda_available() { return false; }
std::unique_ptr<Backend> make_cuda_backend(const Model&, const SimulatorOptions&) {
  throw Error("device cuda: moreau was built without the CUDA backend (nvcc was not found at configure time)");
}
#endif

const char* contact_mode_name(ContactMode mode) {
  switch (mode) {
    case ContactMode::None: return "none";
    case ContactMode::Hard: return "hard";
    case ContactMode::Soft: return "soft";
    case ContactMode::Smooth: return "smooth";
    case ContactMode::HardSmoothGrad: return "hard_smooth_grad";
  }
  return "unknown";
}

ContactMode contact_mode_from_name(const std::string& name) {
  for (ContactMode m : {ContactMode::None, ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth,
                        ContactMode::HardSmoothGrad})
    if (name == contact_mode_name(m)) return m;
  throw Error("contact mode: expected one of none, hard, soft, smooth, hard_smooth_grad, got '" + name + "'");
}

int cuda_block_threads(int cuda_block) {
  if (cuda_block < 0 || cuda_block > kMaxCudaBlock || cuda_block % 32 != 0)
    throw Error("Simulator: cuda_block: expected a multiple of 32 from 32 to " + std::to_string(kMaxCudaBlock) +
                " (or 0 for " + std::to_string(kDefaultCudaBlock) + "), got " + std::to_string(cuda_block));
  return cuda_block > 0 ? cuda_block : kDefaultCudaBlock;
}

int cuda_team_lanes(int cuda_team) {
  if (cuda_team != 0 && cuda_team != kCudaTeamLanes)
    throw Error("Simulator: cuda_team: expected 0 (one thread per environment) or " + std::to_string(kCudaTeamLanes) +
                " (lanes per environment), got " + std::to_string(cuda_team));
  return cuda_team;
}

int max_environments(const Model& model) {
  return INT_MAX / std::max({model.nq, model.nv, model.nu, model.ncon, 1});
}

namespace {

void check_adjoint_inputs(const char* fn, int nu, const void* q_in, const void* v_in, const void* action,
                          const void* adj_q_out, const void* adj_v_out, const int32_t* status) {
  for (const auto& [p, arg] : {std::pair<const void*, const char*>{q_in, "q_in"}, {v_in, "v_in"},
                               {adj_q_out, "adj_q_out"}, {adj_v_out, "adj_v_out"}, {status, "status"}})
    require(p, fn, arg);
  require(action, fn, "action", nu);
}

void check_n_env(const char* what, int expected, int got) {
  if (expected != got)
    throw Error(std::string(what) + ": wrong number of environments: expected " + std::to_string(expected) +
                ", got " + std::to_string(got));
}

std::unique_ptr<Backend> make_backend(Model model, const SimulatorOptions& o) {
  if (o.n_env <= 0) throw Error("Simulator: n_env: expected > 0, got " + std::to_string(o.n_env));
  if (o.timestep < 0 || !std::isfinite(o.timestep))
    throw Error("Simulator: timestep: expected > 0 (or 0 for the model's), got " + std::to_string(o.timestep));
  if (o.decimation < 0)
    throw Error("Simulator: decimation: expected >= 1 (or 0 for the model's), got " + std::to_string(o.decimation));
  if (o.n_threads < 0)
    throw Error("Simulator: n_threads: expected >= 1 (or 0 for every hardware thread), got " +
                std::to_string(o.n_threads));
  if (o.adjoint_tapes < 0)
    throw Error("Simulator: adjoint_tapes: expected >= 1 (or 0 for all), got " + std::to_string(o.adjoint_tapes));
  cuda_block_threads(o.cuda_block);  // throw on a bad value, whatever the device
  cuda_team_lanes(o.cuda_team);
  if (o.timestep > 0) model.timestep = o.timestep;
  if (o.decimation > 0) model.decimation = o.decimation;
  if (model.hfield_nx != 0 || model.hfield_ny != 0 || !model.hfield_height.empty())  // a model edited by hand
    with_heightfield(model, model.hfield_height, model.hfield_nx, model.hfield_ny, model.hfield_spacing[0],
                     model.hfield_spacing[1], model.hfield_origin[0], model.hfield_origin[1]);
  if (o.device == Device::CUDA) {
    if (o.dtype != DType::Float32)
      throw Error(std::string("Simulator: dtype: the CUDA backend runs float32, got ") + dtype_name(o.dtype));
    return make_cuda_backend(model, o);
  }
  if (o.dtype == DType::Int32) throw Error("Simulator: dtype: expected float32 or float64, got int32");
  return make_cpu_backend(model, o);
}

}  // namespace

Simulator::Simulator(const Model& model, const SimulatorOptions& options)
    : backend_(make_backend(model, options)) {
  reset_all();
}

Simulator::~Simulator() = default;

const Model& Simulator::model() const { return backend_->model(); }
const SimulatorOptions& Simulator::options() const { return backend_->options(); }
int Simulator::n_env() const { return backend_->options().n_env; }

View Simulator::q() { return backend_->q(); }
View Simulator::v() { return backend_->v(); }
View Simulator::action() { return backend_->action(); }
View Simulator::status() { return backend_->status(); }
View Simulator::time() { return backend_->time(); }
View Simulator::contact_gap() { return backend_->contact_gap(); }
View Simulator::contact_impulse() { return backend_->contact_impulse(); }
View Simulator::contact_active() { return backend_->contact_active(); }
View Simulator::solver_iterations() { return backend_->solver_iterations(); }
View Simulator::solver_residual() { return backend_->solver_residual(); }
int Simulator::substeps() const { return backend_->substeps(); }
View Simulator::param(const std::string& name) { return backend_->param(name); }
std::vector<std::string> Simulator::param_names() const { return backend_->param_names(); }

void Simulator::set_param(const std::string& name, const double* values, int len, int width) {
  if (len > 0 && width > 0) require(values, "set_param", "values");
  backend_->set_param(name, values, len, width);
}

void Simulator::set_state(const double* q, const double* v, int n_env) {
  check_n_env("set_state", this->n_env(), n_env);
  require(q, "set_state", "q");
  require(v, "set_state", "v");
  backend_->set_state(q, v);
}
void Simulator::get_state(double* q, double* v, int n_env) const {
  check_n_env("get_state", this->n_env(), n_env);
  require(q, "get_state", "q");
  require(v, "get_state", "v");
  backend_->get_state(q, v);
}
void Simulator::set_action(const double* action, int n_env) {
  check_n_env("set_action", this->n_env(), n_env);
  require(action, "set_action", "action", model().nu);
  backend_->set_action(action);
}
void Simulator::get_status(int32_t* status, int n_env) const {
  check_n_env("get_status", this->n_env(), n_env);
  require(status, "get_status", "status");
  backend_->get_status(status);
}

void Simulator::step(int k) { backend_->step(k); }
void Simulator::step_pure(const void* q_in, const void* v_in, const void* action, void* q_out, void* v_out,
                          int32_t* status) {
  for (const auto& [p, arg] : {std::pair<const void*, const char*>{q_in, "q_in"}, {v_in, "v_in"}, {q_out, "q_out"},
                               {v_out, "v_out"}, {status, "status"}})
    require(p, "step_pure", arg);
  require(action, "step_pure", "action", model().nu);
  backend_->step_pure(q_in, v_in, action, q_out, v_out, status);
}
void Simulator::step_adjoint(const void* q_in, const void* v_in, const void* action, const void* adj_q_out,
                             const void* adj_v_out, const Gradients& grads, int32_t* status, bool accumulate) {
  check_adjoint_inputs("step_adjoint", model().nu, q_in, v_in, action, adj_q_out, adj_v_out, status);
  backend_->step_adjoint(q_in, v_in, action, 1, adj_q_out, adj_v_out, grads, status, accumulate);
}
void Simulator::step_adjoint_rows(const void* q_in, const void* v_in, const void* action, int rows,
                                  const void* adj_q_out, const void* adj_v_out, const Gradients& grads,
                                  int32_t* status) {
  check_adjoint_inputs("step_adjoint_rows", model().nu, q_in, v_in, action, adj_q_out, adj_v_out, status);
  if (rows < 1) throw Error("step_adjoint_rows: rows: expected >= 1, got " + std::to_string(rows));
  backend_->step_adjoint(q_in, v_in, action, rows, adj_q_out, adj_v_out, grads, status, false);
}
void Simulator::rollout(int horizon, const void* actions) {
  require(actions, "rollout", "actions", model().nu);
  backend_->rollout(horizon, actions);
}
void Simulator::rollout_backward(void* adj_q, void* adj_v, void* adj_actions, const Gradients& params) {
  require(adj_q, "rollout_backward", "adj_q");
  require(adj_v, "rollout_backward", "adj_v");
  require(adj_actions, "rollout_backward", "adj_actions", model().nu);
  backend_->rollout_backward(adj_q, adj_v, adj_actions, params);
}
int Simulator::rollout_horizon() const { return backend_->rollout_horizon(); }
void Simulator::reset(const int32_t* env_ids, int count) {
  if (count < 0) throw Error("reset: count: expected >= 0, got " + std::to_string(count));
  if (count > 0) require(env_ids, "reset", "env_ids");
  backend_->reset(env_ids, count);
}
void Simulator::reset_where(const uint8_t* mask) {
  require(mask, "reset_where", "mask");
  backend_->reset_where(mask);
}
void Simulator::reset_all() {
  std::vector<int32_t> ids(n_env());
  std::iota(ids.begin(), ids.end(), 0);
  backend_->reset(ids.data(), n_env());
}
void Simulator::synchronize() { backend_->synchronize(); }

}  // namespace moreau
