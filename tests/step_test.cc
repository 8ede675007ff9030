// The integrator's physics (kernels/step.h) through the host Simulator: convergence order of
// the energy error, exact free fall, torque-free rotation, float vs double, thread
// determinism, actuator torque formula (and its adjoint, stage by stage) and implicit joint
// damping.
//
// Unless stated otherwise everything runs on the CPU in double precision (DType::Float64).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "host/backend.h"
#include "kernels/step.h"
#include "moreau/dynamics.h"
#include "moreau/model.h"
#include "moreau/simulator.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::asset;
using test::central;

constexpr double kPi = 3.14159265358979323846;

SimulatorOptions opts64(int n_env = 1, double h = 0, int decimation = 1, int n_threads = 1) {
  SimulatorOptions o;
  o.n_env = n_env;
  o.device = Device::CPU;
  o.dtype = DType::Float64;
  o.n_threads = n_threads;
  o.timestep = h;
  o.decimation = decimation;
  return o;
}

// Symmetric positive-definite solve A x = b (n x n row-major, small n), by Gaussian
// elimination without pivoting (fine for SPD). Returns x.
std::vector<double> solve_spd(std::vector<double> A, std::vector<double> b) {
  const int n = static_cast<int>(b.size());
  for (int k = 0; k < n; ++k) {
    for (int i = k + 1; i < n; ++i) {
      const double f = A[i * n + k] / A[k * n + k];
      for (int j = k; j < n; ++j) A[i * n + j] -= f * A[k * n + j];
      b[i] -= f * b[k];
    }
  }
  for (int i = n - 1; i >= 0; --i) {
    double s = b[i];
    for (int j = i + 1; j < n; ++j) s -= A[i * n + j] * b[j];
    b[i] = s / A[i * n + i];
  }
  return b;
}

// ---------------------------------------------------------------------------------------
// Energy: convergence order of the energy error.
// ---------------------------------------------------------------------------------------

struct EnergyRun {
  double max_abs_err = 0;  // max over the trajectory of |E(t) − E(0)|
  double scale = 0;        // energy scale: max over the trajectory of the kinetic energy
  double max_rate = 0;     // max over the trajectory of |v_k| over angular dofs (rad/s)
  double rel() const { return max_abs_err / scale; }
};

// Runs one environment from (q0, v0) for T seconds with step h (decimation 1) and records
// the energy error. `setup` may change parameters (gains) of the simulator.
template <class Setup>
EnergyRun run_energy(const Model& model, const std::vector<double>& q0, const std::vector<double>& v0, double h,
                     double T, Setup setup) {
  Simulator sim(model, opts64(1, h, 1));
  setup(sim);
  sim.set_state(q0.data(), v0.data(), 1);
  std::vector<double> q(q0), v(v0);
  const double E0 = kinetic_energy(model, q.data(), v.data()) + potential_energy(model, q.data());
  EnergyRun r;
  const int n = static_cast<int>(std::lround(T / h));
  for (int s = 0; s < n; ++s) {
    sim.step(1);
    sim.get_state(q.data(), v.data(), 1);
    const double KE = kinetic_energy(model, q.data(), v.data());
    const double E = KE + potential_energy(model, q.data());
    r.max_abs_err = std::max(r.max_abs_err, std::abs(E - E0));
    r.scale = std::max(r.scale, KE);
    for (int k = 0; k < model.nv; ++k) {
      const bool free_linear =
          model.jnt_type[model.dof_body[k]] == static_cast<int>(JointType::Free) &&
          k - model.jnt_dofadr[model.dof_body[k]] < 3;
      if (!free_linear) r.max_rate = std::max(r.max_rate, std::abs(v[k]));
    }
    if (!std::isfinite(E)) break;
  }
  return r;
}

// Largest small-oscillation frequency about q: sqrt of the largest eigenvalue of H⁻¹ K with
// K = ∂g/∂q (finite differences of the gravity bias at v = 0). For nv <= 2 only (closed form).
double linear_max_frequency_2dof(const Model& model, const std::vector<double>& q) {
  const int n = model.nv;
  EXPECT_EQ(n, 2);
  std::vector<double> H(4), K(4), zero(2, 0.0), gp(2), gm(2);
  mass_matrix(model, q.data(), H.data());
  const double eps = 1e-6;
  for (int j = 0; j < 2; ++j) {
    std::vector<double> qp(q), qm(q);
    qp[j] += eps;
    qm[j] -= eps;
    bias_forces(model, qp.data(), zero.data(), gp.data());
    bias_forces(model, qm.data(), zero.data(), gm.data());
    for (int i = 0; i < 2; ++i) K[i * 2 + j] = (gp[i] - gm[i]) / (2 * eps);
  }
  // eigenvalues of H⁻¹K: det(K − λH) = 0
  const double a = H[0] * H[3] - H[1] * H[2];
  const double b = -(K[0] * H[3] + K[3] * H[0] - K[1] * H[2] - K[2] * H[1]);
  const double c = K[0] * K[3] - K[1] * K[2];
  const double disc = std::sqrt(std::max(0.0, b * b - 4 * a * c));
  const double lmax = std::max((-b + disc) / (2 * a), (-b - disc) / (2 * a));
  return std::sqrt(std::max(0.0, lmax));
}

// The bound. The step is meant to be second order (local error O(h³)), so over a fixed
// horizon the energy error is O(h²) relative to the energy scale, with the natural time
// scale 1/ω:
//     max_t |E(t) − E(0)| / E_scale  <=  C (ω h)².
// ω: the fastest rate of the motion — the largest small-oscillation frequency of the
// linearised system and the largest angular rate reached on the trajectory, whichever is
// larger (for a nonlinear motion the configuration, hence H(q) and g(q), changes at the
// joint rates). C: with a velocity-independent bias the step is drift–kick–drift
// Störmer–Verlet; on a harmonic oscillator of frequency ω that conserves the modified energy
// ½p² + ½ω²(1 − (ωh/2)²)x², so E oscillates with relative amplitude (ω h)²/4 and does not
// drift. We allow C = 1 — four times the harmonic-oscillator constant — for the nonlinearity
// and configuration-dependent H(q). (Measured on the single pendulum: 0.026.)
constexpr double kEnergyC = 1.0;

// Order of the scheme as built (checked below, not assumed): kernels/step.h, physics_step,
// evaluates the bias b(q_M, v_k) — and the servo's damping term — at the start-of-step velocity
// v_k, as docs/architecture.md ("The physics step") writes it. For forces that depend on v
// (Coriolis, centrifugal, gyroscopic) that is an explicit-Euler treatment: the local error is
// O(h²), not O(h³), and the scheme is FIRST order. Measured err(h)/err(h/2) ≈ 2 for the double
// pendulum, the free-floating quadruped and the tumbling box, ≈ 4.000 for the single pendulum
// (velocity-independent bias). For the torque-free body it is exact to see: in the body frame
// L_{k+1} = L_k − h ω_k × L_k, so |L|² grows by h²|ω × L|² every step, O(h) over a fixed
// horizon. For those systems the bound is first order, C₁ ω h with C₁ = 4 (measured 0.75–3.0),
// and err(h)/err(h/2) must be about 2. A midpoint (predicted) velocity in b would make them
// second order: an open design question (docs/architecture.md, "The physics step").
constexpr double kEnergyC1 = 4.0;

// Relative error bound and the expected err(h)/err(h/2) range for a scheme of `order` 1 or 2.
double order_bound(int order, double omega_h) {
  return order == 2 ? kEnergyC * omega_h * omega_h : kEnergyC1 * omega_h;
}
void expect_ratio(int order, double ratio, const std::string& what) {
  const double lo = order == 2 ? 2.5 : 1.6, hi = order == 2 ? 6.0 : 2.6;
  EXPECT_TRUE(ratio > lo && ratio < hi) << what << ": err(h)/err(h/2) = " << ratio << ", expected about "
                                        << (order == 2 ? 4 : 2) << " for order " << order;
}

void check_energy_order(const Model& model, const std::vector<double>& q0, const std::vector<double>& v0,
                        double h, double T, double omega_linear, const char* what,
                        void (*setup)(Simulator&), int order) {
  const EnergyRun a = run_energy(model, q0, v0, h, T, setup);
  const EnergyRun b = run_energy(model, q0, v0, h / 2, T, setup);
  const double omega = std::max({omega_linear, a.max_rate, b.max_rate});
  const double bound = order_bound(order, omega * h);
  const double ratio = a.max_abs_err / b.max_abs_err;
  std::printf("[ energy ] %s: h=%g omega=%.3f rad/s (linear %.3f) E_scale=%.6g rel err(h)=%.4g rel err(h/2)=%.4g "
              "ratio=%.3f  C_measured=%.4g bound(C=%g)=%.4g\n",
              what, h, omega, omega_linear, a.scale, a.rel(), b.rel(), ratio, a.rel() / ((omega * h) * (omega * h)),
              kEnergyC, bound);
  EXPECT_LT(a.rel(), bound) << what << ": relative energy error " << a.rel() << " at h = " << h
                            << " exceeds the order-" << order << " bound " << bound << " (omega = " << omega << ")";
  expect_ratio(order, ratio, what);
}

TEST(Energy, DoublePendulumUndampedFirstOrderInVelocityDependentBias) {
  const Model model = load_model(asset("double_pendulum.json"));
  ASSERT_EQ(model.nv, 2);
  ASSERT_EQ(model.nu, 0);
  for (double d : model.dof_damping) ASSERT_EQ(d, 0.0) << "double_pendulum.json should be undamped";
  // Large angle and velocity: the motion is strongly nonlinear (whirling of the lower link).
  const std::vector<double> q0 = {2.0, -1.0}, v0 = {3.0, -4.0};
  const double omega_lin = linear_max_frequency_2dof(model, std::vector<double>{0.0, 0.0});
  check_energy_order(model, q0, v0, model.timestep, 10.0, omega_lin, "double_pendulum", [](Simulator&) {}, 1);
}

// Control case: a single pendulum has a constant H and a bias b = g(q) that does not depend on
// v, so the step is exactly drift–kick–drift Störmer–Verlet and must show the h² behaviour.
// (The double pendulum, the quadruped and the tumbling box have velocity-dependent bias
// forces — Coriolis, gyroscopic — evaluated at v_k; see the report in those tests.)
TEST(Energy, SinglePendulumVelocityIndependentBiasSecondOrder) {
  const Model model = load_model(asset("pendulum.json"));
  ASSERT_EQ(model.nv, 1);
  const std::vector<double> q0 = {2.5}, v0 = {2.0};  // large swing, nearly over the top
  double H = 0;
  mass_matrix(model, std::vector<double>{0.0}.data(), &H);
  const double omega_lin = std::sqrt(model.body_mass[0] * 9.81 * 1.0 / H);  // sqrt(m g l / I_pivot)
  check_energy_order(model, q0, v0, model.timestep, 10.0, omega_lin, "pendulum", [](Simulator&) {}, 2);
}

// A joint spring (τ = −k (q − q_spring), taken at q_M) keeps the single pendulum's step
// Störmer–Verlet: the energy, spring potential ½ k (q − q_spring)² included, is second order.
TEST(Energy, PendulumWithJointSpringSecondOrder) {
  Model model = load_model(asset("pendulum.json"));
  model.jnt_stiffness = {40.0};
  model.jnt_springref = {0.6};
  const std::vector<double> q0 = {-1.5}, v0 = {3.0};
  double H = 0;
  mass_matrix(model, std::vector<double>{0.0}.data(), &H);
  const double omega_lin = std::sqrt((model.body_mass[0] * 9.81 * 1.0 + 40.0) / H);
  check_energy_order(model, q0, v0, model.timestep, 10.0, omega_lin, "pendulum with spring", [](Simulator&) {}, 2);
}

TEST(Energy, FreeFloatingQuadrupedZeroGravityFirstOrder) {
  Model model = load_model(asset("anymal_c.json"));
  model.gravity[0] = model.gravity[1] = model.gravity[2] = 0;
  for (double d : model.dof_damping) ASSERT_EQ(d, 0.0) << "anymal_c.json should be undamped";
  std::mt19937 rng(11);
  std::vector<double> q0(model.nq), v0(model.nv);
  test::random_state(model, rng, q0.data(), v0.data());
  // Start from the default pose, base far above any ground plane, random velocities N(0, 1);
  // the hip limits off (a limit's inelastic stop dissipates: this checks the integrator).
  std::fill(model.jnt_limited.begin(), model.jnt_limited.end(), 0);
  q0 = model.qpos0;
  q0[2] = 1000.0;
  // No potential (no gravity, no servo): ω is the fastest angular rate on the trajectory.
  check_energy_order(model, q0, v0, model.timestep, 10.0, 0.0, "anymal_c zero-g", [](Simulator& sim) {
    const int nu = sim.model().nu;
    std::vector<double> zero(nu, 0.0);
    sim.set_param("kp", zero.data(), 1, nu);
    sim.set_param("kd", zero.data(), 1, nu);
  }, 1);
}

// ---------------------------------------------------------------------------------------
// Free fall and rotation.
// ---------------------------------------------------------------------------------------

// Quaternion product (w, x, y, z), Hamilton.
std::vector<double> qmul(const std::vector<double>& a, const std::vector<double>& b) {
  return {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3], a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
          a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1], a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
}
std::vector<double> qexp(const double* w, double t) {
  const double n = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
  const double s = n > 0 ? std::sin(n * t / 2) / n : t / 2;
  return {std::cos(n * t / 2), s * w[0], s * w[1], s * w[2]};
}

TEST(FreeFall, CubeFollowsParabolaExactlyAndKeepsItsSpin) {
  const Model model = load_model(asset("cube.json"));
  ASSERT_EQ(model.nq, 7);
  ASSERT_EQ(model.nv, 6);
  for (int k = 0; k < 3; ++k) ASSERT_EQ(model.body_com[k], 0.0) << "cube.json: com should be at the origin";
  Simulator sim(model, opts64(1));
  const double h = model.timestep;
  std::vector<double> q0 = model.qpos0;
  q0[0] = 0.3;
  q0[1] = -0.2;
  q0[2] = 100.0;  // far above any ground plane
  const std::vector<double> v0 = {1.2, -0.7, 4.0, 3.0, -2.0, 5.0};  // world linear, body angular
  sim.set_state(q0.data(), v0.data(), 1);
  const int n = static_cast<int>(std::lround(2.0 / h));
  sim.step(n);
  const double t = n * h;
  std::vector<double> q(7), v(6);
  sim.get_state(q.data(), v.data(), 1);
  std::vector<double> p_exp(3), v_exp(3);
  for (int k = 0; k < 3; ++k) {
    p_exp[k] = q0[k] + v0[k] * t + 0.5 * model.gravity[k] * t * t;
    v_exp[k] = v0[k] + model.gravity[k] * t;
  }
  EXPECT_NEAR_REL(q.data(), p_exp.data(), 3, 1e-9, 1e-12, "cube position after 2 s");
  EXPECT_NEAR_REL(v.data(), v_exp.data(), 3, 1e-9, 1e-12, "cube linear velocity after 2 s");
  // Isotropic inertia: every axis is principal, ω × Iω = 0, the body-frame ω is constant and
  // the orientation is q0 ⊗ exp(ω t) — the exponential-map update is exact for constant ω.
  EXPECT_NEAR_REL(v.data() + 3, v0.data() + 3, 3, 1e-12, 1e-12, "cube body angular velocity after 2 s");
  const std::vector<double> quat_exp = qmul({q0[3], q0[4], q0[5], q0[6]}, qexp(v0.data() + 3, t));
  // Sign of a quaternion is arbitrary in principle, but both follow the same continuous path.
  EXPECT_NEAR_REL(q.data() + 3, quat_exp.data(), 4, 1e-9, 1e-10, "cube orientation after 2 s");
}

// A free box with principal inertia diag(i1, i2, i3), mass 1, com at the origin, no gravity.
Model asymmetric_box(double i1 = 0.1, double i2 = 0.2, double i3 = 0.3) {
  RobotSpec spec;
  spec.name = "asymmetric_box";
  spec.source = "<step_test>";
  spec.gravity = {0, 0, 0};
  spec.timestep = 0.005;
  BodySpec b;
  b.name = "box";
  b.parent = "world";
  b.joint.type = JointType::Free;
  b.mass = 1;
  b.inertia = {i1, i2, i3, 0, 0, 0};
  spec.bodies.push_back(b);
  return compile(spec);
}

TEST(FreeFall, BoxSpinningAboutPrincipalAxisKeepsOmega) {
  const Model model = asymmetric_box();
  Simulator sim(model, opts64(1));
  std::vector<double> q0 = model.qpos0;
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<double> v0(6, 0.0);
    v0[3 + axis] = 7.0;
    sim.set_state(q0.data(), v0.data(), 1);
    const int n = 400;
    sim.step(n);
    std::vector<double> q(7), v(6);
    sim.get_state(q.data(), v.data(), 1);
    EXPECT_NEAR_REL(v.data() + 3, v0.data() + 3, 3, 1e-12, 1e-12,
                    "asymmetric box spinning about principal axis " + std::to_string(axis) + ": ω");
    const std::vector<double> quat_exp = qexp(v0.data() + 3, n * model.timestep);
    EXPECT_NEAR_REL(q.data() + 3, quat_exp.data(), 4, 1e-9, 1e-10,
                    "asymmetric box spinning about principal axis " + std::to_string(axis) + ": orientation");
  }
}

// ---------------------------------------------------------------------------------------
// Torque-free tumbling of an asymmetric body: momentum and energy.
// ---------------------------------------------------------------------------------------

struct TumbleRun {
  double L_err = 0, E_err = 0, L0 = 0, E0 = 0;
  double min_w2 = 1e300, max_w2 = -1e300;  // range of the intermediate-axis rate (tumbling)
};

TumbleRun tumble(const Model& model, double h, double T) {
  Simulator sim(model, opts64(1, h, 1));
  std::vector<double> q = model.qpos0, v = {0.3, -0.1, 0.2, 0.02, 4.0, 0.03};  // near the y (intermediate) axis
  sim.set_state(q.data(), v.data(), 1);
  double L0[6];
  momentum(model, q.data(), v.data(), L0);
  TumbleRun r;
  r.E0 = kinetic_energy(model, q.data(), v.data());
  r.L0 = std::sqrt(L0[0] * L0[0] + L0[1] * L0[1] + L0[2] * L0[2]);
  const int n = static_cast<int>(std::lround(T / h));
  for (int s = 0; s < n; ++s) {
    sim.step(1);
    sim.get_state(q.data(), v.data(), 1);
    double L[6];
    momentum(model, q.data(), v.data(), L);
    double d = 0;
    for (int k = 0; k < 3; ++k) d += (L[k] - L0[k]) * (L[k] - L0[k]);
    r.L_err = std::max(r.L_err, std::sqrt(d));
    r.E_err = std::max(r.E_err, std::abs(kinetic_energy(model, q.data(), v.data()) - r.E0));
    r.min_w2 = std::min(r.min_w2, v[4]);
    r.max_w2 = std::max(r.max_w2, v[4]);
  }
  return r;
}

TEST(TorqueFree, AsymmetricBoxTumblingConservesMomentumAndEnergyToFirstOrder) {
  const Model model = asymmetric_box();
  const double h = model.timestep, T = 10.0;
  const TumbleRun a = tumble(model, h, T), b = tumble(model, h / 2, T);
  // ω: the spin rate, 4 rad/s. Gyroscopic terms at v_k: first order (see above).
  const double omega = 4.0, bound = order_bound(1, omega * h);
  const double rL = a.L_err / a.L0, rE = a.E_err / a.E0;
  std::printf("[ tumble ] h=%g |L| rel err(h)=%.4g err(h/2)=%.4g ratio=%.3f | E rel err(h)=%.4g err(h/2)=%.4g "
              "ratio=%.3f | bound=%.4g | w_y range [%.3f, %.3f]\n",
              h, rL, b.L_err / b.L0, a.L_err / b.L_err, rE, b.E_err / b.E0, a.E_err / b.E_err, bound, a.min_w2,
              a.max_w2);
  // The motion really tumbles: the intermediate-axis rate reverses sign.
  EXPECT_LT(a.min_w2, -2.0) << "expected the box to flip (intermediate-axis instability)";
  EXPECT_LT(rL, bound) << "world angular momentum relative error " << rL;
  EXPECT_LT(rE, bound) << "kinetic energy relative error " << rE;
  expect_ratio(1, a.L_err / b.L_err, "angular momentum");
  expect_ratio(1, a.E_err / b.E_err, "kinetic energy");
}

// ---------------------------------------------------------------------------------------
// Float vs double.
// ---------------------------------------------------------------------------------------

// Runs `steps` control steps from the default state (reset: PD action holds qpos0) plus an
// optional initial state, in the given precision; returns q then v concatenated.
std::vector<double> run_precision(const Model& model, DType dtype, int steps, const std::vector<double>* q0,
                                  const std::vector<double>* v0) {
  SimulatorOptions o;
  o.n_env = 1;
  o.dtype = dtype;
  o.n_threads = 1;
  Simulator sim(model, o);
  if (q0) sim.set_state(q0->data(), v0->data(), 1);
  sim.step(steps);
  std::vector<double> q(model.nq), v(model.nv);
  sim.get_state(q.data(), v.data(), 1);
  int32_t status = -1;
  sim.get_status(&status, 1);
  EXPECT_EQ(status, 0) << dtype_name(dtype);
  q.insert(q.end(), v.begin(), v.end());
  return q;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// Tolerance: float32 has ε = 6e-8; each physics step makes O(10) rounding errors relative to
// the state, and 50 control steps (200 physics steps for anymal_c, decimation 4) accumulate
// them roughly linearly (the motion is not chaotic over 0.1–1 s): 200·10·6e-8 ≈ 1e-4 relative.
// Components that pass near zero are compared with an absolute floor of 1e-4 (in m, rad,
// m/s, rad/s — the state magnitudes are O(1)).
TEST(Precision, FloatMatchesDoubleAnymalHoldingPose) {
  const Model model = load_model(asset("anymal_c.json"));
  // Default pose and the action reset() sets (PD holding it), base lifted 50 m so that no
  // ground plane is reached during the 1 s of free fall.
  std::vector<double> q0 = model.qpos0, v0(model.nv, 0.0);
  q0[2] += 50.0;
  const auto d = run_precision(model, DType::Float64, 50, &q0, &v0);
  const auto f = run_precision(model, DType::Float32, 50, &q0, &v0);
  // Sanity: it fell for 1 s while holding its pose.
  EXPECT_LT(d[2], q0[2] - 4.0) << "base height after 1 s of free fall";
  for (int k = 7; k < model.nq; ++k)
    EXPECT_NEAR(d[k], model.qpos0[k], 0.05) << "joint coordinate " << k << " should be held near its default";
  std::printf("[ precision ] anymal_c: max |float - double| = %.3g\n", max_abs_diff(f, d));
  EXPECT_NEAR_REL(f, d, 1e-4, 1e-4, "anymal_c float32 vs float64 state after 50 control steps");
}

TEST(Precision, FloatMatchesDoubleDoublePendulum) {
  const Model model = load_model(asset("double_pendulum.json"));
  const std::vector<double> q0 = {1.2, -0.5}, v0 = {2.0, -1.0};
  const auto d = run_precision(model, DType::Float64, 50, &q0, &v0);
  const auto f = run_precision(model, DType::Float32, 50, &q0, &v0);
  std::printf("[ precision ] double_pendulum: max |float - double| = %.3g\n", max_abs_diff(f, d));
  EXPECT_NEAR_REL(f, d, 1e-4, 1e-4, "double_pendulum float32 vs float64 state after 50 control steps");
}

// ---------------------------------------------------------------------------------------
// Determinism across thread counts.
// ---------------------------------------------------------------------------------------

TEST(Threads, CpuResultsBitwiseIdenticalFor1To3Threads) {
  const Model model = load_model(asset("anymal_c.json"));
  const int n = 64;
  std::mt19937 rng(2024);
  std::vector<double> q0(n * model.nq), v0(n * model.nv), act(n * model.nu);
  std::normal_distribution<double> normal(0.0, 0.3);
  for (int e = 0; e < n; ++e) {
    test::random_state(model, rng, q0.data() + e * model.nq, v0.data() + e * model.nv);
    q0[e * model.nq + 2] += 50.0;  // base far above any ground plane
    for (int a = 0; a < model.nu; ++a) act[e * model.nu + a] = model.qpos0[model.actuator_qposadr[a]] + normal(rng);
  }
  for (DType dt : {DType::Float64, DType::Float32}) {
    std::vector<std::vector<unsigned char>> qs, vs;
    for (int threads = 1; threads <= 3; ++threads) {
      SimulatorOptions o;
      o.n_env = n;
      o.dtype = dt;
      o.n_threads = threads;
      Simulator sim(model, o);
      sim.set_state(q0.data(), v0.data(), n);
      sim.set_action(act.data(), n);
      sim.step(20);
      const View q = sim.q(), v = sim.v();
      const size_t es = dt == DType::Float64 ? 8 : 4;
      const auto* qp = static_cast<const unsigned char*>(q.data);
      const auto* vp = static_cast<const unsigned char*>(v.data);
      qs.emplace_back(qp, qp + es * n * model.nq);
      vs.emplace_back(vp, vp + es * n * model.nv);
      std::vector<int32_t> st(n);
      sim.get_status(st.data(), n);
      for (int e = 0; e < n; ++e) EXPECT_EQ(st[e], 0) << "env " << e << " threads " << threads;
    }
    for (int t = 1; t < 3; ++t) {
      EXPECT_EQ(0, std::memcmp(qs[0].data(), qs[t].data(), qs[0].size()))
          << dtype_name(dt) << ": q differs between 1 and " << t + 1 << " threads";
      EXPECT_EQ(0, std::memcmp(vs[0].data(), vs[t].data(), vs[0].size()))
          << dtype_name(dt) << ": v differs between 1 and " << t + 1 << " threads";
    }
    // The trajectories are distinct per environment (not a trivially identical batch).
    EXPECT_NE(0, std::memcmp(qs[0].data(), qs[0].data() + (dt == DType::Float64 ? 8 : 4), dt == DType::Float64 ? 8 : 4));
  }
}

// ---------------------------------------------------------------------------------------
// Actuators and damping: one physics step against the formula.
// ---------------------------------------------------------------------------------------

// One revolute link (a pendulum about y) with one actuator.
Model one_dof(const ActuatorSpec& act, double damping = 0, double armature = 0) {
  RobotSpec spec;
  spec.name = "one_dof";
  spec.source = "<step_test>";
  spec.timestep = 0.01;
  BodySpec b;
  b.name = "link";
  b.parent = "world";
  b.joint.name = "hinge";
  b.joint.type = JointType::Revolute;
  b.joint.axis = {0, 1, 0};
  b.joint.damping = damping;
  b.joint.armature = armature;
  b.mass = 2.0;
  b.com = {0.1, 0, -0.4};
  b.inertia = {0.03, 0.04, 0.01, 0, 0, 0};
  spec.bodies.push_back(b);
  ActuatorSpec a = act;
  a.joint = "hinge";
  if (a.name.empty()) a.name = "act";
  spec.actuators.push_back(a);
  return compile(spec);
}

// One physics step from (q, v) with ctrl; returns v_{k+1} − v_k.
double one_step_dv(const Model& model, double q, double v, double ctrl) {
  Simulator sim(model, opts64(1, 0, 1));
  sim.set_state(&q, &v, 1);
  sim.set_action(&ctrl, 1);
  sim.step(1);
  double q1 = 0, v1 = 0;
  sim.get_state(&q1, &v1, 1);
  int32_t st = -1;
  sim.get_status(&st, 1);
  EXPECT_EQ(st, 0);
  return v1 - v;
}

// h H(q_M)⁻¹ (τ − b(q_M, v)) for the one-DoF model with q_M = q + h/2 v (the step evaluates
// the actuator, H and b at the midpoint configuration and the start-of-step velocity).
double expected_dv(const Model& model, double q, double v, double tau) {
  const double h = model.timestep, qM = q + h / 2 * v;
  double H = 0, b = 0;
  mass_matrix(model, &qM, &H);
  bias_forces(model, &qM, &v, &b);
  return h * (tau - b) / H;
}

// A position servo (gear 2, kp 100, kd 5) limited to [−30, 40] and by the torque–speed line
// of peak 50 and vmax 10.
ActuatorSpec limited_servo() {
  ActuatorSpec a;
  a.type = ActuatorType::Position;
  a.gear = 2;
  a.kp = 100;
  a.kd = 5;
  a.force_limited = true;
  a.force_range = {-30, 40};
  a.peak_force = 50;
  a.max_velocity = 10;
  return a;
}

// A motor (gear 2) with control range [−1, 2].
ActuatorSpec ranged_motor() {
  ActuatorSpec a;
  a.type = ActuatorType::Motor;
  a.gear = 2;
  a.ctrl_limited = true;
  a.ctrl_range = {-1, 2};
  return a;
}

struct ActCase {
  const char* regime;
  double q, v, ctrl;
  double f_expected;  // actuator force f (before the gear) worked out by hand
};

TEST(Actuators, PositionServoTorqueInEachRegime) {
  const Model model = one_dof(limited_servo());
  const double h = model.timestep;
  // f = kp (u − g q_M) − kd g v, clamped to [f_min, f_max] with, for l̇ = g v, r = l̇ / vmax:
  //   f_max = clamp(50 (1 − r), 0, 40), f_min = −clamp(50 (1 + r), 0, 30).
  auto f_raw = [&](double q, double v, double u) { return 100 * (u - 2 * (q + h / 2 * v)) - 5 * 2 * v; };
  std::vector<ActCase> cases;
  // Unclamped: l̇ = 0.2, r = 0.02, limits [−30, 40] (50·0.98 = 49 > 40); f ≈ 100·0.1 − 1 ≈ 9.
  {
    const double q = 0.3, v = 0.1, u = 2 * 0.3 + 0.1;
    cases.push_back({"unclamped", q, v, u, f_raw(q, v, u)});
  }
  // Clamped at the upper range: r = 0.02 so f_max = min(49, 40) = 40; f_raw ≈ 100 ≫ 40.
  cases.push_back({"clamped at force_range[1]", 0.3, 0.1, 2 * 0.3 + 1.0, 40});
  // Clamped at the lower range: r = 0.02, f_min = −min(51, 30) = −30; f_raw ≈ −100.
  cases.push_back({"clamped at force_range[0]", 0.3, 0.1, 2 * 0.3 - 1.0, -30});
  // Torque–speed line, upper: v = 2.5, l̇ = 5, r = 0.5: f_max = 50·0.5 = 25 < 40; f_raw ≈ 100·2 − 25 ≫ 25.
  cases.push_back({"clamped by the torque-speed line (f_max)", 0.0, 2.5, 2.0 + 2 * (h / 2 * 2.5), 25});
  // Torque–speed line, lower: v = −2.5, r = −0.5: f_min = −50·0.5 = −25 > −30; f_raw ≪ −25.
  cases.push_back({"clamped by the torque-speed line (f_min)", 0.0, -2.5, -2.0 + 2 * (h / 2 * -2.5), -25});
  // Beyond vmax: v = 6, l̇ = 12, r = 1.2: f_max = clamp(−10, 0, 40) = 0 — no driving force.
  cases.push_back({"beyond max_velocity (f_max = 0)", 0.0, 6.0, 5.0, 0});
  // Unclamped while moving fast, inside the line: v = 2.5, r = 0.5, f_max = 25, f_min = −30;
  // u chosen so that f_raw = 100 (u − 2 q_M) − 25 = 10.
  {
    const double q = 0.0, v = 2.5, u = 2 * (h / 2 * v) + 0.35;
    cases.push_back({"unclamped inside the torque-speed line", q, v, u, f_raw(q, v, u)});
  }
  for (const ActCase& c : cases) {
    // Check the hand-worked regime: raw force is (or is not) outside the limits.
    const double fr = f_raw(c.q, c.v, c.ctrl);
    if (std::string(c.regime).rfind("unclamped", 0) == 0)
      ASSERT_NEAR(fr, c.f_expected, 1e-12) << c.regime;
    else
      ASSERT_GT(std::abs(fr - c.f_expected), 1.0) << c.regime << ": raw force " << fr << " should be clamped";
    const double dv = one_step_dv(model, c.q, c.v, c.ctrl);
    const double dv_exp = expected_dv(model, c.q, c.v, 2 * c.f_expected);
    EXPECT_NEAR(dv, dv_exp, 1e-12 * std::max(1.0, std::abs(dv_exp)))
        << c.regime << ": q = " << c.q << ", v = " << c.v << ", ctrl = " << c.ctrl << ", f = " << c.f_expected
        << " (raw " << fr << ")";
  }
}

TEST(Actuators, ServoGainsComeFromTheParametersAndGearScalesLengthAndTorque) {
  // No limits: f = kp (u − g q_M) − kd g v exactly, τ = g f; kp/kd from set_param override.
  ActuatorSpec a;
  a.type = ActuatorType::Position;
  a.gear = 2;
  a.kp = 100;
  a.kd = 5;
  const Model model = one_dof(a);
  const double h = model.timestep, q = -0.4, v = 0.7, u = 0.25;
  Simulator sim(model, opts64(1, 0, 1));
  const double kp = 37, kd = 1.5;
  sim.set_param("kp", &kp, 1, 1);
  sim.set_param("kd", &kd, 1, 1);
  sim.set_state(&q, &v, 1);
  sim.set_action(&u, 1);
  sim.step(1);
  double q1, v1;
  sim.get_state(&q1, &v1, 1);
  const double f = kp * (u - 2 * (q + h / 2 * v)) - kd * 2 * v;
  const double dv_exp = expected_dv(model, q, v, 2 * f);
  EXPECT_NEAR(v1 - v, dv_exp, 1e-12) << "servo with kp = " << kp << ", kd = " << kd << ", gear 2";
}

TEST(Actuators, MotorCtrlRangeClamping) {
  const Model model = one_dof(ranged_motor());
  struct {
    double ctrl, u;
  } cases[] = {{0.5, 0.5}, {5.0, 2.0}, {-3.0, -1.0}, {2.0, 2.0}, {-1.0, -1.0}};
  const double q = 0.2, v = -0.3;
  for (const auto& c : cases) {
    const double dv = one_step_dv(model, q, v, c.ctrl);
    const double dv_exp = expected_dv(model, q, v, 2 * c.u);  // τ = g clamp(ctrl)
    EXPECT_NEAR(dv, dv_exp, 1e-12) << "motor ctrl " << c.ctrl << " should act as " << c.u;
  }
  // And the clamped control really differs from the unclamped one.
  EXPECT_GT(std::abs(expected_dv(model, q, v, 2 * 5.0) - expected_dv(model, q, v, 2 * 2.0)), 1e-3);
}

// adj_actuator_forces against central differences of L = τ̄ τ(q, v, ctrl; kp, kd) from
// actuator_forces, called directly, in each regime of the servo above (inputs away from the
// switches) and for a motor inside and outside its control range. Each case names the inputs
// whose gradient must be non-zero; the others must be exactly zero (a binding clamp).
TEST(ActuatorAdjoint, EachRegimeMatchesFiniteDifferences) {
  const Model servo_model = one_dof(limited_servo()), motor_model = one_dof(ranged_motor());
  struct Case {
    const Model* model;
    const char* regime;
    double q, v, ctrl;
    const char* nonzero;  // of "qvukd" (u: ctrl, k: kp, d: kd)
  } cases[] = {
      {&servo_model, "unclamped", 0.3, 0.1, 0.7, "qvukd"},              // f = 9 in [−30, 40]
      {&servo_model, "clamped at force_range[1]", 0.3, 0.1, 1.6, ""},  // f = 99 > 40
      {&servo_model, "clamped at force_range[0]", 0.3, 0.1, -0.4, ""},  // f = −101 < −30
      {&servo_model, "torque-speed line (f_max)", 0.0, 2.5, 2.0, "v"},  // f_max = 50 (1 − l̇/10) = 25
      {&servo_model, "torque-speed line (f_min)", 0.0, -2.5, -2.0, "v"},
      {&servo_model, "beyond max_velocity", 0.0, 6.0, 5.0, ""},          // f_max = 0
      {&servo_model, "unclamped inside the line", 0.0, 2.5, 0.35, "qvukd"},
      {&motor_model, "motor inside its control range", 0.2, -0.3, 0.5, "u"},
      {&motor_model, "motor above its control range", 0.2, -0.3, 5.0, ""},
  };
  const double tau_bar = 1.3, eps = 1e-6;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.regime);
    PackedModel<double> packed(*c.model);
    const kern::ModelView<double> m = packed.view(packed.reals.data(), packed.ints.data());
    double x[5] = {c.q, c.v, c.ctrl, c.model->actuator_kp[0], c.model->actuator_kd[0]};
    const double one = 1;  // motor strength
    auto loss = [&]() {
      kern::Params<double> p{};
      p.kp = {&x[3], 1};
      p.kd = {&x[4], 1};
      p.motor_strength = {&one, 1};
      double tau = 0;
      kern::actuator_forces(m, p, 0, &x[0], &x[1], &x[2], &tau);
      return tau_bar * tau;
    };
    kern::Params<double> p{};
    p.kp = {&x[3], 1};
    p.kd = {&x[4], 1};
    p.motor_strength = {&one, 1};
    kern::ParamAdjoint<double> adj_p;
    kern::adj_clear(m, adj_p);
    double adj_q = 0, adj_v = 0, adj_ctrl = 0;
    kern::adj_actuator_forces(m, p, 0, &x[0], &x[1], &x[2], &adj_q, &adj_v, &adj_ctrl, adj_p, &tau_bar);
    const double adjoint[5] = {adj_q, adj_v, adj_ctrl, adj_p.kp[0], adj_p.kd[0]};
    const std::string names = "qvukd";
    for (int i = 0; i < 5; ++i) {
      const bool servo_param = i >= 3 && c.model == &servo_model;
      if (i >= 3 && !servo_param) continue;  // a motor has no gains
      const double fd = central(loss, x[i], eps);
      EXPECT_NEAR(adjoint[i], fd, 1e-7 * std::max(1.0, std::abs(fd))) << "input " << names[i];
      if (std::string(c.nonzero).find(names[i]) != std::string::npos) {
        EXPECT_GT(std::abs(adjoint[i]), 1e-3) << "input " << names[i] << " should have a gradient";
      } else {
        EXPECT_EQ(adjoint[i], 0.0) << "input " << names[i] << " should have none";
      }
    }
  }
}

// One step of a 2-dof model from q = (0.7, −1.1), v = (2, −3) with h = 0.01, and what the
// tests below compare it with: q_M = q + h/2 v, H(q_M), b(q_M, v) and A = H + h D.
struct TwoDofStep {
  const double h = 0.01;
  const std::vector<double> q{0.7, -1.1}, v{2.0, -3.0};
  std::vector<double> q1 = std::vector<double>(2), v1 = std::vector<double>(2), dv, qM, H = std::vector<double>(4),
                      b = std::vector<double>(2), A;
  explicit TwoDofStep(const Model& model) {
    Simulator sim(model, opts64(1, h, 1));
    sim.set_state(q.data(), v.data(), 1);
    sim.step(1);
    sim.get_state(q1.data(), v1.data(), 1);
    dv = {v1[0] - v[0], v1[1] - v[1]};
    qM = {q[0] + h / 2 * v[0], q[1] + h / 2 * v[1]};
    mass_matrix(model, qM.data(), H.data());
    bias_forces(model, qM.data(), v.data(), b.data());
    A = H;
    for (int k = 0; k < 2; ++k) A[k * 2 + k] += h * model.dof_damping[k];
  }
};

TEST(Damping, JointDampingIsImplicit) {
  // (H(q_M) + h D) Δv = h (τ − b(q_M, v) − D v) on the double pendulum with damping and
  // armature on both joints; compared against the explicit form to make sure it matters.
  Model model = load_model(asset("double_pendulum.json"));
  model.dof_damping = {3.0, 1.5};
  model.dof_armature = {0.02, 0.01};
  const TwoDofStep s(model);
  std::vector<double> rhs(2);
  for (int k = 0; k < 2; ++k) rhs[k] = s.h * (-s.b[k] - model.dof_damping[k] * s.v[k]);
  const auto dv_imp = solve_spd(s.A, rhs);
  const auto dv_exp = solve_spd(s.H, rhs);  // explicit damping: H Δv = h (−b − D v)
  EXPECT_NEAR_REL(s.dv, dv_imp, 1e-11, 1e-13, "Δv vs (H + h D)⁻¹ h (τ − b − D v)");
  double diff = 0;
  for (int k = 0; k < 2; ++k) diff = std::max(diff, std::abs(dv_imp[k] - dv_exp[k]));
  EXPECT_GT(diff, 1e-4) << "implicit and explicit damping should differ measurably in this test";
  // q_{k+1} = q_M + h/2 v_{k+1}
  const std::vector<double> q_exp = {s.qM[0] + s.h / 2 * s.v1[0], s.qM[1] + s.h / 2 * s.v1[1]};
  EXPECT_NEAR_REL(s.q1, q_exp, 1e-14, 1e-15, "q_{k+1} vs q_M + h/2 v_{k+1}");
}

// Per-environment damping_scale c and armature_scale a: environment e steps as the model with
// damping c_e D and armature a_e A does (both scales 1: the same bits as without them).
TEST(Damping, DampingAndArmatureScalesActPerEnvironment) {
  Model model = load_model(asset("double_pendulum.json"));
  model.dof_damping = {3.0, 1.5};
  model.dof_armature = {0.02, 0.01};
  const std::vector<double> c = {1.0, 0.0, 2.5}, a = {1.0, 3.0, 0.5};
  const std::vector<double> q0 = {0.4, -0.7, 0.4, -0.7, 0.4, -0.7}, v0 = {1.2, -2.0, 1.2, -2.0, 1.2, -2.0};  // (n_env x 2)
  Simulator sim(model, opts64(3, 0.01, 5));
  sim.set_param("damping_scale", c.data(), 3, 1);
  sim.set_param("armature_scale", a.data(), 3, 1);
  sim.set_state(q0.data(), v0.data(), 3);
  sim.step(1);
  std::vector<double> q(6), v(6);
  sim.get_state(q.data(), v.data(), 3);
  for (int e = 0; e < 3; ++e) {
    SCOPED_TRACE("environment " + std::to_string(e));
    Model scaled = model;
    for (int k = 0; k < 2; ++k) {
      scaled.dof_damping[k] *= c[e];
      scaled.dof_armature[k] *= a[e];
    }
    Simulator one(scaled, opts64(1, 0.01, 5));
    const double qe[2] = {q0[2 * e], q0[2 * e + 1]}, ve[2] = {v0[2 * e], v0[2 * e + 1]};
    one.set_state(qe, ve, 1);
    one.step(1);
    std::vector<double> q1(2), v1(2);
    one.get_state(q1.data(), v1.data(), 1);
    const std::vector<double> qs(q.begin() + 2 * e, q.begin() + 2 * e + 2), vs(v.begin() + 2 * e, v.begin() + 2 * e + 2);
    EXPECT_NEAR_REL(qs, q1, 1e-13, 1e-14, "q vs the scaled model's");
    EXPECT_NEAR_REL(vs, v1, 1e-13, 1e-14, "v vs the scaled model's");
    if (e == 0) EXPECT_TRUE(qs == q1 && vs == v1) << "scales 1: same bits";
  }
  EXPECT_GT(std::abs(v[0] - v[2]) + std::abs(v[0] - v[4]), 1e-3) << "the scales should change the motion measurably";
}

TEST(Springs, JointSpringsActAtTheMidpoint) {
  // (H(q_M) + h D) Δv = h (−k (q_M − q_spring) − b(q_M, v) − D v) on the double pendulum with
  // a spring and damping on both joints.
  Model model = load_model(asset("double_pendulum.json"));
  model.jnt_stiffness = {25.0, 8.0};
  model.jnt_springref = {0.3, -0.5};
  model.dof_damping = {0.4, 0.2};
  const TwoDofStep s(model);
  std::vector<double> spring(2), rhs(2), passive(2);
  for (int k = 0; k < 2; ++k) {
    spring[k] = -model.jnt_stiffness[k] * (s.qM[k] - model.jnt_springref[k]);
    rhs[k] = s.h * (spring[k] - s.b[k] - model.dof_damping[k] * s.v[k]);
  }
  EXPECT_NEAR_REL(s.dv, solve_spd(s.A, rhs), 1e-11, 1e-13, "Δv with springs at q_M");
  passive_forces(model, s.qM.data(), s.v.data(), passive.data());  // public: −D v − k (q − q_spring)
  for (int k = 0; k < 2; ++k) EXPECT_NEAR(passive[k], spring[k] - model.dof_damping[k] * s.v[k], 1e-14);
}

}  // namespace
}  // namespace moreau
