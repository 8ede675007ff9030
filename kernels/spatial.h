// moreau kernels — 3-D and spatial (6-D) algebra, Featherstone's conventions.
//
// Motion vectors m = (ω, v), force vectors f = (n, f), both in the coordinates of one body
// frame. A Transform X from frame A to frame B holds E (rotation taking A-coordinates to
// B-coordinates) and r (origin of B in A-coordinates):
//   X m = (E ω, E (v − r × ω)),     Xᵀ f = (Eᵀ n + r × Eᵀ f, Eᵀ f)   (B-force → A-force).
// A spatial inertia about the frame origin is (m, h = m c, I_O) with I_O the rotational
// inertia about the origin:  I m = (I_O ω + h × v, m v − h × ω).
//
// Adjoints (docs/architecture.md, "Adjoints"): adj_f(primal inputs, adj_ of each input, const adj_ret)
// accumulates with += and recomputes what it needs from the primal inputs. The adjoint of
// a struct is the same struct (a Transform's holds Ē and r̄); a Sym3's is with respect to
// its 6 stored numbers; a Quat's is with respect to its 4 raw coordinates.
#pragma once

#include "kernels/config.h"

namespace moreau {
namespace kern {

template <class S>
struct Vec3 {
  S x, y, z;
  MOREAU_HD_SMALL S& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }
  MOREAU_HD_SMALL S operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
};

template <class S>
MOREAU_HD_SMALL Vec3<S> vec3(const S* p) { return {p[0], p[1], p[2]}; }
template <class S>
MOREAU_HD_SMALL Vec3<S> operator+(const Vec3<S>& a, const Vec3<S>& b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
template <class S>
MOREAU_HD_SMALL Vec3<S> operator-(const Vec3<S>& a, const Vec3<S>& b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
template <class S>
MOREAU_HD_SMALL Vec3<S> operator-(const Vec3<S>& a) { return {-a.x, -a.y, -a.z}; }
template <class S>
MOREAU_HD_SMALL Vec3<S> operator*(S s, const Vec3<S>& a) { return {s * a.x, s * a.y, s * a.z}; }
template <class S>
MOREAU_HD_SMALL Vec3<S>& operator+=(Vec3<S>& a, const Vec3<S>& b) { a.x += b.x; a.y += b.y; a.z += b.z; return a; }
template <class S>
MOREAU_HD_SMALL S dot(const Vec3<S>& a, const Vec3<S>& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
template <class S>
MOREAU_HD_SMALL void adj_dot(const Vec3<S>& a, const Vec3<S>& b, Vec3<S>& adj_a, Vec3<S>& adj_b, S adj_ret) {
  adj_a += adj_ret * b;
  adj_b += adj_ret * a;
}
template <class S>
MOREAU_HD_SMALL Vec3<S> cross(const Vec3<S>& a, const Vec3<S>& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
// ⟨w, a × b⟩ = ⟨a, b × w⟩ = ⟨b, w × a⟩
template <class S>
MOREAU_HD_SMALL void adj_cross(const Vec3<S>& a, const Vec3<S>& b, Vec3<S>& adj_a, Vec3<S>& adj_b,
                         const Vec3<S>& adj_ret) {
  adj_a += cross(b, adj_ret);
  adj_b += cross(adj_ret, a);
}

// Row-major 3x3 matrix.
template <class S>
struct Mat3 {
  S m[9];
  MOREAU_HD_SMALL S operator()(int i, int j) const { return m[3 * i + j]; }
  MOREAU_HD_SMALL S& operator()(int i, int j) { return m[3 * i + j]; }
};
template <class S>
MOREAU_HD_SMALL Mat3<S>& operator+=(Mat3<S>& A, const Mat3<S>& B) {
  for (int k = 0; k < 9; ++k) A.m[k] += B.m[k];
  return A;
}
// A += u vᵀ
template <class S>
MOREAU_HD_SMALL void add_outer(Mat3<S>& A, const Vec3<S>& u, const Vec3<S>& v) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) A(i, j) += u[i] * v[j];
}

template <class S>
MOREAU_HD_SMALL Mat3<S> identity3() { return {{1, 0, 0, 0, 1, 0, 0, 0, 1}}; }
template <class S>
MOREAU_HD_SMALL Vec3<S> operator*(const Mat3<S>& A, const Vec3<S>& a) {
  return {A.m[0] * a.x + A.m[1] * a.y + A.m[2] * a.z, A.m[3] * a.x + A.m[4] * a.y + A.m[5] * a.z,
          A.m[6] * a.x + A.m[7] * a.y + A.m[8] * a.z};
}
// Ā += w aᵀ,  ā += Aᵀ w
template <class S>
MOREAU_HD_SMALL void adj_mul(const Mat3<S>& A, const Vec3<S>& a, Mat3<S>& adj_A, Vec3<S>& adj_a, const Vec3<S>& adj_ret) {
  add_outer(adj_A, adj_ret, a);
  for (int j = 0; j < 3; ++j) adj_a[j] += A(0, j) * adj_ret.x + A(1, j) * adj_ret.y + A(2, j) * adj_ret.z;
}
// Aᵀ a
template <class S>
MOREAU_HD_SMALL Vec3<S> mul_t(const Mat3<S>& A, const Vec3<S>& a) {
  return {A.m[0] * a.x + A.m[3] * a.y + A.m[6] * a.z, A.m[1] * a.x + A.m[4] * a.y + A.m[7] * a.z,
          A.m[2] * a.x + A.m[5] * a.y + A.m[8] * a.z};
}
// Ā += a wᵀ,  ā += A w
template <class S>
MOREAU_HD_SMALL void adj_mul_t(const Mat3<S>& A, const Vec3<S>& a, Mat3<S>& adj_A, Vec3<S>& adj_a,
                         const Vec3<S>& adj_ret) {
  add_outer(adj_A, a, adj_ret);
  adj_a += A * adj_ret;
}
template <class S>
MOREAU_HD_SMALL Mat3<S> operator*(const Mat3<S>& A, const Mat3<S>& B) {
  Mat3<S> C;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) C(i, j) = A(i, 0) * B(0, j) + A(i, 1) * B(1, j) + A(i, 2) * B(2, j);
  return C;
}
template <class S>
MOREAU_HD_SMALL Mat3<S> transpose(const Mat3<S>& A) {
  return {{A.m[0], A.m[3], A.m[6], A.m[1], A.m[4], A.m[7], A.m[2], A.m[5], A.m[8]}};
}
template <class S>
MOREAU_HD_SMALL void adj_transpose(const Mat3<S>& /*A*/, Mat3<S>& adj_A, const Mat3<S>& adj_ret) {
  adj_A += transpose(adj_ret);
}
// C = A B:  Ā += W Bᵀ,  B̄ += Aᵀ W
template <class S>
MOREAU_HD_SMALL void adj_matmul(const Mat3<S>& A, const Mat3<S>& B, Mat3<S>& adj_A, Mat3<S>& adj_B,
                          const Mat3<S>& adj_ret) {
  adj_A += adj_ret * transpose(B);
  adj_B += transpose(A) * adj_ret;
}

// Symmetric 3x3 stored as (xx, yy, zz, xy, xz, yz).
template <class S>
struct Sym3 {
  S xx, yy, zz, xy, xz, yz;
};
template <class S>
MOREAU_HD_SMALL Sym3<S>& operator+=(Sym3<S>& a, const Sym3<S>& b) {
  a.xx += b.xx; a.yy += b.yy; a.zz += b.zz;
  a.xy += b.xy; a.xz += b.xz; a.yz += b.yz;
  return a;
}
template <class S>
MOREAU_HD_SMALL Vec3<S> operator*(const Sym3<S>& I, const Vec3<S>& a) {
  return {I.xx * a.x + I.xy * a.y + I.xz * a.z, I.xy * a.x + I.yy * a.y + I.yz * a.z,
          I.xz * a.x + I.yz * a.y + I.zz * a.z};
}
// Ī = sym part of w aᵀ on the stored numbers (an off-diagonal collects both its uses), ā += I w
template <class S>
MOREAU_HD_SMALL void adj_mul(const Sym3<S>& I, const Vec3<S>& a, Sym3<S>& adj_I, Vec3<S>& adj_a, const Vec3<S>& adj_ret) {
  const Vec3<S>& w = adj_ret;
  adj_I += Sym3<S>{w.x * a.x, w.y * a.y, w.z * a.z, w.x * a.y + w.y * a.x, w.x * a.z + w.z * a.x,
                   w.y * a.z + w.z * a.y};
  adj_a += I * w;
}
// R I Rᵀ
template <class S>
MOREAU_HD_SMALL Sym3<S> rotate(const Mat3<S>& R, const Sym3<S>& I) {
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
MOREAU_HD_SMALL Quat<S>& operator+=(Quat<S>& a, const Quat<S>& b) {
  a.w += b.w; a.x += b.x; a.y += b.y; a.z += b.z;
  return a;
}
template <class S>
MOREAU_HD_SMALL Quat<S> quat(const S* p) { return {p[0], p[1], p[2], p[3]}; }
// p[0..3] += a (a quaternion's adjoint into a state array)
template <class S>
MOREAU_HD_SMALL void add_quat(S* p, const Quat<S>& a) {
  p[0] += a.w;
  p[1] += a.x;
  p[2] += a.y;
  p[3] += a.z;
}
template <class S>
MOREAU_HD_SMALL Quat<S> operator*(const Quat<S>& a, const Quat<S>& b) {
  return {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z, a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
          a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x, a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
}
// a b = L(a) b = R(b) a with L(a)ᵀ = L(a*), R(b)ᵀ = R(b*):  ā += w b*,  b̄ += a* w
template <class S>
MOREAU_HD_SMALL void adj_quat_mul(const Quat<S>& a, const Quat<S>& b, Quat<S>& adj_a, Quat<S>& adj_b,
                            const Quat<S>& adj_ret) {
  adj_a += adj_ret * Quat<S>{b.w, -b.x, -b.y, -b.z};
  adj_b += Quat<S>{a.w, -a.x, -a.y, -a.z} * adj_ret;
}
template <class S>
MOREAU_HD_SMALL Quat<S> normalized(const Quat<S>& q) {
  S s = S(1) / msqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
  return {q.w * s, q.x * s, q.y * s, q.z * s};
}
// n = q/|q|:  q̄ += (w − n (n·w)) / |q|
template <class S>
MOREAU_HD_SMALL void adj_normalized(const Quat<S>& q, Quat<S>& adj_q, const Quat<S>& adj_ret) {
  S s = S(1) / msqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
  Quat<S> n{q.w * s, q.x * s, q.y * s, q.z * s};
  const Quat<S>& w = adj_ret;
  S nw = n.w * w.w + n.x * w.x + n.y * w.y + n.z * w.z;
  adj_q += Quat<S>{s * (w.w - nw * n.w), s * (w.x - nw * n.x), s * (w.y - nw * n.y), s * (w.z - nw * n.z)};
}
template <class S>
MOREAU_HD_SMALL Mat3<S> quat_to_mat(const Quat<S>& q) {
  S ww = q.w * q.w, xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
  S xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z, wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
  return {{ww + xx - yy - zz, 2 * (xy - wz), 2 * (xz + wy),
           2 * (xy + wz), ww - xx + yy - zz, 2 * (yz - wx),
           2 * (xz - wy), 2 * (yz + wx), ww - xx - yy + zz}};
}
// Σ W_ij ∂R_ij/∂q, from the quadratic entries of R(q) (q not assumed unit)
template <class S>
MOREAU_HD_SMALL void adj_quat_to_mat(const Quat<S>& q, Quat<S>& adj_q, const Mat3<S>& adj_ret) {
  const Mat3<S>& W = adj_ret;
  S tr = W(0, 0) + W(1, 1) + W(2, 2);
  S ax = W(2, 1) - W(1, 2), ay = W(0, 2) - W(2, 0), az = W(1, 0) - W(0, 1);  // skew part
  S sxy = W(0, 1) + W(1, 0), sxz = W(0, 2) + W(2, 0), syz = W(1, 2) + W(2, 1);  // symmetric part
  adj_q += Quat<S>{2 * (q.w * tr + q.x * ax + q.y * ay + q.z * az),
                   2 * (q.x * (2 * W(0, 0) - tr) + q.y * sxy + q.z * sxz + q.w * ax),
                   2 * (q.y * (2 * W(1, 1) - tr) + q.x * sxy + q.z * syz + q.w * ay),
                   2 * (q.z * (2 * W(2, 2) - tr) + q.x * sxz + q.y * syz + q.w * az)};
}
// exp(θ/2 · u) for the rotation vector θ u = w: (cos(θ/2), sin(θ/2) u), safe at θ → 0.
template <class S>
MOREAU_HD_SMALL Quat<S> quat_exp(const Vec3<S>& w) {
  S t2 = dot(w, w);
  S t = msqrt(t2);
  // sin(θ/2)/θ = 1/2 − θ²/48 + θ⁴/3840 near 0
  S s, c;
  msincos(S(0.5) * t, &s, &c);
  S k = mselect(t < S(1e-4), S(0.5) - t2 / S(48), s / mmax(t, S(1e-4)));
  return {c, k * w.x, k * w.y, k * w.z};
}
// With k(θ) = sin(θ/2)/θ and g = k'(θ)/θ:  ∂cos(θ/2)/∂w = −(k/2) w,  ∂(k w)/∂w = k 1 + g w wᵀ,
// g = (θ/2 cos(θ/2) − sin(θ/2))/θ³; on the forward's Taylor branch k = 1/2 − θ²/48, g = −1/24.
// No division by θ on the branch, so θ = 0 is exact.
template <class S>
MOREAU_HD_SMALL void adj_quat_exp(const Vec3<S>& w, Vec3<S>& adj_w, const Quat<S>& adj_ret) {
  S t2 = dot(w, w);
  S t = msqrt(t2);
  S k, g;
  if (t < S(1e-4)) {
    k = S(0.5) - t2 / S(48);
    g = S(-1) / S(24);
  } else {
    S s, c;
    msincos(S(0.5) * t, &s, &c);
    k = s / t;
    g = (S(0.5) * t * c - s) / (t2 * t);
  }
  Vec3<S> wv{adj_ret.x, adj_ret.y, adj_ret.z};
  adj_w += (S(-0.5) * k * adj_ret.w + g * dot(w, wv)) * w + k * wv;
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
MOREAU_HD_SMALL Motion<S> operator+(const Motion<S>& a, const Motion<S>& b) { return {a.w + b.w, a.v + b.v}; }
template <class S>
MOREAU_HD_SMALL Motion<S> operator*(S s, const Motion<S>& a) { return {s * a.w, s * a.v}; }
template <class S>
MOREAU_HD_SMALL Motion<S>& operator+=(Motion<S>& a, const Motion<S>& b) { a.w += b.w; a.v += b.v; return a; }
template <class S>
MOREAU_HD_SMALL Force<S>& operator+=(Force<S>& a, const Force<S>& b) { a.n += b.n; a.f += b.f; return a; }
template <class S>
MOREAU_HD_SMALL Force<S> operator+(const Force<S>& a, const Force<S>& b) { return {a.n + b.n, a.f + b.f}; }
// power pairing fᵀ m
template <class S>
MOREAU_HD_SMALL S dot(const Force<S>& f, const Motion<S>& m) { return dot(f.n, m.w) + dot(f.f, m.v); }
// a ×m b = (ωa × ωb, ωa × vb + va × ωb)
template <class S>
MOREAU_HD_SMALL Motion<S> cross_m(const Motion<S>& a, const Motion<S>& b) {
  return {cross(a.w, b.w), cross(a.w, b.v) + cross(a.v, b.w)};
}
template <class S>
MOREAU_HD_SMALL void adj_cross_m(const Motion<S>& a, const Motion<S>& b, Motion<S>& adj_a, Motion<S>& adj_b,
                           const Motion<S>& adj_ret) {
  adj_cross(a.w, b.w, adj_a.w, adj_b.w, adj_ret.w);
  adj_cross(a.w, b.v, adj_a.w, adj_b.v, adj_ret.v);
  adj_cross(a.v, b.w, adj_a.v, adj_b.w, adj_ret.v);
}
// a ×f f = (ωa × n + va × f, ωa × f)
template <class S>
MOREAU_HD_SMALL Force<S> cross_f(const Motion<S>& a, const Force<S>& f) {
  return {cross(a.w, f.n) + cross(a.v, f.f), cross(a.w, f.f)};
}
template <class S>
MOREAU_HD_SMALL void adj_cross_f(const Motion<S>& a, const Force<S>& f, Motion<S>& adj_a, Force<S>& adj_f,
                           const Force<S>& adj_ret) {
  adj_cross(a.w, f.n, adj_a.w, adj_f.n, adj_ret.n);
  adj_cross(a.v, f.f, adj_a.v, adj_f.f, adj_ret.n);
  adj_cross(a.w, f.f, adj_a.w, adj_f.f, adj_ret.f);
}

template <class S>
struct Transform {
  Mat3<S> E;  // A-coordinates → B-coordinates
  Vec3<S> r;  // origin of B in A-coordinates
};
template <class S>
MOREAU_HD_SMALL Transform<S>& operator+=(Transform<S>& a, const Transform<S>& b) {
  a.E += b.E;
  a.r += b.r;
  return a;
}
// X m
template <class S>
MOREAU_HD_SMALL Motion<S> apply(const Transform<S>& X, const Motion<S>& m) {
  return {X.E * m.w, X.E * (m.v - cross(X.r, m.w))};
}
// recomputes u = v − r × ω
template <class S>
MOREAU_HD_SMALL void adj_apply(const Transform<S>& X, const Motion<S>& m, Transform<S>& adj_X, Motion<S>& adj_m,
                         const Motion<S>& adj_ret) {
  Vec3<S> adj_u{0, 0, 0};
  adj_mul(X.E, m.w, adj_X.E, adj_m.w, adj_ret.w);
  adj_mul(X.E, m.v - cross(X.r, m.w), adj_X.E, adj_u, adj_ret.v);
  adj_m.v += adj_u;
  adj_cross(X.r, m.w, adj_X.r, adj_m.w, -adj_u);
}
// Xᵀ f: a force in B-coordinates expressed in A-coordinates
template <class S>
MOREAU_HD_SMALL Force<S> apply_t(const Transform<S>& X, const Force<S>& f) {
  Vec3<S> fa = mul_t(X.E, f.f);
  return {mul_t(X.E, f.n) + cross(X.r, fa), fa};
}
// recomputes fa = Eᵀ f
template <class S>
MOREAU_HD_SMALL void adj_apply_t(const Transform<S>& X, const Force<S>& f, Transform<S>& adj_X, Force<S>& adj_f,
                           const Force<S>& adj_ret) {
  Vec3<S> fa = mul_t(X.E, f.f);
  Vec3<S> adj_fa = adj_ret.f;
  adj_cross(X.r, fa, adj_X.r, adj_fa, adj_ret.n);
  adj_mul_t(X.E, f.n, adj_X.E, adj_f.n, adj_ret.n);
  adj_mul_t(X.E, f.f, adj_X.E, adj_f.f, adj_fa);
}
// X_AC = X_BC X_AB
template <class S>
MOREAU_HD_SMALL Transform<S> compose(const Transform<S>& X_bc, const Transform<S>& X_ab) {
  return {X_bc.E * X_ab.E, X_ab.r + mul_t(X_ab.E, X_bc.r)};
}
template <class S>
MOREAU_HD_SMALL void adj_compose(const Transform<S>& X_bc, const Transform<S>& X_ab, Transform<S>& adj_X_bc,
                           Transform<S>& adj_X_ab, const Transform<S>& adj_ret) {
  adj_matmul(X_bc.E, X_ab.E, adj_X_bc.E, adj_X_ab.E, adj_ret.E);
  adj_X_ab.r += adj_ret.r;
  adj_mul_t(X_ab.E, X_bc.r, adj_X_ab.E, adj_X_bc.r, adj_ret.r);
}

template <class S>
struct Inertia {
  S m;
  Vec3<S> h;  // m c
  Sym3<S> I;  // rotational inertia about the frame origin
};
// a where c holds, else b (lane by lane for a mask of host/simd.h's Pack)
template <class C, class S>
MOREAU_HD_SMALL Inertia<S> select_inertia(C c, const Inertia<S>& a, const Inertia<S>& b) {
  return {mselect(c, a.m, b.m),
          {mselect(c, a.h.x, b.h.x), mselect(c, a.h.y, b.h.y), mselect(c, a.h.z, b.h.z)},
          {mselect(c, a.I.xx, b.I.xx), mselect(c, a.I.yy, b.I.yy), mselect(c, a.I.zz, b.I.zz),
           mselect(c, a.I.xy, b.I.xy), mselect(c, a.I.xz, b.I.xz), mselect(c, a.I.yz, b.I.yz)}};
}
// From mass, centre of mass c and inertia about c: I_O = I_c + m ([c]×[c]×ᵀ) = I_c + m (|c|² 1 − c cᵀ)
template <class S>
MOREAU_HD_SMALL Inertia<S> inertia_from_com(S m, const Vec3<S>& c, const Sym3<S>& Ic) {
  S cc = dot(c, c);
  return {m, m * c,
          {Ic.xx + m * (cc - c.x * c.x), Ic.yy + m * (cc - c.y * c.y), Ic.zz + m * (cc - c.z * c.z),
           Ic.xy - m * c.x * c.y, Ic.xz - m * c.x * c.z, Ic.yz - m * c.y * c.z}};
}
// With W = Ī_O (stored numbers) and P(c) = ⟨W, |c|² 1 − c cᵀ⟩:  m̄ += m̄_ret + c·h̄ + P(c),
// c̄ += m h̄ + m ∂P/∂c,  Ī_c += W.
template <class S>
MOREAU_HD_SMALL void adj_inertia_from_com(S m, const Vec3<S>& c, const Sym3<S>& /*Ic*/, S& adj_m, Vec3<S>& adj_c,
                                    Sym3<S>& adj_Ic, const Inertia<S>& adj_ret) {
  const Sym3<S>& W = adj_ret.I;
  S cc = dot(c, c);
  adj_m += adj_ret.m + dot(c, adj_ret.h) + W.xx * (cc - c.x * c.x) + W.yy * (cc - c.y * c.y) +
           W.zz * (cc - c.z * c.z) - W.xy * c.x * c.y - W.xz * c.x * c.z - W.yz * c.y * c.z;
  adj_c += m * adj_ret.h + m * Vec3<S>{2 * c.x * (W.yy + W.zz) - W.xy * c.y - W.xz * c.z,
                                       2 * c.y * (W.xx + W.zz) - W.xy * c.x - W.yz * c.z,
                                       2 * c.z * (W.xx + W.yy) - W.xz * c.x - W.yz * c.y};
  adj_Ic += W;
}
template <class S>
MOREAU_HD_SMALL Force<S> operator*(const Inertia<S>& I, const Motion<S>& a) {
  return {I.I * a.w + cross(I.h, a.v), I.m * a.v - cross(I.h, a.w)};
}
// adjoint of I * a; adj_I may be null (a constant inertia): then only
// ā_w += Ī n̄ + h × f̄,  ā_v += n̄ × h + m f̄
template <class S>
MOREAU_HD_SMALL void adj_mul_inertia(const Inertia<S>& I, const Motion<S>& a, Inertia<S>* adj_I, Motion<S>& adj_a,
                               const Force<S>& adj_ret) {
  if (!adj_I) {
    adj_a.w += I.I * adj_ret.n + cross(I.h, adj_ret.f);
    adj_a.v += cross(adj_ret.n, I.h) + I.m * adj_ret.f;
    return;
  }
  adj_mul(I.I, a.w, adj_I->I, adj_a.w, adj_ret.n);
  adj_cross(I.h, a.v, adj_I->h, adj_a.v, adj_ret.n);
  adj_I->m += dot(a.v, adj_ret.f);
  adj_a.v += I.m * adj_ret.f;
  adj_cross(I.h, a.w, adj_I->h, adj_a.w, -adj_ret.f);
}
template <class S>
MOREAU_HD_SMALL Inertia<S>& operator+=(Inertia<S>& a, const Inertia<S>& b) {
  a.m += b.m;
  a.h += b.h;
  a.I.xx += b.I.xx; a.I.yy += b.I.yy; a.I.zz += b.I.zz;
  a.I.xy += b.I.xy; a.I.xz += b.I.xz; a.I.yz += b.I.yz;
  return a;
}
// Xᵀ I X: an inertia in B-coordinates expressed in A-coordinates. With h' = Eᵀ h:
// I_A = Eᵀ I_O E + 2 (r·h') 1 − h' rᵀ − r h'ᵀ + m (|r|² 1 − r rᵀ),  h_A = h' + m r.
template <class S>
MOREAU_HD_SMALL Inertia<S> transform_t(const Transform<S>& X, const Inertia<S>& I) {
  Vec3<S> hp = mul_t(X.E, I.h);
  Sym3<S> R = rotate(transpose(X.E), I.I);
  const Vec3<S>& r = X.r;
  S rh2 = 2 * dot(r, hp), rr = dot(r, r), m = I.m;
  return {m, hp + m * r,
          {R.xx + rh2 - 2 * hp.x * r.x + m * (rr - r.x * r.x), R.yy + rh2 - 2 * hp.y * r.y + m * (rr - r.y * r.y),
           R.zz + rh2 - 2 * hp.z * r.z + m * (rr - r.z * r.z), R.xy - hp.x * r.y - r.x * hp.y - m * r.x * r.y,
           R.xz - hp.x * r.z - r.x * hp.z - m * r.x * r.z, R.yz - hp.y * r.z - r.y * hp.z - m * r.y * r.z}};
}
// Adjoint of transform_t. With W the symmetric matrix of adj_ret.I (off-diagonal stored adjoints
// halved, so that ⟨W, dM⟩ = Σ stored Ī dM), T = ⟨W, 2 (r·h') 1 − h' rᵀ − r h'ᵀ⟩ and
// U = m ⟨W, |r|² 1 − r rᵀ⟩:
//   r̄ += m h̄_A + 2 tr(W) h' − 2 W h' + m (2 tr(W) r − 2 W r),   h̄' = h̄_A + 2 tr(W) r − 2 W r,
//   m̄ += m̄_A + h̄_A·r + |r|² tr(W) − rᵀ W r,   Ē += 2 I_O E W and h̄ via h' = Eᵀ h,
//   Ī_O (stored) from E W Eᵀ (off-diagonals doubled).
template <class S>
MOREAU_HD_SMALL void adj_transform_t(const Transform<S>& X, const Inertia<S>& I, Transform<S>& adj_X, Inertia<S>& adj_I,
                               const Inertia<S>& adj_ret) {
  const Sym3<S>& Wi = adj_ret.I;
  const Mat3<S> W{{Wi.xx, Wi.xy / 2, Wi.xz / 2, Wi.xy / 2, Wi.yy, Wi.yz / 2, Wi.xz / 2, Wi.yz / 2, Wi.zz}};
  const S trW = Wi.xx + Wi.yy + Wi.zz;
  const Vec3<S>& r = X.r;
  const Vec3<S> hp = mul_t(X.E, I.h);
  const Vec3<S> Wr = W * r, Whp = W * hp;
  adj_X.r += I.m * adj_ret.h + (2 * trW) * hp - S(2) * Whp + I.m * ((2 * trW) * r - S(2) * Wr);
  const Vec3<S> adj_hp = adj_ret.h + (2 * trW) * r - S(2) * Wr;
  adj_I.m += adj_ret.m + dot(adj_ret.h, r) + dot(r, r) * trW - dot(r, Wr);
  adj_mul_t(X.E, I.h, adj_X.E, adj_I.h, adj_hp);
  // R = Eᵀ I_O E
  const Mat3<S> IO{{I.I.xx, I.I.xy, I.I.xz, I.I.xy, I.I.yy, I.I.yz, I.I.xz, I.I.yz, I.I.zz}};
  const Mat3<S> IEW = IO * X.E * W;
  for (int k = 0; k < 9; ++k) adj_X.E.m[k] += 2 * IEW.m[k];
  const Mat3<S> EWEt = X.E * W * transpose(X.E);
  adj_I.I += Sym3<S>{EWEt(0, 0), EWEt(1, 1), EWEt(2, 2), 2 * EWEt(0, 1), 2 * EWEt(0, 2), 2 * EWEt(1, 2)};
}

}  // namespace kern
}  // namespace moreau
