// moreau kernels — 3-D and spatial (6-D) algebra, Featherstone's conventions.
//
// Motion vectors m = (ω, v), force vectors f = (n, f), both in the coordinates of one body
// frame. A Transform X from frame A to frame B holds E (rotation taking A-coordinates to
// B-coordinates) and r (origin of B in A-coordinates):
//   X m = (E ω, E (v − r × ω)),     Xᵀ f = (Eᵀ n + r × Eᵀ f, Eᵀ f)   (B-force → A-force).
// A spatial inertia about the frame origin is (m, h = m c, I_O) with I_O the rotational
// inertia about the origin:  I m = (I_O ω + h × v, m v − h × ω).
#pragma once

#include "kernels/config.h"

namespace moreau {
namespace kern {

template <class S>
struct Vec3 {
  S x, y, z;
  MOREAU_HD S& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }
  MOREAU_HD S operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
};

template <class S>
MOREAU_HD Vec3<S> vec3(const S* p) { return {p[0], p[1], p[2]}; }
template <class S>
MOREAU_HD Vec3<S> operator+(const Vec3<S>& a, const Vec3<S>& b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
template <class S>
MOREAU_HD Vec3<S> operator-(const Vec3<S>& a, const Vec3<S>& b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
template <class S>
MOREAU_HD Vec3<S> operator-(const Vec3<S>& a) { return {-a.x, -a.y, -a.z}; }
template <class S>
MOREAU_HD Vec3<S> operator*(S s, const Vec3<S>& a) { return {s * a.x, s * a.y, s * a.z}; }
template <class S>
MOREAU_HD Vec3<S>& operator+=(Vec3<S>& a, const Vec3<S>& b) { a.x += b.x; a.y += b.y; a.z += b.z; return a; }
template <class S>
MOREAU_HD S dot(const Vec3<S>& a, const Vec3<S>& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
template <class S>
MOREAU_HD Vec3<S> cross(const Vec3<S>& a, const Vec3<S>& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

// Row-major 3x3 matrix.
template <class S>
struct Mat3 {
  S m[9];
  MOREAU_HD S operator()(int i, int j) const { return m[3 * i + j]; }
  MOREAU_HD S& operator()(int i, int j) { return m[3 * i + j]; }
};

template <class S>
MOREAU_HD Mat3<S> identity3() { return {{1, 0, 0, 0, 1, 0, 0, 0, 1}}; }
template <class S>
MOREAU_HD Vec3<S> operator*(const Mat3<S>& A, const Vec3<S>& a) {
  return {A.m[0] * a.x + A.m[1] * a.y + A.m[2] * a.z, A.m[3] * a.x + A.m[4] * a.y + A.m[5] * a.z,
          A.m[6] * a.x + A.m[7] * a.y + A.m[8] * a.z};
}
// Aᵀ a
template <class S>
MOREAU_HD Vec3<S> mul_t(const Mat3<S>& A, const Vec3<S>& a) {
  return {A.m[0] * a.x + A.m[3] * a.y + A.m[6] * a.z, A.m[1] * a.x + A.m[4] * a.y + A.m[7] * a.z,
          A.m[2] * a.x + A.m[5] * a.y + A.m[8] * a.z};
}
template <class S>
MOREAU_HD Mat3<S> operator*(const Mat3<S>& A, const Mat3<S>& B) {
  Mat3<S> C;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) C(i, j) = A(i, 0) * B(0, j) + A(i, 1) * B(1, j) + A(i, 2) * B(2, j);
  return C;
}
template <class S>
MOREAU_HD Mat3<S> transpose(const Mat3<S>& A) {
  return {{A.m[0], A.m[3], A.m[6], A.m[1], A.m[4], A.m[7], A.m[2], A.m[5], A.m[8]}};
}

// Symmetric 3x3 stored as (xx, yy, zz, xy, xz, yz).
template <class S>
struct Sym3 {
  S xx, yy, zz, xy, xz, yz;
};
template <class S>
MOREAU_HD Vec3<S> operator*(const Sym3<S>& I, const Vec3<S>& a) {
  return {I.xx * a.x + I.xy * a.y + I.xz * a.z, I.xy * a.x + I.yy * a.y + I.yz * a.z,
          I.xz * a.x + I.yz * a.y + I.zz * a.z};
}
// R I Rᵀ
template <class S>
MOREAU_HD Sym3<S> rotate(const Mat3<S>& R, const Sym3<S>& I) {
  Vec3<S> c0 = I * Vec3<S>{R(0, 0), R(0, 1), R(0, 2)};
  Vec3<S> c1 = I * Vec3<S>{R(1, 0), R(1, 1), R(1, 2)};
  Vec3<S> c2 = I * Vec3<S>{R(2, 0), R(2, 1), R(2, 2)};
  Vec3<S> r0{R(0, 0), R(0, 1), R(0, 2)}, r1{R(1, 0), R(1, 1), R(1, 2)}, r2{R(2, 0), R(2, 1), R(2, 2)};
  return {dot(r0, c0), dot(r1, c1), dot(r2, c2), dot(r0, c1), dot(r0, c2), dot(r1, c2)};
}

// Unit quaternion (w, x, y, z), Hamilton product; R(q) maps body to parent coordinates.
template <class S>
struct Quat {
  S w, x, y, z;
};
template <class S>
MOREAU_HD Quat<S> quat(const S* p) { return {p[0], p[1], p[2], p[3]}; }
template <class S>
MOREAU_HD Quat<S> operator*(const Quat<S>& a, const Quat<S>& b) {
  return {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z, a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
          a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x, a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
}
template <class S>
MOREAU_HD Quat<S> normalized(const Quat<S>& q) {
  S s = S(1) / msqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
  return {q.w * s, q.x * s, q.y * s, q.z * s};
}
template <class S>
MOREAU_HD Mat3<S> quat_to_mat(const Quat<S>& q) {
  S ww = q.w * q.w, xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
  S xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z, wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
  return {{ww + xx - yy - zz, 2 * (xy - wz), 2 * (xz + wy),
           2 * (xy + wz), ww - xx + yy - zz, 2 * (yz - wx),
           2 * (xz - wy), 2 * (yz + wx), ww - xx - yy + zz}};
}
// exp(θ/2 · u) for the rotation vector θ u = w: (cos(θ/2), sin(θ/2) u), safe at θ → 0.
template <class S>
MOREAU_HD Quat<S> quat_exp(const Vec3<S>& w) {
  S t2 = dot(w, w);
  S t = msqrt(t2);
  // sin(θ/2)/θ = 1/2 − θ²/48 + θ⁴/3840 near 0
  S k = t < S(1e-4) ? S(0.5) - t2 / S(48) : msin(S(0.5) * t) / t;
  return {mcos(S(0.5) * t), k * w.x, k * w.y, k * w.z};
}

template <class S>
struct Motion {
  Vec3<S> w, v;  // angular, linear
};
template <class S>
struct Force {
  Vec3<S> n, f;  // moment, force
};
template <class S>
MOREAU_HD Motion<S> operator+(const Motion<S>& a, const Motion<S>& b) { return {a.w + b.w, a.v + b.v}; }
template <class S>
MOREAU_HD Motion<S> operator*(S s, const Motion<S>& a) { return {s * a.w, s * a.v}; }
template <class S>
MOREAU_HD Motion<S>& operator+=(Motion<S>& a, const Motion<S>& b) { a.w += b.w; a.v += b.v; return a; }
template <class S>
MOREAU_HD Force<S>& operator+=(Force<S>& a, const Force<S>& b) { a.n += b.n; a.f += b.f; return a; }
template <class S>
MOREAU_HD Force<S> operator+(const Force<S>& a, const Force<S>& b) { return {a.n + b.n, a.f + b.f}; }
// power pairing fᵀ m
template <class S>
MOREAU_HD S dot(const Force<S>& f, const Motion<S>& m) { return dot(f.n, m.w) + dot(f.f, m.v); }
// a ×m b = (ωa × ωb, ωa × vb + va × ωb)
template <class S>
MOREAU_HD Motion<S> cross_m(const Motion<S>& a, const Motion<S>& b) {
  return {cross(a.w, b.w), cross(a.w, b.v) + cross(a.v, b.w)};
}
// a ×f f = (ωa × n + va × f, ωa × f)
template <class S>
MOREAU_HD Force<S> cross_f(const Motion<S>& a, const Force<S>& f) {
  return {cross(a.w, f.n) + cross(a.v, f.f), cross(a.w, f.f)};
}

template <class S>
struct Transform {
  Mat3<S> E;  // A-coordinates → B-coordinates
  Vec3<S> r;  // origin of B in A-coordinates
};
// X m
template <class S>
MOREAU_HD Motion<S> apply(const Transform<S>& X, const Motion<S>& m) {
  return {X.E * m.w, X.E * (m.v - cross(X.r, m.w))};
}
// Xᵀ f: a force in B-coordinates expressed in A-coordinates
template <class S>
MOREAU_HD Force<S> apply_t(const Transform<S>& X, const Force<S>& f) {
  Vec3<S> fa = mul_t(X.E, f.f);
  return {mul_t(X.E, f.n) + cross(X.r, fa), fa};
}
// X_AC = X_BC X_AB
template <class S>
MOREAU_HD Transform<S> compose(const Transform<S>& X_bc, const Transform<S>& X_ab) {
  return {X_bc.E * X_ab.E, X_ab.r + mul_t(X_ab.E, X_bc.r)};
}

template <class S>
struct Inertia {
  S m;
  Vec3<S> h;  // m c
  Sym3<S> I;  // rotational inertia about the frame origin
};
// From mass, centre of mass c and inertia about c: I_O = I_c + m ([c]×[c]×ᵀ) = I_c + m (|c|² 1 − c cᵀ)
template <class S>
MOREAU_HD Inertia<S> inertia_from_com(S m, const Vec3<S>& c, const Sym3<S>& Ic) {
  S cc = dot(c, c);
  return {m, m * c,
          {Ic.xx + m * (cc - c.x * c.x), Ic.yy + m * (cc - c.y * c.y), Ic.zz + m * (cc - c.z * c.z),
           Ic.xy - m * c.x * c.y, Ic.xz - m * c.x * c.z, Ic.yz - m * c.y * c.z}};
}
template <class S>
MOREAU_HD Force<S> operator*(const Inertia<S>& I, const Motion<S>& a) {
  return {I.I * a.w + cross(I.h, a.v), I.m * a.v - cross(I.h, a.w)};
}
template <class S>
MOREAU_HD Inertia<S>& operator+=(Inertia<S>& a, const Inertia<S>& b) {
  a.m += b.m;
  a.h += b.h;
  a.I.xx += b.I.xx; a.I.yy += b.I.yy; a.I.zz += b.I.zz;
  a.I.xy += b.I.xy; a.I.xz += b.I.xz; a.I.yz += b.I.yz;
  return a;
}
// Xᵀ I X: an inertia in B-coordinates expressed in A-coordinates. With h' = Eᵀ h:
// I_A = Eᵀ I_O E + 2 (r·h') 1 − h' rᵀ − r h'ᵀ + m (|r|² 1 − r rᵀ),  h_A = h' + m r.
template <class S>
MOREAU_HD Inertia<S> transform_t(const Transform<S>& X, const Inertia<S>& I) {
  Vec3<S> hp = mul_t(X.E, I.h);
  Sym3<S> R = rotate(transpose(X.E), I.I);
  const Vec3<S>& r = X.r;
  S rh2 = 2 * dot(r, hp), rr = dot(r, r), m = I.m;
  return {m, hp + m * r,
          {R.xx + rh2 - 2 * hp.x * r.x + m * (rr - r.x * r.x), R.yy + rh2 - 2 * hp.y * r.y + m * (rr - r.y * r.y),
           R.zz + rh2 - 2 * hp.z * r.z + m * (rr - r.z * r.z), R.xy - hp.x * r.y - r.x * hp.y - m * r.x * r.y,
           R.xz - hp.x * r.z - r.x * hp.z - m * r.x * r.z, R.yz - hp.y * r.z - r.y * hp.z - m * r.y * r.z}};
}

}  // namespace kern
}  // namespace moreau
