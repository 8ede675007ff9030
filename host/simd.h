// moreau host — Pack<T, W>: W environments' values of one scalar in a SIMD register, so that
// the CPU runs the kernels' branch-free stages (the free velocity: kinematics, RNEA, CRBA, the
// factor and its solve) for W environments at once. A Pack behaves as a scalar of the kernels:
// arithmetic lane by lane, comparisons give a PackMask, mselect blends, any_lane reduces. The
// kernels compile unchanged for it; lanes never mix, so each environment's numbers do not depend
// on its neighbours.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/config.h"

namespace moreau {
namespace kern {
// In an unnamed namespace: each translation unit has its own Pack, so that one compiled for
// another architecture (the library is built for x86-64-v3, the tests for the default) never
// shares a template instantiation with it; the two would not agree on how a pack is passed.
namespace {

template <class T, int W>
struct PackMask {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;  // what a comparison gives
  typedef I V __attribute__((vector_size(W * sizeof(T))));
  V v;
  friend PackMask operator&(PackMask a, PackMask b) { return {a.v & b.v}; }
  friend PackMask operator|(PackMask a, PackMask b) { return {a.v | b.v}; }
  friend PackMask operator!(PackMask a) { return {~a.v}; }
  bool lane(int i) const { return v[i] != 0; }
};

template <class T, int W>
struct Pack {
  typedef T V __attribute__((vector_size(W * sizeof(T))));
  using Mask = PackMask<T, W>;
  V v;

  Pack() = default;
  Pack(T x) : v(V{} + x) {}  // NOLINT: broadcast, as a scalar converts
  static Pack of(V x) {
    Pack p;
    p.v = x;
    return p;
  }
  T operator[](int i) const { return v[i]; }
  void set(int i, T x) { v[i] = x; }

  friend Pack operator+(Pack a, Pack b) { return of(a.v + b.v); }
  friend Pack operator-(Pack a, Pack b) { return of(a.v - b.v); }
  friend Pack operator*(Pack a, Pack b) { return of(a.v * b.v); }
  friend Pack operator/(Pack a, Pack b) { return of(a.v / b.v); }
  friend Pack operator-(Pack a) { return of(-a.v); }
  Pack& operator+=(Pack b) { v += b.v; return *this; }
  Pack& operator-=(Pack b) { v -= b.v; return *this; }
  Pack& operator*=(Pack b) { v *= b.v; return *this; }
  Pack& operator/=(Pack b) { v /= b.v; return *this; }
  friend Mask operator<(Pack a, Pack b) { return {a.v < b.v}; }
  friend Mask operator>(Pack a, Pack b) { return {a.v > b.v}; }
  friend Mask operator<=(Pack a, Pack b) { return {a.v <= b.v}; }
  friend Mask operator>=(Pack a, Pack b) { return {a.v >= b.v}; }
  friend Mask operator==(Pack a, Pack b) { return {a.v == b.v}; }
  friend Mask operator!=(Pack a, Pack b) { return {a.v != b.v}; }
};

template <class T, int W>
inline Pack<T, W> mselect(PackMask<T, W> c, Pack<T, W> a, Pack<T, W> b) {
  return Pack<T, W>::of(c.v ? a.v : b.v);
}
template <class T, int W>
inline bool any_lane(PackMask<T, W> c) {
  for (int i = 0; i < W; ++i)
    if (c.v[i]) return true;
  return false;
}
template <class T, int W>
inline Pack<T, W> mmin(Pack<T, W> a, Pack<T, W> b) { return mselect(a < b, a, b); }
template <class T, int W>
inline Pack<T, W> mmax(Pack<T, W> a, Pack<T, W> b) { return mselect(a > b, a, b); }
template <class T, int W>
inline Pack<T, W> clamp(Pack<T, W> x, Pack<T, W> lo, Pack<T, W> hi) {
  return mselect(x < lo, lo, mselect(x > hi, hi, x));
}
template <class T, int W>
inline Pack<T, W> mabs(Pack<T, W> x) { return mselect(x < Pack<T, W>(0), -x, x); }

// The transcendental functions lane by lane, with the scalar's own function (the same bits).
template <class T, int W, class F>
inline Pack<T, W> per_lane(Pack<T, W> x, F f) {
  Pack<T, W> r;
  for (int i = 0; i < W; ++i) r.v[i] = f(x.v[i]);
  return r;
}
template <class T, int W>
inline Pack<T, W> msqrt(Pack<T, W> x) { return per_lane(x, [](T y) { return kern::msqrt(y); }); }
template <class T, int W>
inline Pack<T, W> msin(Pack<T, W> x) { return per_lane(x, [](T y) { return kern::msin(y); }); }
template <class T, int W>
inline Pack<T, W> mcos(Pack<T, W> x) { return per_lane(x, [](T y) { return kern::mcos(y); }); }
template <class T, int W>
inline void msincos(Pack<T, W> x, Pack<T, W>* s, Pack<T, W>* c) {
  for (int i = 0; i < W; ++i) {
    T si, ci;
    kern::msincos(x.v[i], &si, &ci);
    s->v[i] = si;
    c->v[i] = ci;
  }
}
template <class T, int W>
inline Pack<T, W> mexp(Pack<T, W> x) { return per_lane(x, [](T y) { return kern::mexp(y); }); }

// Lane l of n packs <-> n scalars.
template <class T, int W>
inline void get_lane(const Pack<T, W>* in, int n, int l, T* out) {
  for (int k = 0; k < n; ++k) out[k] = in[k].v[l];
}
template <class T, int W>
inline void set_lane(const T* in, int n, int l, Pack<T, W>* out) {
  for (int k = 0; k < n; ++k) out[k].v[l] = in[k];
}

}  // namespace
}  // namespace kern
}  // namespace moreau
