// The scratch's size classes (include/moreau/limits.h Dims, kern::with_dims): which class a
// model runs in, and that the class only sizes storage: a step and its adjoint in the quadruped
// and the small class equal those in the largest bit for bit, in every contact mode, float and
// double.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "host/backend.h"
#include "kernels/step.h"
#include "moreau/model.h"
#include "support/one_env.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using test::view_of;

const char* chosen_class(const Model& model, bool rolling = false) {
  PackedModel<double> packed(model);
  const char* name = nullptr;
  kern::with_dims(view_of(packed), rolling, [&](const auto& v) {
    using D = typename std::decay_t<decltype(v)>::Dims;
    name = std::is_same_v<D, QuadrupedDims> ? "quadruped" : std::is_same_v<D, SmallDims> ? "small" : "max";
  });
  return name;
}

// ANYmal C with a friction loss on its hip abduction joints: 16 joint rows.
Model anymal_with_frictionloss() {
  Model m = load_model(test::asset("anymal_c.json"));
  for (int d = 6; d < m.nv; d += 3) m.dof_frictionloss[d] = 0.1;
  return m;
}

TEST(Dims, EachModelRunsInTheSmallestClassItFits) {
  // 13 bodies, nv 18, 4 feet, 12 limits
  EXPECT_STREQ(chosen_class(load_model(test::asset("anymal_c.json"))), "quadruped");
  // room for rolling friction's rows (contact condim 6): the quadruped's class has none
  EXPECT_STREQ(chosen_class(load_model(test::asset("anymal_c.json")), true), "small");
  EXPECT_STREQ(chosen_class(load_model(test::asset("cartpole.json")), true), "small");
  EXPECT_STREQ(chosen_class(anymal_with_frictionloss()), "small");              // 16 joint rows > 12
  EXPECT_STREQ(chosen_class(load_model(test::asset("cube.json"))), "small");      // 8 corners > 4
  EXPECT_STREQ(chosen_class(load_model(test::asset("cartpole.json"))), "quadruped");
  EXPECT_STREQ(chosen_class(test::cylinder_model()), "max");  // 16 rim points > 8
  // feet colliding with each other: a pair takes an active slot as a point does
  const Model anymal_c = load_model(test::asset("anymal_c.json"));
  EXPECT_STREQ(chosen_class(with_self_collisions(anymal_c, {{"LF_SHANK", "RF_SHANK"}, {"LH_SHANK", "RH_SHANK"}})),
               "small");  // 4 points + 2 pairs > 4
  EXPECT_STREQ(chosen_class(with_self_collisions(anymal_c, {{"LF_SHANK", "RF_SHANK"}, {"LH_SHANK", "RH_SHANK"},
                                                            {"LF_SHANK", "LH_SHANK"}, {"RF_SHANK", "RH_SHANK"},
                                                            {"LF_SHANK", "RH_SHANK"}, {"RF_SHANK", "LH_SHANK"}})),
               "max");  // 4 points + 6 pairs > 8
  Model anymal = load_model(test::asset("anymal_c.json"));
  PackedModel<double> packed(anymal);
  kern::ModelArrays<double> m = view_of(packed);
  EXPECT_TRUE(kern::fits<SmallDims>(m));
  m.ncon = SmallDims::kContacts + 1;
  EXPECT_FALSE(kern::fits<SmallDims>(m));
  m = view_of(packed);
  m.nv = SmallDims::kNv + 1;
  EXPECT_FALSE(kern::fits<SmallDims>(m));
  EXPECT_TRUE(kern::fits<MaxDims>(m));
  m = view_of(packed);  // a deeper tree of as many dofs (more mass-matrix entries) needs the large class
  m.nM = SmallDims::kNM + 1;
  EXPECT_FALSE(kern::fits<SmallDims>(m));
  EXPECT_TRUE(kern::fits<MaxDims>(m));
  m = view_of(packed);  // a longer root-to-dof path (longer contact rows) too
  m.nchain = SmallDims::kChain + 1;
  EXPECT_FALSE(kern::fits<SmallDims>(m));
  EXPECT_TRUE(kern::fits<MaxDims>(m));
  m = view_of(packed);  // a pair where a point would fit: the quadruped class holds no pairs
  m.ncon = QuadrupedDims::kContacts - 1;
  m.npair = 1;
  EXPECT_FALSE(kern::fits<QuadrupedDims>(m));
  EXPECT_TRUE(kern::fits<SmallDims>(m));
  static_assert(QuadrupedDims::kActive == 4 && SmallDims::kActive == 8 && MaxDims::kActive == kMaxActive,
                "kActive = min(points, kMaxActive)");
  static_assert(QuadrupedDims::kPairRows == 0 && SmallDims::kPairRows == 3 * SmallDims::kActive,
                "rows for pairs' second halves only in a class that holds pairs");
}

// One pure step and its adjoint of one environment in size class D, from (q, v, u).
template <class S, class D>
test::OneEnvBatch<S> run(const kern::ModelView<S>& full, const kern::ContactSettings<S>& cfg, const kern::Params<S>& p,
                         const std::vector<S>& q, const std::vector<S>& v, const std::vector<S>& u) {
  const kern::ModelView<S, D> m{full};
  test::OneEnvBatch<S> r(full, q.data(), v.data(), u.data());
  kern::pure_step(m, cfg, p, r.pure(), 0);
  const int n_tapes = m.decimation * cfg.substeps;
  auto tapes = std::make_unique<kern::AdjTape<S, D>[]>(n_tapes);
  kern::adj_pure_step(m, cfg, p, r.pure(), 0, tapes.get(), n_tapes);
  return r;
}

// One step and its adjoint of `model` in class D and in MaxDims, bit for bit.
template <class S, class D>
void expect_classes_agree(const Model& model) {
  PackedModel<S> packed(model);
  const kern::ModelView<S> m = view_of(packed);
  std::mt19937 rng(7);
  std::normal_distribution<double> n01;
  std::vector<S> q(m.nq), v(m.nv, S(0)), u(m.nu);
  for (int k = 0; k < m.nq; ++k) q[k] = static_cast<S>(model.qpos0[k]);
  for (int a = 0; a < m.nu; ++a) u[a] = static_cast<S>(model.qpos0[m.actuator_qposadr[a]]);  // hold the pose
  // torque rows in both classes' solves: rolling ones where class D holds them
  const test::OneEnvParams<S> params(model, D::kTorque == 3 ? S(0.01) : S(0));
  const kern::Params<S> p = params.view();
  // settle on the ground (1 s of hard contact, the pose held), then a random velocity and actions
  const kern::ContactSettings<S> hard{kern::kContactHard, 500, S(1e-6), 1, 1};
  for (int step = 0; step < 50; ++step) {
    const auto r = run<S, MaxDims>(m, hard, p, q, v, u);
    ASSERT_EQ(r.status[0], 0);
    q = r.q_out;
    v = r.v_out;
  }
  for (auto& x : v) x = static_cast<S>(0.3 * n01(rng));
  for (auto& x : u) x += static_cast<S>(0.1 * n01(rng));
  for (int mode : {kern::kContactHard, kern::kContactSoft, kern::kContactSmooth, kern::kContactHardSmoothGrad}) {
    SCOPED_TRACE(mode);
    const kern::ContactSettings<S> cfg{mode, 500, S(1e-6), 1, mode == kern::kContactSoft ? 4 : 1};
    const auto small = run<S, D>(m, cfg, p, q, v, u);
    const auto max = run<S, MaxDims>(m, cfg, p, q, v, u);
    EXPECT_EQ(small.status, max.status);
    EXPECT_EQ(small.q_out, max.q_out);
    EXPECT_EQ(small.v_out, max.v_out);
    EXPECT_EQ(small.adj_q, max.adj_q);
    EXPECT_EQ(small.adj_v, max.adj_v);
    EXPECT_EQ(small.adj_u, max.adj_u);
    EXPECT_EQ(small.adj_mu, max.adj_mu);
    EXPECT_TRUE(small == max) << "another buffer differs";
    EXPECT_NE(small.adj_mu[0], S(0)) << "no contact force: the test state is not in contact";
    EXPECT_NE(small.q_out, q);
  }
}

// A team that runs each call's work in reverse (kernels/team.h): for_each from n − 1 down, the
// bodies of each depth level in the order opposite to their index order's. A kernel function
// whose f(i) reads what another i of the same call writes, or that sums a parent's children in
// another order, gives other values than SerialTeam's index order.
struct ReverseOrderTeam {
  template <class T, int N>
  using Array = kern::SerialTeam::Array<T, N>;
  template <class F>
  static void for_each(int n, F&& f) {
    for (int i = n - 1; i >= 0; --i) f(i);
  }
  template <class S, class F>
  static void down_tree(const kern::ModelArrays<S>& m, F&& f) {
    for (int l = 0; l < m.nlevel; ++l)
      for (int k = m.level_adr[l + 1] - 1; k >= m.level_adr[l]; --k) f(m.level_body[k]);
  }
  template <class S, class F>
  static void up_tree(const kern::ModelArrays<S>& m, F&& f) {
    for (int l = m.nlevel - 1; l >= 0; --l)
      for (int k = m.level_adr[l]; k < m.level_adr[l + 1]; ++k) f(m.level_body[k]);
  }
  template <class F>
  static void single(F&& f) {
    f();
  }
};
using ReversedQuadruped = kern::Teamed<QuadrupedDims, ReverseOrderTeam>;

TEST(Team, TreeLevelsOfAQuadruped) {
  const Model model = load_model(test::asset("anymal_c.json"));
  PackedModel<double> packed(model);
  const kern::ModelArrays<double> m = view_of(packed);
  ASSERT_EQ(m.nlevel, 4);  // the base, then the hips, thighs and shanks of the four legs
  EXPECT_EQ(std::vector<int>(m.level_adr, m.level_adr + 5), (std::vector<int>{0, 1, 5, 9, 13}));
  for (int l = 0; l < m.nlevel; ++l)
    for (int k = m.level_adr[l]; k < m.level_adr[l + 1]; ++k) {
      const int i = m.level_body[k], par = m.body_parent[i];
      EXPECT_TRUE(l == 0 ? par < 0 : par >= 0) << i;
      for (int c = m.child_adr[i]; c < m.child_adr[i + 1]; ++c) {
        EXPECT_EQ(m.body_parent[m.child_body[c]], i);
        if (c > m.child_adr[i]) EXPECT_LT(m.child_body[c], m.child_body[c - 1]);
      }
    }
  EXPECT_EQ(m.child_adr[1] - m.child_adr[0], 4);  // the base's four hips
  EXPECT_EQ(m.child_adr[m.nbody], m.nbody - 1);
}

// The dofs' branches that the mass matrix's factorisation and solves run on their own lanes:
// every dof from branch_first on once, in descending order, branch by branch, each branch the
// subtree of a dof whose parent is in the roots' block (or that has none).
void expect_branches(const std::string& robot, int first, int nbranch) {
  SCOPED_TRACE(robot);
  const Model model = load_model(test::asset(robot));
  PackedModel<double> packed(model);
  const kern::ModelArrays<double> m = view_of(packed);
  EXPECT_EQ(m.branch_first, first);
  ASSERT_EQ(m.nbranch, nbranch);
  std::vector<int> listed, want;
  for (int b = 0; b < m.nbranch; ++b) {
    const int root = m.branch_dof[m.branch_adr[b + 1] - 1], d = m.dof_depth[root];
    EXPECT_TRUE(d == 0 || m.M_colind[m.dof_Madr[root] + d - 1] < m.branch_first) << "branch " << b;
    for (int e = m.branch_adr[b]; e < m.branch_adr[b + 1]; ++e) {
      listed.push_back(m.branch_dof[e]);
      EXPECT_EQ(m.M_colind[m.dof_Madr[m.branch_dof[e]] + d], root) << "dof " << m.branch_dof[e];
    }
  }
  for (int k = m.nv - 1; k >= m.branch_first; --k) want.push_back(k);
  EXPECT_EQ(listed, want);
}
TEST(Team, DofBranches) {
  expect_branches("anymal_c.json", 6, 4);  // the legs, after the base's six dofs
  expect_branches("unitree_go1/go1.xml", 6, 4);
  expect_branches("cartpole.json", 2, 0);  // a chain: no branch
  expect_branches("cube.json", 6, 0);
}

// A whole step and its adjoint, every contact mode: the team's order, bit for bit the serial one.
TEST(Team, WorkInReverseOrderGivesTheSameBitsFloat) {
  expect_classes_agree<float, ReversedQuadruped>(load_model(test::asset("anymal_c.json")));
}
TEST(Team, WorkInReverseOrderGivesTheSameBitsDouble) {
  expect_classes_agree<double, ReversedQuadruped>(load_model(test::asset("anymal_c.json")));
}
TEST(Team, WorkInReverseOrderGivesTheSameBitsWithFrictionLoss) {
  expect_classes_agree<double, kern::Teamed<SmallDims, ReverseOrderTeam>>(anymal_with_frictionloss());
}

// hard_smooth_grad's smooth re-solve keeps those of the hard solve's blocks that are within g_max
// (restrict_active), moving the kept entries of G down in place, in a team's storage (its lower
// triangle) as in one lane's: a box tilted on one edge, its raised corners between g_max and the
// hard solve's reach, bit for bit the serial step and its adjoint.
TEST(Team, ActiveSetRestrictedInPlaceGivesTheSameBits) {
  const Model model = load_model(test::asset("cube.json"));
  PackedModel<double> packed(model);
  const kern::ModelView<double> m = view_of(packed);
  const test::OneEnvParams<double> params(model, 0.0);
  const double th = 0.3;  // the raised edge 0.03 m up (g_max 0.02 m; reach 10 m/s h = 0.05 m)
  const std::vector<double> q{0.1, -0.2, 0.05 * (std::cos(th) + std::sin(th)) - 1e-4, std::cos(th / 2), 0,
                              std::sin(th / 2), 0};
  const std::vector<double> v(m.nv, 0.0), u(m.nu, 0.0);
  const kern::ContactSettings<double> cfg{kern::kContactHardSmoothGrad, 500, 1e-10, 1, 1};
  const auto team = run<double, kern::Teamed<SmallDims, ReverseOrderTeam>>(m, cfg, params.view(), q, v, u);
  const auto serial = run<double, SmallDims>(m, cfg, params.view(), q, v, u);
  EXPECT_TRUE(team == serial);
  EXPECT_NE(serial.adj_q, std::vector<double>(m.nq, 0.0)) << "no gradient: the box is off the ground";
}

TEST(Dims, QuadrupedClassEqualsTheLargestBitForBitFloat) {
  expect_classes_agree<float, QuadrupedDims>(load_model(test::asset("anymal_c.json")));
}
TEST(Dims, QuadrupedClassEqualsTheLargestBitForBitDouble) {
  expect_classes_agree<double, QuadrupedDims>(load_model(test::asset("anymal_c.json")));
}
// ANYmal C with friction loss on its hips: 16 joint rows, the small class
TEST(Dims, SmallClassEqualsTheLargestBitForBitFloat) {
  expect_classes_agree<float, SmallDims>(anymal_with_frictionloss());
}
TEST(Dims, SmallClassEqualsTheLargestBitForBitDouble) {
  expect_classes_agree<double, SmallDims>(anymal_with_frictionloss());
}

}  // namespace
}  // namespace moreau
