// moreau kernels — shared configuration. Everything in kernels/ is header-only physics,
// templated on the scalar, compiled as plain C++ on the host and __host__ __device__ under nvcc.
#pragma once

#include <cmath>

#include "moreau/limits.h"

#if defined(__CUDACC__)
#define MOREAU_HD __host__ __device__ __forceinline__
#define MOREAU_HD_SMALL MOREAU_HD
#else
#define MOREAU_HD inline
// The spatial-algebra and joint-model helpers (kernels/spatial.h, kernels/joints.h): always
// inlined, which GCC does not do by itself for all of them in the long sweeps.
#define MOREAU_HD_SMALL inline __attribute__((always_inline))
#endif
// A lambda that kernels/team.h's calls run per body or row: inlined into the loop on the CPU
// (GCC keeps a large one out of line, one call per body, 5 % more instructions per step);
// nvcc inlines device lambdas by itself.
#if defined(__CUDACC__)
#define MOREAU_LAMBDA
#else
#define MOREAU_LAMBDA __attribute__((always_inline))
#endif

namespace moreau {
namespace kern {

// Math wrappers so one call site serves float and double on host and device.
MOREAU_HD float msqrt(float x) { return sqrtf(x); }
MOREAU_HD double msqrt(double x) { return sqrt(x); }
MOREAU_HD float msin(float x) { return sinf(x); }
MOREAU_HD double msin(double x) { return sin(x); }
MOREAU_HD float mcos(float x) { return cosf(x); }
MOREAU_HD double mcos(double x) { return cos(x); }
// sin and cos of one argument in one call; host/simd.h's Pack makes the same call lane by lane
MOREAU_HD void msincos(float x, float* s, float* c) { sincosf(x, s, c); }
MOREAU_HD void msincos(double x, double* s, double* c) { sincos(x, s, c); }
MOREAU_HD float mexp(float x) { return expf(x); }
MOREAU_HD double mexp(double x) { return exp(x); }
MOREAU_HD float mabs(float x) { return fabsf(x); }
MOREAU_HD double mabs(double x) { return fabs(x); }
// ⌊x⌋ as an int, for x in an int's range (a grid index)
MOREAU_HD int floor_index(float x) { return static_cast<int>(floorf(x)); }
MOREAU_HD int floor_index(double x) { return static_cast<int>(floor(x)); }
template <class S>
MOREAU_HD bool is_finite(S x) {
  return x - x == x - x;  // false for NaN and ±Inf, also under -ffast-math-free builds
}
template <class S>
MOREAU_HD S mmin(S a, S b) { return a < b ? a : b; }
template <class S>
MOREAU_HD S mmax(S a, S b) { return a > b ? a : b; }
template <class S>
MOREAU_HD S clamp(S x, S lo, S hi) { return x < lo ? lo : (x > hi ? hi : x); }
// a where c holds, else b (both evaluated), and whether c holds anywhere: for a scalar S the
// plain forms of what host/simd.h's Pack does lane by lane.
template <class S>
MOREAU_HD S mselect(bool c, S a, S b) { return c ? a : b; }
MOREAU_HD bool any_lane(bool c) { return c; }
template <class S>
using MaskOf = decltype(S() > S());

}  // namespace kern
}  // namespace moreau
