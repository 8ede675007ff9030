// moreau — batched simulator: n_env instances of one Model on one device.
//
// Buffers are environment-major structure-of-arrays: element k of environment e of a field
// of width w lives at index k * n_env + e. A View describes a buffer so that Python (DLPack)
// can wrap it without a copy; its logical shape is (n_env, w) with strides (1, n_env).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "moreau/model.h"

namespace moreau {

enum class Device : int { CPU = 0, CUDA = 1 };
enum class DType : int { Float32 = 0, Float64 = 1, Int32 = 2 };

// The names of the enums' values ("cpu", "float32", ...); "unknown" for a value out of range
// (they name values in error messages, so they do not throw). Likewise contact_mode_name and
// joint_type_name.
const char* device_name(Device d);
const char* dtype_name(DType t);
bool cuda_available();  // built with CUDA and a device is present
// The most environments one Simulator of `model` can hold: the kernels address element k of
// environment e at k * n_env + e in 32-bit ints, so 2^31 − 1 over the widest per-environment
// field (q, v, action or the contacts). A larger n_env is an Error.
int max_environments(const Model& model);

// Per-environment status bits (status buffer, int32). Fatal bits (NaN state or action,
// singular mass matrix) freeze the environment: it is not stepped again until reset, and the
// others are unaffected. The other bits are warnings that stay set until reset: the solver
// bit means a contact solve stopped on its iteration cap (the step used its last iterate), the
// contacts bit that more contact points were within reach than a solve holds (kMaxActive; the
// ones with the smallest gaps were kept); the gradient bits are set by adjoints (their gradients
// are then zero).
enum Status : int32_t {
  kStatusOk = 0,
  kStatusNanState = 1 << 0,      // non-finite q or v, or |q|, |v| > 1e10 (on input or after a step): fatal
  kStatusNanAction = 1 << 1,     // non-finite action: fatal
  kStatusSingularMass = 1 << 2,  // mass matrix not positive definite: fatal
  kStatusSolverNotConverged = 1 << 3,  // contact solve hit its iteration cap: warning
  kStatusNanGradient = 1 << 4,   // the adjoint produced a non-finite gradient
  kStatusNoGradient = 1 << 5,    // no adjoint for this configuration (see docs/gradients.md)
  kStatusContactsDropped = 1 << 6,  // more points within reach than a solve holds (16): the deepest kept: warning
};
constexpr int32_t kStatusFatal = kStatusNanState | kStatusNanAction | kStatusSingularMass;

struct View {
  void* data = nullptr;
  DType dtype = DType::Float32;
  Device device = Device::CPU;
  int device_id = 0;
  int64_t shape[2] = {0, 0};    // (rows, cols)
  int64_t strides[2] = {0, 0};  // in elements
};

// Contact models (docs/contact.md): none; hard (Signorini–Coulomb impulses); soft
// (spring–damper penalty); smooth (sigmoid-gated hard solve); hard forward with the smooth
// model's gradient in the adjoint.
enum class ContactMode : int { None = 0, Hard = 1, Soft = 2, Smooth = 3, HardSmoothGrad = 4 };
const char* contact_mode_name(ContactMode mode);
ContactMode contact_mode_from_name(const std::string& name);  // throws Error for an unknown name

struct ContactOptions {
  ContactMode mode = ContactMode::Hard;
  int max_iterations = 500;  // projected Gauss–Seidel sweeps at most (hard, smooth)
  double tolerance = 0;      // [m/s]; 0 = 1e-6 in float64, 2e-5 in float32
  bool speculative = true;   // hard: contacts within reach may not end the step penetrating
  int substeps = 0;          // physics substeps per step; 0 = automatic (soft: docs/contact.md)
  // MuJoCo's contact dimensionality: 4, the contact cone and torsional (spin) friction; 6, also
  // rolling friction, whose rows the solve then has room for (the parameter rolling_friction needs
  // it; the CUDA kernels' scratch grows: docs/gpu.md)
  int condim = 4;
};

inline constexpr int kDefaultCudaBlock = 128;
inline constexpr int kMaxCudaBlock = 256;
// The threads per block SimulatorOptions::cuda_block asks for (0: kDefaultCudaBlock); throws
// moreau::Error unless it is 0 or a multiple of 32 from 32 to kMaxCudaBlock.
int cuda_block_threads(int cuda_block);
// Lanes per environment in the CUDA forward kernels' team layout (docs/gpu.md, "The next layout").
inline constexpr int kCudaTeamLanes = 8;
// SimulatorOptions::cuda_team checked: 0 or kCudaTeamLanes, else moreau::Error.
int cuda_team_lanes(int cuda_team);

struct SimulatorOptions {
  int n_env = 1;
  Device device = Device::CPU;
  DType dtype = DType::Float32;  // Float64 on the CPU only
  int n_threads = 0;             // CPU: 0 = all hardware threads
  int cuda_device = 0;
  void* cuda_stream = nullptr;   // cudaStream_t; null = the default stream
  // CUDA threads per block (one environment per thread): 0 = kDefaultCudaBlock, else a multiple
  // of 32 up to kMaxCudaBlock (every kernel launches at that size: cuda/cuda_backend.cu). The
  // best value depends on the GPU and the model: moreau-bench-forward --cuda-block 64,128,256.
  int cuda_block = 0;
  // CUDA kernels' layout: 0 = one thread per environment, its scratch in local memory;
  // kCudaTeamLanes = the team layout, that many lanes per environment and its scratch in the
  // block's shared memory (cuda_block/kCudaTeamLanes environments per block, fewer where the
  // shared memory runs out: docs/gpu.md). Measured against each other by moreau-bench-forward
  // and moreau-bench-gradient --cuda-team.
  int cuda_team = 0;
  double timestep = 0;           // 0 = the model's
  int decimation = 0;            // 0 = the model's
  // CPU adjoint: physics steps whose intermediates it keeps (each, in float64, 31 KB for ANYmal C,
  // 121 KB in the small size class, 536 KB in the largest; docs/gradients.md).
  // 0 = every step of a control step, up to 64 (one recompute, for 8 environments at once in
  // SIMD lanes in float32, 4 in float64: docs/cpu.md); k > 0: k per environment, each
  // environment recomputed alone; fewer than the control step's trade memory for time: blocks
  // of this many steps, each recomputed from one of at most 16 checkpoints (docs/gradients.md).
  // The CUDA backend keeps 1.
  int adjoint_tapes = 0;
  ContactOptions contact;
};

class Backend;

class Simulator {
 public:
  Simulator(const Model& model, const SimulatorOptions& options);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  const Model& model() const;
  const SimulatorOptions& options() const;
  int n_env() const;

  // Views of the device buffers: q (n_env x nq), v (n_env x nv), action (n_env x nu),
  // status (n_env x 1, int32), time (n_env x 1, seconds since reset).
  View q();
  View v();
  View action();
  View status();
  View time();

  // Contact information of the last physics step: contact_gap (n_env x ncon) signed distance
  // [m], contact_impulse (n_env x ncon) normal impulse [N s], contact_active (n_env x ncon,
  // int32) touching; solver_iterations (n_env x 1, int32) and solver_residual (n_env x 1,
  // m/s): the largest over the physics steps of the last control step.
  View contact_gap();
  View contact_impulse();
  View contact_active();
  View solver_iterations();
  View solver_residual();
  // Physics substeps per step in use (ContactOptions::substeps or the automatic rule).
  int substeps() const;

  // Per-environment parameters: a (len x width) array with len 1 or n_env; environment e
  // reads row e % len. Names and defaults: "kp", "kd" (width nu; the model's gains),
  // "added_base_mass" (0 kg), "friction" (μ = 1), "contact_kn" (1e4 N/m), "contact_kd"
  // (−1: from contact_zeta), "contact_zeta" (1), "smooth_k" (300 1/m), "smooth_gmax" (0.02 m),
  // "motor_strength" (width nu, 1: each actuator's force scaled after its limits),
  // "frictionloss_scale" (1: the model's joint friction loss scaled), "spin_friction" (0 m:
  // torsional friction μ_spin at every contact point, |τ_n| ≤ μ_spin f_n; no gradient),
  // "rolling_friction" (0 m: rolling friction μ_roll at every contact point, |τ_t1|, |τ_t2| ≤
  // μ_roll f_n about the two tangents; no gradient; only with contact.condim 6),
  // "damping_scale", "armature_scale" (1: the model's joint damping and armature scaled; no gradient),
  // "terrain_x", "terrain_y" (0 m: the environment's origin in the heightfield's frame; no gradient).
  View param(const std::string& name);
  void set_param(const std::string& name, const double* values, int len, int width);
  std::vector<std::string> param_names() const;

  // Host copies (row-major, n_env x width, double) — for tests and simple users.
  void set_state(const double* q, const double* v, int n_env);
  void get_state(double* q, double* v, int n_env) const;
  void set_action(const double* action, int n_env);
  void get_status(int32_t* status, int n_env) const;

  // ---- Gradients (docs/gradients.md) -------------------------------------------------
  // Caller buffers below live on the simulator's device, in its dtype, laid out like its own
  // buffers (element k of environment e at k * n_env + e); statuses are int32 (n_env).

  // Pure control step: (q_in, v_in, action) -> (q_out, v_out). The simulator's own state is
  // neither read nor written; its parameters and contact options are used.
  void step_pure(const void* q_in, const void* v_in, const void* action, void* q_out, void* v_out,
                 int32_t* status);

  // Where an adjoint writes: ∂L/∂q_in (n_env x nq), ∂L/∂v_in (n_env x nv), ∂L/∂action
  // (n_env x nu), and per-environment parameter gradients ∂L/∂kp, ∂L/∂kd (n_env x nu),
  // ∂L/∂added_base_mass, ∂L/∂friction, ∂L/∂contact_kn, ∂L/∂smooth_k (n_env x 1), each of
  // which may be null.
  struct Gradients {
    void* q = nullptr;
    void* v = nullptr;
    void* action = nullptr;
    void* kp = nullptr;
    void* kd = nullptr;
    void* added_base_mass = nullptr;
    void* friction = nullptr;
    void* contact_kn = nullptr;
    void* smooth_k = nullptr;
  };
  // Adjoint of step_pure at the same inputs, given ∂L/∂q_out and ∂L/∂v_out. Outputs are
  // overwritten, or added to when `accumulate`.
  void step_adjoint(const void* q_in, const void* v_in, const void* action, const void* adj_q_out,
                    const void* adj_v_out, const Gradients& grads, int32_t* status, bool accumulate = false);

  // `rows` adjoints of step_pure at the same inputs, sharing one recompute of the step (the
  // rows of a Jacobian): every adjoint buffer (adj_q_out, adj_v_out and those in grads) holds
  // `rows` stacked batches, row r of a buffer of width w at element offset r * n_env * w.
  // Outputs are overwritten; status (n_env) is OR-ed over the rows.
  void step_adjoint_rows(const void* q_in, const void* v_in, const void* action, int rows, const void* adj_q_out,
                         const void* adj_v_out, const Gradients& grads, int32_t* status);

  // Recorded rollout of `horizon` control steps from the current state with `actions`
  // (horizon x n_env x nu, step-major): keeps only the horizon + 1 boundary states and the
  // actions, and leaves the simulator at the final state (statuses OR-ed in).
  void rollout(int horizon, const void* actions);
  // Backward over the recorded rollout. adj_q ((horizon + 1) x n_env x nq) and adj_v hold
  // ∂L/∂(state t) from the loss on entry and the total adjoint of each state on return (so
  // row block 0 is ∂L/∂(initial state)); adj_actions (horizon x n_env x nu) is written;
  // parameter gradients in `params` (kp, kd, added_base_mass; q/v/action ignored) are summed
  // over the horizon. Environments whose status is set get zero gradients.
  void rollout_backward(void* adj_q, void* adj_v, void* adj_actions, const Gradients& params);
  int rollout_horizon() const;

  // Advances every environment whose status is ok by k control steps.
  void step(int k = 1);
  // Sets the listed environments to the model's default state, zero action, status 0, time 0.
  void reset(const int32_t* env_ids, int count);
  // The same for every environment e whose mask[e] is nonzero: `mask` is n_env bytes on the
  // simulator's device, read there: no host copy, no allocation (CUDA: one launch on its stream).
  void reset_where(const uint8_t* mask);
  void reset_all();
  // Waits for queued device work (no-op on the CPU).
  void synchronize();

 private:
  friend struct SimulatorAccess;
  std::unique_ptr<Backend> backend_;
};

}  // namespace moreau
