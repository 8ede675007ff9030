// Contact between two bodies of the robot (kernels/contact.h's pairs: sphere against sphere,
// rows J = J_a − J_b in two halves) against the analytic answer: two sliders meeting head on
// (a plastic collision conserving momentum), two free balls meeting obliquely (momentum
// conserved, friction between them), and the model functions that list the pairs. Their
// adjoints are checked against finite differences in gradient_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "moreau/simulator.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using Vec = std::vector<double>;

using test::sphere_body;

// Two root bodies of masses ma, mb on joints of `type` (sliders along x, or free), spheres of
// radius 0.05 m at x = ∓0.2 m, z = 1 m, away from the ground; no gravity.
Model two_bodies(JointType type, double ma, double mb) {
  RobotSpec spec;
  spec.name = "two_bodies";
  spec.gravity = {0, 0, 0};
  spec.bodies = {sphere_body("a", "", type, {-0.2, 0, 1}, ma), sphere_body("b", "", type, {0.2, 0, 1}, mb)};
  return with_self_collisions(compile(spec), {{"a", "b"}});
}

std::unique_ptr<Simulator> sim_of(const Model& model, ContactMode mode) {
  SimulatorOptions o;
  o.dtype = DType::Float64;
  o.n_threads = 1;
  o.contact.mode = mode;
  o.contact.tolerance = 1e-12;
  o.contact.max_iterations = 2000;
  return std::make_unique<Simulator>(model, o);
}

// Two sliders, 1 kg at +2 m/s and 3 kg at −1 m/s: momentum −1 kg m/s at every step in every
// mode (the pair's impulses are internal); under hard contact they end together at
// (m_a v_a + m_b v_b)/(m_a + m_b) = −0.25 m/s (plastic) without passing through each other.
TEST(PairContact, SlidersCollidePlasticallyConservingMomentum) {
  const Model model = two_bodies(JointType::Prismatic, 1, 3);
  ASSERT_EQ(model.npair, 1);
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    auto sim = sim_of(model, mode);
    Vec q = {0, 0}, v = {2, -1};
    sim->set_state(q.data(), v.data(), 1);
    double closest = 1;
    for (int s = 0; s < 50; ++s) {
      sim->step(1);
      sim->get_state(q.data(), v.data(), 1);
      EXPECT_NEAR(1 * v[0] + 3 * v[1], -1.0, 1e-9) << "step " << s;
      closest = std::min(closest, (0.2 + q[1]) - (-0.2 + q[0]) - 0.1);
    }
    EXPECT_LT(closest, 0.01);  // they met
    if (mode == ContactMode::Hard) {
      EXPECT_NEAR(v[0], -0.25, 1e-9);
      EXPECT_NEAR(v[1], -0.25, 1e-9);
      EXPECT_GT(closest, -1e-9);
    } else {
      EXPECT_GE(v[1] - v[0], -1e-9);  // not approaching any more
      EXPECT_GT(closest, -0.02);
    }
  }
}

// Two free balls meeting obliquely with a spin: linear momentum conserved in every mode, the
// normal relative velocity no longer approaching after the collision, and (hard contact,
// μ = 0.5) friction between them changing their spins.
TEST(PairContact, FreeBallsMeetObliquelyConservingMomentum) {
  const Model model = two_bodies(JointType::Free, 1, 2);
  for (ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    auto sim = sim_of(model, mode);
    const double mu = 0.5;
    sim->set_param("friction", &mu, 1, 1);
    Vec q = {-0.2, 0.03, 1, 1, 0, 0, 0, 0.2, -0.03, 1, 1, 0, 0, 0};  // a free body's q: its world pose
    Vec v = {1.5, 0, 0.2, 0, 0, 5, -0.5, 0, 0, 0, 0, 0};
    sim->set_state(q.data(), v.data(), 1);
    Vec p0(3);
    for (int a = 0; a < 3; ++a) p0[a] = 1 * v[a] + 2 * v[6 + a];
    for (int s = 0; s < 40; ++s) sim->step(1);
    sim->get_state(q.data(), v.data(), 1);
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(1 * v[a] + 2 * v[6 + a], p0[a], 1e-9) << "axis " << a;
    double d[3], dv[3];
    for (int a = 0; a < 3; ++a) {
      d[a] = q[7 + a] - q[a];
      dv[a] = v[6 + a] - v[a];
    }
    EXPECT_GE(d[0] * dv[0] + d[1] * dv[1] + d[2] * dv[2], -1e-9);  // separating or resting
    EXPECT_GT(std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]), 0.1 - 0.02);
    if (mode == ContactMode::Hard) EXPECT_GT(std::abs(v[11]) + std::abs(v[9]), 0.05);  // b spun up by friction
  }
}

TEST(PairContact, SelfCollisionListsNameBadBodies) {
  RobotSpec spec;
  spec.name = "two_bodies";
  spec.bodies = {sphere_body("a", "", JointType::Free, {-0.2, 0, 1}, 1),
                 sphere_body("b", "", JointType::Free, {0.2, 0, 1}, 1)};
  BodySpec bare;
  bare.name = "bare";
  bare.parent = "a";
  bare.joint.type = JointType::Revolute;
  bare.mass = 1;
  bare.inertia = {0.01, 0.01, 0.01, 0, 0, 0};
  spec.bodies.push_back(bare);
  const Model model = compile(spec);
  test::expect_error([&] { with_self_collisions(model, {{"a", "c"}}); }, {"element 0", "a body of", "'c'"}, "unknown");
  test::expect_error([&] { with_self_collisions(model, {{"a", "b"}, {"b", "b"}}); }, {"element 1", "twice"}, "same");
  test::expect_error([&] { with_self_collisions(model, {{"bare", "b"}}); }, {"contact points", "'bare'"}, "bare");
  const Model pairs = with_self_collisions(model, {{"b", "a"}});
  ASSERT_EQ(pairs.npair, 1);
  EXPECT_EQ(pairs.pair_con, (std::vector<int>{1, 0}));
  EXPECT_EQ(select_contacts(pairs, {"b_sphere", "a_sphere"}).pair_con, (std::vector<int>{0, 1}));
  EXPECT_EQ(select_contacts(pairs, {"b_sphere"}).npair, 0);
}

}  // namespace
}  // namespace moreau
