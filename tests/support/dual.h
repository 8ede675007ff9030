// A forward-mode dual number (value, derivative along one direction) for running the kernels,
// which are templated on the scalar, with derivatives: an oracle for the hand-written adjoints
// that differentiates exactly what the forward computes (solver iterations included), to
// round-off instead of a finite difference's truncation.
#pragma once

#include <cmath>

namespace moreau::test {

struct Dual {
  double v, d;
  Dual(double value = 0, double derivative = 0) : v(value), d(derivative) {}
  friend Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.d + b.d}; }
  friend Dual operator-(Dual a, Dual b) { return {a.v - b.v, a.d - b.d}; }
  friend Dual operator-(Dual a) { return {-a.v, -a.d}; }
  friend Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.d * b.v + a.v * b.d}; }
  friend Dual operator/(Dual a, Dual b) { return {a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }
  Dual& operator+=(Dual b) { return *this = *this + b; }
  Dual& operator-=(Dual b) { return *this = *this - b; }
  Dual& operator*=(Dual b) { return *this = *this * b; }
  Dual& operator/=(Dual b) { return *this = *this / b; }
  friend bool operator<(Dual a, Dual b) { return a.v < b.v; }
  friend bool operator>(Dual a, Dual b) { return a.v > b.v; }
  friend bool operator<=(Dual a, Dual b) { return a.v <= b.v; }
  friend bool operator>=(Dual a, Dual b) { return a.v >= b.v; }
  friend bool operator==(Dual a, Dual b) { return a.v == b.v; }
  friend bool operator!=(Dual a, Dual b) { return a.v != b.v; }
};

// The kernels' math wrappers (kernels/config.h), found by argument-dependent lookup.
inline Dual msqrt(Dual x) {
  const double r = std::sqrt(x.v);
  return {r, r > 0 ? x.d / (2 * r) : 0.0};
}
inline Dual mabs(Dual x) { return x.v < 0 ? -x : x; }
inline int floor_index(Dual x) { return static_cast<int>(std::floor(x.v)); }
inline Dual msin(Dual x) { return {std::sin(x.v), std::cos(x.v) * x.d}; }
inline Dual mcos(Dual x) { return {std::cos(x.v), -std::sin(x.v) * x.d}; }
inline void msincos(Dual x, Dual* s, Dual* c) {
  *s = msin(x);
  *c = mcos(x);
}
inline Dual mexp(Dual x) {
  const double e = std::exp(x.v);
  return {e, e * x.d};
}

}  // namespace moreau::test
