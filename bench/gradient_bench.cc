// moreau-bench-gradient: the cost of gradients (issue "Hand-written adjoints").
//
//   moreau-bench-gradient [--robot FILE] [--envs N,N,...] [--threads K] [--seconds T]
//                         [--trials N] [--device cpu|cuda|all] [--json-out FILE]
//                         [--contact none|hard|soft|smooth|hard_smooth_grad|all] [--horizon H]
//                         [--memory-envs N] [--centered]
//
// 1. Throughput: forward (Simulator::step_pure) against forward+backward (step_pure, then
//    step_adjoint on the same inputs) per control step, in environment-steps/s counting
//    PHYSICS steps (a control step is `decimation` of them), CPU float32 and float64 and CUDA
//    float32 when present. The two are timed in alternation (fwd, fwd+bwd, fwd, ...), and the
//    ratio (fwd+bwd time) / (fwd time) is checked against ≤ 3. Every call uses the same
//    inputs: without contact the default state (servos holding the default pose, at rest);
//    with contact the robot standing, settled for 1 s from the default state (one float64
//    environment, copied to all).
// 2. Rollout memory: Simulator::rollout over H control steps (default 32) at --memory-envs
//    (default 4096) environments: the bytes it keeps per environment and control step
//    ((nq + nv + nu) × sizeof(dtype)), its fixed part (one more boundary state and a status per
//    environment), and the measured growth of the process RSS (VmRSS) across the call; the
//    transient peak (VmHWM) of rollout_backward, with the caller's adjoint buffers allocated
//    beforehand. CUDA: the device memory taken (cudaMemGetInfo), after one control step has
//    reserved the forward kernel's local memory.
// 3. Against MuJoCo's mjd_transitionFD (finite-difference transition Jacobians of one mj_step,
//    A (2nv x 2nv), B (2nv x nu); forward differences, eps 1e-6, unless --centered) on
//    export_mjcf(model) (with contact: the ground plane and colliding feet of
//    moreau-bench-forward), same timestep, one thread, in the same state. moreau runs with
//    SimulatorOptions::decimation = 1, so one call is one physics step on both sides:
//    (a) the one-step adjoint (step_adjoint: one vector–Jacobian product),
//    (b) the analytic transition Jacobians transition_jacobians_tangent (2nv x 2nv and B),
//    per environment (call time / n_env), one thread, interleaved with MuJoCo. Targets:
//    mjd time / adjoint time ≥ 20, mjd time / Jacobian time > 1 (float64, 256 environments).
//    Without contact it also reports how far moreau's A and B are from MuJoCo's (the
//    integrators differ, so this is a sanity check, not a test).
//
// Prints a table and one line "JSON {...}" (--json-out writes it to a file too).
// Exit status: 0; 1 when a measured target fails or an environment ends with a fatal or
// no-gradient status; 2 on bad arguments or an error.
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <mujoco/mujoco.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "moreau/derivatives.h"
#include "moreau/model.h"
#include "moreau/simulator.h"

namespace {

using namespace bench;
using moreau::DType;
using moreau::Device;
using nlohmann::json;

constexpr double kFwdBwdTargetRatio = 3.0;  // (fwd+bwd time) / (fwd time) ≤ this
constexpr double kAdjointTargetSpeedup = 20;  // mjd_transitionFD time / one-step adjoint time ≥ this
constexpr double kJacobianTargetSpeedup = 1;  // mjd_transitionFD time / transition Jacobian time > this
constexpr int kGpuTargetEnvs = 16384;
constexpr double kGpuTargetRate = 10e6;  // fwd+bwd env-steps/s at ≥ kGpuTargetEnvs
constexpr int kCompareEnvs = 256;        // the main per-environment figure against MuJoCo
constexpr int32_t kBadStatus = moreau::kStatusFatal | moreau::kStatusNoGradient | moreau::kStatusNanGradient;

struct Options : CommonOptions {
  Options() {
    seconds = 0.3;
    contact = parse_contact_list("all");
  }
  int horizon = 32;
  int memory_envs = 4096;
  bool centered = false;
  double eps = 1e-6;
};

void usage() {
  std::puts(
      "usage: moreau-bench-gradient [--robot FILE] [--envs N,N,...] [--threads K] [--seconds T]\n"
      "                             [--trials N] [--device cpu|cuda|all] [--json-out FILE]\n"
      "                             [--contact none|hard|soft|smooth|hard_smooth_grad|all] [--horizon H]\n"
      "                             [--memory-envs N] [--centered] [--mujoco-peer PATH|none]\n"
      "                             [--cuda-block B,B,...] [--cuda-team T,T]\n"
      "  --envs         default: CPU 1,256,4096; CUDA 4096,16384,65536\n"
      "  --threads      CPU threads for the throughput rows (default all); MuJoCo comparison: 1\n"
      "  --seconds      one timed run (default 0.3); --trials runs per figure (default 5)\n"
      "  --contact      default all: none,hard,soft,smooth,hard_smooth_grad\n"
      "  --horizon      recorded rollout length for the memory figures (default 32)\n"
      "  --memory-envs  environments of the memory figures (default 4096)\n"
      "  --centered     central differences in mjd_transitionFD (default: forward, like MuJoCo's)\n"
      "  --mujoco-peer  PATH|none: the second MuJoCo's mjd_transitionFD, run between the comparison's\n"
      "                 trials (default moreau-mujoco-peer, MuJoCo's current release, when built)\n"
      "  --cuda-block   CUDA threads per block, one row each (default 128; multiples of 32 up to 256)\n"
      "  --cuda-team    CUDA lanes per environment, one row each: 0 one thread (default), 8 the team\n"
      "                 layout (SimulatorOptions::cuda_team)");
}

size_t dtype_size(DType dt) { return dt == DType::Float64 ? 8 : 4; }

// ---- buffers on the simulator's device -------------------------------------------------

class Buffer {
 public:
  Buffer(Device dev, size_t bytes) : dev_(dev), bytes_(std::max<size_t>(bytes, 8)) {
    if (dev_ == Device::CUDA) {
#ifdef MOREAU_WITH_CUDA
      if (cudaMalloc(&p_, bytes_) != cudaSuccess) throw moreau::Error("cudaMalloc failed");
      cudaMemset(p_, 0, bytes_);
#else
      throw moreau::Error("built without CUDA");
#endif
    } else {
      host_.assign((bytes_ + 7) / 8, 0.0);
      p_ = host_.data();
    }
  }
  ~Buffer() {
#ifdef MOREAU_WITH_CUDA
    if (dev_ == Device::CUDA) cudaFree(p_);
#endif
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() { return p_; }
  template <class T>
  T* as() {
    return static_cast<T*>(p_);
  }
  void upload(const std::vector<char>& src) {
    if (src.size() > bytes_) throw moreau::Error("Buffer::upload: too large");
#ifdef MOREAU_WITH_CUDA
    if (dev_ == Device::CUDA) {
      cudaMemcpy(p_, src.data(), src.size(), cudaMemcpyHostToDevice);
      return;
    }
#endif
    std::memcpy(p_, src.data(), src.size());
  }
  void download(void* dst, size_t bytes) const {
#ifdef MOREAU_WITH_CUDA
    if (dev_ == Device::CUDA) {
      cudaMemcpy(dst, p_, bytes, cudaMemcpyDeviceToHost);
      return;
    }
#endif
    std::memcpy(dst, p_, bytes);
  }

 private:
  Device dev_;
  size_t bytes_;
  void* p_ = nullptr;
  std::vector<double> host_;
};

// `row` (width w) for every one of n environments, field-major (k * n + e), in dtype dt; `reps`
// copies one after another (a step-major (reps x n x w) block).
std::vector<char> field_major(const std::vector<double>& row, int n, DType dt, int reps = 1) {
  const size_t w = row.size(), one = w * n;
  std::vector<char> out(one * reps * dtype_size(dt));
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < w; ++k)
      for (int e = 0; e < n; ++e) {
        const size_t i = r * one + k * n + e;
        if (dt == DType::Float64) {
          reinterpret_cast<double*>(out.data())[i] = row[k];
        } else {
          reinterpret_cast<float*>(out.data())[i] = static_cast<float>(row[k]);
        }
      }
  return out;
}

// The inputs of every timed call: (q, v) standing (settled) with contact, the default state
// without; the action holding the default pose (like Simulator::reset).
struct Inputs {
  std::vector<double> q, v, u;
};
Inputs bench_inputs(const moreau::Model& model, ContactMode mode) {
  Inputs in;
  const Settled& s = settled_state(model, mode);
  in.q = s.q.empty() ? std::vector<double>(model.qpos0.begin(), model.qpos0.end()) : s.q;
  in.v = s.v.empty() ? std::vector<double>(model.nv, 0.0) : s.v;
  in.u.resize(model.nu);
  for (int a = 0; a < model.nu; ++a)
    in.u[a] = model.actuator_type[a] == static_cast<int>(moreau::ActuatorType::Position)
                  ? model.actuator_gear[a] * model.qpos0[model.actuator_qposadr[a]]
                  : 0.0;
  return in;
}

// step_pure / step_adjoint of every environment on the same inputs, with buffers of its own.
class PureRunner {
 public:
  PureRunner(const moreau::Model& model, const moreau::SimulatorOptions& so, const Inputs& in)
      : sim_(model, so),
        n_(so.n_env),
        q_in_(so.device, bytes(model.nq)),
        v_in_(so.device, bytes(model.nv)),
        u_(so.device, bytes(model.nu)),
        q_out_(so.device, bytes(model.nq)),
        v_out_(so.device, bytes(model.nv)),
        adj_q_(so.device, bytes(model.nq)),
        adj_v_(so.device, bytes(model.nv)),
        g_q_(so.device, bytes(model.nq)),
        g_v_(so.device, bytes(model.nv)),
        g_u_(so.device, bytes(model.nu)),
        status_(so.device, sizeof(int32_t) * n_) {
    q_in_.upload(field_major(in.q, n_, so.dtype));
    v_in_.upload(field_major(in.v, n_, so.dtype));
    u_.upload(field_major(in.u, n_, so.dtype));
    // a loss that touches every output: L = Σ 0.01 q_out + Σ 0.01 v_out
    adj_q_.upload(field_major(std::vector<double>(model.nq, 0.01), n_, so.dtype));
    adj_v_.upload(field_major(std::vector<double>(model.nv, 0.01), n_, so.dtype));
    grads_.q = g_q_.data();
    grads_.v = g_v_.data();
    grads_.action = g_u_.data();
  }
  void forward() { sim_.step_pure(q_in_.data(), v_in_.data(), u_.data(), q_out_.data(), v_out_.data(), status()); }
  void backward() {
    sim_.step_adjoint(q_in_.data(), v_in_.data(), u_.data(), adj_q_.data(), adj_v_.data(), grads_, status());
  }
  void forward_backward() {
    forward();
    backward();
  }
  void sync() { sim_.synchronize(); }
  // Environments whose last call ended with a fatal or no-gradient status.
  int bad() const {
    std::vector<int32_t> st(n_);
    status_.download(st.data(), sizeof(int32_t) * n_);
    return static_cast<int>(std::count_if(st.begin(), st.end(), [](int32_t s) { return (s & kBadStatus) != 0; }));
  }
  double env_steps_per_call() const { return static_cast<double>(n_) * sim_.model().decimation; }
  moreau::Simulator& sim() { return sim_; }
  const void* q_in() { return q_in_.data(); }
  const void* v_in() { return v_in_.data(); }
  const void* u() { return u_.data(); }

 private:
  size_t bytes(int width) const { return static_cast<size_t>(n_) * width * dtype_size(sim_.options().dtype); }
  int32_t* status() { return status_.as<int32_t>(); }

  moreau::Simulator sim_;
  int n_;
  Buffer q_in_, v_in_, u_, q_out_, v_out_, adj_q_, adj_v_, g_q_, g_v_, g_u_;
  mutable Buffer status_;
  moreau::Simulator::Gradients grads_;
};

struct Row {
  std::string contact, device, dtype;
  int threads = 0, n_env = 0;  // threads: CPU threads, or CUDA threads per block
  int team = 0;                // CUDA lanes per environment (0: one thread each)
  std::vector<double> fwd, fwdbwd;  // env-steps/s of each trial
  int bad = 0;                      // environments with a fatal / no-gradient status
  double ratio() const { return median(fwd) / median(fwdbwd); }  // time ratio
};

Row bench_row(const moreau::Model& model, const moreau::SimulatorOptions& so, const Inputs& in, const Options& o) {
  PureRunner r(model, so, in);
  const int batch = so.device == Device::CUDA ? 8 : 1;
  auto fwd = [&] { r.forward(); };
  auto fb = [&] { r.forward_backward(); };
  auto sync = [&] { r.sync(); };
  calls_per_second(fwd, sync, o.seconds / 4, batch);  // warm-up
  calls_per_second(fb, sync, o.seconds / 4, batch);
  Row row{moreau::contact_mode_name(so.contact.mode), moreau::device_name(so.device), moreau::dtype_name(so.dtype),
          so.device == Device::CUDA ? cuda_block_of(so) : so.n_threads, so.n_env, so.cuda_team, {}, {}, 0};
  for (int t = 0; t < o.trials; ++t) {
    row.fwd.push_back(calls_per_second(fwd, sync, o.seconds, batch) * r.env_steps_per_call());
    row.fwdbwd.push_back(calls_per_second(fb, sync, o.seconds, batch) * r.env_steps_per_call());
  }
  row.bad = r.bad();
  return row;
}

void print_row(const Row& r) {
  const std::string threads = std::to_string(r.threads) + (r.device == "cpu" ? "" : "/blk") +
                              (r.team ? " t" + std::to_string(r.team) : "");
  const bool pass = r.ratio() <= kFwdBwdTargetRatio;
  std::printf("%-16s %-4s %-7s %7s %6d %12.4g %12.4g %11.0f %11.0f %6.2f %4s %3.0f%%/%3.0f%%%s\n", r.contact.c_str(),
              r.device.c_str(), r.dtype.c_str(), threads.c_str(), r.n_env, median(r.fwd), median(r.fwdbwd),
              1e9 / median(r.fwd), 1e9 / median(r.fwdbwd), r.ratio(), pass ? "PASS" : "FAIL", 100 * spread(r.fwd),
              100 * spread(r.fwdbwd),
              r.bad ? (" (" + std::to_string(r.bad) + " envs with a bad status!)").c_str() : "");
  std::fflush(stdout);
}

// ---- memory -----------------------------------------------------------------------------

// A field of /proc/self/status in bytes (VmRSS, VmHWM); -1 if missing.
long long proc_status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  const std::string key = std::string(field) + ":";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + key.size()) * 1024;
  return -1;
}
// Resets VmHWM to the current RSS (Linux ≥ 4.0); false if not allowed.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

long long device_used_bytes(Device dev) {
#ifdef MOREAU_WITH_CUDA
  if (dev == Device::CUDA) {
    size_t free_b = 0, total_b = 0;
    cudaDeviceSynchronize();
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) return static_cast<long long>(total_b - free_b);
  }
#else
  (void)dev;
#endif
  return -1;
}

json bench_memory(const moreau::Model& model, Device dev, DType dt, const Options& o) {
  const int n = o.memory_envs, H = o.horizon, nq = model.nq, nv = model.nv, nu = model.nu;
  const size_t S = dtype_size(dt);
  moreau::SimulatorOptions so;
  so.n_env = n;
  so.device = dev;
  so.dtype = dt;
  so.n_threads = o.threads;
  so.contact.mode = ContactMode::Hard;
  moreau::Simulator sim(model, so);
  // CUDA: the driver reserves local memory for the resident threads at a kernel's first launch
  // (2,304 MiB for ANYmal's forward on an H200): one control step first, so that the rollout's
  // measurement holds the rollout's memory alone (the state is set below)
  if (dev == Device::CUDA) {
    sim.step(1);
    sim.synchronize();
  }
  const Inputs in = bench_inputs(model, ContactMode::Hard);
  std::vector<double> q(static_cast<size_t>(n) * nq), v(static_cast<size_t>(n) * nv);
  for (int e = 0; e < n; ++e) {
    std::copy(in.q.begin(), in.q.end(), q.begin() + static_cast<size_t>(e) * nq);
    std::copy(in.v.begin(), in.v.end(), v.begin() + static_cast<size_t>(e) * nv);
  }
  sim.set_state(q.data(), v.data(), n);
  Buffer actions(dev, static_cast<size_t>(H) * n * nu * S);
  actions.upload(field_major(in.u, n, dt, H));
  // the caller's buffers of rollout_backward, allocated (and touched) before measuring
  Buffer adj_q(dev, static_cast<size_t>(H + 1) * n * nq * S), adj_v(dev, static_cast<size_t>(H + 1) * n * nv * S),
      adj_u(dev, static_cast<size_t>(H) * n * nu * S), g_kp(dev, static_cast<size_t>(n) * nu * S),
      g_kd(dev, static_cast<size_t>(n) * nu * S);
  {  // loss on the final state only: ∂L/∂(state H) = 0.01, zero elsewhere
    std::vector<double> zq(nq, 0.0), zv(nv, 0.0), oq(nq, 0.01), ov(nv, 0.01);
    std::vector<char> bq = field_major(zq, n, dt, H + 1), bv = field_major(zv, n, dt, H + 1);
    const std::vector<char> lq = field_major(oq, n, dt), lv = field_major(ov, n, dt);
    std::copy(lq.begin(), lq.end(), bq.end() - lq.size());
    std::copy(lv.begin(), lv.end(), bv.end() - lv.size());
    adj_q.upload(bq);
    adj_v.upload(bv);
  }
  moreau::Simulator::Gradients params;
  params.kp = g_kp.data();
  params.kd = g_kd.data();
  sim.synchronize();

  const long long rss0 = proc_status_bytes("VmRSS"), dev0 = device_used_bytes(dev);
  auto t0 = Clock::now();
  sim.rollout(H, actions.data());
  sim.synchronize();
  const double t_fwd = seconds_since(t0);
  const long long rss1 = proc_status_bytes("VmRSS"), dev1 = device_used_bytes(dev);
  const bool peak_ok = reset_peak_rss();
  t0 = Clock::now();
  sim.rollout_backward(adj_q.data(), adj_v.data(), adj_u.data(), params);
  sim.synchronize();
  const double t_bwd = seconds_since(t0);
  const long long rss2 = proc_status_bytes("VmRSS"), hwm2 = proc_status_bytes("VmHWM");
  std::vector<int32_t> st(n);
  sim.get_status(st.data(), n);
  const int bad = static_cast<int>(std::count_if(st.begin(), st.end(), [](int32_t s) { return (s & kBadStatus) != 0; }));

  const double per_step = static_cast<double>(nq + nv + nu) * S;       // per env per control step
  const double fixed = static_cast<double>(nq + nv) * S + sizeof(int32_t);  // per env: state H, status
  const double analytic = (H * per_step + fixed) * n;
  const double steps = static_cast<double>(H) * n;
  json j = {{"device", moreau::device_name(dev)},
            {"dtype", moreau::dtype_name(dt)},
            {"n_env", n},
            {"horizon", H},
            {"bytes_per_env_control_step", per_step},
            {"bytes_per_env_physics_step", per_step / model.decimation},
            {"fixed_bytes_per_env", fixed},
            {"analytic_total_bytes", analytic},
            {"analytic_bytes_per_env_control_step_incl_fixed", analytic / steps},
            {"caller_backward_buffers_bytes", static_cast<double>((H + 1) * (nq + nv) + H * nu) * S * n},
            {"rollout_s", t_fwd},
            {"rollout_backward_s", t_bwd},
            {"rollout_env_steps_per_s", steps * model.decimation / t_fwd},
            {"rollout_backward_env_steps_per_s", steps * model.decimation / t_bwd},
            {"bad_status_envs", bad}};
  if (dev == Device::CPU) {
    j["threads"] = o.threads;
    j["measured_rss_growth_bytes"] = rss1 - rss0;
    j["measured_bytes_per_env_control_step"] = (rss1 - rss0) / steps;
    j["measured_over_analytic"] = (rss1 - rss0) / analytic;
    j["rss_after_backward_minus_after_rollout_bytes"] = rss2 - rss1;
    if (peak_ok) j["backward_transient_peak_bytes"] = hwm2 - rss1;
  } else if (dev0 >= 0 && dev1 >= 0) {
    j["measured_device_growth_bytes"] = dev1 - dev0;
    j["measured_over_analytic"] = (dev1 - dev0) / analytic;
  }
  return j;
}

void print_memory(const json& j) {
  std::printf("%-4s %-7s %6d %3d %10.0f %9.0f %12.0f", j["device"].get<std::string>().c_str(),
              j["dtype"].get<std::string>().c_str(), j["n_env"].get<int>(), j["horizon"].get<int>(),
              j["bytes_per_env_control_step"].get<double>(), j["fixed_bytes_per_env"].get<double>(),
              j["analytic_total_bytes"].get<double>());
  const char* key = j.contains("measured_rss_growth_bytes") ? "measured_rss_growth_bytes" : "measured_device_growth_bytes";
  if (j.contains(key)) {
    std::printf(" %12lld %7.3f", j[key].get<long long>(), j["measured_over_analytic"].get<double>());
  } else {
    std::printf(" %12s %7s", "n/a", "n/a");
  }
  if (j.contains("backward_transient_peak_bytes")) {
    std::printf(" %12lld", j["backward_transient_peak_bytes"].get<long long>());
  } else {
    std::printf(" %12s", "n/a");
  }
  std::printf(" %10.3g %10.3g\n", j["rollout_env_steps_per_s"].get<double>(),
              j["rollout_backward_env_steps_per_s"].get<double>());
  std::fflush(stdout);
}

// ---- against mjd_transitionFD -----------------------------------------------------------

struct MjdComparison {
  std::vector<double> mjd;  // mjd_transitionFD calls/s
  PeerTrials peer;          // --mujoco-peer: its mjd_transitionFD calls/s, one per trial
  // per-environment calls/s: adjoint and Jacobians, float64 at 1 and kCompareEnvs envs, float32 at kCompareEnvs
  std::vector<double> adj64_1, adj64_n, adj32_n, jac64_1, jac64_n, jac32_n;
  int bad = 0;
  json agreement;  // without contact: moreau's A, B against MuJoCo's
};

double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// transition_jacobians_tangent of every environment of a PureRunner (decimation 1).
class JacobianRunner {
 public:
  JacobianRunner(const moreau::Model& model, const moreau::SimulatorOptions& so, const Inputs& in)
      : r_(model, so, in),
        A_(so.device, static_cast<size_t>(so.n_env) * 4 * model.nv * model.nv * dtype_size(so.dtype)),
        B_(so.device, static_cast<size_t>(so.n_env) * 2 * model.nv * model.nu * dtype_size(so.dtype)),
        status_(so.n_env) {}
  void call() {
    moreau::transition_jacobians_tangent(r_.sim(), r_.q_in(), r_.v_in(), r_.u(), A_.data(), B_.data(),
                                         status_.data());
  }
  int bad() const {
    return static_cast<int>(
        std::count_if(status_.begin(), status_.end(), [](int32_t s) { return (s & kBadStatus) != 0; }));
  }
  const double* A() { return A_.as<double>(); }  // float64 only
  const double* B() { return B_.as<double>(); }

 private:
  PureRunner r_;
  Buffer A_, B_;
  std::vector<int32_t> status_;
};

MjdComparison compare_with_mjd(const moreau::Model& model, ContactMode mode, const Options& o) {
  const Inputs in = bench_inputs(model, mode);
  auto options = [&](DType dt, int n) {
    moreau::SimulatorOptions so;
    so.n_env = n;
    so.dtype = dt;
    so.n_threads = 1;
    so.decimation = 1;  // one physics step, like mjd_transitionFD's one mj_step
    so.contact.mode = mode;
    return so;
  };
  PureRunner adj64_1(model, options(DType::Float64, 1), in), adj64_n(model, options(DType::Float64, kCompareEnvs), in),
      adj32_n(model, options(DType::Float32, kCompareEnvs), in);
  JacobianRunner jac64_1(model, options(DType::Float64, 1), in),
      jac64_n(model, options(DType::Float64, kCompareEnvs), in), jac32_n(model, options(DType::Float32, kCompareEnvs), in);

  MujocoRunner mj(model, mode);
  mj.reset();
  const mjModel* m = mj.m();
  mjData* d = mj.d();
  const int nx = 2 * m->nv + m->na;
  std::vector<double> A(static_cast<size_t>(nx) * nx), B(static_cast<size_t>(nx) * m->nu);
  const mjtByte centered = o.centered ? 1 : 0;

  MjdComparison c;
  auto none = [] {};
  auto mjd = [&] { mjd_transitionFD(m, d, o.eps, centered, A.data(), B.data(), nullptr, nullptr); };
  auto run = [&](const std::function<void()>& f, double seconds, int n) { return calls_per_second(f, none, seconds, 1) * n; };
  std::vector<std::pair<std::function<void()>, int>> ours = {
      {[&] { adj64_1.backward(); }, 1},         {[&] { adj64_n.backward(); }, kCompareEnvs},
      {[&] { adj32_n.backward(); }, kCompareEnvs}, {[&] { jac64_1.call(); }, 1},
      {[&] { jac64_n.call(); }, kCompareEnvs},  {[&] { jac32_n.call(); }, kCompareEnvs}};
  std::vector<std::vector<double>*> out = {&c.adj64_1, &c.adj64_n, &c.adj32_n, &c.jac64_1, &c.jac64_n, &c.jac32_n};
  run(mjd, o.seconds / 4, 1);  // warm-up
  for (auto& f : ours) run(f.first, o.seconds / 8, f.second);
  for (int t = 0; t < o.trials; ++t) {
    c.mjd.push_back(run(mjd, o.seconds, 1));
    for (int k = 0; k < 3; ++k) out[k]->push_back(run(ours[k].first, o.seconds, ours[k].second));
    c.mjd.push_back(run(mjd, o.seconds, 1));
    for (int k = 3; k < 6; ++k) out[k]->push_back(run(ours[k].first, o.seconds, ours[k].second));
    if (!o.mujoco_peer.empty())
      c.peer.run(o, mode, "transition_fd", "--eps " + json(o.eps).dump() + (o.centered ? " --centered" : ""));
  }
  c.bad = adj64_1.bad() + adj64_n.bad() + adj32_n.bad() + jac64_1.bad() + jac64_n.bad() + jac32_n.bad();

  if (mode == ContactMode::None && m->na == 0 && m->nv == model.nv && m->nu == model.nu) {
    // the same state on both sides (the default one): compare the Jacobians
    mjd_transitionFD(m, d, o.eps, 1, A.data(), B.data(), nullptr, nullptr);  // centered, for accuracy
    jac64_1.call();
    const std::vector<double> ours_A(jac64_1.A(), jac64_1.A() + nx * nx), ours_B(jac64_1.B(), jac64_1.B() + nx * m->nu);
    c.agreement = {{"state", "default pose at rest, no contact"},
                   {"A_rel_frobenius_diff", rel_diff(ours_A, A)},
                   {"B_rel_frobenius_diff", rel_diff(ours_B, B)},
                   {"note", "MuJoCo: Euler (implicit damping) with centered FD, eps 1e-6; moreau: its own "
                            "midpoint step, analytic. Different integrators: expect O(h) differences."}};
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  // Fixed mmap threshold: every large buffer is its own mapping, so RSS follows allocations
  // (a dynamic threshold would let freed large blocks be reused from the heap unseen).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  Options o;
  const std::string command = command_line(argc, argv);
  try {
    for (int i = 1; i < argc; ++i) {
      if (parse_common_option(argc, argv, i, o)) continue;
      const std::string a = argv[i];
      const bool has_value = i + 1 < argc;
      if (a == "--horizon" && has_value) {
        o.horizon = std::atoi(argv[++i]);
        if (o.horizon < 1) throw moreau::Error("--horizon: expected >= 1");
      } else if (a == "--memory-envs" && has_value) {
        o.memory_envs = std::atoi(argv[++i]);
        if (o.memory_envs < 1) throw moreau::Error("--memory-envs: expected >= 1");
      } else if (a == "--centered") {
        o.centered = true;
      } else {
        usage();
        return a == "--help" || a == "-h" ? 0 : 2;
      }
    }
    if (o.threads <= 0) o.threads = static_cast<int>(std::thread::hardware_concurrency());
    const std::vector<ContactMode>& modes = o.contact;

    const moreau::Model model = moreau::load_model(o.robot);
    const bool cuda = o.cuda && moreau::cuda_available();
    const std::string gpu = cuda ? gpu_name(0) : "";
    std::printf("moreau-bench-gradient: %s (nq %d, nv %d, nu %d), h = %g s, decimation %d | %s, %u hardware threads%s%s\n",
                model.name.c_str(), model.nq, model.nv, model.nu, model.timestep, model.decimation,
                cpu_model().c_str(), std::thread::hardware_concurrency(), cuda ? " | GPU " : "", gpu.c_str());

    json out = json_header("gradient", model, o, command);
    out["memory"] = json::array();
    if (cuda) out["machine"]["gpu"] = gpu;
    bool failed = false;
    auto target = [&](json t, bool pass) {
      t["result"] = pass ? "PASS" : "FAIL";
      failed |= !pass;
      out["targets"].push_back(t);
    };

    // 2. memory first, in a fresh process heap
    std::printf("\nRecorded rollout memory (H = %d, %d envs; contact hard, standing): kept bytes per env per control step\n"
                "= (nq + nv + nu) x sizeof; fixed per env = one more state + status; measured = VmRSS growth across rollout()\n",
                o.horizon, o.memory_envs);
    std::printf("%-4s %-7s %6s %3s %10s %9s %12s %12s %7s %12s %10s %10s\n", "dev", "dtype", "n_env", "H", "B/env-step",
                "fixed B", "analytic B", "measured B", "meas/an", "bwd peak B", "roll st/s", "bwd st/s");
    if (o.cpu)
      for (const DType dt : {DType::Float32, DType::Float64}) {
        out["memory"].push_back(bench_memory(model, Device::CPU, dt, o));
        print_memory(out["memory"].back());
      }
    if (cuda) {
      out["memory"].push_back(bench_memory(model, Device::CUDA, DType::Float32, o));
      print_memory(out["memory"].back());
    }
    for (const json& j : out["memory"]) failed |= j["bad_status_envs"].get<int>() != 0;

    // 1. throughput
    std::printf("\nForward (step_pure) vs forward+backward (step_pure + step_adjoint), same inputs every call;\n"
                "env-steps/s (physics steps), median of %d runs of %g s, alternating; ratio = fwd+bwd time / fwd time "
                "(target <= %.0f)\n",
                o.trials, o.seconds, kFwdBwdTargetRatio);
    std::printf("%-16s %-4s %-7s %7s %6s %12s %12s %11s %11s %6s %4s %s\n", "contact", "dev", "dtype", "threads",
                "n_env", "fwd st/s", "fwd+bwd st/s", "fwd ns/st", "f+b ns/st", "ratio", "", "spread");
    std::vector<Row> rows;
    for (const ContactMode mode : modes) {
      const Inputs in = bench_inputs(model, mode);
      if (o.cpu)
        for (const DType dt : {DType::Float32, DType::Float64})
          for (const int n : o.envs.empty() ? std::vector<int>{1, 256, 4096} : o.envs) {
            moreau::SimulatorOptions so;
            so.n_env = n;
            so.dtype = dt;
            so.n_threads = o.threads;
            so.contact.mode = mode;
            rows.push_back(bench_row(model, so, in, o));
            print_row(rows.back());
          }
      if (cuda)
        for (const int n : o.envs.empty() ? std::vector<int>{4096, 16384, 65536} : o.envs)
          for (const int team : o.cuda_teams)
            for (const int block : o.cuda_blocks) {
              moreau::SimulatorOptions so;
              so.n_env = n;
              so.device = Device::CUDA;
              so.cuda_block = block;
              so.cuda_team = team;
              so.contact.mode = mode;
              rows.push_back(bench_row(model, so, in, o));
              print_row(rows.back());
            }
    }
    if (!cuda) std::printf("CUDA: not measured (%s)\n", moreau::cuda_available() ? "not requested" : "no GPU");
    for (const Row& r : rows) {
      out["rows"].push_back({{"contact", r.contact},
                             {"device", r.device},
                             {"dtype", r.dtype},
                             {"n_env", r.n_env},
                             {"threads", r.device == "cpu" ? json(r.threads) : json(nullptr)},
                             {"threads_per_block", r.device == "cpu" ? json(nullptr) : json(r.threads)},
                             {"lanes_per_env", r.device == "cpu" ? json(nullptr) : json(std::max(r.team, 1))},
                             {"fwd_env_steps_per_s", median(r.fwd)},
                             {"fwdbwd_env_steps_per_s", median(r.fwdbwd)},
                             {"fwd_ns_per_env_step", 1e9 / median(r.fwd)},
                             {"fwdbwd_ns_per_env_step", 1e9 / median(r.fwdbwd)},
                             {"ratio_fwdbwd_over_fwd", r.ratio()},
                             {"trials_fwd_env_steps_per_s", r.fwd},
                             {"trials_fwdbwd_env_steps_per_s", r.fwdbwd},
                             {"bad_status_envs", r.bad}});
      failed |= r.bad != 0;
      target({{"name", "fwdbwd_over_fwd_time"},
              {"contact", r.contact},
              {"device", r.device},
              {"dtype", r.dtype},
              {"n_env", r.n_env},
              {"limit", kFwdBwdTargetRatio},
              {"value", r.ratio()}},
             r.ratio() <= kFwdBwdTargetRatio);
    }
    for (const ContactMode mode : modes) {
      const char* name = moreau::contact_mode_name(mode);
      double best = 0;
      for (const Row& r : rows)
        if (r.contact == name && r.device == "cuda" && r.n_env >= kGpuTargetEnvs) best = std::max(best, median(r.fwdbwd));
      json t = {{"name", "gpu_fwdbwd_env_steps_per_s"}, {"contact", name}, {"limit", kGpuTargetRate},
                {"min_envs", kGpuTargetEnvs}, {"value", best}};
      if (!cuda || best == 0) {
        t["result"] = !cuda ? "not measured (no GPU)" : "not measured (no run at >= 16384 envs)";
        out["targets"].push_back(t);
        std::printf("target: GPU fwd+bwd, contact %s: >= 10 M env-steps/s at >= %d envs: %s\n", name, kGpuTargetEnvs,
                    t["result"].get<std::string>().c_str());
      } else {
        target(t, best >= kGpuTargetRate);
        std::printf("target: GPU fwd+bwd, contact %s: >= 10 M env-steps/s at >= %d envs: %s (%.1f M on %s)\n", name,
                    kGpuTargetEnvs, best >= kGpuTargetRate ? "PASS" : "FAIL", best / 1e6, gpu.c_str());
      }
    }

    // 3. against mjd_transitionFD
    out["mujoco"] = {{"version", mj_versionString()},
                     {"mjd_transitionFD", {{"eps", o.eps}, {"centered", o.centered}}},
                     {"moreau_decimation", 1},
                     {"comparisons", json::array()}};
    if (o.cpu) {
      std::printf("\nMuJoCo %s mjd_transitionFD (eps %g, %s differences; A %dx%d, B %dx%d) vs moreau, one physics step\n"
                  "(moreau decimation 1), 1 thread, interleaved; moreau figures per environment (call time / n_env)\n",
                  mj_versionString(), o.eps, o.centered ? "central" : "forward", 2 * model.nv, 2 * model.nv,
                  2 * model.nv, model.nu);
      std::printf("us per physics step; moreau: adj = step_adjoint, jac = transition_jacobians_tangent, per env,\n"
                  "dtype x n_env (f64x1, f64x256, f32x256); speed-up = mjd time / moreau f64x256 time\n");
      std::printf("%-16s %9s | %9s %9s %9s %8s | %9s %9s %9s %8s\n", "contact", "mjd", "adj f64x1", "f64x256",
                  "f32x256", "mjd/adj", "jac f64x1", "f64x256", "f32x256", "mjd/jac");
    }
    for (const ContactMode mode : modes) {
      if (!o.cpu) break;
      const char* name = moreau::contact_mode_name(mode);
      const MjdComparison c = compare_with_mjd(model, mode, o);
      auto us = [](const std::vector<double>& r) { return 1e6 / median(r); };
      const double mjd_us = us(c.mjd), adj_speedup = mjd_us / us(c.adj64_n), jac_speedup = mjd_us / us(c.jac64_n);
      const bool adj_pass = adj_speedup >= kAdjointTargetSpeedup, jac_pass = jac_speedup > kJacobianTargetSpeedup;
      std::printf("%-16s %9.1f | %9.2f %9.2f %9.2f %7.1fx | %9.1f %9.1f %9.1f %7.2fx  adjoint %s, Jacobians %s%s\n", name,
                  mjd_us, us(c.adj64_1), us(c.adj64_n), us(c.adj32_n), adj_speedup, us(c.jac64_1), us(c.jac64_n),
                  us(c.jac32_n), jac_speedup, adj_pass ? "PASS" : "FAIL", jac_pass ? "PASS" : "FAIL",
                  c.bad ? " (bad statuses!)" : "");
      std::fflush(stdout);
      failed |= c.bad != 0;
      auto fig = [&](const std::vector<double>& r) { return json{{"us_per_env", us(r)}, {"mjd_over_this", mjd_us / us(r)}}; };
      json cmp = {{"contact", name},
                  {"mujoco_model", mode == ContactMode::None
                                       ? "export_mjcf, constraints disabled"
                                       : "export_mjcf + ground plane; contact spheres contype/conaffinity 1, condim 3, "
                                         "friction 1, elliptic cone, Newton solver, joint limits off; settled 1 s"},
                  {"mjd_us_per_call", mjd_us},
                  {"mjd_trials_calls_per_s", c.mjd},
                  {"adjoint", {{"float64_1_env", fig(c.adj64_1)}, {"float64_256_envs", fig(c.adj64_n)},
                               {"float32_256_envs", fig(c.adj32_n)}}},
                  {"transition_jacobians_tangent",
                   {{"float64_1_env", fig(c.jac64_1)}, {"float64_256_envs", fig(c.jac64_n)},
                    {"float32_256_envs", fig(c.jac32_n)}}},
                  {"bad_status_envs", c.bad}};
      if (!c.peer.rates.empty()) {
        const double peer_us = us(c.peer.rates);
        const std::string version = c.peer.last["mujoco_version"];
        std::printf("%-16s %9.1f | %9s %9s %9s %7.1fx | %9s %9s %9s %7.2fx  MuJoCo %s (moreau-mujoco-peer)\n", "",
                    peer_us, "", "", "", peer_us / us(c.adj64_n), "", "", "", peer_us / us(c.jac64_n), version.c_str());
        cmp["mujoco_peer"] = {{"version", version},
                              {"program", o.mujoco_peer},
                              {"mjd_us_per_call", peer_us},
                              {"mjd_trials_calls_per_s", c.peer.rates},
                              {"mjd_over_adjoint_float64_256_envs", peer_us / us(c.adj64_n)},
                              {"mjd_over_jacobians_float64_256_envs", peer_us / us(c.jac64_n)},
                              {"settled", c.peer.last["settled"]}};
      }
      if (!c.agreement.is_null()) {
        cmp["agreement"] = c.agreement;
        std::printf("%-16s moreau vs MuJoCo Jacobians at the default state: |dA|/|A| = %.3g, |dB|/|B| = %.3g "
                    "(different integrators)\n",
                    "", c.agreement["A_rel_frobenius_diff"].get<double>(), c.agreement["B_rel_frobenius_diff"].get<double>());
      }
      out["mujoco"]["comparisons"].push_back(cmp);
      target({{"name", "mjd_transitionFD_over_adjoint_time"}, {"contact", name}, {"dtype", "float64"},
              {"n_env", kCompareEnvs}, {"limit", kAdjointTargetSpeedup}, {"value", adj_speedup}},
             adj_pass);
      target({{"name", "mjd_transitionFD_over_jacobian_time"}, {"contact", name}, {"dtype", "float64"},
              {"n_env", kCompareEnvs}, {"limit", kJacobianTargetSpeedup}, {"value", jac_speedup}},
             jac_pass);
    }

    emit_json(out, o.json_out);
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-bench-gradient: %s\n", e.what());
    return 2;
  }
}
