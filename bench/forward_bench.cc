// moreau-bench-forward: forward throughput in environment-steps/s against the number of
// environments (CPU float32 and float64, CUDA float32 when present). On the CPU it also times
// MuJoCo's mj_step on the same model, interleaved with moreau's single-thread float32 runs,
// and prints the step-time ratio. Prints a table, then one line "JSON {...}".
//
//   moreau-bench-forward [--robot FILE] [--envs N,N,...] [--threads K] [--seconds T]
//                        [--trials N] [--device cpu|cuda|all] [--json-out FILE]
//
// One environment-step is one PHYSICS step of one environment (a control step is
// `decimation` of them). Each figure is the median of --trials timed runs of about --seconds,
// after one warm-up run. Contact is off in both simulators (moreau ContactMode::None, MuJoCo
// without constraints): the targets are for the contact-free step. So the robot falls freely,
// and every 2 s of simulated time its state is reset, untimed, in moreau and MuJoCo alike.
// Exit status: 0; 1 when a measured target fails or an environment froze (non-zero status);
// 2 on bad arguments or an error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <mujoco/mujoco.h>
#include <nlohmann/json.hpp>

#include "moreau/model.h"
#include "moreau/simulator.h"

#ifdef MOREAU_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr double kResetSimSeconds = 2.0;  // simulated time between resets
constexpr int kCudaBlock = 128;           // threads per block, one env per thread (cuda/cuda_backend.cu)
constexpr int kRatioEnvs = 256;           // the main single-thread figure: per-env time at 256 envs
constexpr double kCpuTargetRatio = 0.5;   // moreau float32 1-thread step time / mj_step time
constexpr double kGpuTargetRate = 50e6;   // env-steps/s ...
constexpr int kGpuTargetEnvs = 16384;     // ... at >= this many environments

struct Options {
  std::string robot = std::string(MOREAU_ASSETS_DIR) + "/robots/anymal_c.json";
  std::vector<int> envs;  // empty: the device's default list
  int threads = 0;        // CPU rows; 0 = all hardware threads
  double seconds = 0.5;
  int trials = 5;
  bool cpu = true, cuda = true;
  std::string json_out;
};

void usage() {
  std::puts(
      "usage: moreau-bench-forward [--robot FILE] [--envs N,N,...] [--threads K] [--seconds T]\n"
      "                            [--trials N] [--device cpu|cuda|all] [--json-out FILE]\n"
      "  --envs     default: CPU 1,16,256,4096; CUDA 1024,4096,16384,65536\n"
      "  --threads  CPU threads for the table rows (default all); the MuJoCo comparison uses 1\n"
      "  --seconds  length of one timed run (default 0.5); --trials runs per figure (default 5)");
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

moreau::SimulatorOptions no_contact(moreau::SimulatorOptions opt) {
  opt.contact.mode = moreau::ContactMode::None;
  return opt;
}

// moreau: one call = one control step of every environment.
class MoreauRunner {
 public:
  MoreauRunner(const moreau::Model& model, moreau::SimulatorOptions opt) : sim_(model, no_contact(opt)) {}
  void reset() {
    sim_.reset_all();
    sim_.synchronize();
  }
  void step() { sim_.step(1); }
  void sync() { sim_.synchronize(); }
  double env_steps_per_call() const { return static_cast<double>(sim_.n_env()) * sim_.model().decimation; }
  // Environments frozen by a non-zero status: they skip the physics and would inflate the rate.
  int frozen() const {
    std::vector<int32_t> status(sim_.n_env());
    sim_.get_status(status.data(), sim_.n_env());
    return static_cast<int>(std::count_if(status.begin(), status.end(), [](int32_t s) { return s != 0; }));
  }

 private:
  moreau::Simulator sim_;
};

mjModel* load_mjcf(const std::string& text) {
  auto vfs = std::make_unique<mjVFS>();  // ~2 MB: keep it off the stack
  mj_defaultVFS(vfs.get());
  const char* name = "model.xml";
  if (mj_makeEmptyFileVFS(vfs.get(), name, static_cast<int>(text.size())) != 0)
    throw moreau::Error("MuJoCo: cannot create the in-memory MJCF file");
  std::copy(text.begin(), text.end(), static_cast<char*>(vfs->filedata[mj_findFileVFS(vfs.get(), name)]));
  char err[1000] = "";
  mjModel* m = mj_loadXML(name, vfs.get(), err, sizeof err);
  mj_deleteVFS(vfs.get());
  if (!m) throw moreau::Error(std::string("MuJoCo: ") + err);
  return m;
}

// MuJoCo on export_mjcf(model), one environment; one call = `decimation` mj_steps.
class MujocoRunner {
 public:
  explicit MujocoRunner(const moreau::Model& model) : model_(model), m_(load_mjcf(moreau::export_mjcf(model))) {
    m_->opt.disableflags |= mjDSBL_CONSTRAINT;  // our step has neither contacts nor joint limits yet
    d_ = mj_makeData(m_);
    if (!d_) {
      mj_deleteModel(m_);
      throw moreau::Error("MuJoCo: mj_makeData failed");
    }
  }
  ~MujocoRunner() {
    mj_deleteData(d_);
    mj_deleteModel(m_);
  }
  MujocoRunner(const MujocoRunner&) = delete;
  MujocoRunner& operator=(const MujocoRunner&) = delete;

  // The state and action of Simulator::reset: default pose, zero velocity, servos holding it.
  void reset() {
    mj_resetData(m_, d_);
    std::copy(model_.qpos0.begin(), model_.qpos0.end(), d_->qpos);
    for (int a = 0; a < model_.nu; ++a)
      d_->ctrl[a] = model_.actuator_type[a] == static_cast<int>(moreau::ActuatorType::Position)
                        ? model_.actuator_gear[a] * model_.qpos0[model_.actuator_qposadr[a]]
                        : 0.0;
  }
  void step() {
    for (int s = 0; s < model_.decimation; ++s) mj_step(m_, d_);
  }
  void sync() {}
  double env_steps_per_call() const { return model_.decimation; }

 private:
  const moreau::Model& model_;
  mjModel* m_;
  mjData* d_ = nullptr;
};

// One timed run of about `seconds`: blocks of at most `per_reset` control steps, each after an
// untimed reset. On CUDA the clock check sees launches, not completions, so a run may overshoot
// by up to one block; the sync before reading the clock keeps the rate exact.
template <class Runner>
double measure(Runner& r, double seconds, int per_reset) {
  double timed = 0, calls = 0;
  while (timed < seconds) {
    r.reset();
    const auto t0 = Clock::now();
    int k = 0;
    do {
      r.step();
      ++k;
    } while (k < per_reset && timed + seconds_since(t0) < seconds);
    r.sync();
    timed += seconds_since(t0);
    calls += k;
  }
  return calls * r.env_steps_per_call() / timed;
}

struct Row {
  std::string device, dtype;
  int threads = 0;  // CPU
  int n_env = 0;
  std::vector<double> rates;  // env-steps/s of each trial
  int frozen = 0;
  double rate() const { return median(rates); }
  double spread() const {  // (max − min) / median
    const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
    return (*hi - *lo) / rate();
  }
};

template <class Runner>
std::vector<double> run_trials(Runner& r, const Options& o, int per_reset) {
  measure(r, o.seconds / 4, per_reset);  // warm-up
  std::vector<double> rates;
  for (int t = 0; t < o.trials; ++t) rates.push_back(measure(r, o.seconds, per_reset));
  return rates;
}

Row bench_moreau(const moreau::Model& model, const moreau::SimulatorOptions& so, const Options& o, int per_reset) {
  MoreauRunner r(model, so);
  Row row{moreau::device_name(so.device), moreau::dtype_name(so.dtype), so.n_threads, so.n_env, {}, 0};
  row.rates = run_trials(r, o, per_reset);
  row.frozen = r.frozen();
  return row;
}

// moreau float32 on one thread (1 and kRatioEnvs envs) against mj_step, interleaved
// A B A' B ... so that machine noise hits both; the MuJoCo figure pools its 2 × trials runs.
struct Comparison {
  std::vector<double> mujoco, one_env, many_env;
  // moreau per-env step time / mj_step time.
  double ratio(const std::vector<double>& ours) const { return median(mujoco) / median(ours); }
};

Comparison compare_with_mujoco(const moreau::Model& model, const Options& o, int per_reset) {
  moreau::SimulatorOptions so;
  so.n_threads = 1;
  so.n_env = 1;
  MoreauRunner one(model, so);
  so.n_env = kRatioEnvs;
  MoreauRunner many(model, so);
  MujocoRunner mj(model);
  measure(one, o.seconds / 4, per_reset);  // warm-up
  measure(many, o.seconds / 4, per_reset);
  measure(mj, o.seconds / 4, per_reset);
  Comparison c;
  for (int t = 0; t < o.trials; ++t) {
    c.one_env.push_back(measure(one, o.seconds, per_reset));
    c.mujoco.push_back(measure(mj, o.seconds, per_reset));
    c.many_env.push_back(measure(many, o.seconds, per_reset));
    c.mujoco.push_back(measure(mj, o.seconds, per_reset));
  }
  return c;
}

std::string gpu_name(int device) {
#ifdef MOREAU_WITH_CUDA
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) return prop.name;
#else
  (void)device;
#endif
  return "unknown";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    const int n = std::atoi(item.c_str());
    if (n <= 0) throw moreau::Error("--envs: expected positive integers separated by commas, got '" + s + "'");
    out.push_back(n);
  }
  return out;
}

json row_json(const Row& r) {
  json j = {{"device", r.device}, {"dtype", r.dtype},       {"n_env", r.n_env},
            {"env_steps_per_s", r.rate()}, {"ns_per_env_step", 1e9 / r.rate()},
            {"trials_env_steps_per_s", r.rates}, {"frozen_envs", r.frozen}};
  if (r.device == "cpu") {
    j["threads"] = r.threads;
  } else {
    j["launch"] = {{"threads_per_block", kCudaBlock},
                   {"blocks", (r.n_env + kCudaBlock - 1) / kCudaBlock},
                   {"envs_per_thread", 1}};
  }
  return j;
}

void print_row(const Row& r) {
  const std::string threads = r.device == "cpu" ? std::to_string(r.threads) : "-";
  const std::string note = r.frozen ? " (" + std::to_string(r.frozen) + " envs frozen!)" : "";
  std::printf("%-5s %-8s %7s %7d %14.4g %12.1f %6.0f%%%s\n", r.device.c_str(), r.dtype.c_str(), threads.c_str(),
              r.n_env, r.rate(), 1e9 / r.rate(), 100 * r.spread(), note.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string command = argv[0];
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const bool has_value = i + 1 < argc;
      if (a == "--robot" && has_value) {
        o.robot = argv[++i];
      } else if (a == "--envs" && has_value) {
        o.envs = parse_list(argv[++i]);
      } else if (a == "--threads" && has_value) {
        o.threads = std::atoi(argv[++i]);
      } else if (a == "--seconds" && has_value) {
        o.seconds = std::atof(argv[++i]);
        if (!(o.seconds > 0)) throw moreau::Error("--seconds: expected a positive number");
      } else if (a == "--trials" && has_value) {
        o.trials = std::max(1, std::atoi(argv[++i]));
      } else if (a == "--device" && has_value) {
        const std::string d = argv[++i];
        if (d != "cpu" && d != "cuda" && d != "all") throw moreau::Error("--device: expected cpu, cuda or all");
        o.cpu = d != "cuda";
        o.cuda = d != "cpu";
      } else if (a == "--json-out" && has_value) {
        o.json_out = argv[++i];
      } else {
        usage();
        return a == "--help" || a == "-h" ? 0 : 2;
      }
    }
    if (o.threads <= 0) o.threads = static_cast<int>(std::thread::hardware_concurrency());

    const moreau::Model model = moreau::load_model(o.robot);
    const int per_reset = std::max(1, static_cast<int>(kResetSimSeconds / (model.timestep * model.decimation)));
    const bool cuda = o.cuda && moreau::cuda_available();
    const std::string gpu = cuda ? gpu_name(0) : "";
    std::printf("moreau-bench-forward: %s (nq %d, nv %d, nu %d), h = %g s, decimation %d | %s, %u hardware threads%s%s\n",
                model.name.c_str(), model.nq, model.nv, model.nu, model.timestep, model.decimation,
                cpu_model().c_str(), std::thread::hardware_concurrency(), cuda ? " | GPU " : "", gpu.c_str());
    std::printf("env-steps/s = environments x physics steps / wall s (a control step = %d physics steps); "
                "median of %d runs of %g s\n\n",
                model.decimation, o.trials, o.seconds);
    std::printf("%-5s %-8s %7s %7s %14s %12s %7s\n", "dev", "dtype", "threads", "n_env", "env-steps/s",
                "ns/env-step", "spread");

    std::vector<Row> rows;
    if (o.cpu) {
      for (const moreau::DType dt : {moreau::DType::Float32, moreau::DType::Float64}) {
        for (const int n : o.envs.empty() ? std::vector<int>{1, 16, 256, 4096} : o.envs) {
          moreau::SimulatorOptions so;
          so.n_env = n;
          so.dtype = dt;
          so.n_threads = o.threads;
          rows.push_back(bench_moreau(model, so, o, per_reset));
          print_row(rows.back());
        }
      }
    }
    if (cuda) {
      for (const int n : o.envs.empty() ? std::vector<int>{1024, 4096, 16384, 65536} : o.envs) {
        moreau::SimulatorOptions so;
        so.n_env = n;
        so.device = moreau::Device::CUDA;
        rows.push_back(bench_moreau(model, so, o, per_reset));
        print_row(rows.back());
      }
      std::printf("GPU: %s; launch: %d threads per block, one environment per thread, ceil(n_env / %d) blocks\n",
                  gpu.c_str(), kCudaBlock, kCudaBlock);
    } else if (o.cuda) {
      std::printf("CUDA: not measured (%s)\n", moreau::cuda_available() ? "not requested" : "no GPU");
    }
    bool failed = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.frozen != 0; });

    json out = {{"bench", "forward"},
                {"robot", model.name},
                {"robot_file", o.robot},
                {"nq", model.nq},
                {"nv", model.nv},
                {"nu", model.nu},
                {"timestep", model.timestep},
                {"decimation", model.decimation},
                {"unit", "env_steps_per_s: environments x physics steps per wall second"},
                {"seconds_per_run", o.seconds},
                {"trials", o.trials},
                {"date", utc_now()},
                {"machine", {{"cpu", cpu_model()}, {"cores", std::thread::hardware_concurrency()}}},
                {"command", command},
                {"rows", json::array()}};
    for (const Row& r : rows) out["rows"].push_back(row_json(r));
    if (cuda) out["machine"]["gpu"] = gpu;

    if (o.cpu) {
      const Comparison c = compare_with_mujoco(model, o, per_reset);
      const double mj_rate = median(c.mujoco), r1 = c.ratio(c.one_env), rn = c.ratio(c.many_env);
      const bool pass = rn <= kCpuTargetRatio;
      failed |= !pass;
      std::printf("\nMuJoCo %s mj_step, 1 thread, same model, no contacts or limits: %.0f ns/step\n",
                  mj_versionString(), 1e9 / mj_rate);
      std::printf("moreau cpu float32, 1 thread, %4d envs: %.0f ns/env-step, ratio moreau/MuJoCo %.3f\n",
                  kRatioEnvs, 1e9 / median(c.many_env), rn);
      std::printf("moreau cpu float32, 1 thread, %4d env:  %.0f ns/env-step, ratio moreau/MuJoCo %.3f\n", 1,
                  1e9 / median(c.one_env), r1);
      std::printf("target: 1-thread CPU float32 step time / mj_step time <= %.2f (>= 2x faster), at %d envs: "
                  "%s (%.3f)\n",
                  kCpuTargetRatio, kRatioEnvs, pass ? "PASS" : "FAIL", rn);
      out["mujoco"] = {{"version", mj_versionString()},
                       {"ns_per_step", 1e9 / mj_rate},
                       {"trials_steps_per_s", c.mujoco},
                       {"moreau_float32_1thread",
                        {{std::to_string(kRatioEnvs) + "_envs",
                          {{"ns_per_env_step", 1e9 / median(c.many_env)}, {"ratio", rn}}},
                         {"1_env", {{"ns_per_env_step", 1e9 / median(c.one_env)}, {"ratio", r1}}}}}};
      out["targets"]["cpu_step_time_ratio"] = {
          {"limit", kCpuTargetRatio}, {"value", rn}, {"result", pass ? "PASS" : "FAIL"}};
    }

    double gpu_best = 0;
    for (const Row& r : rows)
      if (r.device == "cuda" && r.n_env >= kGpuTargetEnvs) gpu_best = std::max(gpu_best, r.rate());
    std::string gpu_result = !cuda ? "not measured (no GPU)"
                             : gpu_best == 0 ? "not measured (no run at >= " + std::to_string(kGpuTargetEnvs) + " envs)"
                             : gpu_best >= kGpuTargetRate ? "PASS"
                                                          : "FAIL";
    failed |= gpu_result == "FAIL";
    std::printf("target: GPU >= %.0f M env-steps/s at >= %d envs: %s", kGpuTargetRate / 1e6, kGpuTargetEnvs,
                gpu_result.c_str());
    if (gpu_best > 0) std::printf(" (%.1f M on %s)", gpu_best / 1e6, gpu.c_str());
    std::printf("\n");
    out["targets"]["gpu_env_steps_per_s"] = {
        {"limit", kGpuTargetRate}, {"min_envs", kGpuTargetEnvs}, {"value", gpu_best}, {"result", gpu_result}};

    const std::string line = out.dump();
    std::printf("JSON %s\n", line.c_str());
    if (!o.json_out.empty()) {
      std::ofstream f(o.json_out);
      f << line << "\n";
      if (!f) throw moreau::Error("--json-out: cannot write " + o.json_out);
    }
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moreau-bench-forward: %s\n", e.what());
    return 2;
  }
}
