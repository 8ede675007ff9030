#include "support/test_util.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "moreau/simulator.h"

namespace moreau::test {

void random_quat(std::mt19937& rng, double* quat) {
  // A normalised 4-D Gaussian is uniform on the unit 3-sphere.
  std::normal_distribution<double> normal(0.0, 1.0);
  double n2 = 0;
  do {
    n2 = 0;
    for (int i = 0; i < 4; ++i) {
      quat[i] = normal(rng);
      n2 += quat[i] * quat[i];
    }
  } while (n2 < 1e-12);
  const double inv = 1.0 / std::sqrt(n2);
  for (int i = 0; i < 4; ++i) quat[i] *= inv;
}

void random_state(const Model& model, std::mt19937& rng, double* q, double* v) {
  const double pi = 3.14159265358979323846;
  for (int j = 0; j < model.nbody; ++j) {
    double* qj = q + model.jnt_qposadr[j];
    switch (static_cast<JointType>(model.jnt_type[j])) {
      case JointType::Free:
        for (int i = 0; i < 3; ++i) qj[i] = std::uniform_real_distribution<double>(-1, 1)(rng);
        random_quat(rng, qj + 3);
        break;
      case JointType::Ball:
        random_quat(rng, qj);
        break;
      case JointType::Revolute:
      case JointType::Prismatic: {
        const double half = model.jnt_type[j] == static_cast<int>(JointType::Revolute) ? pi : 1;
        const double lo = model.jnt_limited[j] ? model.jnt_range[2 * j] : -half;
        const double hi = model.jnt_limited[j] ? model.jnt_range[2 * j + 1] : half;
        qj[0] = std::uniform_real_distribution<double>(lo, hi)(rng);
        break;
      }
      case JointType::Fixed:
        break;
    }
  }
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int i = 0; i < model.nv; ++i) v[i] = normal(rng);
}

::testing::AssertionResult near_rel(const double* a, const double* b, int n, double rel,
                                    double abs_floor, const std::string& what) {
  int fails = 0, worst = -1;
  double worst_ratio = 0;
  for (int i = 0; i < n; ++i) {
    if (beyond(a[i], b[i], rel, abs_floor)) {
      ++fails;
      const double err = std::abs(a[i] - b[i]);
      const double ratio = std::isfinite(err) ? err / tolerance(a[i], b[i], rel, abs_floor) : INFINITY;
      if (worst < 0 || ratio > worst_ratio) worst = i, worst_ratio = ratio;
    }
  }
  if (fails == 0) return ::testing::AssertionSuccess();
  std::ostringstream s;
  s.precision(17);
  const double tol = tolerance(a[worst], b[worst], rel, abs_floor);
  s << what << "[" << worst << "]: " << a[worst] << " vs " << b[worst] << ", |diff| "
    << std::abs(a[worst] - b[worst]) << " > tol " << tol << " (rel " << rel << ", floor "
    << abs_floor << "); " << fails << " of " << n << " entries fail";
  return ::testing::AssertionFailure() << s.str();
}

int count_beyond(const double* a, const double* b, int n, double rel, double abs_floor) {
  int fails = 0;
  for (int i = 0; i < n; ++i) fails += beyond(a[i], b[i], rel, abs_floor);
  return fails;
}

::testing::AssertionResult near_like_float32(const std::vector<double>& device, const std::vector<double>& cpu32,
                                             const std::vector<double>& ref64, double rel, double abs_floor,
                                             const std::string& what) {
  if (device.size() != ref64.size() || cpu32.size() != ref64.size())
    return ::testing::AssertionFailure() << what << ": sizes " << device.size() << ", " << cpu32.size() << ", "
                                         << ref64.size();
  const int n = static_cast<int>(ref64.size());
  const int dev = count_beyond(device.data(), ref64.data(), n, rel, abs_floor);
  const int cpu = count_beyond(cpu32.data(), ref64.data(), n, rel, abs_floor);
  std::ostringstream s;
  s << what << ": " << dev << " of " << n << " entries beyond tolerance of float64 (rel " << rel << ", floor "
    << abs_floor << "), CPU float32 " << cpu << " (allowed: " << 2 * cpu + 5 << ")";
  if (dev <= 2 * cpu + 5) return ::testing::AssertionSuccess() << s.str();
  return ::testing::AssertionFailure() << s.str() << "; " << near_rel(device, ref64, rel, abs_floor, what).message();
}

::testing::AssertionResult statuses_match(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                          double warning_fraction, const std::string& what) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << what << ": " << a.size() << " vs " << b.size();
  constexpr int32_t kWarnings = kStatusSolverNotConverged;
  const int n = static_cast<int>(a.size());
  for (int e = 0; e < n; ++e)
    if ((a[e] & ~kWarnings) != (b[e] & ~kWarnings))
      return ::testing::AssertionFailure() << what << ": environment " << e << ": " << a[e] << " vs " << b[e]
                                           << " (bits other than the warnings must be equal)";
  const int na = static_cast<int>(std::count_if(a.begin(), a.end(), [](int32_t s) { return (s & kWarnings) != 0; }));
  const int nb = static_cast<int>(std::count_if(b.begin(), b.end(), [](int32_t s) { return (s & kWarnings) != 0; }));
  const double tol = std::max(2.0, warning_fraction * n);
  if (std::abs(na - nb) > tol)
    return ::testing::AssertionFailure() << what << ": solver-not-converged in " << na << " vs " << nb << " of " << n
                                         << " environments (tolerance " << tol << ")";
  return ::testing::AssertionSuccess();
}

Model cylinder_model() {
  RobotSpec spec;
  spec.name = "cylinder";
  BodySpec b;
  b.name = "cylinder";
  b.joint.type = JointType::Free;
  b.mass = 1.5;
  b.inertia = {0.006, 0.006, 0.002, 0, 0, 0};
  ContactSpec c;
  c.kind = ContactSpec::Kind::Cylinder;
  c.radius = 0.05;
  c.half_length = 0.1;
  b.contacts.push_back(c);
  spec.bodies.push_back(b);
  return compile(spec);
}

BodySpec sphere_body(const std::string& name, const std::string& parent, JointType type, std::array<double, 3> pos,
                     double mass, std::array<double, 3> sphere, double radius) {
  BodySpec b;
  b.name = name;
  b.parent = parent;
  b.joint.type = type;
  b.joint.axis = {1, 0, 0};
  b.pos = pos;
  b.mass = mass;
  const double i = 0.4 * mass * radius * radius;
  b.inertia = {i, i, i, 0, 0, 0};
  ContactSpec c;
  c.name = name + "_sphere";
  c.pos = sphere;
  c.radius = radius;
  b.contacts.push_back(c);
  return b;
}

std::string asset(const std::string& name) { return std::string(MOREAU_ASSETS_DIR "/robots/") + name; }

std::string refdata(const std::string& path) { return std::string(MOREAU_REFDATA_DIR "/") + path; }

double central(const std::function<double()>& f, double& x, double eps) {
  const double x0 = x;
  x = x0 + eps;
  const double fp = f();
  x = x0 - eps;
  const double fm = f();
  x = x0;
  return (fp - fm) / (2 * eps);
}

std::vector<double> central(const std::function<std::vector<double>()>& f, double& x, double eps) {
  const double x0 = x;
  x = x0 + eps;
  const std::vector<double> fp = f();
  x = x0 - eps;
  const std::vector<double> fm = f();
  x = x0;
  std::vector<double> d(fp.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = (fp[i] - fm[i]) / (2 * eps);
  return d;
}

}  // namespace moreau::test
