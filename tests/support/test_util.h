// Test helpers: seeded random states, tolerance checks that name the failing index, paths
// to assets and reference data.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "moreau/model.h"

namespace moreau::test {

// Random state, q (nq) and v (nv): scalar joints uniform in their range when limited, else
// revolute in [−π, π] and prismatic in [−1, 1] m; free: position uniform in ±1 m and a
// uniformly random unit quaternion; ball: uniformly random unit quaternion; v ~ N(0, 1).
void random_state(const Model& model, std::mt19937& rng, double* q, double* v);

// Uniformly random unit quaternion (w, x, y, z).
void random_quat(std::mt19937& rng, double* quat);

// The tolerance of a against b: max(rel · max(|a|, |b|), abs_floor); beyond: |a − b| above it,
// or either NaN.
inline double tolerance(double a, double b, double rel, double abs_floor) {
  return std::max(rel * std::max(std::abs(a), std::abs(b)), abs_floor);
}
inline bool beyond(double a, double b, double rel, double abs_floor) {
  return !(std::abs(a - b) <= tolerance(a, b, rel, abs_floor));
}

// Passes when no i < n is beyond(a[i], b[i], rel, abs_floor);
// otherwise the message names `what`, the worst index, both values and how many fail.
::testing::AssertionResult near_rel(const double* a, const double* b, int n, double rel,
                                    double abs_floor, const std::string& what);
inline ::testing::AssertionResult near_rel(const std::vector<double>& a,
                                           const std::vector<double>& b, double rel,
                                           double abs_floor, const std::string& what) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure() << what << ": size " << a.size() << " vs " << b.size();
  }
  return near_rel(a.data(), b.data(), static_cast<int>(a.size()), rel, abs_floor, what);
}

// Runs `f`, expects a moreau::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F f, const std::vector<std::string>& parts, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": expected moreau::Error, nothing was thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << what << ": message \"" << msg << "\" lacks \"" << p << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": expected moreau::Error, got another exception: " << e.what();
  }
}

// How many i < n fail near_rel's test.
int count_beyond(const double* a, const double* b, int n, double rel, double abs_floor);

// A float32 run on another device (CUDA) against the same run on the CPU in float64, judged by
// the CPU's own float32 run: float32 rounding, amplified by the dynamics in a few chaotic
// environments, puts some entries of any float32 run beyond near_rel's tolerance of the float64
// reference; the device passes when it has no more such entries than 2 x the CPU float32's + 5.
::testing::AssertionResult near_like_float32(const std::vector<double>& device, const std::vector<double>& cpu32,
                                             const std::vector<double>& ref64, double rel, double abs_floor,
                                             const std::string& what);

// EXPECT_NEAR_REL(a, b, [n,] rel, abs_floor, what): pointers with n, or vectors.
#define EXPECT_NEAR_REL(...) EXPECT_TRUE(::moreau::test::near_rel(__VA_ARGS__))
#define ASSERT_NEAR_REL(...) ASSERT_TRUE(::moreau::test::near_rel(__VA_ARGS__))

// Status words of the same environments from two devices (CUDA vs CPU): every bit but the
// warnings equal per environment; each warning bit (kStatusSolverNotConverged: a contact solve
// that ends at its iteration cap, which float rounding can tip either way on a borderline
// solve) set in as many environments on both, within max(2, warning_fraction · n).
::testing::AssertionResult statuses_match(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                                          double warning_fraction, const std::string& what);

// Central differences (f(x + ε) − f(x − ε)) / 2ε along the one input coordinate x that f reads
// (x is restored afterwards), of a scalar or a vector f.
double central(const std::function<double()>& f, double& x, double eps);
std::vector<double> central(const std::function<std::vector<double>()>& f, double& x, double eps);

// A free cylinder, 1.5 kg, radius 0.05 m, half-length 0.1 m along its z axis, its contact
// the 16 rim points (ContactSpec::Kind::Cylinder).
Model cylinder_model();

// A body `name` under `parent` ("" for the world) on a joint of `type` (a hinge or slider along
// x), placed at `pos`, of mass `mass` with a solid sphere's inertia 0.4 mass radius² about its
// origin, and one contact sphere of `radius` at `sphere` (body frame) named <name>_sphere.
BodySpec sphere_body(const std::string& name, const std::string& parent, JointType type, std::array<double, 3> pos,
                     double mass, std::array<double, 3> sphere = {0, 0, 0}, double radius = 0.05);

// MOREAU_ASSETS_DIR "/robots/" + name
std::string asset(const std::string& name);
// MOREAU_REFDATA_DIR "/" + path
std::string refdata(const std::string& path);

}  // namespace moreau::test
