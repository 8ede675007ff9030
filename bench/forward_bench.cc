// moreau-bench-forward: forward throughput in environment-steps/s against the number of
// environments (CPU float32 and float64, CUDA float32 when present), for each contact mode
// asked for. On the CPU it also times MuJoCo's mj_step on the equivalent model, interleaved
// with moreau's single-thread float32 runs, and prints the step-time ratio. Prints a table,
// then one line "JSON {...}".
//
//   moreau-bench-forward [--robot FILE] [--envs N,N,...] [--threads K] [--seconds T]
//                        [--trials N] [--device cpu|cuda|all] [--json-out FILE]
//                        [--contact none|hard|soft|smooth|hard_smooth_grad|all] [--kick]
//                        [--terrain H] [--self-collisions]
//
// One environment-step is one PHYSICS step of one environment (a control step is
// `decimation` of them; soft contact's automatic substeps are inside it). Each figure is the
// median of --trials timed runs of about --seconds, after one warm-up run.
// --contact none (the default): contact off in both simulators (moreau ContactMode::None,
// MuJoCo without constraints); the robot falls freely.
// --contact MODE: moreau's MODE against MuJoCo with its contact spheres colliding with a ground
// plane (condim 3, μ = 1, elliptic cone, no joint limits); both robots stand on their feet,
// held at the default pose by the PD servos, from a state settled for 1 s (untimed).
// Every 2 s of simulated time the state is reset, untimed, in moreau and MuJoCo alike (to the
// default state, or to the settled standing state with contact).
// --kick: the table's rows (not the MuJoCo comparison) start every environment, at every
// reset, from the settled state with its velocity kicked by N(0, 0.5²) per coordinate (seeded
// per environment): feet slide and lift, as along a gait, where the standing robot's contact
// solve is at its easiest (docs/contact.md, "Sliding feet"; bench/contact_solver.py).
// --terrain H: the table's rows (not the MuJoCo comparison) stand the robot on a heightfield of
// 201 x 201 samples 0.1 m apart centred on it, heights uniform in ±H m (seeded); with H = 0 its
// physics are the plane's bit for bit, so the rate against a run without --terrain is the cost
// of the ground lookup alone.
// --self-collisions: the table's rows with every two bodies carrying contact points, neither an
// ancestor of the other, colliding with each other (with_self_collisions; ANYmal C's four feet:
// 6 pairs); the rate against a run without it is the cost of the pairs.
// Exit status: 0; 1 when a measured target fails or an environment froze (non-zero status);
// 2 on bad arguments or an error.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <mujoco/mujoco.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "moreau/model.h"
#include "moreau/simulator.h"

namespace {

using namespace bench;
using nlohmann::json;

constexpr int kRatioEnvs = 256;           // the main single-thread figure: per-env time at 256 envs
constexpr double kCpuTargetRatio = 0.5;   // moreau float32 1-thread step time / mj_step time (none, hard)
constexpr int kGpuTargetEnvs = 16384;     // GPU targets at >= this many environments:
constexpr double kGpuTargetRateNone = 50e6;  // env-steps/s without contact
constexpr double kGpuTargetRateHard = 30e6;  // env-steps/s with hard contact

using moreau::ContactMode;

// The targets a mode has (0: none; the figures are reported all the same).
double gpu_target_rate(ContactMode mode) {
  return mode == ContactMode::None ? kGpuTargetRateNone : mode == ContactMode::Hard ? kGpuTargetRateHard : 0;
}
bool has_cpu_target(ContactMode mode) { return mode == ContactMode::None || mode == ContactMode::Hard; }

using Options = CommonOptions;

void usage() {
  std::puts(
      "usage: moreau-bench-forward [--robot FILE] [--envs N,N,...] [--threads K] [--seconds T]\n"
      "                            [--trials N] [--device cpu|cuda|all] [--json-out FILE]\n"
      "                            [--contact none|hard|soft|smooth|hard_smooth_grad|all]\n"
      "                            [--mujoco-peer PATH|none] [--cuda-block B,B,...] [--cuda-team T,T]\n"
      "  --envs     default: CPU 1,16,256,4096; CUDA 1024,4096,16384,65536\n"
      "  --threads  CPU threads for the table rows (default all); the MuJoCo comparison uses 1\n"
      "  --seconds  length of one timed run (default 0.5); --trials runs per figure (default 5)\n"
      "  --contact  contact mode(s), comma-separated or all (default none): with contact both\n"
      "             simulators stand the robot on a ground plane\n"
      "  --mujoco-peer  PATH|none: the second MuJoCo, run between the comparison's trials (default\n"
      "             moreau-mujoco-peer, MuJoCo's current release, when built)\n"
      "  --cuda-block  CUDA threads per block, one row each (default 128; multiples of 32 up to 256)\n"
      "  --cuda-team  CUDA lanes per environment, one row each: 0 one thread (default), 8 the team\n"
      "             layout (SimulatorOptions::cuda_team)\n"
      "  --kick     the table's rows start from the settled state with velocities + N(0, 0.5^2)\n"
      "             (feet sliding); the MuJoCo comparison stays standing\n"
      "  --terrain H  the table's rows on a heightfield, heights uniform in +-H m (0: flat, the\n"
      "             plane's physics through the heightfield lookup)\n"
      "  --self-collisions  the table's rows with the bodies on different branches colliding");
}

// moreau: one call = one control step of every environment. With contact, every reset puts
// all environments into the settled standing state.
class MoreauRunner {
 public:
  MoreauRunner(const moreau::Model& model, const moreau::SimulatorOptions& opt, bool kick = false)
      : sim_(model, opt), settled_(settled_state(model, opt.contact.mode)) {
    if (!settled_.q.empty()) {
      const int n = opt.n_env;
      q_.resize(static_cast<size_t>(n) * model.nq);
      v_.resize(static_cast<size_t>(n) * model.nv);
      for (int e = 0; e < n; ++e) {
        std::copy(settled_.q.begin(), settled_.q.end(), q_.begin() + static_cast<size_t>(e) * model.nq);
        std::copy(settled_.v.begin(), settled_.v.end(), v_.begin() + static_cast<size_t>(e) * model.nv);
        if (!kick) continue;
        std::mt19937 rng(static_cast<unsigned>(e));  // the same kick for an environment in every batch size
        std::normal_distribution<double> kick_v(0.0, 0.5);
        for (int k = 0; k < model.nv; ++k) v_[static_cast<size_t>(e) * model.nv + k] += kick_v(rng);
      }
    }
  }
  void reset() {
    sim_.reset_all();
    if (!q_.empty()) sim_.set_state(q_.data(), v_.data(), sim_.n_env());
    sim_.synchronize();
  }
  void step() { sim_.step(1); }
  void sync() { sim_.synchronize(); }
  double env_steps_per_call() const { return static_cast<double>(sim_.n_env()) * sim_.model().decimation; }
  // Environments frozen by a fatal status: they skip the physics and would inflate the rate.
  // (A warning, such as a solve that hit its sweep cap, does not stop an environment.)
  int frozen() const {
    std::vector<int32_t> status(sim_.n_env());
    sim_.get_status(status.data(), sim_.n_env());
    return static_cast<int>(
        std::count_if(status.begin(), status.end(), [](int32_t s) { return (s & moreau::kStatusFatal) != 0; }));
  }
  // Largest contact-solver sweep count of the last control step over the environments
  // (CPU buffers only; -1 otherwise).
  int max_iterations() {
    const moreau::View it = sim_.solver_iterations();
    if (it.device != moreau::Device::CPU || !it.data) return -1;
    const int32_t* p = static_cast<const int32_t*>(it.data);
    return *std::max_element(p, p + sim_.n_env());
  }

 private:
  moreau::Simulator sim_;
  const Settled& settled_;
  std::vector<double> q_, v_;
};

struct Row {
  std::string contact, device, dtype;
  bool kicked = false;
  int threads = 0;  // CPU: threads; CUDA: threads per block
  int team = 0;     // CUDA: lanes per environment (0: one thread each)
  int n_env = 0;
  std::vector<double> rates;  // env-steps/s of each trial
  int frozen = 0;
  int iterations = -1;  // contact: largest solver sweep count of the last control step (CPU)
  double rate() const { return median(rates); }
  double spread() const { return bench::spread(rates); }  // (max − min) / median
};

template <class Runner>
std::vector<double> run_trials(Runner& r, const Options& o, int per_reset) {
  measure(r, o.seconds / 4, per_reset);  // warm-up
  std::vector<double> rates;
  for (int t = 0; t < o.trials; ++t) rates.push_back(measure(r, o.seconds, per_reset));
  return rates;
}

Row bench_moreau(const moreau::Model& model, const moreau::SimulatorOptions& so, const Options& o, int per_reset,
                 bool kick) {
  MoreauRunner r(model, so, kick);
  Row row{moreau::contact_mode_name(so.contact.mode), moreau::device_name(so.device), moreau::dtype_name(so.dtype),
          kick && so.contact.mode != ContactMode::None,
          so.device == moreau::Device::CUDA ? cuda_block_of(so) : so.n_threads, so.cuda_team, so.n_env, {}, 0};
  row.rates = run_trials(r, o, per_reset);
  row.frozen = r.frozen();
  if (so.contact.mode != ContactMode::None) row.iterations = r.max_iterations();
  return row;
}

// moreau float32 on one thread (1 and kRatioEnvs envs) against mj_step, interleaved
// A B A' B ... so that machine noise hits both; the MuJoCo figure pools its 2 × trials runs.
struct Comparison {
  std::vector<double> mujoco, one_env, many_env;
  int frozen = 0;              // moreau environments frozen at the end
  int mj_contacts = 0;         // MuJoCo's active contacts and base height after settling
  double mj_base_height = 0;
  PeerTrials peer;             // --mujoco-peer: its mj_step physics steps/s, one per trial
  // moreau per-env step time / mj_step time.
  double ratio(const std::vector<double>& ours) const { return median(mujoco) / median(ours); }
  double peer_ratio(const std::vector<double>& ours) const { return median(peer.rates) / median(ours); }
};

Comparison compare_with_mujoco(const moreau::Model& model, ContactMode mode, const Options& o, int per_reset) {
  moreau::SimulatorOptions so;
  so.n_threads = 1;
  so.n_env = 1;
  so.contact.mode = mode;
  MoreauRunner one(model, so);
  so.n_env = kRatioEnvs;
  MoreauRunner many(model, so);
  MujocoRunner mj(model, mode);
  Comparison c;
  mj.reset();
  c.mj_contacts = mj.contacts();
  c.mj_base_height = mj.base_height();
  measure(one, o.seconds / 4, per_reset);  // warm-up
  measure(many, o.seconds / 4, per_reset);
  measure(mj, o.seconds / 4, per_reset);
  for (int t = 0; t < o.trials; ++t) {
    c.one_env.push_back(measure(one, o.seconds, per_reset));
    c.mujoco.push_back(measure(mj, o.seconds, per_reset));
    c.many_env.push_back(measure(many, o.seconds, per_reset));
    c.mujoco.push_back(measure(mj, o.seconds, per_reset));
    if (!o.mujoco_peer.empty()) c.peer.run(o, mode, "step");
  }
  c.frozen = one.frozen() + many.frozen();
  return c;
}

json row_json(const Row& r) {
  json j = {{"contact", r.contact}, {"kicked", r.kicked}, {"device", r.device}, {"dtype", r.dtype}, {"n_env", r.n_env},
            {"env_steps_per_s", r.rate()}, {"ns_per_env_step", 1e9 / r.rate()},
            {"trials_env_steps_per_s", r.rates}, {"frozen_envs", r.frozen}};
  if (r.iterations >= 0) j["solver_iterations_max"] = r.iterations;
  if (r.device == "cpu") {
    j["threads"] = r.threads;
  } else {
    // the team layout: cuda_block / team environments per block where shared memory allows
    const int lanes = std::max(r.team, 1), per_block = r.threads / lanes;
    j["launch"] = {{"threads_per_block", r.threads},
                   {"lanes_per_env", lanes},
                   {"blocks_at_most_envs_per_block", (r.n_env + per_block - 1) / per_block}};
  }
  return j;
}

void print_row(const Row& r) {
  const std::string threads = std::to_string(r.threads) + (r.device == "cpu" ? "" : "/blk") +
                              (r.team ? " t" + std::to_string(r.team) : "");
  const std::string note = r.frozen ? " (" + std::to_string(r.frozen) + " envs frozen!)" : "";
  const std::string its = r.iterations >= 0 ? std::to_string(r.iterations) : "-";
  const std::string contact = r.contact + (r.kicked ? " kicked" : "");
  std::printf("%-16s %-5s %-8s %7s %7d %14.4g %12.1f %6.0f%% %6s%s\n", contact.c_str(), r.device.c_str(),
              r.dtype.c_str(), threads.c_str(), r.n_env, r.rate(), 1e9 / r.rate(), 100 * r.spread(), its.c_str(),
              note.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool kick = false;
  double terrain = -1;  // < 0: the plane
  bool self_collisions = false;
  const std::string command = command_line(argc, argv);
  try {
    for (int i = 1; i < argc; ++i) {
      if (parse_common_option(argc, argv, i, o)) continue;
      if (std::string(argv[i]) == "--kick") {
        kick = true;
        continue;
      }
      if (std::string(argv[i]) == "--self-collisions") {
        self_collisions = true;
        continue;
      }
      if (std::string(argv[i]) == "--terrain" && i + 1 < argc) {
        terrain = std::atof(argv[++i]);
        if (!(terrain >= 0)) throw moreau::Error("--terrain: expected a height >= 0 [m]");
        continue;
      }
      const std::string a = argv[i];
      usage();
      return a == "--help" || a == "-h" ? 0 : 2;
    }
    if (o.threads <= 0) o.threads = static_cast<int>(std::thread::hardware_concurrency());

    const moreau::Model model = moreau::load_model(o.robot);
    moreau::Model table_model = model;  // the table's rows: on the heightfield with --terrain
    if (terrain >= 0) {
      std::mt19937 rng(1);
      std::uniform_real_distribution<double> height(-terrain, terrain);
      std::vector<double> h(201 * 201);
      for (double& z : h) z = height(rng);
      table_model = moreau::with_heightfield(model, h, 201, 201, 0.1, 0.1, -10.0, -10.0);
      std::printf("terrain: 201 x 201 heights 0.1 m apart, uniform in +-%g m (the table's rows)\n", terrain);
    }
    if (self_collisions) {
      std::vector<int> bodies;  // with contact points
      for (int b : model.con_body)
        if (std::find(bodies.begin(), bodies.end(), b) == bodies.end()) bodies.push_back(b);
      const auto above = [&](int a, int b) {  // a is b or an ancestor of b
        for (; b >= 0; b = model.body_parent[b])
          if (b == a) return true;
        return false;
      };
      std::vector<std::pair<std::string, std::string>> pairs;
      for (size_t i = 0; i < bodies.size(); ++i)
        for (size_t j = i + 1; j < bodies.size(); ++j)
          if (!above(bodies[i], bodies[j]) && !above(bodies[j], bodies[i]))
            pairs.emplace_back(model.body_name[bodies[i]], model.body_name[bodies[j]]);
      table_model = moreau::with_self_collisions(table_model, pairs);
      std::printf("self-collisions: %zu body pairs, %d contact pairs (the table's rows)\n", pairs.size(),
                  table_model.npair);
    }
    const int per_reset = std::max(1, static_cast<int>(kResetSimSeconds / (model.timestep * model.decimation)));
    const bool cuda = o.cuda && moreau::cuda_available();
    const std::string gpu = cuda ? gpu_name(0) : "";
    std::printf("moreau-bench-forward: %s (nq %d, nv %d, nu %d), h = %g s, decimation %d | %s, %u hardware threads%s%s\n",
                model.name.c_str(), model.nq, model.nv, model.nu, model.timestep, model.decimation,
                cpu_model().c_str(), std::thread::hardware_concurrency(), cuda ? " | GPU " : "", gpu.c_str());
    std::printf("env-steps/s = environments x physics steps / wall s (a control step = %d physics steps); "
                "median of %d runs of %g s\n\n",
                model.decimation, o.trials, o.seconds);
    std::printf("%-16s %-5s %-8s %7s %7s %14s %12s %7s %6s\n", "contact", "dev", "dtype", "threads", "n_env",
                "env-steps/s", "ns/env-step", "spread", "iters");

    std::vector<Row> rows;
    for (const ContactMode mode : o.contact) {
      if (o.cpu) {
        for (const moreau::DType dt : {moreau::DType::Float32, moreau::DType::Float64}) {
          for (const int n : o.envs.empty() ? std::vector<int>{1, 16, 256, 4096} : o.envs) {
            moreau::SimulatorOptions so;
            so.n_env = n;
            so.dtype = dt;
            so.n_threads = o.threads;
            so.contact.mode = mode;
            rows.push_back(bench_moreau(table_model, so, o, per_reset, kick));
            print_row(rows.back());
          }
        }
      }
      if (cuda) {
        for (const int n : o.envs.empty() ? std::vector<int>{1024, 4096, 16384, 65536} : o.envs)
          for (const int team : o.cuda_teams)
            for (const int block : o.cuda_blocks) {
              moreau::SimulatorOptions so;
              so.n_env = n;
              so.device = moreau::Device::CUDA;
              so.cuda_block = block;
              so.cuda_team = team;
              so.contact.mode = mode;
              rows.push_back(bench_moreau(table_model, so, o, per_reset, kick));
              print_row(rows.back());
            }
      }
    }
    if (cuda) {
      std::printf("GPU: %s; launch: one environment per thread, ceil(n_env / threads per block) blocks "
                  "(t8: 8 lanes per environment, its scratch in shared memory)\n",
                  gpu.c_str());
    } else if (o.cuda) {
      std::printf("CUDA: not measured (%s)\n", moreau::cuda_available() ? "not requested" : "no GPU");
    }
    bool failed = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.frozen != 0; });

    json out = json_header("forward", model, o, command);
    if (terrain >= 0) out["terrain_height"] = terrain;
    if (self_collisions) out["contact_pairs"] = table_model.npair;
    for (const Row& r : rows) out["rows"].push_back(row_json(r));
    if (cuda) out["machine"]["gpu"] = gpu;
    out["mujoco"]["version"] = mj_versionString();
    out["mujoco"]["comparisons"] = json::array();

    if (o.cpu) {
      std::printf("\nMuJoCo %s mj_step, 1 thread, interleaved with moreau cpu float32, 1 thread; "
                  "ratio = moreau ns/env-step / MuJoCo ns/step\n",
                  mj_versionString());
      std::printf("%-16s %12s %16s %8s %16s %8s  %s\n", "contact", "MuJoCo ns", "moreau 256 ns", "ratio",
                  "moreau 1 env ns", "ratio", "target (<= 0.50 at 256 envs)");
    }
    for (const ContactMode mode : o.contact) {
      if (!o.cpu) break;
      const char* name = moreau::contact_mode_name(mode);
      const Comparison c = compare_with_mujoco(model, mode, o, per_reset);
      const double mj_rate = median(c.mujoco), r1 = c.ratio(c.one_env), rn = c.ratio(c.many_env);
      const bool target = has_cpu_target(mode), pass = rn <= kCpuTargetRatio && c.frozen == 0;
      if (target) failed |= !pass;
      failed |= c.frozen != 0;
      std::printf("%-16s %12.0f %16.0f %8.3f %16.0f %8.3f  %s%s\n", name, 1e9 / mj_rate, 1e9 / median(c.many_env),
                  rn, 1e9 / median(c.one_env), r1, target ? (pass ? "PASS" : "FAIL") : "-",
                  c.frozen ? " (moreau envs frozen!)" : "");
      json cmp = {{"contact", name},
                  {"mujoco_ns_per_step", 1e9 / mj_rate},
                  {"mujoco_trials_steps_per_s", c.mujoco},
                  {"moreau_float32_1thread",
                   {{std::to_string(kRatioEnvs) + "_envs", {{"ns_per_env_step", 1e9 / median(c.many_env)}, {"ratio", rn}}},
                    {"1_env", {{"ns_per_env_step", 1e9 / median(c.one_env)}, {"ratio", r1}}}}},
                  {"moreau_frozen_envs", c.frozen}};
      if (!c.peer.rates.empty()) {
        const std::string version = c.peer.last["mujoco_version"];
        std::printf("%-16s %12.0f %16s %8.3f %16s %8.3f  MuJoCo %s (moreau-mujoco-peer, between the trials above)\n", "",
                    1e9 / median(c.peer.rates), "", c.peer_ratio(c.many_env), "", c.peer_ratio(c.one_env), version.c_str());
        cmp["mujoco_peer"] = {{"version", version},
                              {"program", o.mujoco_peer},
                              {"ns_per_step", 1e9 / median(c.peer.rates)},
                              {"trials_steps_per_s", c.peer.rates},
                              {"ratio_" + std::to_string(kRatioEnvs) + "_envs", c.peer_ratio(c.many_env)},
                              {"ratio_1_env", c.peer_ratio(c.one_env)},
                              {"settled", c.peer.last["settled"]}};
      }
      if (mode != ContactMode::None) {
        cmp["mujoco_model"] = "export_mjcf + ground plane; contact spheres contype/conaffinity 1, condim 3, "
                              "friction 1, elliptic cone, Newton solver, joint limits off";
        cmp["mujoco_settled"] = {{"base_height", c.mj_base_height}, {"ncon", c.mj_contacts}};
      } else {
        cmp["mujoco_model"] = "export_mjcf, constraints disabled";
      }
      out["mujoco"]["comparisons"].push_back(cmp);
      if (target)
        out["targets"].push_back({{"name", "cpu_step_time_ratio"},
                                  {"contact", name},
                                  {"limit", kCpuTargetRatio},
                                  {"value", rn},
                                  {"result", pass ? "PASS" : "FAIL"}});
      if (mode != ContactMode::None)
        std::printf("%-16s MuJoCo settled: base height %.4f m, %d contacts\n", "", c.mj_base_height, c.mj_contacts);
    }

    for (const ContactMode mode : o.contact) {
      const double limit = gpu_target_rate(mode);
      if (limit == 0) continue;
      const char* name = moreau::contact_mode_name(mode);
      double gpu_best = 0;
      for (const Row& r : rows)
        if (r.contact == name && r.device == "cuda" && r.n_env >= kGpuTargetEnvs) gpu_best = std::max(gpu_best, r.rate());
      const std::string gpu_result =
          !cuda ? "not measured (no GPU)"
          : gpu_best == 0 ? "not measured (no run at >= " + std::to_string(kGpuTargetEnvs) + " envs)"
          : gpu_best >= limit ? "PASS"
                              : "FAIL";
      failed |= gpu_result == "FAIL";
      std::printf("target: GPU, contact %s: >= %.0f M env-steps/s at >= %d envs: %s", name, limit / 1e6, kGpuTargetEnvs,
                  gpu_result.c_str());
      if (gpu_best > 0) std::printf(" (%.1f M on %s)", gpu_best / 1e6, gpu.c_str());
      std::printf("\n");
      out["targets"].push_back({{"name", "gpu_env_steps_per_s"},
                                {"contact", name},
                                {"limit", limit},
                                {"min_envs", kGpuTargetEnvs},
                                {"value", gpu_best},
                                {"result", gpu_result}});
    }

    emit_json(out, o.json_out);
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-bench-forward: %s\n", e.what());
    return 2;
  }
}
