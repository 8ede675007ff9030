// Helpers shared by the benchmarks (forward_bench.cc, gradient_bench.cc): clocks and
// medians, the settled standing state, MuJoCo's peer model built from export_mjcf, and the
// machine / date / argument helpers of their JSON lines.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <mujoco/mujoco.h>
#include <nlohmann/json.hpp>

#include "moreau/model.h"
#include "moreau/simulator.h"

#ifdef MOREAU_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace bench {

using Clock = std::chrono::steady_clock;
using moreau::ContactMode;

constexpr double kResetSimSeconds = 2.0;  // simulated time between resets
constexpr double kSettleSimSeconds = 1.0; // with contact: standing still before timing

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline double median(std::vector<double> x) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

// (max − min) / median
inline double spread(const std::vector<double>& x) {
  if (x.empty()) return 0;
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  return (*hi - *lo) / median(x);
}

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

// Calls per second of `call` over about `seconds` (device work synchronised every `batch`
// calls, so that queued launches cannot run ahead of the clock by more than a batch).
inline double calls_per_second(const std::function<void()>& call, const std::function<void()>& sync, double seconds,
                               int batch) {
  const auto t0 = Clock::now();
  long k = 0;
  double t = 0;
  do {
    for (int b = 0; b < batch; ++b) call();
    sync();
    k += batch;
    t = seconds_since(t0);
  } while (t < seconds);
  return k / t;
}

// The standing state reached from the default one after kSettleSimSeconds with the servos
// holding the default pose (one float64 CPU environment; cached per model object and mode, so
// the model must outlive the run). Empty without contact.
struct Settled {
  std::vector<double> q, v;
};
inline const Settled& settled_state(const moreau::Model& model, ContactMode mode) {
  static std::vector<std::pair<std::pair<const moreau::Model*, ContactMode>, std::unique_ptr<Settled>>> cache;
  for (const auto& c : cache)
    if (c.first == std::make_pair(&model, mode)) return *c.second;
  auto s = std::make_unique<Settled>();
  if (mode != ContactMode::None) {
    moreau::SimulatorOptions so;
    so.dtype = moreau::DType::Float64;
    so.n_threads = 1;
    so.contact.mode = mode;
    moreau::Simulator sim(model, so);
    sim.step(static_cast<int>(kSettleSimSeconds / (model.timestep * model.decimation)));
    int32_t status = 0;
    sim.get_status(&status, 1);
    if (status != 0)
      throw moreau::Error(std::string("settling the robot with contact ") + moreau::contact_mode_name(mode) +
                          ": status " + std::to_string(status));
    s->q.resize(model.nq);
    s->v.resize(model.nv);
    sim.get_state(s->q.data(), s->v.data(), 1);
  }
  cache.emplace_back(std::make_pair(&model, mode), std::move(s));
  return *cache.back().second;
}

inline mjModel* load_mjcf(const std::string& text) {
  auto vfs = std::make_unique<mjVFS>();  // ~2 MB: keep it off the stack
  mj_defaultVFS(vfs.get());
  const char* name = "model.xml";
#if mjVERSION_HEADER >= 300  // MuJoCo 3 and later copy a buffer in (2.x: an empty file to fill)
  if (mj_addBufferVFS(vfs.get(), name, text.data(), static_cast<int>(text.size())) != 0)
    throw moreau::Error("MuJoCo: cannot create the in-memory MJCF file");
#else
  if (mj_makeEmptyFileVFS(vfs.get(), name, static_cast<int>(text.size())) != 0)
    throw moreau::Error("MuJoCo: cannot create the in-memory MJCF file");
  std::copy(text.begin(), text.end(), static_cast<char*>(vfs->filedata[mj_findFileVFS(vfs.get(), name)]));
#endif
  char err[1000] = "";
  mjModel* m = mj_loadXML(name, vfs.get(), err, sizeof err);
  mj_deleteVFS(vfs.get());
  if (!m) throw moreau::Error(std::string("MuJoCo: ") + err);
  return m;
}

// export_mjcf(model) with a ground plane (<geom type="plane" size="0 0 1"/>) first in the
// worldbody.
inline std::string with_ground_plane(std::string xml) {
  const std::string tag = "<worldbody>";
  const size_t at = xml.find(tag);
  if (at == std::string::npos) throw moreau::Error("MuJoCo: no <worldbody> in the exported MJCF");
  xml.insert(at + tag.size(), "\n    <geom name=\"moreau_bench_ground\" type=\"plane\" size=\"0 0 1\"/>");
  return xml;
}

// MuJoCo on export_mjcf(model), one environment; one call = `decimation` mj_steps.
// Without contact: constraints disabled. With contact: the exported (non-colliding) contact
// spheres collide with the ground plane, condim 3, sliding friction μ = 1 (moreau's default),
// elliptic cone, default solver (Newton) and solref/solimp; joint limits off (moreau has none);
// the state is reset to one settled for kSettleSimSeconds (the whole mjData, warm start included).
// Without contact the state is the default one (the pose held by the servos, at rest).
class MujocoRunner {
 public:
  MujocoRunner(const moreau::Model& model, ContactMode mode)
      : model_(model), contact_(mode != ContactMode::None) {
    const std::string xml = moreau::export_mjcf(model);
    m_ = load_mjcf(contact_ ? with_ground_plane(xml) : xml);
    if (!contact_) {
      m_->opt.disableflags |= mjDSBL_CONSTRAINT;
    } else {
      for (int g = 0; g < m_->ngeom; ++g) {
        const bool foot = m_->geom_bodyid[g] != 0 && m_->geom_type[g] == mjGEOM_SPHERE;
        const bool ground = m_->geom_bodyid[g] == 0 && m_->geom_type[g] == mjGEOM_PLANE;
        m_->geom_contype[g] = m_->geom_conaffinity[g] = foot || ground ? 1 : 0;
#if mjVERSION_HEADER >= 300  // MuJoCo 3 and later filter pairs by each body's OR over its geoms too
        if (foot || ground) m_->body_contype[m_->geom_bodyid[g]] = m_->body_conaffinity[m_->geom_bodyid[g]] = 1;
#endif
        if (foot) {
          feet_++;
          m_->geom_condim[g] = 3;
          m_->geom_friction[3 * g] = 1.0;
        }
      }
      m_->opt.cone = mjCONE_ELLIPTIC;
      for (int j = 0; j < m_->njnt; ++j) m_->jnt_limited[j] = 0;
    }
    d_ = mj_makeData(m_);
    if (!d_) {
      mj_deleteModel(m_);
      throw moreau::Error("MuJoCo: mj_makeData failed");
    }
    default_state();
    if (contact_) {
      for (int s = 0; s < static_cast<int>(kSettleSimSeconds / m_->opt.timestep + 0.5); ++s) mj_step(m_, d_);
      settled_ = mj_makeData(m_);
      mj_copyData(settled_, m_, d_);
    }
  }
  ~MujocoRunner() {
    if (settled_) mj_deleteData(settled_);
    mj_deleteData(d_);
    mj_deleteModel(m_);
  }
  MujocoRunner(const MujocoRunner&) = delete;
  MujocoRunner& operator=(const MujocoRunner&) = delete;

  int feet() const { return feet_; }
  double base_height() const { return d_->qpos[2]; }
  int contacts() const { return d_->ncon; }
  const mjModel* m() const { return m_; }
  mjData* d() { return d_; }

  void reset() {
    if (settled_) {
      mj_copyData(d_, m_, settled_);
    } else {
      default_state();
    }
  }
  void step() {
    for (int s = 0; s < model_.decimation; ++s) mj_step(m_, d_);
  }
  void sync() {}
  double env_steps_per_call() const { return model_.decimation; }

 private:
  // The state and action of Simulator::reset: default pose, zero velocity, servos holding it.
  void default_state() {
    mj_resetData(m_, d_);
    std::copy(model_.qpos0.begin(), model_.qpos0.end(), d_->qpos);
    for (int a = 0; a < model_.nu; ++a)
      d_->ctrl[a] = model_.actuator_type[a] == static_cast<int>(moreau::ActuatorType::Position)
                        ? model_.actuator_gear[a] * model_.qpos0[model_.actuator_qposadr[a]]
                        : 0.0;
  }

  const moreau::Model& model_;
  bool contact_;
  mjModel* m_ = nullptr;
  mjData* d_ = nullptr;
  mjData* settled_ = nullptr;
  int feet_ = 0;
};

inline std::string gpu_name(int device) {
#ifdef MOREAU_WITH_CUDA
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) return prop.name;
#else
  (void)device;
#endif
  return "unknown";
}

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

inline std::vector<int> parse_list(const std::string& s, const char* option = "--envs") {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    const int n = std::atoi(item.c_str());
    if (n <= 0)
      throw moreau::Error(std::string(option) + ": expected positive integers separated by commas, got '" + s + "'");
    out.push_back(n);
  }
  return out;
}

// "all" or a comma-separated list of contact mode names.
inline std::vector<ContactMode> parse_contact_list(const std::string& list) {
  std::vector<ContactMode> out;
  if (list == "all") {
    out = {ContactMode::None, ContactMode::Hard, ContactMode::Soft, ContactMode::Smooth, ContactMode::HardSmoothGrad};
  } else {
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) out.push_back(moreau::contact_mode_from_name(item));
  }
  if (out.empty()) throw moreau::Error("--contact: expected a mode, a comma-separated list or all");
  return out;
}

// moreau-mujoco-peer built against the current MuJoCo release (bench/CMakeLists.txt;
// scripts/setup.sh fetches it), the benchmarks' second CPU peer; "" when it was not built.
#ifdef MOREAU_MUJOCO_PEER
inline const char* const kMujocoPeer = MOREAU_MUJOCO_PEER;
#else
inline const char* const kMujocoPeer = "";
#endif

// Options both benchmarks take.
struct CommonOptions {
  std::string robot = std::string(MOREAU_ASSETS_DIR) + "/robots/anymal_c.json";
  std::vector<int> envs;  // empty: the device's default list
  int threads = 0;        // CPU rows; 0 = all hardware threads
  double seconds = 0.5;
  int trials = 5;
  bool cpu = true, cuda = true;
  std::string json_out;
  std::vector<ContactMode> contact = {ContactMode::None};
  std::string mujoco_peer = kMujocoPeer;  // "": no second MuJoCo
  std::vector<int> cuda_blocks = {0};     // SimulatorOptions::cuda_block of the CUDA rows (0: the default)
  std::vector<int> cuda_teams = {0};      // SimulatorOptions::cuda_team of the CUDA rows (0: one thread per env)
};

// The threads per block a CUDA row ran with.
inline int cuda_block_of(const moreau::SimulatorOptions& so) {
  return moreau::cuda_block_threads(so.cuda_block);
}

// Consumes argv[i] (and its value) if it is a common option; throws on a bad value.
inline bool parse_common_option(int argc, char** argv, int& i, CommonOptions& o) {
  const std::string a = argv[i];
  if (i + 1 >= argc) return false;
  if (a == "--robot") {
    o.robot = argv[++i];
  } else if (a == "--envs") {
    o.envs = parse_list(argv[++i]);
  } else if (a == "--threads") {
    o.threads = std::atoi(argv[++i]);
  } else if (a == "--seconds") {
    o.seconds = std::atof(argv[++i]);
    if (!(o.seconds > 0)) throw moreau::Error("--seconds: expected a positive number");
  } else if (a == "--trials") {
    o.trials = std::max(1, std::atoi(argv[++i]));
  } else if (a == "--device") {
    const std::string d = argv[++i];
    if (d != "cpu" && d != "cuda" && d != "all") throw moreau::Error("--device: expected cpu, cuda or all");
    o.cpu = d != "cuda";
    o.cuda = d != "cpu";
  } else if (a == "--json-out") {
    o.json_out = argv[++i];
  } else if (a == "--contact") {
    o.contact = parse_contact_list(argv[++i]);
  } else if (a == "--cuda-block") {
    o.cuda_blocks = parse_list(argv[++i], "--cuda-block");
    for (int b : o.cuda_blocks) moreau::cuda_block_threads(b);  // a bad size fails here, not after the CPU rows
  } else if (a == "--cuda-team") {
    o.cuda_teams = parse_list(argv[++i], "--cuda-team");
    for (int t : o.cuda_teams) moreau::cuda_team_lanes(t);
  } else if (a == "--mujoco-peer") {
    o.mujoco_peer = argv[++i];
    if (o.mujoco_peer == "none") o.mujoco_peer.clear();
  } else {
    return false;
  }
  if (o.threads <= 0) o.threads = static_cast<int>(std::thread::hardware_concurrency());
  return true;
}

inline std::string command_line(int argc, char** argv) {
  std::string command = argv[0];
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  return command;
}

// Prints the JSON line and writes it to `path` too when given.
inline void emit_json(const nlohmann::json& out, const std::string& path) {
  const std::string line = out.dump();
  std::printf("JSON %s\n", line.c_str());
  if (path.empty()) return;
  std::ofstream f(path);
  f << line << "\n";
  if (!f) throw moreau::Error("--json-out: cannot write " + path);
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the MuJoCo peer (bench/mujoco_peer.cc) on the benchmark's robot and one contact mode,
// `what` = step | transition_fd | settle with `args` after; returns its JSON line. The peer
// is a separate process because two MuJoCo versions cannot share one.
inline nlohmann::json run_mujoco_peer(const CommonOptions& o, ContactMode mode, const std::string& what,
                                      const std::string& args) {
  const std::string cmd = shell_quote(o.mujoco_peer) + " --robot " + shell_quote(o.robot) + " --contact " +
                          moreau::contact_mode_name(mode) + " --what " + what + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw moreau::Error("--mujoco-peer: cannot run " + cmd);
  std::string output, json_line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) {
    output += buf;
    if (std::string(buf).rfind("JSON ", 0) == 0) json_line = buf + 5;
  }
  const int status = pclose(pipe);
  if (status != 0 || json_line.empty())
    throw moreau::Error("--mujoco-peer: `" + cmd + "` failed (status " + std::to_string(status) + "):\n" + output);
  return nlohmann::json::parse(json_line);
}

// The peer's side of one comparison: run() times `what` once (one trial of --seconds, after its
// warm-up) and keeps the rate and the last JSON line (version, settled state).
struct PeerTrials {
  std::vector<double> rates;
  nlohmann::json last;
  void run(const CommonOptions& o, ContactMode mode, const std::string& what, const std::string& args = "") {
    last = run_mujoco_peer(o, mode, what, "--seconds " + nlohmann::json(o.seconds).dump() + " --trials 1 " + args);
    rates.push_back(last["rates"][0].get<double>());
  }
};

// The fields every benchmark's JSON line starts with.
inline nlohmann::json json_header(const char* bench, const moreau::Model& model, const CommonOptions& o,
                                  const std::string& command) {
  return {{"bench", bench},
          {"robot", model.name},
          {"robot_file", o.robot},
          {"nq", model.nq},
          {"nv", model.nv},
          {"nu", model.nu},
          {"ncon", model.ncon},
          {"timestep", model.timestep},
          {"decimation", model.decimation},
          {"unit", "env_steps_per_s: environments x physics steps per wall second"},
          {"seconds_per_run", o.seconds},
          {"trials", o.trials},
          {"date", utc_now()},
          {"machine", {{"cpu", cpu_model()}, {"cores", std::thread::hardware_concurrency()}}},
          {"command", command},
          {"rows", nlohmann::json::array()},
          {"mujoco", nlohmann::json::object()},
          {"targets", nlohmann::json::array()}};
}

}  // namespace bench
