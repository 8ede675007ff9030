// The host API (moreau/simulator.h): argument validation, views, run-time NaN/Inf handling,
// per-environment parameters, the memory check, and CUDA vs CPU.
#include "moreau/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "moreau/dynamics.h"
#include "support/test_util.h"
#ifdef MOREAU_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace moreau {
namespace {

using test::asset;

using test::expect_error;

SimulatorOptions opts(int n_env, DType dtype = DType::Float64, int n_threads = 1) {
  SimulatorOptions o;
  o.n_env = n_env;
  o.dtype = dtype;
  o.n_threads = n_threads;
  return o;
}

const Model& anymal() {
  static const Model m = load_model(asset("anymal_c.json"));
  return m;
}

// Distinct random states for n environments (row-major n x nq, n x nv), seeded.
void random_states(const Model& model, int n, unsigned seed, std::vector<double>& q, std::vector<double>& v) {
  std::mt19937 rng(seed);
  q.assign(static_cast<size_t>(n) * model.nq, 0);
  v.assign(static_cast<size_t>(n) * model.nv, 0);
  for (int e = 0; e < n; ++e) {
    test::random_state(model, rng, q.data() + e * model.nq, v.data() + e * model.nv);
    if (model.jnt_type[0] == static_cast<int>(JointType::Free)) q[e * model.nq + 2] += 50.0;  // clear of any ground
  }
}

// ---------------------------------------------------------------------------------------
// Validation.
// ---------------------------------------------------------------------------------------

TEST(Validation, WrongNumberOfEnvironments) {
  const Model& m = anymal();
  Simulator sim(m, opts(4));
  std::vector<double> q(5 * m.nq), v(5 * m.nv), a(5 * m.nu);
  std::vector<int32_t> st(5);
  expect_error([&] { sim.set_state(q.data(), v.data(), 3); }, {"set_state", "expected 4, got 3"}, "set_state");
  expect_error([&] { sim.get_state(q.data(), v.data(), 5); }, {"get_state", "expected 4, got 5"}, "get_state");
  expect_error([&] { sim.set_action(a.data(), 1); }, {"set_action", "expected 4, got 1"}, "set_action");
  expect_error([&] { sim.get_status(st.data(), 0); }, {"get_status", "expected 4, got 0"}, "get_status");
}

TEST(Validation, SetParamWidthLengthAndName) {
  const Model& m = anymal();
  Simulator sim(m, opts(4));
  std::vector<double> vals(100, 1.0);
  expect_error([&] { sim.set_param("kp", vals.data(), 1, m.nu - 1); },
               {"kp", "width", "expected " + std::to_string(m.nu) + ", got " + std::to_string(m.nu - 1)}, "kp width");
  expect_error([&] { sim.set_param("added_base_mass", vals.data(), 1, 2); },
               {"added_base_mass", "width", "expected 1, got 2"}, "added_base_mass width");
  expect_error([&] { sim.set_param("kd", vals.data(), 2, m.nu); }, {"kd", "length", "expected 1 or n_env = 4, got 2"},
               "kd length 2");
  expect_error([&] { sim.set_param("kd", vals.data(), 5, m.nu); }, {"expected 1 or n_env = 4, got 5"}, "kd length 5");
  expect_error([&] { sim.set_param("kd", vals.data(), 0, m.nu); }, {"expected 1 or n_env = 4, got 0"}, "kd length 0");
  expect_error([&] { sim.set_param("stiffness", vals.data(), 1, 1); }, {"unknown parameter 'stiffness'", "kp"},
               "unknown name");
  expect_error([&] { sim.param("stiffness"); }, {"unknown parameter 'stiffness'"}, "param() unknown name");
  vals[3] = std::nan("");
  expect_error([&] { sim.set_param("kp", vals.data(), 1, m.nu); }, {"kp", "not finite"}, "NaN gain");
}

// Each parameter's physical range; the boundary values themselves are accepted.
TEST(Validation, SetParamValueRanges) {
  const Model& m = anymal();
  Simulator sim(m, opts(4));
  const double base = m.body_mass[0];
  struct Case {
    const char* name;
    double bad, ok;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"friction", -0.1, 0, "set_param('friction'): value 2: expected >= 0, got -0.1"},
      {"contact_kn", 0, 1e2, "set_param('contact_kn'): value 2: expected > 0, got 0"},
      {"contact_kd", -0.5, -1, "set_param('contact_kd'): value 2: expected >= 0, or -1 (from contact_zeta), got -0.5"},
      {"contact_zeta", -1, 0, "expected >= 0, got -1"},
      {"smooth_k", -300, 1, "expected > 0, got -300"},
      {"smooth_gmax", -0.01, 0, "expected >= 0, got -0.01"},
      {"added_base_mass", -base, 1 - base, "set_param('added_base_mass'): value 2: expected > -"},
  };
  for (const Case& c : cases) {
    std::vector<double> vals(4, c.ok);
    EXPECT_NO_THROW(sim.set_param(c.name, vals.data(), 4, 1)) << c.name;
    vals[2] = c.bad;
    expect_error([&] { sim.set_param(c.name, vals.data(), 4, 1); }, {c.expected}, c.name);
  }
  std::vector<double> gains(m.nu, 0.0);
  EXPECT_NO_THROW(sim.set_param("kd", gains.data(), 1, m.nu));
  gains[5] = -2;
  expect_error([&] { sim.set_param("kp", gains.data(), 1, m.nu); }, {"set_param('kp'): value 5: expected >= 0, got -2"},
               "negative gain");
}

// Rolling friction needs a simulator with room for its rows (contact condim 6): a nonzero
// rolling_friction on a condim-4 simulator, or a view of it, is an error that names the option;
// zero is accepted; condim 6 takes it; other condims are rejected.
TEST(Validation, RollingFrictionNeedsCondim6) {
  const Model& m = anymal();
  Simulator sim(m, opts(4));
  const double zero = 0, mu = 0.01;
  EXPECT_NO_THROW(sim.set_param("rolling_friction", &zero, 1, 1));
  const std::string need = "rolling_friction: this simulator's contact.condim is 4";
  expect_error([&] { sim.set_param("rolling_friction", &mu, 1, 1); }, {need, "contact.condim = 6"}, "set_param");
  expect_error([&] { sim.param("rolling_friction"); }, {need}, "param()");
  SimulatorOptions o = opts(4);
  o.contact.condim = 6;
  Simulator six(m, o);
  EXPECT_NO_THROW(six.set_param("rolling_friction", &mu, 1, 1));
  EXPECT_EQ(static_cast<const double*>(six.param("rolling_friction").data)[0], mu);
  o.contact.condim = 3;
  expect_error([&] { Simulator bad(m, o); }, {"contact.condim: expected 4 (spin friction) or 6", "got 3"}, "condim 3");
}

TEST(Validation, ResetOutOfRangeAndStepNegative) {
  const Model& m = anymal();
  Simulator sim(m, opts(4));
  const int32_t bad_hi[] = {0, 4};
  expect_error([&] { sim.reset(bad_hi, 2); }, {"reset", "env id 4", "position 1", "expected 0 <= id < 4"}, "reset 4");
  const int32_t bad_lo[] = {-1};
  expect_error([&] { sim.reset(bad_lo, 1); }, {"env id -1", "expected 0 <= id < 4"}, "reset -1");
  expect_error([&] { sim.step(-1); }, {"step", "expected k >= 0, got -1"}, "step(-1)");
}

// Every entry point that takes caller buffers names a missing one (null) instead of crashing;
// an empty one (width 0: no actuators) may be null.
TEST(Validation, NullBuffersAreErrorsNotCrashes) {
  const Model& m = anymal();
  Simulator sim(m, opts(2));
  std::vector<double> q(2 * m.nq), v(2 * m.nv), u(2 * m.nu);  // the simulator's dtype, float64
  std::vector<int32_t> st(2);
  Simulator::Gradients g;
  const auto null_arg = [](const char* fn, const char* arg) {
    return std::vector<std::string>{std::string(fn) + ": argument '" + arg + "': expected a buffer, got null"};
  };
  expect_error([&] { sim.set_state(nullptr, v.data(), 2); }, null_arg("set_state", "q"), "set_state q");
  expect_error([&] { sim.get_state(q.data(), nullptr, 2); }, null_arg("get_state", "v"), "get_state v");
  expect_error([&] { sim.set_action(nullptr, 2); }, null_arg("set_action", "action"), "set_action");
  expect_error([&] { sim.get_status(nullptr, 2); }, null_arg("get_status", "status"), "get_status");
  expect_error([&] { sim.set_param("friction", nullptr, 2, 1); }, null_arg("set_param", "values"), "set_param");
  expect_error([&] { sim.step_pure(q.data(), v.data(), nullptr, q.data(), v.data(), st.data()); },
               null_arg("step_pure", "action"), "step_pure action");
  expect_error([&] { sim.step_pure(q.data(), v.data(), u.data(), nullptr, v.data(), st.data()); },
               null_arg("step_pure", "q_out"), "step_pure q_out");
  expect_error([&] { sim.step_adjoint(q.data(), v.data(), u.data(), nullptr, v.data(), g, st.data()); },
               null_arg("step_adjoint", "adj_q_out"), "step_adjoint");
  expect_error([&] { sim.step_adjoint_rows(q.data(), v.data(), u.data(), 2, q.data(), v.data(), g, nullptr); },
               null_arg("step_adjoint_rows", "status"), "step_adjoint_rows");
  expect_error([&] { sim.step_adjoint_rows(q.data(), v.data(), u.data(), 0, q.data(), v.data(), g, st.data()); },
               {"step_adjoint_rows: rows: expected >= 1, got 0"}, "rows 0");
  expect_error([&] { sim.rollout(3, nullptr); }, null_arg("rollout", "actions"), "rollout");
  expect_error([&] { sim.rollout_backward(nullptr, v.data(), u.data(), g); }, null_arg("rollout_backward", "adj_q"),
               "rollout_backward");
  expect_error([&] { sim.reset(nullptr, 1); }, null_arg("reset", "env_ids"), "reset");
  expect_error([&] { sim.reset(nullptr, -1); }, {"reset: count: expected >= 0, got -1"}, "reset count");
  EXPECT_NO_THROW(sim.reset(nullptr, 0));
  expect_error([&] { sim.reset_where(nullptr); }, null_arg("reset_where", "mask"), "reset_where");

  const Model cube = load_model(std::string(MOREAU_ASSETS_DIR) + "/robots/cube.json");  // nu = 0
  Simulator free_body(cube, opts(2));
  EXPECT_NO_THROW(free_body.set_action(nullptr, 2));
}

TEST(Validation, BadOptions) {
  const Model& m = anymal();
  expect_error([&] { Simulator s(m, opts(0)); }, {"n_env", "expected > 0, got 0"}, "n_env 0");
  expect_error([&] { Simulator s(m, opts(-3)); }, {"n_env", "expected > 0, got -3"}, "n_env -3");
  ASSERT_EQ(std::max({m.nq, m.nv, m.nu, m.ncon}), 19);  // q: the widest field, 2^31 / 19 environments
  EXPECT_EQ(max_environments(m), 113025455);
  try {  // past the 32-bit offsets: that error, or the memory one first where the memory is short
    Simulator s(m, opts(max_environments(m) + 1, DType::Float32));
    ADD_FAILURE() << "n_env past max_environments should be refused";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("expected at most 113025455") != std::string::npos || msg.find(" bytes") != std::string::npos)
        << msg;
  }
  expect_error([&] { Simulator s(m, opts(2, DType::Int32)); }, {"dtype", "int32"}, "dtype int32");
  SimulatorOptions o = opts(2);
  o.timestep = -0.01;
  expect_error([&] { Simulator s(m, o); }, {"timestep"}, "negative timestep");
  o = opts(2);
  o.decimation = -1;
  expect_error([&] { Simulator s(m, o); }, {"decimation", "got -1"}, "negative decimation");
  o = opts(2);
  o.n_threads = -1;
  expect_error([&] { Simulator s(m, o); }, {"n_threads", "got -1"}, "negative n_threads");
  o = opts(2);
  o.adjoint_tapes = -2;
  expect_error([&] { Simulator s(m, o); }, {"adjoint_tapes", "got -2"}, "negative adjoint_tapes");
  for (const int block : {-32, 16, 100, 288}) {  // checked on every device, before the backend
    o = opts(2);
    o.cuda_block = block;
    expect_error([&] { Simulator s(m, o); }, {"cuda_block", "multiple of 32", "got " + std::to_string(block)},
                 "cuda_block " + std::to_string(block));
  }
  for (const int team : {-8, 1, 4, 16}) {
    o = opts(2);
    o.cuda_team = team;
    expect_error([&] { Simulator s(m, o); }, {"cuda_team", "got " + std::to_string(team)},
                 "cuda_team " + std::to_string(team));
  }
  EXPECT_EQ(cuda_team_lanes(0), 0);
  EXPECT_EQ(cuda_team_lanes(kCudaTeamLanes), kCudaTeamLanes);
  EXPECT_EQ(cuda_block_threads(0), kDefaultCudaBlock);
  EXPECT_EQ(cuda_block_threads(32), 32);
  EXPECT_EQ(cuda_block_threads(kMaxCudaBlock), kMaxCudaBlock);
}

// Not named "Cuda": gpu_check.sh runs every *Cuda* test on a GPU and fails on a skip.
TEST(Validation, GpuDeviceWithoutGpuIsAnErrorNotACrash) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present; this checks the no-CUDA path";
  SimulatorOptions o = opts(4, DType::Float32);
  o.device = Device::CUDA;
  try {
    Simulator s(anymal(), o);
    ADD_FAILURE() << "device cuda without CUDA: expected moreau::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
    // Either built without CUDA or no device present: the message must say which.
    EXPECT_TRUE(msg.find("without") != std::string::npos || msg.find("no CUDA device") != std::string::npos ||
                msg.find("no device") != std::string::npos)
        << "message should say why CUDA is unavailable: " << msg;
  }
  // Float64 on CUDA is refused by name too.
  o.dtype = DType::Float64;
  expect_error([&] { Simulator s(anymal(), o); }, {"float64"}, "cuda float64");
}

// ---------------------------------------------------------------------------------------
// Views.
// ---------------------------------------------------------------------------------------

TEST(Views, ShapeStridesDtypeDeviceAndLayout) {
  const Model& m = anymal();
  for (DType dt : {DType::Float32, DType::Float64}) {
    const int n = 5;
    Simulator sim(m, opts(n, dt));
    struct {
      const char* name;
      View view;
      int width;
      DType dtype;
    } views[] = {{"q", sim.q(), m.nq, dt},           {"v", sim.v(), m.nv, dt},
                 {"action", sim.action(), m.nu, dt}, {"time", sim.time(), 1, dt},
                 {"status", sim.status(), 1, DType::Int32}};
    for (const auto& x : views) {
      SCOPED_TRACE(std::string(x.name) + " " + dtype_name(dt));
      EXPECT_NE(x.view.data, nullptr);
      EXPECT_EQ(x.view.shape[0], n);
      EXPECT_EQ(x.view.shape[1], x.width);
      EXPECT_EQ(x.view.strides[0], 1);
      EXPECT_EQ(x.view.strides[1], n);
      EXPECT_EQ(x.view.dtype, x.dtype);
      EXPECT_EQ(x.view.device, Device::CPU);
    }
    // Writing element k of env e at k * n_env + e is seen by get_state.
    View q = sim.q(), v = sim.v();
    for (int e = 0; e < n; ++e) {
      for (int k = 0; k < m.nq; ++k) {
        const double val = 0.25 * e + 0.001 * k;
        if (dt == DType::Float64)
          static_cast<double*>(q.data)[k * n + e] = val;
        else
          static_cast<float*>(q.data)[k * n + e] = static_cast<float>(val);
      }
      for (int k = 0; k < m.nv; ++k) {
        const double val = -0.5 * e - 0.01 * k;
        if (dt == DType::Float64)
          static_cast<double*>(v.data)[k * n + e] = val;
        else
          static_cast<float*>(v.data)[k * n + e] = static_cast<float>(val);
      }
    }
    std::vector<double> qh(n * m.nq), vh(n * m.nv);
    sim.get_state(qh.data(), vh.data(), n);
    for (int e = 0; e < n; ++e) {
      for (int k = 0; k < m.nq; ++k) {
        const double want = dt == DType::Float64 ? 0.25 * e + 0.001 * k : static_cast<float>(0.25 * e + 0.001 * k);
        EXPECT_EQ(qh[e * m.nq + k], want) << dtype_name(dt) << " q env " << e << " k " << k;
      }
      for (int k = 0; k < m.nv; ++k) {
        const double want = dt == DType::Float64 ? -0.5 * e - 0.01 * k : static_cast<float>(-0.5 * e - 0.01 * k);
        EXPECT_EQ(vh[e * m.nv + k], want) << dtype_name(dt) << " v env " << e << " k " << k;
      }
    }
    // And set_state is seen through the view.
    std::vector<double> q2, v2;
    random_states(m, n, 5, q2, v2);
    sim.set_state(q2.data(), v2.data(), n);
    for (int e = 0; e < n; ++e)
      for (int k = 0; k < m.nq; ++k) {
        const double got = dt == DType::Float64 ? static_cast<double*>(q.data)[k * n + e]
                                                : static_cast<float*>(q.data)[k * n + e];
        const double want = dt == DType::Float64 ? q2[e * m.nq + k] : static_cast<float>(q2[e * m.nq + k]);
        EXPECT_EQ(got, want) << dtype_name(dt) << " view q env " << e << " k " << k << " after set_state";
      }
  }
}

TEST(Views, ParamViewsHaveShapeLenByWidth) {
  const Model& m = anymal();
  const int n = 6;
  Simulator sim(m, opts(n));
  View kp = sim.param("kp");
  EXPECT_EQ(kp.shape[0], 1);
  EXPECT_EQ(kp.shape[1], m.nu);
  EXPECT_EQ(kp.dtype, DType::Float64);
  EXPECT_EQ(kp.device, Device::CPU);
  for (int a = 0; a < m.nu; ++a)
    EXPECT_EQ(static_cast<double*>(kp.data)[a * kp.strides[1]], m.actuator_kp[a]) << "default kp " << a;
  std::vector<double> vals(n * m.nu);
  for (int e = 0; e < n; ++e)
    for (int a = 0; a < m.nu; ++a) vals[e * m.nu + a] = 10 * e + a;
  sim.set_param("kp", vals.data(), n, m.nu);
  kp = sim.param("kp");
  EXPECT_EQ(kp.shape[0], n);
  EXPECT_EQ(kp.shape[1], m.nu);
  EXPECT_EQ(kp.strides[0], 1);
  EXPECT_EQ(kp.strides[1], n);
  for (int e = 0; e < n; ++e)
    for (int a = 0; a < m.nu; ++a)
      EXPECT_EQ(static_cast<double*>(kp.data)[a * n + e], vals[e * m.nu + a]) << "kp env " << e << " act " << a;
  View abm = sim.param("added_base_mass");
  EXPECT_EQ(abm.shape[0], 1);
  EXPECT_EQ(abm.shape[1], 1);
  const auto names = sim.param_names();
  for (const char* want : {"kp", "kd", "added_base_mass"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << "param_names lacks " << want;
}

TEST(Views, ModelWithoutActuatorsHasEmptyActionAndGains) {
  // nu = 0: the action and the gains have width 0; construction, set_action, set_param and
  // stepping must work (and be free of undefined behaviour under the sanitizer preset: a
  // zero-byte upload must not pass a null pointer to memcpy).
  const Model m = load_model(asset("double_pendulum.json"));
  ASSERT_EQ(m.nu, 0);
  const int n = 3;
  Simulator sim(m, opts(n));
  EXPECT_EQ(sim.action().shape[0], n);
  EXPECT_EQ(sim.action().shape[1], 0);
  EXPECT_EQ(sim.param("kp").shape[1], 0);
  sim.set_action(nullptr, n);
  sim.set_param("kd", nullptr, 1, 0);
  std::vector<double> q(n * m.nq, 0.5), v(n * m.nv, 0.0);
  sim.set_state(q.data(), v.data(), n);
  sim.step(2);
  sim.get_state(q.data(), v.data(), n);
  std::vector<int32_t> st(n);
  sim.get_status(st.data(), n);
  for (int e = 0; e < n; ++e) {
    EXPECT_EQ(st[e], 0) << "env " << e;
    EXPECT_LT(v[e * m.nv], 0.0) << "env " << e << ": the pendulum at +0.5 rad should start to swing back";
  }
}

// ---------------------------------------------------------------------------------------
// NaN / Inf at run time.
// ---------------------------------------------------------------------------------------

enum class Poison { ActionNan, StateNanQ, StateInfV };

class NonFinite : public ::testing::TestWithParam<Poison> {};

TEST_P(NonFinite, FlagsFreezesIsolatesAndResets) {
  const Model& m = anymal();
  const int n = 8, bad = 3;
  const Poison poison = GetParam();
  std::vector<double> q0, v0;
  random_states(m, n, 99, q0, v0);
  auto make = [&] {
    auto sim = std::make_unique<Simulator>(m, opts(n));
    sim->set_state(q0.data(), v0.data(), n);
    return sim;
  };
  auto clean = make();
  auto dirty = make();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  switch (poison) {
    case Poison::ActionNan:
      static_cast<double*>(dirty->action().data)[2 * n + bad] = nan;
      break;
    case Poison::StateNanQ:
      static_cast<double*>(dirty->q().data)[5 * n + bad] = nan;
      break;
    case Poison::StateInfV:
      static_cast<double*>(dirty->v().data)[4 * n + bad] = -inf;
      break;
  }
  const int32_t want_status = poison == Poison::ActionNan ? kStatusNanAction : kStatusNanState;
  std::vector<double> qb(n * m.nq), vb(n * m.nv), qc(n * m.nq), vc(n * m.nv), qd(n * m.nq), vd(n * m.nv);
  dirty->get_state(qb.data(), vb.data(), n);  // state of the bad env before stepping
  clean->step(3);
  dirty->step(3);
  std::vector<int32_t> st(n);
  dirty->get_status(st.data(), n);
  for (int e = 0; e < n; ++e) EXPECT_EQ(st[e], e == bad ? want_status : 0) << "status of env " << e;
  clean->get_state(qc.data(), vc.data(), n);
  dirty->get_state(qd.data(), vd.data(), n);
  const auto* tc = static_cast<const double*>(clean->time().data);
  const auto* td = static_cast<const double*>(dirty->time().data);
  for (int e = 0; e < n; ++e) {
    if (e == bad) continue;
    EXPECT_EQ(0, std::memcmp(qc.data() + e * m.nq, qd.data() + e * m.nq, sizeof(double) * m.nq))
        << "q of env " << e << " differs from the run without the poisoned env";
    EXPECT_EQ(0, std::memcmp(vc.data() + e * m.nv, vd.data() + e * m.nv, sizeof(double) * m.nv))
        << "v of env " << e << " differs from the run without the poisoned env";
    EXPECT_EQ(tc[e], td[e]) << "time of env " << e;
  }
  // The bad env kept its state (bitwise, NaN included) and its time did not advance.
  EXPECT_EQ(0, std::memcmp(qb.data() + bad * m.nq, qd.data() + bad * m.nq, sizeof(double) * m.nq))
      << "q of the flagged env " << bad << " changed";
  EXPECT_EQ(0, std::memcmp(vb.data() + bad * m.nv, vd.data() + bad * m.nv, sizeof(double) * m.nv))
      << "v of the flagged env " << bad << " changed";
  EXPECT_EQ(td[bad], 0.0) << "time of the flagged env";
  // A flagged env is not stepped again, even once the poison is gone.
  if (poison == Poison::ActionNan) static_cast<double*>(dirty->action().data)[2 * n + bad] = 0.0;
  dirty->step(2);
  clean->step(2);
  dirty->get_status(st.data(), n);
  EXPECT_EQ(st[bad], want_status) << "status of env " << bad << " after more steps";
  dirty->get_state(qd.data(), vd.data(), n);
  if (poison == Poison::ActionNan) {
    EXPECT_EQ(0, std::memcmp(qb.data() + bad * m.nq, qd.data() + bad * m.nq, sizeof(double) * m.nq))
        << "flagged env " << bad << " was stepped again";
  }
  EXPECT_EQ(td[bad], 0.0) << "flagged env " << bad << " time advanced";
  // reset({bad}): status 0, default state, time 0; the others untouched.
  std::vector<double> q_before(qd), v_before(vd);
  const int32_t ids[] = {bad};
  dirty->reset(ids, 1);
  dirty->get_status(st.data(), n);
  for (int e = 0; e < n; ++e) EXPECT_EQ(st[e], 0) << "status of env " << e << " after reset";
  dirty->get_state(qd.data(), vd.data(), n);
  for (int k = 0; k < m.nq; ++k) EXPECT_EQ(qd[bad * m.nq + k], m.qpos0[k]) << "q[" << k << "] after reset";
  for (int k = 0; k < m.nv; ++k) EXPECT_EQ(vd[bad * m.nv + k], 0.0) << "v[" << k << "] after reset";
  EXPECT_EQ(td[bad], 0.0);
  const auto* act = static_cast<const double*>(dirty->action().data);
  for (int a = 0; a < m.nu; ++a)
    EXPECT_EQ(act[a * n + bad], m.actuator_gear[a] * m.qpos0[m.actuator_qposadr[a]]) << "action " << a << " after reset";
  for (int e = 0; e < n; ++e) {
    if (e == bad) continue;
    EXPECT_EQ(0, std::memcmp(q_before.data() + e * m.nq, qd.data() + e * m.nq, sizeof(double) * m.nq))
        << "reset of env " << bad << " touched env " << e;
  }
  // It steps again: time advances by one control step and the base falls (no ground).
  dirty->step(1);
  dirty->get_status(st.data(), n);
  EXPECT_EQ(st[bad], 0);
  EXPECT_NEAR(td[bad], m.timestep * m.decimation, 1e-15) << "time of env " << bad << " after one step";
  dirty->get_state(qd.data(), vd.data(), n);
  // From rest under gravity the base starts to move down (free fall, or sagging on a ground).
  EXPECT_LT(vd[bad * m.nv + 2], 0.0) << "base of the reset env should move down";
  EXPECT_TRUE(std::isfinite(qd[bad * m.nq + 2]));
}

INSTANTIATE_TEST_SUITE_P(Poisons, NonFinite,
                         ::testing::Values(Poison::ActionNan, Poison::StateNanQ, Poison::StateInfV),
                         [](const auto& info) {
                           switch (info.param) {
                             case Poison::ActionNan:
                               return std::string("NanAction");
                             case Poison::StateNanQ:
                               return std::string("NanInQ");
                             default:
                               return std::string("InfInV");
                           }
                         });

// ---------------------------------------------------------------------------------------
// Per-environment parameters.
// ---------------------------------------------------------------------------------------

// Runs anymal_c from its default state (PD holding qpos0) with a disturbance v0 for `steps`.
std::vector<double> run_with(const Model& m, int n, const std::vector<double>& v_one, int steps,
                             const std::function<void(Simulator&)>& setup) {
  Simulator sim(m, opts(n));
  std::vector<double> q(n * m.nq), v(n * m.nv);
  for (int e = 0; e < n; ++e) {
    std::copy(m.qpos0.begin(), m.qpos0.end(), q.begin() + e * m.nq);
    q[e * m.nq + 2] += 50.0;  // clear of any ground plane
    std::copy(v_one.begin(), v_one.end(), v.begin() + e * m.nv);
  }
  sim.set_state(q.data(), v.data(), n);
  setup(sim);
  sim.step(steps);
  sim.get_state(q.data(), v.data(), n);
  q.insert(q.end(), v.begin(), v.end());
  return q;
}

std::vector<double> disturbance(const Model& m) {
  std::mt19937 rng(17);
  std::vector<double> q(m.nq), v(m.nv);
  test::random_state(m, rng, q.data(), v.data());
  return v;
}

TEST(Params, PerEnvKpGivesDifferentTrajectoriesAndLengthOneBroadcasts) {
  const Model& m = anymal();
  const int n = 4;
  const auto v0 = disturbance(m);
  auto joint_q = [&](const std::vector<double>& s, int e) {
    return std::vector<double>(s.begin() + e * m.nq + 7, s.begin() + (e + 1) * m.nq);
  };
  // Per-env kp: 20, 40, 80, 160.
  const auto per_env = run_with(m, n, v0, 10, [&](Simulator& sim) {
    std::vector<double> kp(n * m.nu);
    for (int e = 0; e < n; ++e)
      for (int a = 0; a < m.nu; ++a) kp[e * m.nu + a] = 20.0 * (1 << e);
    sim.set_param("kp", kp.data(), n, m.nu);
  });
  for (int e = 1; e < n; ++e) {
    const auto a = joint_q(per_env, 0), b = joint_q(per_env, e);
    double d = 0;
    for (size_t k = 0; k < a.size(); ++k) d = std::max(d, std::abs(a[k] - b[k]));
    EXPECT_GT(d, 1e-3) << "env " << e << " (kp " << 20 * (1 << e) << ") joint trajectory equals env 0's (kp 20)";
  }
  // Env e with per-env kp equals a simulator with that kp broadcast (length 1), bitwise.
  for (int e = 0; e < n; ++e) {
    const auto bc = run_with(m, n, v0, 10, [&](Simulator& sim) {
      std::vector<double> kp(m.nu, 20.0 * (1 << e));
      sim.set_param("kp", kp.data(), 1, m.nu);
    });
    for (int e2 = 0; e2 < n; ++e2)  // broadcast: all envs identical
      EXPECT_EQ(0, std::memcmp(bc.data(), bc.data() + e2 * m.nq, sizeof(double) * m.nq))
          << "broadcast kp: env " << e2 << " differs from env 0";
    EXPECT_EQ(0, std::memcmp(bc.data(), per_env.data() + e * m.nq, sizeof(double) * m.nq))
        << "env " << e << " with per-env kp differs from the broadcast run with the same kp";
  }
}

TEST(Params, AddedBaseMassChangesTheMotionLikeAHeavierBase) {
  const Model& m = anymal();
  const int n = 3;
  const auto v0 = disturbance(m);
  const std::vector<double> added = {0.0, 5.0, 0.0};
  const auto runs = run_with(m, n, v0, 25, [&](Simulator& sim) { sim.set_param("added_base_mass", added.data(), n, 1); });
  // Same value -> bitwise the same; different value -> different motion of the legs.
  EXPECT_EQ(0, std::memcmp(runs.data(), runs.data() + 2 * m.nq, sizeof(double) * m.nq)) << "envs 0 and 2 (both +0 kg)";
  double d = 0;
  for (int k = 7; k < m.nq; ++k) d = std::max(d, std::abs(runs[k] - runs[m.nq + k]));
  EXPECT_GT(d, 1e-4) << "added base mass 5 kg did not change the joint trajectory (max diff " << d << ")";
  // It is a point mass at the base's centre of mass: the same as a model with a heavier base.
  Model heavy = m;
  heavy.body_mass[0] += 5.0;
  const auto ref = run_with(heavy, 1, v0, 25, [](Simulator&) {});
  EXPECT_NEAR_REL(runs.data() + m.nq, ref.data(), m.nq, 1e-12, 1e-12, "q: added_base_mass 5 vs body_mass[0] + 5");
}

// ---------------------------------------------------------------------------------------
// Reset by mask.
// ---------------------------------------------------------------------------------------

// Everything a reset writes, as doubles: q and v (row-major), status, then action and time
// (field-major), copied from the device when the simulator is on one.
std::vector<double> reset_outputs(Simulator& sim) {
  const Model& m = sim.model();
  const int n = sim.n_env();
  std::vector<double> q(n * m.nq), v(n * m.nv);
  std::vector<int32_t> st(n);
  sim.synchronize();
  sim.get_state(q.data(), v.data(), n);
  sim.get_status(st.data(), n);
  q.insert(q.end(), v.begin(), v.end());
  q.insert(q.end(), st.begin(), st.end());
  for (const View& view : {sim.action(), sim.time()}) {
    const size_t count = static_cast<size_t>(view.shape[0] * view.shape[1]);
    const size_t bytes = count * (view.dtype == DType::Float64 ? 8 : 4);
    std::vector<char> raw(bytes);
    if (view.device == Device::CPU) {
      std::memcpy(raw.data(), view.data, bytes);
    } else {
#ifdef MOREAU_WITH_CUDA
      EXPECT_EQ(cudaMemcpy(raw.data(), view.data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
#endif
    }
    for (size_t i = 0; i < count; ++i)
      q.push_back(view.dtype == DType::Float64 ? reinterpret_cast<const double*>(raw.data())[i]
                                               : reinterpret_cast<const float*>(raw.data())[i]);
  }
  return q;
}

// Two simulators with the same random states, stepped (some environments end with a fatal
// status: a NaN action); one resets the environments of a mask with reset_where, the other the
// same ids with reset: everything a reset writes is equal, bitwise. `device_mask` gives the
// pointer reset_where reads (the host bytes on the CPU).
void expect_reset_where_equals_reset(SimulatorOptions o,
                                     const std::function<const uint8_t*(const std::vector<uint8_t>&)>& device_mask) {
  const Model& m = anymal();
  const int n = o.n_env;
  std::vector<double> q0, v0;
  random_states(m, n, 2024, q0, v0);
  std::vector<double> act(n * m.nu, 0.1);
  for (int e = 0; e < n; e += 7) act[e * m.nu] = std::numeric_limits<double>::quiet_NaN();
  std::vector<uint8_t> mask(n, 0);
  std::vector<int32_t> ids;
  for (int e = 0; e < n; ++e)
    if (e % 3 == 0 || e % 7 == 0 || e == n - 1) {
      mask[e] = static_cast<uint8_t>(e % 2 ? 1 : 255);  // any nonzero byte
      ids.push_back(e);
    }
  Simulator by_ids(m, o), by_mask(m, o);
  for (Simulator* sim : {&by_ids, &by_mask}) {
    sim->set_state(q0.data(), v0.data(), n);
    sim->set_action(act.data(), n);
    sim->step(2);
  }
  const auto before = reset_outputs(by_mask);
  by_ids.reset(ids.data(), static_cast<int>(ids.size()));
  by_mask.reset_where(device_mask(mask));
  const auto a = reset_outputs(by_ids), b = reset_outputs(by_mask);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(0, std::memcmp(&a[i], &b[i], sizeof(double)))
        << "output " << i << ": reset " << a[i] << ", reset_where " << b[i];
  EXPECT_NE(0, std::memcmp(before.data(), b.data(), sizeof(double) * b.size())) << "reset_where changed nothing";
  // An all-zero mask changes nothing.
  by_mask.step(1);
  const auto stepped = reset_outputs(by_mask);
  by_mask.reset_where(device_mask(std::vector<uint8_t>(n, 0)));
  EXPECT_EQ(0, std::memcmp(stepped.data(), reset_outputs(by_mask).data(), sizeof(double) * stepped.size()));
}

// On the CPU, in both dtypes, with several threads and a batch that fills no group of lanes.
TEST(Simulator, ResetWhereEqualsResetOfTheSameIds) {
  for (DType dtype : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(dtype));
    expect_reset_where_equals_reset(opts(37, dtype, 3), [](const std::vector<uint8_t>& mask) { return mask.data(); });
  }
}

// ---------------------------------------------------------------------------------------
// Memory.
// ---------------------------------------------------------------------------------------

TEST(Memory, FarTooLargeIsAnErrorNamingTheBytes) {
  const Model& m = anymal();
  for (DType dt : {DType::Float32, DType::Float64}) {
    SimulatorOptions o = opts(2000000000, dt);
    try {
      Simulator s(m, o);
      ADD_FAILURE() << "n_env = 2e9 of anymal_c should not fit";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("bytes"), std::string::npos) << msg;
      // per env: (nq + nv + nu + 1) scalars + an int32 status.
      const size_t es = dt == DType::Float64 ? 8 : 4;
      const size_t per_env = es * (m.nq + m.nv + m.nu + 1) + 4;
      // The message states the bytes needed: a number followed by " bytes", at least the
      // state buffers' size (other per-env buffers, e.g. contact data, may add to it).
      const unsigned long long lower = per_env * 2000000000ull;
      bool found = false;
      for (size_t pos = msg.find(" bytes"); pos != std::string::npos; pos = msg.find(" bytes", pos + 1)) {
        size_t start = pos;
        while (start > 0 && std::isdigit(static_cast<unsigned char>(msg[start - 1]))) --start;
        if (start < pos && std::stoull(msg.substr(start, pos - start)) >= lower) found = true;
      }
      EXPECT_TRUE(found) << dtype_name(dt) << ": message should state the bytes needed (>= " << lower << "): " << msg;
    }
  }
}

// ---------------------------------------------------------------------------------------
// CUDA vs CPU.
// ---------------------------------------------------------------------------------------

// The CUDA tests' status comparison itself (test::statuses_match), on made-up status words.
TEST(Cuda, StatusComparisonToleratesOnlyWarningCounts) {
  std::vector<int32_t> a(1000, kStatusOk), b(1000, kStatusOk);
  for (int e = 0; e < 10; ++e) a[e] = kStatusSolverNotConverged;
  for (int e = 5; e < 17; ++e) b[e] = kStatusSolverNotConverged;  // other envs, 12 vs 10: within 1 %
  EXPECT_TRUE(test::statuses_match(a, b, 0.01, "warnings"));
  for (int e = 17; e < 40; ++e) b[e] = kStatusSolverNotConverged;  // 35 vs 10
  EXPECT_FALSE(test::statuses_match(a, b, 0.01, "warnings"));
  b.assign(1000, kStatusOk);
  b[500] = kStatusNanState;
  EXPECT_FALSE(test::statuses_match(a, b, 0.5, "fatal"));
  a[500] = kStatusNanState | kStatusSolverNotConverged;
  EXPECT_TRUE(test::statuses_match(a, b, 0.5, "fatal with a warning"));
}

TEST(Cuda, MatchesCpuOn10000Environments) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: built without CUDA or no GPU present";
  const Model& m = anymal();
  const int n = 10000;
  std::vector<double> q0, v0;
  random_states(m, n, 31337, q0, v0);
  std::vector<double> act(n * m.nu);
  for (int e = 0; e < n; ++e)
    for (int a = 0; a < m.nu; ++a) act[e * m.nu + a] = m.qpos0[m.actuator_qposadr[a]];
  std::vector<int32_t> status(n);
  auto run = [&](Device dev, DType dtype) {  // row-major q then v; the status into `status`
    SimulatorOptions o = opts(n, dtype, 0);
    o.device = dev;
    Simulator sim(m, o);
    sim.set_state(q0.data(), v0.data(), n);
    sim.set_action(act.data(), n);
    sim.step(10);
    sim.synchronize();
    std::vector<double> q(n * m.nq), v(n * m.nv);
    sim.get_state(q.data(), v.data(), n);
    sim.get_status(status.data(), n);
    q.insert(q.end(), v.begin(), v.end());
    return q;
  };
  const auto ref = run(Device::CPU, DType::Float64);
  const auto cpu = run(Device::CPU, DType::Float32);
  const std::vector<int32_t> cpu_status = status;
  const auto gpu = run(Device::CUDA, DType::Float32);
  ASSERT_TRUE(test::statuses_match(status, cpu_status, 0.01, "CUDA vs CPU status"));
  // float32 on both, in a different operation order (FMA contraction, fast math functions):
  // 40 free-flight physics steps from random states, relative 1e-3 with a floor of 1e-3.
  EXPECT_TRUE(test::near_like_float32(gpu, cpu, ref, 1e-3, 1e-3, "CUDA vs CPU float64 state (row-major)"));
}

// One environment per thread: the block size changes the launch, not one bit of the result (a
// batch that fills no block size exactly, so every size has a partial last block).
TEST(Cuda, EveryBlockSizeGivesTheSameBits) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: built without CUDA or no GPU present";
  const Model& m = anymal();
  const int n = 1000;
  std::vector<double> q0, v0;
  random_states(m, n, 4242, q0, v0);
  auto run = [&](int block) {
    SimulatorOptions o = opts(n, DType::Float32, 0);
    o.device = Device::CUDA;
    o.cuda_block = block;
    Simulator sim(m, o);
    sim.set_state(q0.data(), v0.data(), n);
    sim.step(5);
    const std::vector<int32_t> ids = {3, 999};
    sim.reset(ids.data(), static_cast<int>(ids.size()));
    sim.step(1);
    sim.synchronize();
    std::vector<double> q(n * m.nq), v(n * m.nv);
    sim.get_state(q.data(), v.data(), n);
    q.insert(q.end(), v.begin(), v.end());
    return q;
  };
  const auto ref = run(0);  // kDefaultCudaBlock
  for (const int block : {32, 96, kMaxCudaBlock}) {
    const auto got = run(block);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(got[i], ref[i]) << "cuda_block " << block << ", value " << i;
  }
}

// The team layout's forward kernels (cuda_team: kCudaTeamLanes lanes per environment, the scratch in
// shared memory) against the one-thread layout's, every contact mode, five control steps, block
// sizes with a partial last block. The same operations on every value (tests/team_test.cc shows
// the bits equal on the CPU's lanes); where the two kernels' fused multiply-adds differ, the
// CUDA-vs-CPU tests' tolerance applies (and the count of differing values is printed).
TEST(Cuda, TeamLayoutMatchesTheOneThreadLayout) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: built without CUDA or no GPU present";
  const Model& m = anymal();
  const int n = 1000;
  std::vector<double> q0, v0;
  random_states(m, n, 2718, q0, v0);
  for (int e = 0; e < n; ++e) q0[e * m.nq + 2] = 0.6;  // the feet near the ground
  std::vector<double> act(n * m.nu);
  for (int e = 0; e < n; ++e)
    for (int a = 0; a < m.nu; ++a) act[e * m.nu + a] = m.qpos0[m.actuator_qposadr[a]];
  for (const ContactMode mode : {ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth}) {
    SCOPED_TRACE(contact_mode_name(mode));
    auto run = [&](Device dev, DType dtype, int team, int block) {  // after step(5): row-major q, v
      SimulatorOptions o = opts(n, dtype, 0);
      o.device = dev;
      o.cuda_team = team;
      o.cuda_block = block;
      o.contact.mode = mode;
      Simulator sim(m, o);
      sim.set_state(q0.data(), v0.data(), n);
      sim.set_action(act.data(), n);
      sim.step(5);
      sim.synchronize();
      std::vector<double> q(n * m.nq), v(n * m.nv);
      sim.get_state(q.data(), v.data(), n);
      q.insert(q.end(), v.begin(), v.end());
      return q;
    };
    const auto ref = run(Device::CPU, DType::Float64, 0, 0);
    const auto one_thread = run(Device::CUDA, DType::Float32, 0, 0);
    for (const int block : {32, 96, kMaxCudaBlock}) {
      const auto team = run(Device::CUDA, DType::Float32, kCudaTeamLanes, block);
      ASSERT_EQ(team.size(), one_thread.size());
      const auto differ = std::count_if(team.begin(), team.end(), [&, i = size_t(0)](double x) mutable {
        return x != one_thread[i++];
      });
      std::printf("team layout, cuda_block %d: %ld of %zu values differ from the one-thread layout's\n", block,
                  static_cast<long>(differ), team.size());
      EXPECT_TRUE(test::near_like_float32(team, one_thread, ref, 1e-3, 1e-3, "team vs one-thread layout"))
          << "cuda_block " << block;
    }
  }
}

// The mask in device memory, read there; a batch that fills no block.
TEST(Cuda, ResetWhereEqualsResetOfTheSameIds) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: built without CUDA or no GPU present";
#ifdef MOREAU_WITH_CUDA
  SimulatorOptions o = opts(1000, DType::Float32, 0);
  o.device = Device::CUDA;
  std::vector<void*> buffers;
  expect_reset_where_equals_reset(o, [&](const std::vector<uint8_t>& mask) {
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, mask.size()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d, mask.data(), mask.size(), cudaMemcpyHostToDevice), cudaSuccess);
    buffers.push_back(d);
    return static_cast<const uint8_t*>(d);
  });
  for (void* d : buffers) cudaFree(d);
#endif
}

}  // namespace
}  // namespace moreau
