// Adjoints of kernels/joints.h on a chain with one joint of each type (free, ball,
// revolute with an anchor, prismatic), against finite differences, the dot-product test
// and perturbations of the quaternions on the unit sphere; see support/adjoint_check.h.
#include "kernels/joints.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "host/backend.h"
#include "moreau/model.h"
#include "support/adjoint_check.h"
#include "support/test_util.h"

namespace moreau {
namespace {

using kern::Mat3;
using kern::Motion;
using kern::Transform;
using kern::Vec3;
using test::AdjointCase;
using test::AdjointStats;
using test::InputBlock;
using test::load;
using test::store;
using V = std::vector<double>;

constexpr int kTrials = 6;

// free base → ball (anchored) → revolute (anchored, oblique axis) → prismatic
Model chain_model() {
  auto body = [](const char* name, const char* parent, std::array<double, 3> pos, std::array<double, 4> quat,
                 JointType type) {
    BodySpec b;
    b.name = name;
    b.parent = parent;
    b.pos = pos;
    b.quat = quat;
    b.joint.type = type;
    b.mass = 1;
    b.com = {0.01, 0.02, -0.03};
    b.inertia = {0.05, 0.06, 0.07, 0, 0, 0};
    return b;
  };
  RobotSpec spec;
  spec.name = "chain";
  spec.bodies.push_back(body("base", "world", {0.1, 0, 1}, {1, 0, 0, 0}, JointType::Free));
  spec.bodies.push_back(body("ball", "base", {0.2, -0.1, 0.05}, {0.9, 0.1, 0.3, 0.2}, JointType::Ball));
  spec.bodies.back().joint.pos = {0.05, -0.02, 0.1};
  spec.bodies.push_back(body("hinge", "ball", {0.3, 0, 0}, {0.95, 0, 0.3, 0.1}, JointType::Revolute));
  spec.bodies.back().joint.axis = {0.2, 1, 0.1};
  spec.bodies.back().joint.pos = {0.07, 0.03, -0.04};
  spec.bodies.push_back(body("slider", "hinge", {0, 0.1, 0.2}, {0.8, 0, 0, 0.6}, JointType::Prismatic));
  spec.bodies.back().joint.axis = {0.3, -0.4, 1};
  return compile(spec);
}

class JointAdjoint : public ::testing::Test {
 protected:
  void SetUp() override {
    model = std::make_unique<Model>(chain_model());
    ASSERT_EQ(model->nbody, 4);
    ASSERT_EQ(model->nq, 13);
    ASSERT_EQ(model->nv, 11);
    packed = std::make_unique<PackedModel<double>>(*model);
    m = packed->view(packed->reals.data(), packed->ints.data());
  }
  void random_state(V& q, V& v) {
    q.resize(model->nq);
    v.resize(model->nv);
    test::random_state(*model, rng, q.data(), v.data());
  }
  // The q blocks of every joint (offset `base` in x); the one of body `dep` (-1: all) must
  // have a non-zero gradient, the others an exactly zero one.
  std::vector<InputBlock> q_blocks(int base, int dep, bool affine_positions) const {
    return {{"q free position", base + 0, 3, affine_positions, false, dep < 0 || dep == 0},
            {"q free quaternion", base + 3, 4, false, true, dep < 0 || dep == 0},
            {"q ball quaternion", base + 7, 4, false, true, dep < 0 || dep == 1},
            {"q revolute angle", base + 11, 1, false, false, dep < 0 || dep == 2},
            {"q prismatic position", base + 12, 1, affine_positions, false, dep < 0 || dep == 3}};
  }
  std::unique_ptr<Model> model;
  std::unique_ptr<PackedModel<double>> packed;
  kern::ModelView<double> m{};
  std::mt19937 rng{2024};
  std::normal_distribution<double> N{0, 1};
};

Transform<double> random_transform(std::mt19937& rng) {
  std::normal_distribution<double> N(0, 1);
  Transform<double> X;
  for (double& e : X.E.m) e = N(rng);
  X.r = {N(rng), N(rng), N(rng)};
  return X;
}

TEST_F(JointAdjoint, JointTransform) {
  const char* names[] = {"free", "ball", "revolute", "prismatic"};
  for (int i = 0; i < m.nbody; ++i) {
    AdjointStats st;
    for (int t = 0; t < kTrials; ++t) {
      V q, v;
      random_state(q, v);
      AdjointCase c;
      c.name = std::string("joint_transform ") + names[i];
      c.x = q;
      c.blocks = q_blocks(0, i, true);
      const kern::ModelView<double> mv = m;
      c.f = [=](const V& x) {
        V y(12);
        store(kern::joint_transform(mv, i, x.data()), y.data());
        return y;
      };
      c.adj = [=](const V& x, const V& w, V& adj) {
        kern::adj_joint_transform(mv, i, x.data(), kern::joint_transform(mv, i, x.data()), adj.data(),
                                  load<Transform<double>>(w.data()));
      };
      test::check_adjoint(c, rng, st);
    }
    test::print_stats(std::string("joint_transform ") + names[i], st);
  }
}

TEST_F(JointAdjoint, JointMotion) {
  AdjointStats st;
  for (int i = 0; i < m.nbody; ++i) {
    const int n = kern::joint_nv(m.jnt_type[i]);
    for (int k = 0; k < n; ++k) {
      const bool depends = m.jnt_type[i] == kern::kJointFree && k < 3;
      for (int t = 0; t < 2; ++t) {
        AdjointCase c;
        c.name = "joint_motion body " + std::to_string(i) + " column " + std::to_string(k);
        c.x.resize(12);
        store(random_transform(rng), c.x.data());
        c.blocks = {{"X.E", 0, 9, true, false, depends}, {"X.r", 9, 3, true, false, false}};
        const kern::ModelView<double> mv = m;
        c.f = [=](const V& x) {
          V y(6);
          store(kern::joint_motion(mv, i, k, load<Transform<double>>(x.data())), y.data());
          return y;
        };
        c.adj = [=](const V& x, const V& w, V& adj) {
          Transform<double> aX = load<Transform<double>>(adj.data());
          kern::adj_joint_motion(mv, i, k, load<Transform<double>>(x.data()), aX, load<Motion<double>>(w.data()));
          store(aX, adj.data());
        };
        test::check_adjoint(c, rng, st);
      }
    }
  }
  test::print_stats("joint_motion", st);
}

TEST_F(JointAdjoint, JointBias) {
  AdjointStats st;
  for (int i = 0; i < m.nbody; ++i) {
    const bool free = m.jnt_type[i] == kern::kJointFree;
    for (int t = 0; t < kTrials; ++t) {
      V q, v;
      random_state(q, v);
      AdjointCase c;
      c.name = "joint_bias body " + std::to_string(i);
      c.x = v;
      c.x.resize(m.nv + 12);
      store(random_transform(rng), &c.x[m.nv]);
      // v: free linear (world) and angular (body), ball, revolute, prismatic; then X
      c.blocks = {{"v free linear", 0, 3, true, false, free},  {"v free angular", 3, 3, true, false, free},
                  {"v ball", 6, 3, true, false, false},         {"v revolute", 9, 1, true, false, false},
                  {"v prismatic", 10, 1, true, false, false},   {"X.E", m.nv, 9, true, false, free},
                  {"X.r", m.nv + 9, 3, true, false, false}};
      const kern::ModelView<double> mv = m;
      c.f = [=](const V& x) {
        V y(6);
        store(kern::joint_bias(mv, i, x.data(), load<Transform<double>>(&x[mv.nv])), y.data());
        return y;
      };
      c.adj = [=](const V& x, const V& w, V& adj) {
        Transform<double> aX = load<Transform<double>>(&adj[mv.nv]);
        kern::adj_joint_bias(mv, i, x.data(), load<Transform<double>>(&x[mv.nv]), adj.data(), aX,
                             load<Motion<double>>(w.data()));
        store(aX, &adj[mv.nv]);
      };
      test::check_adjoint(c, rng, st);
    }
  }
  test::print_stats("joint_bias", st);
}


TEST_F(JointAdjoint, Integrate) {
  AdjointStats st;
  const kern::ModelView<double> mv = m;
  const int nq = m.nq;
  for (int t = 0; t < kTrials; ++t) {
    for (double dt : {0.37, 0.005}) {
      V q, v;
      random_state(q, v);
      AdjointCase c;
      c.name = "integrate dt = " + std::to_string(dt);
      c.x = q;
      c.x.insert(c.x.end(), v.begin(), v.end());
      c.blocks = q_blocks(0, -1, true);
      c.blocks.push_back({"v free linear", nq + 0, 3, true});
      c.blocks.push_back({"v free angular", nq + 3, 3, false});
      c.blocks.push_back({"v ball", nq + 6, 3, false});
      c.blocks.push_back({"v revolute", nq + 9, 1, true});
      c.blocks.push_back({"v prismatic", nq + 10, 1, true});
      c.f = [=](const V& x) {
        V y(x.begin(), x.begin() + nq);  // in place, as the step uses it: q_out aliases q
        kern::integrate(mv, y.data(), &x[nq], dt, y.data());
        return y;
      };
      c.adj = [=](const V& x, const V& w, V& adj) {
        kern::adj_integrate(mv, x.data(), &x[nq], dt, adj.data(), &adj[nq], w.data());
      };
      test::check_adjoint(c, rng, st);
    }
  }
  test::print_stats("integrate", st);
}

}  // namespace
}  // namespace moreau
