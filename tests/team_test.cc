// The kernels' stages on a team of lanes (kernels/team.h), each lane a thread: a team call
// strides its work over the lanes between two barriers, every lane runs the code between the
// calls, and TeamArray is a slice of an arena the lanes share (as a GPU team's shared memory),
// its locals each lane's own. Every stage written for a team must give, on 3 and on 8 lanes,
// the one-lane team's bits: a stage that keeps what a later call reads in a lane's locals, that
// writes shared scratch outside a call, or whose f(i) reads what another i of its call writes,
// does not (the last test shows the first of these caught).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "host/backend.h"
#include "kernels/step.h"
#include "moreau/model.h"
#include "support/one_env.h"
#include "support/test_util.h"

namespace moreau {
namespace {

// A barrier of T threads that gives up after 20 s: lanes that took different paths (one left a
// function early, or skipped a call) never meet, and the test stops with a message instead of hanging.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    if (!cv_.wait_for(lock, std::chrono::seconds(20), [&] { return generation_ != generation; })) {
      std::fprintf(stderr, "team lanes diverged: %d of %d lanes at a barrier for 20 s\n", arrived_, n_);
      std::abort();
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int n_, arrived_ = 0;
  long generation_ = 0;
};

// T lanes, one thread each (ThreadTeam<T>::run).
template <int T>
struct ThreadTeam {
  struct Lane {
    int rank = 0;
    Barrier* barrier = nullptr;
    std::byte* top = nullptr;  // the arena's free part: every lane takes the same slices in the same order
    std::byte* end = nullptr;
    std::byte* base = nullptr;
    size_t peak = 0;  // the arena's high-water mark, bytes
    bool in_single = false;  // a team call inside a single one would meet the others' barrier: a bug
  };
  static inline thread_local Lane lane;

  static void sync() {
    if (lane.in_single) {
      std::fprintf(stderr, "a team call inside single(): only one lane reaches its barrier\n");
      std::abort();
    }
    lane.barrier->wait();
  }

  template <class X, int N>
  struct Array {
    static_assert(std::is_trivially_default_constructible_v<X> && std::is_trivially_destructible_v<X>);
    X* data;
    std::byte* below;
    Array() : below(lane.top) {
      const std::uintptr_t at = (reinterpret_cast<std::uintptr_t>(below) + alignof(X) - 1) / alignof(X) * alignof(X);
      data = reinterpret_cast<X*>(at);
      lane.top = reinterpret_cast<std::byte*>(data + N);
      if (lane.top > lane.end) std::abort();  // the test's arena is too small
      lane.peak = std::max(lane.peak, static_cast<size_t>(lane.top - lane.base));
    }
    ~Array() { lane.top = below; }
    Array(const Array&) = delete;
    Array& operator=(const Array&) = delete;
    operator X*() { return data; }
    operator const X*() const { return data; }
  };

  template <class F>
  static void for_each(int n, F&& f) {
    sync();
    for (int i = lane.rank; i < n; i += T) f(i);
    sync();
  }
  template <class S, class F>
  static void down_tree(const kern::ModelArrays<S>& m, F&& f) {
    sync();
    for (int l = 0; l < m.nlevel; ++l) {
      for (int k = m.level_adr[l] + lane.rank; k < m.level_adr[l + 1]; k += T) f(m.level_body[k]);
      sync();
    }
  }
  template <class S, class F>
  static void up_tree(const kern::ModelArrays<S>& m, F&& f) {
    sync();
    for (int l = m.nlevel - 1; l >= 0; --l) {
      for (int k = m.level_adr[l] + lane.rank; k < m.level_adr[l + 1]; k += T) f(m.level_body[k]);
      sync();
    }
  }
  template <class F>
  static void single(F&& f) {
    sync();
    if (lane.rank == 0) {
      lane.in_single = true;
      f();
      lane.in_single = false;
    }
    sync();
  }

  // f(rank) on T threads at once, sharing an arena (16-byte aligned, as a GPU's). Returns the
  // arena's high-water mark.
  template <class F>
  static size_t run(F&& f) {
    Barrier barrier(T);
    std::vector<std::byte> arena(1 << 20);
    std::vector<size_t> peaks(T);
    std::vector<std::thread> threads;
    for (int r = 0; r < T; ++r)
      threads.emplace_back([&, r] {
        std::byte* base = arena.data();
        lane = {r, &barrier, base, base + arena.size(), base};
        f(r);
        peaks[r] = lane.peak;
      });
    for (auto& t : threads) t.join();
    return *std::max_element(peaks.begin(), peaks.end());
  }
};

// The inputs of the stages: a random state, accelerations and adjoint seeds.
template <class S>
struct Inputs {
  std::vector<S> q, v, vdot, dvdot, diag, tau_adj, adj_H;
  std::vector<S> heights;
  kern::Ground<S> ground{};
  S added_mass = S(2.5), spin = S(0.02), roll = S(0);
};

// What the stages write, all of it compared bit for bit.
template <class S, class D>
struct Outputs {
  kern::Workspace<S, D> ws;
  kern::AdjWorkspace<S, D> aw;
  kern::ContactScratch<S, D> cs;
  S tau[D::kNv], adj_v[D::kNv], adj_vdot[D::kNv], adj_q[D::kNq], gaps[D::kContacts], x[D::kNv];
};

// Every stage written for a team, in a step's order: the tree sweeps and their adjoints, the
// mass matrix's factorisation and solve, then the contact Jacobians and the Delassus matrix. Returns
// contact_candidates' result.
template <class S, class D>
bool stages(const kern::ModelView<S, D>& m, const Inputs<S>& in, Outputs<S, D>& o) {
  kern::body_inertias(m, in.added_mass, o.ws);
  kern::forward_kinematics(m, in.q.data(), o.ws);
  kern::rnea(m, in.v.data(), in.vdot.data(), o.ws, o.tau);
  kern::crba(m, in.diag.data(), o.ws, S(1.3));
  kern::rnea_add_acceleration(m, in.dvdot.data(), o.ws);
  kern::adj_rnea(m, in.v.data(), in.vdot.data(), o.ws, o.adj_v, o.adj_vdot, in.tau_adj.data(), o.aw);
  kern::adj_crba(m, o.ws, in.adj_H.data(), o.aw);
  kern::adj_forward_kinematics(m, in.q.data(), o.ws, o.adj_q, o.aw);
  kern::ltl_factor(m, o.ws.H);
  kern::single(m, [&] {
    for (int k = 0; k < m.nv; ++k) o.x[k] = o.tau[k];
  });
  kern::ltl_solve<kern::TeamFor<D>>(m, o.ws.H, o.x);  // x = H⁻¹ τ
  const bool dropped =
      kern::contact_candidates(m, o.ws, in.q.data(), in.ground, S(1e3), o.cs, o.gaps, in.spin, in.roll);
  kern::delassus(m, o.ws.H, in.v.data(), o.cs);
  return dropped;
}

template <class S>
Inputs<S> random_inputs(const Model& model, const kern::ModelArrays<S>& m, bool terrain, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n01;
  std::vector<double> q(m.nq), v(m.nv);
  test::random_state(model, rng, q.data(), v.data());
  q[2] = 0.45;  // the feet near the ground
  Inputs<S> in;
  in.q.assign(q.begin(), q.end());
  in.v.assign(v.begin(), v.end());
  for (auto* x : {&in.vdot, &in.dvdot, &in.diag, &in.tau_adj}) {
    x->resize(m.nv);
    for (S& y : *x) y = static_cast<S>(n01(rng));
  }
  for (S& y : in.diag) y = std::abs(y);
  in.adj_H.resize(m.nM);
  for (S& y : in.adj_H) y = static_cast<S>(n01(rng));
  if (terrain) {  // ±0.2 m heights on a 0.37 m grid under the robot
    const int nx = 17, ny = 15;
    in.heights.resize(nx * ny);
    for (S& z : in.heights) z = static_cast<S>(0.2 * n01(rng));
    in.ground = {nx, ny, S(-3.1), S(-2.6), S(0.37), S(0.37), in.heights.data()};
  }
  return in;
}

template <class X>
bool same_bits(const X& a, const X& b) {
  return std::memcmp(&a, &b, sizeof(X)) == 0;
}

// A team's contact scratch against one lane's, bit for bit: every field alike, and the Delassus
// matrix entry by entry over the solve's rows (a team keeps its lower triangle alone).
template <class S, class D, class TD>
bool same_scratch(const kern::ContactScratch<S, D>& a, const kern::ContactScratch<S, TD>& b) {
  static_assert(!kern::packed_delassus<D>() && kern::packed_delassus<TD>());
  const int nr = kern::solve_rows(a);
  bool same = a.n == b.n && a.nj == b.nj && same_bits(a.con, b.con) && same_bits(a.jdof, b.jdof) &&
              same_bits(a.jq, b.jq) && same_bits(a.jkind, b.jkind) && same_bits(a.jbound, b.jbound) &&
              same_bits(a.nd, b.nd) && same_bits(a.dof, b.dof) && same_bits(a.gap, b.gap) && same_bits(a.w, b.w) &&
              same_bits(a.J, b.J) && same_bits(a.Y, b.Y) && same_bits(a.c, b.c) && same_bits(a.P, b.P);
  for (int r = 0; r < nr; ++r)
    for (int s = 0; s < nr; ++s)
      same = same && same_bits(a.G[kern::sym_index<false>(r, s, nr)], b.G[kern::sym_index<true>(r, s, nr)]);
  return same;
}

// The same for a physics step's tape.
template <class S, class D, class TD>
bool same_tape(const kern::StepTape<S, D>& a, const kern::StepTape<S, TD>& b) {
  return same_bits(a.q, b.q) && same_bits(a.v, b.v) && same_bits(a.qM, b.qM) && same_bits(a.dv, b.dv) &&
         same_bits(a.v_free, b.v_free) && same_bits(a.v_next, b.v_next) &&
         same_bits(a.ws, reinterpret_cast<const decltype(a.ws)&>(b.ws)) && same_scratch(a.cs, b.cs);
}

// The stages on T lanes against the one-lane team, size class D.
template <class S, class D, int T>
void expect_team_gives_serial_bits(const Model& model, S roll, bool terrain) {
  using TeamD = kern::Teamed<D, ThreadTeam<T>>;
  PackedModel<S> packed(model);
  const kern::ModelView<S> full = test::view_of(packed);
  const kern::ModelView<S, D> serial{full};
  const kern::ModelView<S, TeamD> team{full};
  for (unsigned seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE(seed);
    Inputs<S> in = random_inputs(model, full, terrain, seed);
    in.roll = roll;
    auto want = std::make_unique<Outputs<S, D>>();
    auto got = std::make_unique<Outputs<S, TeamD>>();  // zeroed, as want: the entries no stage writes agree
    const bool dropped = stages(serial, in, *want);
    ASSERT_GT(want->cs.n, 0);
    std::vector<int> lane_dropped(T, -1);
    ThreadTeam<T>::run([&](int rank) { lane_dropped[rank] = stages(team, in, *got); });
    for (int r = 0; r < T; ++r) EXPECT_EQ(lane_dropped[r], dropped) << "lane " << r;
    EXPECT_TRUE(same_bits(want->ws, reinterpret_cast<const decltype(want->ws)&>(got->ws))) << "workspace";
    EXPECT_TRUE(same_bits(want->aw, reinterpret_cast<const decltype(want->aw)&>(got->aw))) << "adjoint workspace";
    EXPECT_TRUE(same_scratch(want->cs, got->cs)) << "contact scratch";
    EXPECT_EQ(std::memcmp(want->tau, got->tau, sizeof(want->tau)), 0) << "tau";
    EXPECT_EQ(std::memcmp(want->adj_v, got->adj_v, sizeof(want->adj_v)), 0) << "adj_v";
    EXPECT_EQ(std::memcmp(want->adj_vdot, got->adj_vdot, sizeof(want->adj_vdot)), 0) << "adj_vdot";
    EXPECT_EQ(std::memcmp(want->adj_q, got->adj_q, sizeof(want->adj_q)), 0) << "adj_q";
    EXPECT_EQ(std::memcmp(want->gaps, got->gaps, sizeof(want->gaps)), 0) << "gaps";
    EXPECT_EQ(std::memcmp(want->x, got->x, sizeof(want->x)), 0) << "H⁻¹ τ";
  }
}

Model anymal() { return load_model(test::asset("anymal_c.json")); }
// Two pairs of shanks that may touch: contacts between two of the robot's bodies.
Model anymal_with_pairs() {
  return with_self_collisions(anymal(), {{"LF_SHANK", "RF_SHANK"}, {"LH_SHANK", "RH_SHANK"}});
}

TEST(ThreadTeam, StagesOnThreeLanesGiveTheSerialBitsFloat) {
  expect_team_gives_serial_bits<float, QuadrupedDims, 3>(anymal(), 0.0f, false);
}
TEST(ThreadTeam, StagesOnEightLanesGiveTheSerialBitsDouble) {
  expect_team_gives_serial_bits<double, QuadrupedDims, 8>(anymal(), 0.0, false);
}
// pairs, rolling rows and a heightfield: every path of the contact Jacobians
TEST(ThreadTeam, StagesWithPairsRollingAndTerrainOnThreeLanes) {
  expect_team_gives_serial_bits<double, SmallDims, 3>(anymal_with_pairs(), 0.01, true);
}
TEST(ThreadTeam, StagesWithPairsRollingAndTerrainOnEightLanesFloat) {
  expect_team_gives_serial_bits<float, SmallDims, 8>(anymal_with_pairs(), 0.01f, true);
}

// A control step's state, action, tape, contact information and statistics, as a team shares them.
template <class S, class D>
struct Stepped {
  S q[D::kNq], v[D::kNv], u[D::kNu];
  kern::StepTape<S, D> tape;
  kern::ContactInfo<S, D> info;
  kern::StepStats<S> stats;
};

template <class S, class D>
int control_step(const kern::ModelView<S, D>& m, const kern::ContactSettings<S>& cfg, const kern::Params<S>& p,
                 Stepped<S, D>& x) {
  return kern::advance(m, cfg, p, 0, x.q, x.v, x.u, x.tape, &x.info, &x.stats);
}

// A control step and its adjoint (every contact mode) on T lanes against the one-lane team, from
// a state settled on the ground (1 s of hard contact, the pose held) with a random velocity and
// actions: advance's state, tape and contact information; control_step's, pure_step's and
// adj_pure_step's batch buffers (the adjoint with a tape per physics step and with one, the CUDA
// kernel's checkpointed schedule); and the arena each takes within its bound.
template <class S, class D, int T>
void expect_team_steps_serial_bits(const Model& model, S roll) {
  using TeamD = kern::Teamed<D, ThreadTeam<T>>;
  PackedModel<S> packed(model);
  const kern::ModelView<S> full = test::view_of(packed);
  const kern::ModelView<S, D> serial{full};
  const kern::ModelView<S, TeamD> team{full};
  const test::OneEnvParams<S> params(model, roll);
  const kern::Params<S> p = params.view();
  auto start = std::make_unique<Stepped<S, D>>();
  for (int k = 0; k < full.nq; ++k) start->q[k] = static_cast<S>(model.qpos0[k]);
  for (int k = 0; k < full.nv; ++k) start->v[k] = 0;
  for (int a = 0; a < full.nu; ++a) start->u[a] = static_cast<S>(model.qpos0[full.actuator_qposadr[a]]);
  const kern::ContactSettings<S> hard{kern::kContactHard, 500, S(1e-6), 1, 1};
  for (int step = 0; step < 50; ++step) ASSERT_EQ(control_step(serial, hard, p, *start), 0);
  std::mt19937 rng(11);
  std::normal_distribution<double> n01;
  for (int k = 0; k < full.nv; ++k) start->v[k] = static_cast<S>(0.3 * n01(rng));
  for (int a = 0; a < full.nu; ++a) start->u[a] += static_cast<S>(0.1 * n01(rng));
  for (int mode : {kern::kContactNone, kern::kContactHard, kern::kContactSoft, kern::kContactSmooth,
                   kern::kContactHardSmoothGrad}) {
    SCOPED_TRACE(mode);
    const kern::ContactSettings<S> cfg{mode, 500, S(1e-6), 1, mode == kern::kContactSoft ? 4 : 1};
    auto want = std::make_unique<Stepped<S, D>>();
    auto got = std::make_unique<Stepped<S, TeamD>>();
    auto set_start = [&](auto& x) {
      std::copy(start->q, start->q + full.nq, x.q);
      std::copy(start->v, start->v + full.nv, x.v);
      std::copy(start->u, start->u + full.nu, x.u);
    };
    set_start(*want);
    set_start(*got);
    const int status = control_step(serial, cfg, p, *want);
    if (mode != kern::kContactNone) ASSERT_GT(want->tape.cs.n, 0) << "no contact: the test state is off the ground";
    std::vector<int> lane_status(T, -1);
    ThreadTeam<T>::run([&](int rank) { lane_status[rank] = control_step(team, cfg, p, *got); });
    for (int r = 0; r < T; ++r) EXPECT_EQ(lane_status[r], status) << "lane " << r;
    const auto& g = *got;
    EXPECT_TRUE(same_bits(want->q, g.q) && same_bits(want->v, g.v)) << "state";
    EXPECT_TRUE(same_tape(want->tape, g.tape)) << "tape";
    EXPECT_TRUE(same_bits(want->info, reinterpret_cast<const decltype(want->info)&>(g.info))) << "contact information";
    EXPECT_EQ(want->stats.iterations, g.stats.iterations);
    EXPECT_TRUE(same_bits(want->stats.residual, g.stats.residual));
    // the kernels' entry points, on a batch of one environment
    test::OneEnvBatch<S> serial_batch(full, start->q, start->v, start->u), team_batch = serial_batch;
    kern::control_step(serial, cfg, p, serial_batch.view(), 0);
    size_t peak = ThreadTeam<T>::run([&](int) { kern::control_step(team, cfg, p, team_batch.view(), 0); });
    EXPECT_TRUE(serial_batch == team_batch) << "control_step";
    EXPECT_LE(peak, (kern::step_arena_bytes<S, TeamD>()));
    // the pure step from the kicked state
    serial_batch = team_batch = test::OneEnvBatch<S>(full, start->q, start->v, start->u);
    kern::pure_step(serial, cfg, p, serial_batch.pure(), 0);
    peak = ThreadTeam<T>::run([&](int) { kern::pure_step(team, cfg, p, team_batch.pure(), 0); });
    EXPECT_TRUE(serial_batch == team_batch) << "pure_step";
    EXPECT_LE(peak, (kern::step_arena_bytes<S, TeamD>()));
    EXPECT_GT(peak, sizeof(kern::StepTape<S, TeamD>));
    if (mode == kern::kContactHard)
      std::printf("arena per environment (%s, %d bodies): pure_step %zu B of a bound of %zu B\n",
                  sizeof(S) == 4 ? "float32" : "float64", full.nbody, peak, kern::step_arena_bytes<S, TeamD>());
    // the adjoint of the pure step, with a tape per physics step (the CPU's schedule) and with
    // one, recomputed from checkpoints (the CUDA kernel's); the tapes are the team's
    const int n_steps = full.decimation * cfg.substeps;
    for (const int n_tapes : {n_steps, 1}) {
      SCOPED_TRACE(n_tapes);
      auto serial_tapes = std::make_unique<kern::AdjTape<S, D>[]>(n_tapes);
      auto team_tapes = std::make_unique<kern::AdjTape<S, TeamD>[]>(n_tapes);
      kern::adj_pure_step(serial, cfg, p, serial_batch.pure(), 0, serial_tapes.get(), n_tapes);
      peak = ThreadTeam<T>::run([&](int) {
        kern::adj_pure_step(team, cfg, p, team_batch.pure(), 0, team_tapes.get(), n_tapes);
      });
      EXPECT_TRUE(serial_batch == team_batch) << "adj_pure_step";
      // the bound counts the kernel's one tape, which the test keeps outside the arena
      EXPECT_LE(peak + sizeof(kern::AdjTape<S, TeamD>), (kern::adjoint_arena_bytes<S, TeamD>()));
      if (mode == kern::kContactHard && n_tapes == 1)
        std::printf("arena per environment (%s, %d bodies): adj_pure_step %zu B and its tape %zu B, a bound of %zu B\n",
                    sizeof(S) == 4 ? "float32" : "float64", full.nbody, peak, sizeof(kern::AdjTape<S, TeamD>),
                    kern::adjoint_arena_bytes<S, TeamD>());
      if (mode != kern::kContactNone) EXPECT_NE(serial_batch.adj_mu[0], S(0)) << "no contact force: no gradient in μ";
    }
  }
}

TEST(ThreadTeam, StepAndAdjointOnThreeLanesGiveTheSerialBitsFloat) {
  expect_team_steps_serial_bits<float, QuadrupedDims, 3>(anymal(), 0.0f);
}
TEST(ThreadTeam, StepAndAdjointOnEightLanesGiveTheSerialBitsDouble) {
  expect_team_steps_serial_bits<double, QuadrupedDims, 8>(anymal(), 0.0);
}
TEST(ThreadTeam, StepAndAdjointWithPairsAndRollingOnThreeLanes) {
  expect_team_steps_serial_bits<double, SmallDims, 3>(anymal_with_pairs(), 0.01);
}

// Each body's world velocity ("world" meaning carried down the tree): a down_tree into an array
// that the next call reads, kept in a TeamArray or, wrongly, in each lane's own locals.
template <class S, class D, bool kShared>
void carried_velocities(const kern::ModelView<S, D>& m, const kern::Workspace<S, D>& ws, kern::Motion<S>* out) {
  using Local = kern::Motion<S>[D::kBodies];
  std::conditional_t<kShared, kern::TeamArray<D, kern::Motion<S>, D::kBodies>, Local> vel{};
  kern::down_tree(m, [&](int i) {
    const int par = m.body_parent[i];
    vel[i] = par < 0 ? ws.vel[i] : kern::apply(ws.Xup[i], vel[par]) + ws.vel[i];
  });
  kern::for_each(m, m.nbody, [&](int i) { out[i] = vel[i]; });
}

// The harness catches a stage that keeps a later call's input in a lane's locals.
TEST(ThreadTeam, ScratchInTheLanesOwnLocalsIsCaught) {
  using TeamD = kern::Teamed<QuadrupedDims, ThreadTeam<3>>;
  const Model model = anymal();
  PackedModel<double> packed(model);
  const kern::ModelView<double> full = test::view_of(packed);
  const kern::ModelView<double, QuadrupedDims> serial{full};
  const kern::ModelView<double, TeamD> team{full};
  const Inputs<double> in = random_inputs(model, full, false, 3);
  auto ws = std::make_unique<kern::Workspace<double, QuadrupedDims>>();
  double tau[QuadrupedDims::kNv];
  kern::forward_kinematics(serial, in.q.data(), *ws);
  kern::body_inertias(serial, 0.0, *ws);
  kern::rnea(serial, in.v.data(), in.vdot.data(), *ws, tau);
  const auto& team_ws = reinterpret_cast<const kern::Workspace<double, TeamD>&>(*ws);
  using Out = std::vector<kern::Motion<double>>;
  Out want(full.nbody), shared(full.nbody), local(full.nbody);
  carried_velocities<double, QuadrupedDims, true>(serial, *ws, want.data());
  ThreadTeam<3>::run([&](int) { carried_velocities<double, TeamD, true>(team, team_ws, shared.data()); });
  ThreadTeam<3>::run([&](int) { carried_velocities<double, TeamD, false>(team, team_ws, local.data()); });
  const auto bytes = full.nbody * sizeof(kern::Motion<double>);
  EXPECT_EQ(std::memcmp(want.data(), shared.data(), bytes), 0);
  EXPECT_NE(std::memcmp(want.data(), local.data(), bytes), 0);
}

}  // namespace
}  // namespace moreau
