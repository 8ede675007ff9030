// The adjoint of a whole control step (Simulator::step_adjoint, float64) against forward-mode
// derivatives of the same kernels on dual numbers: kern::advance<Dual> seeded on one input
// coordinate or parameter at a time gives that entry of the gradient to round-off. With the
// contact solves converged to 1e-13, the derivative of the solver's iterations equals the
// implicit one (tests/contact_adjoint_test.cc, ImplicitAdjointIsTheLimitOfTheUnrolledSolver),
// so the two agree to ~1e-11 and better (docs/gradients.md) where central differences can
// only check ~1e-5; asserted: 1e-9.
// hard_smooth_grad's gradient is by design not the derivative of its forward: it is the chain
// of the smooth model's physics-step derivatives at the hard trajectory's states, which forward
// mode reproduces by stepping the values with hard contact and the derivatives with smooth.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "host/backend.h"
#include "kernels/step.h"
#include "moreau/simulator.h"
#include "support/dual.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::Dual;
using Vec = std::vector<double>;

// The inputs of a control step, as dual numbers: state, action and every parameter.
struct DualInputs {
  std::vector<Dual> q, v, u;
  std::vector<Dual> kp, kd, added_base_mass, friction, contact_kn, contact_kd, contact_zeta, smooth_k, smooth_gmax,
      motor_strength, frictionloss_scale, spin_friction, rolling_friction, damping_scale, armature_scale, terrain_x, terrain_y;
};

// Control steps of `model` on dual numbers with the settings and parameters of a
// one-environment float64 CPU simulator.
class DualStep {
 public:
  DualStep(const Model& model, Simulator& sim)
      : model_(model), packed_(model), m_(packed_.view(packed_.reals.data(), packed_.ints.data())) {
    const ContactOptions& c = sim.options().contact;
    straight_through_ = c.mode == ContactMode::HardSmoothGrad;
    cfg_ = {straight_through_ ? kern::kContactSmooth : static_cast<int>(c.mode), c.max_iterations, Dual(c.tolerance),
            c.speculative ? 1 : 0, sim.substeps()};
    hard_ = cfg_;
    hard_.mode = kern::kContactHard;
    base_.q.resize(model.nq);
    base_.v.resize(model.nv);
    base_.u.resize(model.nu);
    for (auto [field, name] : {std::pair{&base_.kp, "kp"}, {&base_.kd, "kd"},
                               {&base_.added_base_mass, "added_base_mass"}, {&base_.friction, "friction"},
                               {&base_.contact_kn, "contact_kn"}, {&base_.contact_kd, "contact_kd"},
                               {&base_.contact_zeta, "contact_zeta"}, {&base_.smooth_k, "smooth_k"},
                               {&base_.smooth_gmax, "smooth_gmax"}, {&base_.motor_strength, "motor_strength"},
                               {&base_.frictionloss_scale, "frictionloss_scale"},
                               {&base_.spin_friction, "spin_friction"}, {&base_.rolling_friction, "rolling_friction"},
                               {&base_.damping_scale, "damping_scale"},
                               {&base_.armature_scale, "armature_scale"}, {&base_.terrain_x, "terrain_x"},
                               {&base_.terrain_y, "terrain_y"}}) {
      if (std::string(name) == "rolling_friction" && sim.options().contact.condim != 6) {
        field->assign(1, Dual(0));  // no room for rolling rows: none (the simulator refuses the view)
        continue;
      }
      const View x = sim.param(name);  // (1 x width), float64 on the CPU
      EXPECT_EQ(x.shape[0], 1) << name;
      const double* values = static_cast<const double*>(x.data);
      field->assign(values, values + x.shape[1]);
    }
  }
  // dL/dx at (q, v, u) for L = ⟨w_q, q_out⟩ + ⟨w_v, v_out⟩, x the input whose derivative `seed`
  // sets to 1.
  double derivative(const Vec& q, const Vec& v, const Vec& u, const Vec& wq, const Vec& wv,
                    const std::function<void(DualInputs&)>& seed) const {
    DualInputs in = base_;
    std::copy(q.begin(), q.end(), in.q.begin());
    std::copy(v.begin(), v.end(), in.v.begin());
    std::copy(u.begin(), u.end(), in.u.begin());
    seed(in);
    kern::Params<Dual> p{{in.kp.data(), 1},           {in.kd.data(), 1},         {in.added_base_mass.data(), 1},
                         {in.friction.data(), 1},     {in.contact_kn.data(), 1}, {in.contact_kd.data(), 1},
                         {in.contact_zeta.data(), 1}, {in.smooth_k.data(), 1},   {in.smooth_gmax.data(), 1},
                         {in.motor_strength.data(), 1}, {in.frictionloss_scale.data(), 1},
                         {in.spin_friction.data(), 1},  {in.rolling_friction.data(), 1}, {in.damping_scale.data(), 1},
                         {in.armature_scale.data(), 1}, {in.terrain_x.data(), 1}, {in.terrain_y.data(), 1}};
    auto tape = std::make_unique<kern::StepTape<Dual>>();
    const auto info = kern::no_info<Dual>();
    const auto no_stats = static_cast<kern::StepStats<Dual>*>(nullptr);
    int status = 0;
    if (!straight_through_) {
      status = kern::advance(m_, cfg_, p, 0, in.q.data(), in.v.data(), in.u.data(), *tape, info, no_stats);
    } else {  // each physics step: the smooth step's derivative at the hard step's input
      std::vector<Dual> q_hard = in.q, v_hard = in.v;
      for (int s = 0; s < model_.decimation * cfg_.substeps; ++s) {
        for (int k = 0; k < model_.nq; ++k) in.q[k].v = q_hard[k].v;
        for (int k = 0; k < model_.nv; ++k) in.v[k].v = v_hard[k].v;
        status |= kern::record_steps(m_, cfg_, p, 0, in.q.data(), in.v.data(), in.u.data(), tape.get(), 1, 0, info,
                                     no_stats);
        status |= kern::record_steps(m_, hard_, p, 0, q_hard.data(), v_hard.data(), in.u.data(), tape.get(), 1, 0,
                                     info, no_stats);
      }
    }
    EXPECT_EQ(status, 0);
    double d = 0;
    for (int k = 0; k < model_.nq; ++k) d += wq[k] * in.q[k].d;
    for (int k = 0; k < model_.nv; ++k) d += wv[k] * in.v[k].d;
    return d;
  }

 private:
  const Model& model_;
  PackedModel<Dual> packed_;
  kern::ModelView<Dual> m_;
  kern::ContactSettings<Dual> cfg_, hard_;  // hard_: the values' steps (hard_smooth_grad)
  bool straight_through_;
  DualInputs base_;
};

// A state to differentiate at: `robot` in `mode` with friction μ and gravity tilted by
// gravity_x, settled for `settle` control steps from its default pose, then the base moved by
// dz and its vertical velocity set to vz; or the given state.
struct Case {
  const char* robot;
  ContactMode mode;
  double gravity_x = 0, friction = 1;
  int settle = 100;
  double dz = -1e-3, vz = 0;  // by default 1 mm in: hard contact settles on the speculative kink
  Vec q = {}, v = {};
  double rel = 1e-9;
  bool sliding = false;  // μ reaches the gradient only where a contact slides
  double action_noise = 0.3;  // actions: the default pose plus this times N(0, 1) [rad]
};

// The adjoint's gradient entries against forward mode, each within c.rel of the largest of its
// own size, 1e-6 of the largest entry of its group and 1e-2 of the largest state or action
// gradient (round-off: an entry is a sum of terms up to that size, measured ~3e-12 of it). The base
// carries 2 kg more than the model's (the kernels skip the added mass where it is 0, and
// forward mode with them).
void expect_matches_forward_mode(const Case& c) {
  const double added_base_mass = 2, rel = c.rel;
  Model model = load_model(test::asset(c.robot));
  model.gravity[0] = c.gravity_x;
  SimulatorOptions o;
  o.dtype = DType::Float64;
  o.n_threads = 1;
  o.contact.mode = c.mode;
  o.contact.tolerance = 1e-13;
  o.contact.max_iterations = 20000;
  Simulator sim(model, o);
  sim.set_param("friction", &c.friction, 1, 1);
  sim.set_param("added_base_mass", &added_base_mass, 1, 1);
  const int nq = model.nq, nv = model.nv, nu = model.nu;
  Vec q = c.q, v = c.v, u(nu), wq(nq), wv(nv);
  if (q.empty()) {
    sim.step(c.settle);
    q.resize(nq);
    v.resize(nv);
    sim.get_state(q.data(), v.data(), 1);
    q[2] += c.dz;
    if (c.vz != 0) v[2] = c.vz;
  }
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0, 1);
  for (int a = 0; a < nu; ++a) u[a] = model.qpos0[model.actuator_qposadr[a]] + c.action_noise * normal(rng);
  for (double& x : wq) x = normal(rng);
  for (double& x : wv) x = normal(rng);
  // the adjoint, with every parameter gradient of one environment
  Vec gq(nq), gv(nv), gu(nu), gkp(nu), gkd(nu), gmass(1), gfriction(1), gkn(1), gk(1);
  Simulator::Gradients g;
  g.q = gq.data();
  g.v = gv.data();
  g.action = gu.data();
  g.kp = gkp.data();
  g.kd = gkd.data();
  g.added_base_mass = gmass.data();
  g.friction = gfriction.data();
  g.contact_kn = gkn.data();
  g.smooth_k = gk.data();
  int32_t status = -1;
  sim.step_adjoint(q.data(), v.data(), u.data(), wq.data(), wv.data(), g, &status);
  ASSERT_EQ(status, 0);
  const DualStep dual(model, sim);
  double overall = 0;
  for (const Vec* x : {&gq, &gv, &gu})
    for (double y : *x) overall = std::max(overall, std::abs(y));
  auto check = [&](const Vec& adjoint, const char* what, const std::function<void(DualInputs&, int)>& seed,
                   bool nonzero = true) {
    Vec forward(adjoint.size());
    for (size_t i = 0; i < adjoint.size(); ++i)
      forward[i] = dual.derivative(q, v, u, wq, wv, [&](DualInputs& in) { seed(in, static_cast<int>(i)); });
    double largest = 0;
    for (double x : forward) largest = std::max(largest, std::abs(x));
    if (nonzero) EXPECT_GT(largest, 0) << what;
    for (size_t i = 0; i < adjoint.size(); ++i)
      EXPECT_NEAR(adjoint[i], forward[i], rel * std::max({std::abs(forward[i]), 1e-6 * largest, 1e-2 * overall}))
          << what << "[" << i << "]";
  };
  const ContactMode mode = c.mode;
  check(gq, "dL/dq", [](DualInputs& in, int i) { in.q[i].d = 1; });
  check(gv, "dL/dv", [](DualInputs& in, int i) { in.v[i].d = 1; });
  if (nu > 0) {
    check(gu, "dL/daction", [](DualInputs& in, int i) { in.u[i].d = 1; });
    const bool servo = std::count(model.actuator_type.begin(), model.actuator_type.end(), kern::kActPosition) > 0;
    check(gkp, "dL/dkp", [](DualInputs& in, int i) { in.kp[i].d = 1; }, servo);
    check(gkd, "dL/dkd", [](DualInputs& in, int i) { in.kd[i].d = 1; }, servo);
  }
  // a lone body's velocity after impulses does not depend on its mass (impulses scale with it)
  check(gmass, "dL/d(added base mass)", [](DualInputs& in, int) { in.added_base_mass[0].d = 1; }, model.nbody > 1);
  if (c.sliding) check(gfriction, "dL/dfriction", [](DualInputs& in, int) { in.friction[0].d = 1; });
  if (mode == ContactMode::Soft) check(gkn, "dL/dk_n", [](DualInputs& in, int) { in.contact_kn[0].d = 1; });
  if (mode == ContactMode::Smooth || mode == ContactMode::HardSmoothGrad)
    check(gk, "dL/dsmooth_k", [](DualInputs& in, int) { in.smooth_k[0].d = 1; });
}

constexpr ContactMode kWithContact[] = {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth,
                                        ContactMode::HardSmoothGrad};

TEST(ForwardMode, AirborneStepMatchesTheAdjoint) {
  Case c{"anymal_c.json", ContactMode::None};
  c.settle = 0;
  expect_matches_forward_mode(c);
}

TEST(ForwardMode, StandingStepMatchesTheAdjointInEveryContactMode) {
  for (ContactMode mode : kWithContact) {
    SCOPED_TRACE(contact_mode_name(mode));
    expect_matches_forward_mode({"anymal_c.json", mode});
  }
}

// Actions 2 rad off the pose on average: most servos hit their ±80 Nm force range, where the
// gradient goes to the bound (nothing to the action, kp or kd) while it binds.
TEST(ForwardMode, SaturatedServosMatchTheAdjoint) {
  for (ContactMode mode : {ContactMode::None, ContactMode::Hard}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Case c{"anymal_c.json", mode};
    c.settle = mode == ContactMode::None ? 0 : 100;
    c.action_noise = 2;
    expect_matches_forward_mode(c);
  }
}

// μ = 0.4 with gravity tilted by atan(8 / 9.81): every foot slides.
TEST(ForwardMode, SlidingStepMatchesTheAdjoint) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::HardSmoothGrad}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Case c{"anymal_c.json", mode, 8, 0.4};
    c.settle = 20;
    c.sliding = true;
    expect_matches_forward_mode(c);
  }
}

// Feet 3 mm above the ground and approaching at 0.3 m/s: hard contact's speculative rows
// (c_n += g/h) and the smooth gates at positive gaps (w ≈ 0.3).
TEST(ForwardMode, ApproachingStepMatchesTheAdjoint) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::HardSmoothGrad}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Case c{"anymal_c.json", mode};
    c.dz = 3e-3;
    c.vz = -0.3;
    expect_matches_forward_mode(c);
  }
}

// Feet pressed 1 mm in and still moving down at 0.3 m/s: soft contact's damping and its
// effective mass (k_d = 2ζ sqrt(k_n G_nn⁻¹)) act at every foot.
TEST(ForwardMode, PressingStepMatchesTheAdjoint) {
  for (ContactMode mode : kWithContact) {
    SCOPED_TRACE(contact_mode_name(mode));
    Case c{"anymal_c.json", mode};
    c.vz = -0.3;
    expect_matches_forward_mode(c);
  }
}

// The cube flat on four corners, sliding slowly and turning: statically indeterminate, so the
// implicit system is singular and takes the least-squares branch, whose Tikhonov δ (1e-14 of
// the largest diagonal) costs digits: measured 5e-10, asserted 1e-8. (Soft contact's friction
// solve does not converge to 1e-13 on four redundant corners.)
TEST(ForwardMode, FlatCubeOnFourCornersMatchesTheAdjoint) {
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Smooth, ContactMode::HardSmoothGrad}) {
    SCOPED_TRACE(contact_mode_name(mode));
    Case c{"cube.json", mode};
    c.q = {0.1, -0.2, 0.05 - 1e-4, 1, 0, 0, 0};
    c.v = {0.01, -0.02, -0.01, 0, 0, 0.02};
    c.rel = 1e-8;
    expect_matches_forward_mode(c);
  }
}

// Prismatic and revolute joints at the root: the cart-pole in free motion, and the planar box
// (x, z, pitch) on one edge, pressed 0.1 mm in, tilted by 0.3 rad, sliding and turning.
TEST(ForwardMode, PrismaticRootsMatchTheAdjoint) {
  Case cartpole{"cartpole.json", ContactMode::None};
  cartpole.q = {0.3, 0.4};
  cartpole.v = {-0.5, 1.5};
  expect_matches_forward_mode(cartpole);
  const double pitch = 0.3, lowest = 0.1 * std::sin(pitch) + 0.05 * std::cos(pitch);
  for (ContactMode mode : kWithContact) {
    SCOPED_TRACE(contact_mode_name(mode));
    Case box{"planar_box.json", mode};
    box.q = {0.1, lowest - 0.3 - 1e-4, pitch};
    box.v = {0.2, -0.1, 1.0};
    box.sliding = true;
    box.rel = 1e-8;  // the edge's two corners are redundant: the least-squares branch
    expect_matches_forward_mode(box);
  }
}

}  // namespace
}  // namespace moreau
