// moreau kernels — contact against the ground: candidates, Jacobians, and the four contact
// models (docs/contact.md gives the equations as implemented).
//
// At the midpoint configuration q_M, with H = Lᵀ L factorised and v_free = v_k + Δv:
//   G = J H⁻¹ Jᵀ = Yᵀ Y with Y = L⁻ᵀ Jᵀ,   c = J v_free,   γ = G P + c,
//   v_{k+1} = v_free + H⁻¹ Jᵀ P_applied.
#pragma once

#include "kernels/dynamics.h"

namespace moreau {
namespace kern {

// The ground under an environment: the plane z = 0, or the model's heightfield seen from the
// environment's origin (terrain_x, terrain_y). The heightfield is piecewise planar: cell (i, j)
// of the sample grid is split along its diagonal from sample (i, j) to (i+1, j+1) into two
// triangles, each a plane; beyond the grid's edges the edge's heights continue unchanged
// outward. Within a facet the height is linear and the normal n = (−h_x, −h_y, 1)/|·| constant,
// so a sphere's gap (z − h) n_z − r is its exact distance to the facet's plane and the gap's
// gradient with respect to the sphere's centre is n (docs/terrain.md).
template <class S>
struct Ground {
  int nx, ny;  // 0: the plane
  S x0, y0, dx, dy;
  const S* z;
  // Height and unit normal at world (x, y) of the environment.
  MOREAU_HD void surface(S x, S y, S& height, Vec3<S>& normal) const {
    if (nx == 0) {
      height = 0;
      normal = {0, 0, 1};
      return;
    }
    // grid coordinates, clamped to the grid (NaN to 0); a clamped coordinate does not change the height
    const S u = (x - x0) / dx, w = (y - y0) / dy;
    const S uc = u > S(0) ? mmin(u, S(nx - 1)) : S(0), wc = w > S(0) ? mmin(w, S(ny - 1)) : S(0);
    const int i = mmin(floor_index(uc), nx - 2), j = mmin(floor_index(wc), ny - 2);
    const S fu = uc - S(i), fw = wc - S(j);
    const S z00 = z[j * nx + i], z10 = z[j * nx + i + 1], z01 = z[(j + 1) * nx + i], z11 = z[(j + 1) * nx + i + 1];
    // the triangle (00, 10, 11) below the diagonal (fu ≥ fw), else (00, 01, 11)
    const bool lower = fu >= fw;
    const S hu = lower ? z10 - z00 : z11 - z01, hw = lower ? z11 - z10 : z01 - z00;
    height = z00 + (fu * hu + fw * hw);
    const S hx = u == uc ? hu / dx : S(0), hy = w == wc ? hw / dy : S(0);
    const S inv = S(1) / msqrt(S(1) + hx * hx + hy * hy);
    normal = {-hx * inv, -hy * inv, inv};
  }
};

// The model's ground seen from an environment whose origin is at (ox, oy) in the heightfield's frame.
template <class S, class D>
MOREAU_HD Ground<S> ground_of(const ModelView<S, D>& m, S ox, S oy) {
  return {m.hfield_nx, m.hfield_ny, m.hfield_x0 - ox, m.hfield_y0 - oy, m.hfield_dx, m.hfield_dy, m.hfield_height};
}
template <class S, class D>
MOREAU_HD Ground<S> ground_of(const ModelView<S, D>& m, const Params<S>& p, int env) {
  return ground_of(m, p.terrain_x.get(env), p.terrain_y.get(env));
}

// One-row blocks. Joint rows, on one dof d: a position limit, J = +e_d at the lower and −e_d
// at the upper end (an impulse P ≥ 0 pushes the joint back into its range), or friction loss F,
// J = e_d with |P| ≤ h F (MuJoCo's frictionloss). A contact's torque rows, on the body's angular
// velocity about an axis of contact i's frame (n, t1, t2), J = aᵀ J_ω: a spin row about n
// (torsional friction, |P| ≤ μ_spin P_n,i) and two rolling rows about t1 and t2 (rolling
// friction, each |P| ≤ μ_roll P_n,i: a box beside the cone, as the spin row's).
enum : int { kRowLower = 0, kRowUpper = 1, kRowFriction = 2, kRowSpin = 3, kRowRoll1 = 4, kRowRoll2 = 5 };
// Whether one-row block kind `kind` is a contact's torque row; its axis is frame[kind − kRowSpin].
MOREAU_HD bool torque_row(int kind) { return kind >= kRowSpin; }

// The Delassus matrix G (symmetric, n x n with n = solve_rows) is kept dense on one lane, row-major
// with row stride n: an update of γ̃ by one of its columns (a row) runs over contiguous memory,
// which the CPU vectorizes. A team of lanes keeps its lower triangle alone (half of the team's
// shared memory), by columns, each from its diagonal down: entry (r, s) = (s, r), r ≥ s, at
// sym_col(s, n) + r.
template <class D>
constexpr bool packed_delassus() { return !one_lane<TeamFor<D>>(); }
MOREAU_HD constexpr int sym_col(int s, int n) { return s * n - s * (s + 1) / 2; }
template <bool Packed>
MOREAU_HD constexpr int sym_index(int r, int s, int n) {
  if constexpr (Packed) return r >= s ? sym_col(s, n) + r : sym_col(r, n) + s;
  return r * n + s;
}

// f(s, G_rs) for s = 0..n−1 in order: packed, the entries left of the diagonal each in its own
// column (entry (r, s + 1) n − s − 1 places after (r, s)), then column r from the diagonal down.
template <bool Packed, class S, class F>
MOREAU_HD void sym_row(const S* G, int r, int n, F&& f) {
  if constexpr (Packed) {
    for (int s = 0, k = r; s < r; ++s, k += n - s) f(s, G[k]);
    for (int s = r, k = sym_col(r, n) + r; s < n; ++s, ++k) f(s, G[k]);
  } else {
    for (int s = 0; s < n; ++s) f(s, G[r * n + s]);
  }
}

// The rows of a solve come in blocks: blocks 0..n−1 are contacts, three rows each (n, t1, t2) at
// rows 3i..3i+2; blocks n..n+nj−1 have one row each, at rows 3n..3n+nj−1: the contacts' torque
// rows (spin when μ_spin > 0, rolling when μ_roll > 0), then the joint rows.
// A row lives on one chain, or, for a contact between two bodies of the robot (a pair), on two:
// J = J_a − J_b, stored as two halves, each a point Jacobian on one body's chain (the sign in
// J_b's values). Half h of row r is at J + (r + h kRows) kChain over the chain of block
// b + h kBlocks (b = row_block(r)); a block without a second half has nd[b + kBlocks] = 0 (in a
// size class that holds no pairs, kPairBlocks = 0, there are no second halves).
// Everything built from J is linear in it: Y, c = J v, G's blocks and the impulse's velocity sum
// over the halves, each half on its own chain (block_halves, row_dot, row_axpy, row_add_outer).
template <class S, class D = MaxDims>
struct ContactScratch {
  int n;                            // active contacts
  int nj;                           // one-row blocks (torque rows, joint rows)
  int con[D::kActive];              // contact i's model contact index; ncon + k for pair k
  int jdof[D::kBlocks];             // one-row block k's dof (joint rows)
  int jq[D::kBlocks];               // its coordinate in q (limits) or its contact (torque rows)
  int jkind[D::kBlocks];            // kRowLower, kRowUpper, kRowFriction, kRowSpin, kRowRoll1 or kRowRoll2
  S jbound[D::kBlocks];             // friction loss: the bound h F; torque rows: μ_spin or μ_roll
  int nd[D::kBlocks + D::kPairBlocks];  // dofs on block b's chain (dof_chain); a pair's second half's at b + kBlocks
  // block b's chain root-first, a slice of the model's M_colind (dof_chain): dof[b][t] has dof_depth t
  const int* dof[D::kBlocks + D::kPairBlocks];
  S gap[D::kBlocks];                // contacts and limits; a torque row its contact's; 0 for friction loss
  S w[D::kBlocks];                  // smooth gate w(g); 1 otherwise
  // Row r over its block's chain at J + r kChain: entry t is column dof[b][t] of J (the row is zero
  // off the chain); a pair's second half at J + (r + kRows) kChain.
  S J[(D::kRows + D::kPairRows) * D::kChain];
  S Y[(D::kRows + D::kPairRows) * D::kChain];  // Y = L⁻ᵀ Jᵀ (G = Yᵀ Y), row r holding Y[:, r], on the same chains
  S G[packed_delassus<D>() ? D::kRows * (D::kRows + 1) / 2 : D::kRows * D::kRows];  // Delassus matrix (sym_index)
  S c[D::kRows];
  S P[D::kRows];
};

// g = the 3 x 3 block of symmetric n x n G (sym_index) at rows and columns r..r+2, row-major.
template <bool Packed, class S>
MOREAU_HD void sym_block3(const S* G, int r, int n, S* g) {
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) g[3 * a + b] = G[sym_index<Packed>(r + a, r + b, n)];
}

template <class S, class D>
MOREAU_HD int solve_rows(const ContactScratch<S, D>& cs) { return 3 * cs.n + cs.nj; }
// G_rs of cs's Delassus matrix.
template <class S, class D>
MOREAU_HD S delassus_at(const ContactScratch<S, D>& cs, int r, int s) {
  return cs.G[sym_index<packed_delassus<D>()>(r, s, solve_rows(cs))];
}
template <class S, class D>
MOREAU_HD int row_block(const ContactScratch<S, D>& cs, int r) { return r < 3 * cs.n ? r / 3 : r - 2 * cs.n; }
template <class S, class D>
MOREAU_HD int block_row(const ContactScratch<S, D>& cs, int b) { return b < cs.n ? 3 * b : b + 2 * cs.n; }
template <class S, class D>
MOREAU_HD int block_size(const ContactScratch<S, D>& cs, int b) { return b < cs.n ? 3 : 1; }
// The halves of block b (1, or 2 for a pair); half h's chain is block b + h kBlocks, its rows
// r + h kRows.
template <class S, class D>
MOREAU_HD int block_halves(const ContactScratch<S, D>& cs, int b) {
  return D::kPairBlocks > 0 && b < cs.n && cs.nd[b + D::kBlocks] > 0 ? 2 : 1;
}
// A contact's normal or a joint limit: a unilateral row with a gap (the first row of its block).
template <class S, class D>
MOREAU_HD bool unilateral(const ContactScratch<S, D>& cs, int b) {
  return b < cs.n || cs.jkind[b - cs.n] == kRowLower || cs.jkind[b - cs.n] == kRowUpper;
}
// A block with a gap: unilateral, or a torque row (its contact's gap and smooth gate).
template <class S, class D>
MOREAU_HD bool gated(const ContactScratch<S, D>& cs, int b) { return unilateral(cs, b) || torque_row(cs.jkind[b - cs.n]); }
// The bound of a friction row k (friction loss or torque): |P| ≤ h F, or μ_spin P_n (μ_roll P_n)
// of its contact.
template <class S, class D>
MOREAU_HD S row_bound(const ContactScratch<S, D>& cs, int k) {
  return torque_row(cs.jkind[k]) ? cs.jbound[k] * mmax(cs.P[3 * cs.jq[k]], S(0)) : cs.jbound[k];
}

// w(g) = 1 / (1 + exp(clamp(k g, −100, 50)))
template <class S>
MOREAU_HD S smooth_gate(S k, S g) {
  return S(1) / (S(1) + mexp(clamp(k * g, S(-100), S(50))));
}

// Body frames relative to the base position (body 0's, when it is free; else the world origin):
// world orientation, origin minus the base position. Positions in the Jacobians stay small
// however far the robot has walked. Another free root body's origin is its position minus the
// base's.
template <class S, class D>
MOREAU_HD void relative_world_transforms(const ModelView<S, D>& m, const Workspace<S, D>& ws, Transform<S>* X0) {
  const bool free_base = m.jnt_type[0] == kJointFree;
  down_tree(m, [&](int i) MOREAU_LAMBDA {
    const int par = m.body_parent[i];
    if (par >= 0) {
      X0[i] = compose(ws.Xup[i], X0[par]);
    } else {
      X0[i] = ws.Xup[i];
      if (i == 0 && free_base) X0[i].r = Vec3<S>{0, 0, 0};
      else if (free_base) X0[i].r = ws.Xup[i].r - ws.Xup[0].r;
    }
  });
}

// Tangent basis (t1, t2) of a unit normal n.
template <class S>
MOREAU_HD void tangents(const Vec3<S>& n, Vec3<S>& t1, Vec3<S>& t2) {
  const Vec3<S> a = mabs(n.x) < S(0.9) ? Vec3<S>{1, 0, 0} : Vec3<S>{0, 1, 0};
  t1 = cross(n, a);
  t1 = (S(1) / msqrt(dot(t1, t1))) * t1;
  t2 = cross(n, t1);
}

// Block i's chain: dof d and its ancestors, root-first (H's row d); a joint row's is its own dof's.
template <class S, class D>
MOREAU_HD void dof_chain(const ModelView<S, D>& m, int d, ContactScratch<S, D>& cs, int i) {
  cs.nd[i] = m.dof_depth[d] + 1;
  cs.dof[i] = m.M_colind + m.dof_Madr[d];
}

// Contact i's chain, on body b: b's last dof (every compiled body moves: fixed bodies are merged),
// whose ancestors are the dofs of b and of its ancestor bodies.
template <class S, class D>
MOREAU_HD void contact_chain(const ModelView<S, D>& m, int b, ContactScratch<S, D>& cs, int i) {
  dof_chain(m, m.jnt_dofadr[b] + joint_nv(m.jnt_type[b]) - 1, cs, i);
}

// Σ_t row_t x[dof_t]: a row of contact i (over its chain) times a vector over every dof.
template <class S, class D>
MOREAU_HD S chain_dot(const ContactScratch<S, D>& cs, int i, const S* row, const S* x) {
  const int* dof = cs.dof[i];
  S s = 0;
  for (int t = 0; t < cs.nd[i]; ++t) s += row[t] * x[dof[t]];
  return s;
}

// x[dof_t] += a row_t: a row of contact i (over its chain) added to a vector over every dof.
template <class S, class D>
MOREAU_HD void chain_axpy(const ContactScratch<S, D>& cs, int i, S a, const S* row, S* x) {
  const int* dof = cs.dof[i];
  for (int t = 0; t < cs.nd[i]; ++t) x[dof[t]] += a * row[t];
}

// Row r of A (laid out as cs.J: cs.J, cs.Y, their adjoints) times x over every dof: the sum over
// its halves.
template <class S, class D>
MOREAU_HD S row_dot(const ContactScratch<S, D>& cs, int r, const S* A, const S* x) {
  const int b = row_block(cs, r);
  S s = chain_dot(cs, b, A + r * D::kChain, x);
  if (block_halves(cs, b) == 2) s += chain_dot(cs, b + D::kBlocks, A + (r + D::kRows) * D::kChain, x);
  return s;
}

// x += a (row r of A), over every dof.
template <class S, class D>
MOREAU_HD void row_axpy(const ContactScratch<S, D>& cs, int r, S a, const S* A, S* x) {
  const int b = row_block(cs, r);
  chain_axpy(cs, b, a, A + r * D::kChain, x);
  if (block_halves(cs, b) == 2) chain_axpy(cs, b + D::kBlocks, a, A + (r + D::kRows) * D::kChain, x);
}

// Row r of A += a x restricted to the row's chains (the row of an outer product a xᵀ).
template <class S, class D>
MOREAU_HD void row_add_outer(const ContactScratch<S, D>& cs, int r, S a, const S* x, S* A) {
  const int b = row_block(cs, r);
  for (int h = 0; h < block_halves(cs, b); ++h) {
    const int hb = b + h * D::kBlocks;
    const int* dof = cs.dof[hb];
    S* row = A + (r + h * D::kRows) * D::kChain;
    for (int t = 0; t < cs.nd[hb]; ++t) row[t] += a * x[dof[t]];
  }
}

// Each dof's velocity field in world axes (relative to the base): with S_d = (a, l) in the
// frame of its body j, ω_d = R_j a and u_d = R_j l + o_j × ω_d, so that a point p of j's subtree
// moves at u_d + ω_d × p per unit velocity of d (= R_j l + ω_d × (p − o_j)).
template <class S, class D>
MOREAU_HD void dof_world_columns(const ModelView<S, D>& m, const Workspace<S, D>& ws, const Transform<S>* X0,
                                 Vec3<S>* omega, Vec3<S>* u) {
  for_each(m, m.nbody, [&](int j) MOREAU_LAMBDA {
    for (int d = m.jnt_dofadr[j]; d < m.jnt_dofadr[j] + joint_nv(m.jnt_type[j]); ++d) {
      omega[d] = mul_t(X0[j].E, ws.Sdof[d].w);
      u[d] = mul_t(X0[j].E, ws.Sdof[d].v) + cross(X0[j].r, omega[d]);
    }
  });
}

// Rows J of contact i (frame rows n, t1, t2, stride kChain) over its chain: the velocity of its
// point p (relative coordinates) along each frame row, J_rt = frame_r · (u_d + ω_d × p), d = dof_t.
template <class S, class D>
MOREAU_HD void point_jacobian(const ContactScratch<S, D>& cs, int i, const Vec3<S>* omega, const Vec3<S>* u,
                              const Vec3<S>& p, const Vec3<S>* frame, S* J) {
  const int* dof = cs.dof[i];
  for (int t = 0; t < cs.nd[i]; ++t) {
    const Vec3<S> vp = u[dof[t]] + cross(omega[dof[t]], p);
    for (int r = 0; r < 3; ++r) J[r * D::kChain + t] = dot(frame[r], vp);
  }
}

// The active set's slot for a candidate with this gap: the next one, or when kActive are in, the
// one with the largest gap if this one's is smaller (*dropped set), else −1 (*dropped set).
template <class S, class D>
MOREAU_HD int active_slot(ContactScratch<S, D>& cs, S gap, bool* dropped) {
  if (cs.n < D::kActive) return cs.n++;
  *dropped = true;
  int i = 0;
  for (int a = 1; a < cs.n; ++a)
    if (cs.gap[a] > cs.gap[i]) i = a;
  return gap < cs.gap[i] ? i : -1;
}

// A pair's two spheres, centres c_a, c_b (relative to the base), radii r_a, r_b: gap
// |c_a − c_b| − r_a − r_b, normal n = (c_a − c_b)/|c_a − c_b| (from b to a) and the point midway
// between the surfaces, p = (c_a + c_b)/2 + (r_b − r_a)/2 n. False where the centres coincide
// (no normal).
template <class S>
MOREAU_HD bool pair_geometry(const Vec3<S>& ca, const Vec3<S>& cb, S ra, S rb, S& gap, Vec3<S>& n, Vec3<S>& p) {
  const Vec3<S> d = ca - cb;
  const S dist = msqrt(dot(d, d));
  if (!(dist > S(1e-12))) return false;
  n = (S(1) / dist) * d;
  gap = dist - ra - rb;
  p = S(0.5) * (ca + cb) + (S(0.5) * (rb - ra)) * n;
  return true;
}

// Candidates at q_M: gaps of every contact point into con_gap (may be null), and the active
// set with Jacobians. A point enters when its gap ≤ `threshold`; when kActive points are in, a
// point with a smaller gap takes the place of the one with the largest (the deepest are kept).
// The model's pairs (two spheres on two bodies of the robot) enter the same way, after the
// points: rows J = J_a − J_b, the relative velocity of the two bodies at the pair's point, in
// two halves (ContactScratch). Each active contact with the ground then has its torque rows (one-row
// blocks from cs.nj, which the caller set): with spin friction μ_spin > 0 a spin row J_t = n · ω_d
// over the contact's chain, with rolling friction μ_roll > 0 two rolling rows J_t = t1 · ω_d and
// t2 · ω_d. Returns whether a candidate within the threshold was left out.
template <class S, class D>
MOREAU_HD bool contact_candidates(const ModelView<S, D>& m, const Workspace<S, D>& ws, const S* qM, const Ground<S>& ground,
                                  S threshold, ContactScratch<S, D>& cs, S* gaps, S spin = S(0), S roll = S(0)) {
  TeamArray<D, Transform<S>, D::kBodies> X0;
  relative_world_transforms(m, ws, X0.data);
  const Vec3<S> base = m.jnt_type[0] == kJointFree ? vec3(qM + m.jnt_qposadr[0]) : Vec3<S>{0, 0, 0};
  TeamArray<D, Vec3<S>[3], D::kActive> frames;  // each active contact's frame
  TeamArray<D, Vec3<S>, D::kActive> points;     // and point
  TeamArray<D, bool, 1> dropped;
  auto enter = [&](int con, S gap, const Vec3<S>& n, const Vec3<S>& p) {  // a candidate within the threshold (or NaN)
    const int i = active_slot(cs, gap, &dropped[0]);
    if (i < 0) return;
    frames[i][0] = n;
    tangents(n, frames[i][1], frames[i][2]);
    points[i] = p;
    cs.con[i] = con;
    cs.gap[i] = gap;
    cs.w[i] = 1;
  };
  single(m, [&]() MOREAU_LAMBDA {  // the active set, in the candidates' order
    cs.n = 0;
    dropped[0] = false;
    for (int k = 0; k < m.ncon; ++k) {
      const int b = m.con_body[k];
      const Vec3<S> centre = X0[b].r + mul_t(X0[b].E, vec3(m.con_pos + 3 * k));  // relative to the base
      const S x = centre.x + base.x, y = centre.y + base.y;
      Vec3<S> n;
      S height;
      ground.surface(x, y, height, n);
      // gap along the normal from the ground point (x, y, height) to the sphere surface
      const S gap = (centre.z + base.z - height) * n.z - m.con_radius[k];
      if (gaps) gaps[k] = gap;
      if (!(gap > threshold)) enter(k, gap, n, centre - m.con_radius[k] * n);
    }
    for (int k = 0; k < m.npair; ++k) {
      const int ka = m.pair_con[2 * k], kb = m.pair_con[2 * k + 1], ba = m.con_body[ka], bb = m.con_body[kb];
      const Vec3<S> ca = X0[ba].r + mul_t(X0[ba].E, vec3(m.con_pos + 3 * ka));
      const Vec3<S> cb = X0[bb].r + mul_t(X0[bb].E, vec3(m.con_pos + 3 * kb));
      Vec3<S> n{0, 0, 0}, p{0, 0, 0};
      S gap = 0;
      if (pair_geometry(ca, cb, m.con_radius[ka], m.con_radius[kb], gap, n, p) && !(gap > threshold))
        enter(m.ncon + k, gap, n, p);
    }
  });
  TeamArray<D, Vec3<S>, D::kNv> omega, u;  // the dofs' world columns
  if (cs.n > 0) dof_world_columns(m, ws, X0.data, omega.data, u.data);
  for_each(m, cs.n, [&](int i) MOREAU_LAMBDA {  // the active contacts' chains and rows
    const int k = cs.con[i] - m.ncon;
    contact_chain(m, k < 0 ? m.con_body[cs.con[i]] : m.con_body[m.pair_con[2 * k]], cs, i);
    point_jacobian(cs, i, omega.data, u.data, points[i], frames[i], cs.J + 3 * i * D::kChain);
    if (k < 0 || D::kPairBlocks == 0) {  // (fits: no pair in a class without them)
      if (D::kPairBlocks > 0) {
        cs.nd[i + D::kBlocks] = 0;
        cs.dof[i + D::kBlocks] = nullptr;
      }
      return;
    }
    contact_chain(m, m.con_body[m.pair_con[2 * k + 1]], cs, i + D::kBlocks);
    const Vec3<S> minus[3] = {-frames[i][0], -frames[i][1], -frames[i][2]};  // J_b = −(frame · v_b(p))
    point_jacobian(cs, i + D::kBlocks, omega.data, u.data, points[i], minus, cs.J + (3 * i + D::kRows) * D::kChain);
  });
  single(m, [&]() MOREAU_LAMBDA {  // the torque rows, appended in the contacts' order
    for (int i = 0; i < cs.n; ++i) {
      if (cs.con[i] >= m.ncon) continue;  // a pair has no torque rows
      for (int kind = kRowSpin; kind < kRowSpin + D::kTorque; ++kind) {  // rolling rows where the class holds them
        const S mu = kind == kRowSpin ? spin : roll;
        if (!(mu > 0)) continue;
        const int k = cs.nj++, b = cs.n + k;
        cs.jq[k] = i;
        cs.jdof[k] = -1;
        cs.jkind[k] = kind;
        cs.jbound[k] = mu;
        cs.gap[b] = cs.gap[i];
        cs.w[b] = 1;
        cs.nd[b] = cs.nd[i];
        cs.dof[b] = cs.dof[i];
        S* J = cs.J + block_row(cs, b) * D::kChain;
        const Vec3<S>& axis = frames[i][kind - kRowSpin];
        for (int t = 0; t < cs.nd[i]; ++t) J[t] = dot(axis, omega[cs.dof[i][t]]);
      }
    }
  });
  return dropped[0];
}

// Joint rows at q_M, appended to the one-row blocks: for a limited revolute or prismatic joint,
// its nearer limit when within `threshold` (gap g = q − lo or hi − q), or with speculative rows
// (v_spec = v_free, else null) when g − h max(s v_d, 0) is (s = −1 at the lower limit, +1 at the
// upper): a joint swings far faster than the threshold's 10 rad/s (a hip at 29 rad/s covers 0.14
// rad in a 5 ms step); every dof with friction loss F (|P| ≤ h F, F scaled by the environment's
// frictionloss_scale). J is zero on the row's chain but at its dof: ±1.
template <class S, class D>
MOREAU_HD void joint_candidates(const ModelView<S, D>& m, const Params<S>& p, int env, const S* qM, const S* v_spec, S h,
                                S threshold, ContactScratch<S, D>& cs) {
  if (m.njrow == 0) return;
  auto add = [&](int d, int qa, int kind, S gap, S bound) {
    const int k = cs.nj++, b = cs.n + k;
    cs.jdof[k] = d;
    cs.jq[k] = qa;
    cs.jkind[k] = kind;
    cs.jbound[k] = bound;
    cs.gap[b] = gap;
    cs.w[b] = 1;
    dof_chain(m, d, cs, b);
    S* J = cs.J + block_row(cs, b) * D::kChain;
    for (int t = 0; t < cs.nd[b]; ++t) J[t] = 0;
    J[cs.nd[b] - 1] = kind == kRowUpper ? S(-1) : S(1);
  };
  for (int j = 0; j < m.nbody; ++j) {
    if (!m.jnt_limited[j] || (m.jnt_type[j] != kJointRevolute && m.jnt_type[j] != kJointPrismatic)) continue;
    const S q = qM[m.jnt_qposadr[j]], lo = q - m.jnt_range[2 * j], hi = m.jnt_range[2 * j + 1] - q;
    const int kind = lo <= hi ? kRowLower : kRowUpper;
    const S gap = mmin(lo, hi), vd = v_spec ? v_spec[m.jnt_dofadr[j]] : S(0);
    if (gap - h * mmax(kind == kRowLower ? -vd : vd, S(0)) <= threshold) add(m.jnt_dofadr[j], m.jnt_qposadr[j], kind, gap, S(0));
  }
  const S scale = p.frictionloss_scale.get(env);
  for (int d = 0; d < m.nv; ++d)
    if (m.dof_frictionloss[d] > 0) add(d, -1, kRowFriction, S(0), h * scale * m.dof_frictionloss[d]);
}

// Adjoint of tangents: (t̄1, t̄2) into n̄. t2 = n × t1, t1 = t/|t| with t = n × a (a fixed
// within the branch that picks it).
template <class S>
MOREAU_HD void adj_tangents(const Vec3<S>& n, const Vec3<S>& adj_t1, const Vec3<S>& adj_t2, Vec3<S>& adj_n) {
  const Vec3<S> a = mabs(n.x) < S(0.9) ? Vec3<S>{1, 0, 0} : Vec3<S>{0, 1, 0};
  const Vec3<S> t = cross(n, a);
  const S len = msqrt(dot(t, t));
  const Vec3<S> t1 = (S(1) / len) * t;
  Vec3<S> at1 = adj_t1;
  adj_cross(n, t1, adj_n, at1, adj_t2);
  const Vec3<S> adj_t = (S(1) / len) * (at1 - dot(t1, at1) * t1);
  Vec3<S> unused{0, 0, 0};
  adj_cross(n, a, adj_n, unused, adj_t);
}

// Adjoint of point_jacobian's rows aJ (stride kChain) of point p on body b's chain, J_rd =
// frame_r · (l_d + ω_d × (p − o_j)) for the dofs d of b and its ancestors j: into adj_l,
// adj_omega, the origins in adj_X0, adj_p and, when adj_frame is not null, the frame.
template <class S, class D>
MOREAU_HD void adj_point_jacobian(const ModelView<S, D>& m, const Workspace<S, D>& ws, const Transform<S>* X0,
                                  const Vec3<S>* omega, int b, const Vec3<S>& p, const Vec3<S>* frame, const S* aJ,
                                  Vec3<S>* adj_l, Vec3<S>* adj_omega, Transform<S>* adj_X0, Vec3<S>& adj_p,
                                  Vec3<S>* adj_frame) {
  for (int j = b; j >= 0; j = m.body_parent[j]) {
    const int d0 = m.jnt_dofadr[j], nd = joint_nv(m.jnt_type[j]);
    for (int d = d0; d < d0 + nd; ++d) {
      const int t = m.dof_depth[d];
      const Vec3<S> adj_vp = aJ[t] * frame[0] + aJ[D::kChain + t] * frame[1] + aJ[2 * D::kChain + t] * frame[2];
      if (adj_frame) {
        const Vec3<S> vp = mul_t(X0[j].E, ws.Sdof[d].v) + cross(omega[d], p - X0[j].r);
        for (int r = 0; r < 3; ++r) adj_frame[r] += aJ[r * D::kChain + t] * vp;
      }
      Vec3<S> adj_rel{0, 0, 0};
      adj_cross(omega[d], p - X0[j].r, adj_omega[d], adj_rel, adj_vp);
      adj_l[d] += adj_vp;
      adj_p += adj_rel;
      adj_X0[j].r += -adj_rel;
    }
  }
}

// Adjoint of a contact point's centre c = o_b + E_bᵀ pl (relative to the base) into adj_X0.
template <class S>
MOREAU_HD void adj_point_centre(const Transform<S>& X0b, const Vec3<S>& pl, const Vec3<S>& adj_c, Transform<S>& adj_X0b) {
  adj_X0b.r += adj_c;
  Vec3<S> unused{0, 0, 0};
  adj_mul_t(X0b.E, pl, adj_X0b.E, unused, adj_c);
}

// Adjoint of the contact kinematics (contact_candidates' gaps, point_jacobian's rows and the
// torque rows) for the active contacts at q_M on `ground`: adj_J (the rows over their chains, as cs.J;
// joint rows' ignored) and adj_gap (n) into aw.Xup, aw.Sdof and adj_qM. Each contact's facet is
// looked up again; its normal is constant there (Ground), so the frame carries no gradient. A
// pair's frame turns with its bodies: n = (c_a − c_b)/|c_a − c_b| and its tangents, the point
// p = (c_a + c_b)/2 + (r_b − r_a)/2 n and the gap |c_a − c_b| − r_a − r_b (pair_geometry).
template <class S, class D>
MOREAU_HD void adj_contact_kinematics(const ModelView<S, D>& m, const Workspace<S, D>& ws, const ContactScratch<S, D>& cs,
                                      const S* qM, const Ground<S>& ground, const S* adj_J, const S* adj_gap, S* adj_qM,
                                      AdjWorkspace<S, D>& aw) {
  TeamArray<D, Transform<S>, D::kBodies> X0;
  relative_world_transforms(m, ws, X0.data);
  single(m, [&]() MOREAU_LAMBDA {  // the contacts' terms, summed in order
    Transform<S> adj_X0[D::kBodies];
    const Vec3<S> base = m.jnt_type[0] == kJointFree ? vec3(qM + m.jnt_qposadr[0]) : Vec3<S>{0, 0, 0};
    const Mat3<S> Z{{0, 0, 0, 0, 0, 0, 0, 0, 0}};
    const Vec3<S> z3{0, 0, 0};
    for (int i = 0; i < m.nbody; ++i) adj_X0[i] = {Z, z3};
    // each dof's world-frame columns l = E_jᵀ S.v and ω = E_jᵀ S.w, and their adjoints summed
    // over the contacts
    Vec3<S> omega[D::kNv], adj_l[D::kNv], adj_omega[D::kNv];
    for (int j = 0; j < m.nbody; ++j)
      for (int d = m.jnt_dofadr[j]; d < m.jnt_dofadr[j] + joint_nv(m.jnt_type[j]); ++d) {
        omega[d] = mul_t(X0[j].E, ws.Sdof[d].w);
        adj_l[d] = adj_omega[d] = z3;
      }
    for (int i = 0; i < cs.n; ++i) {
      if (cs.con[i] >= m.ncon) {
        const int k = cs.con[i] - m.ncon, ka = m.pair_con[2 * k], kb = m.pair_con[2 * k + 1];
        const int ba = m.con_body[ka], bb = m.con_body[kb];
        const Vec3<S> pla = vec3(m.con_pos + 3 * ka), plb = vec3(m.con_pos + 3 * kb);
        const Vec3<S> ca = X0[ba].r + mul_t(X0[ba].E, pla), cb = X0[bb].r + mul_t(X0[bb].E, plb);
        const S ra = m.con_radius[ka], rb = m.con_radius[kb];
        Vec3<S> frame[3] = {z3, z3, z3}, p = z3, adj_p = z3, adj_frame[3] = {z3, z3, z3}, adj_minus[3] = {z3, z3, z3};
        S gap = 0;
        pair_geometry(ca, cb, ra, rb, gap, frame[0], p);
        tangents(frame[0], frame[1], frame[2]);
        const Vec3<S> minus[3] = {-frame[0], -frame[1], -frame[2]};
        adj_point_jacobian(m, ws, X0.data, omega, ba, p, frame, adj_J + 3 * i * D::kChain, adj_l, adj_omega, adj_X0, adj_p,
                           adj_frame);
        adj_point_jacobian(m, ws, X0.data, omega, bb, p, minus, adj_J + (3 * i + D::kRows) * D::kChain, adj_l, adj_omega,
                           adj_X0, adj_p, adj_minus);
        for (int r = 0; r < 3; ++r) adj_frame[r] += -adj_minus[r];
        // n̄ from the tangents, from p and the gap; then d = c_a − c_b with n = d/|d|
        Vec3<S> adj_n = adj_frame[0] + (S(0.5) * (rb - ra)) * adj_p;
        adj_tangents(frame[0], adj_frame[1], adj_frame[2], adj_n);
        const S dist = gap + ra + rb;
        const Vec3<S> adj_d = adj_gap[i] * frame[0] + (S(1) / dist) * (adj_n - dot(frame[0], adj_n) * frame[0]);
        adj_point_centre(X0[ba], pla, S(0.5) * adj_p + adj_d, adj_X0[ba]);
        adj_point_centre(X0[bb], plb, S(0.5) * adj_p - adj_d, adj_X0[bb]);
        continue;
      }
      const int k = cs.con[i], b = m.con_body[k];
      const Vec3<S> pl = vec3(m.con_pos + 3 * k);
      const Vec3<S> centre = X0[b].r + mul_t(X0[b].E, pl);
      Vec3<S> frame[3];
      S height;
      ground.surface(centre.x + base.x, centre.y + base.y, height, frame[0]);
      tangents(frame[0], frame[1], frame[2]);
      const Vec3<S> p = centre - m.con_radius[k] * frame[0];
      Vec3<S> adj_p{0, 0, 0};
      adj_point_jacobian(m, ws, X0.data, omega, b, p, frame, adj_J + 3 * i * D::kChain, adj_l, adj_omega, adj_X0, adj_p,
                         static_cast<Vec3<S>*>(nullptr));
      // a torque row: J_t = a · ω_d, a = frame[kind − kRowSpin]
      for (int k = 0; k < cs.nj; ++k) {
        if (!torque_row(cs.jkind[k]) || cs.jq[k] != i) continue;
        const S* aS = adj_J + block_row(cs, cs.n + k) * D::kChain;
        for (int j = b; j >= 0; j = m.body_parent[j])
          for (int d = m.jnt_dofadr[j]; d < m.jnt_dofadr[j] + joint_nv(m.jnt_type[j]); ++d)
            adj_omega[d] += aS[m.dof_depth[d]] * frame[cs.jkind[k] - kRowSpin];
      }
      // gap = (centre + base − (x, y, h(x, y)))·n − r on the facet's plane: ∂gap/∂(centre + base) = n;
      // p = centre − r n
      Vec3<S> adj_centre = adj_p + adj_gap[i] * frame[0];
      if (m.jnt_type[0] == kJointFree)
        for (int a = 0; a < 3; ++a) adj_qM[m.jnt_qposadr[0] + a] += adj_gap[i] * frame[0][a];
      adj_point_centre(X0[b], pl, adj_centre, adj_X0[b]);
    }
    for (int j = 0; j < m.nbody; ++j)
      for (int d = m.jnt_dofadr[j]; d < m.jnt_dofadr[j] + joint_nv(m.jnt_type[j]); ++d) {
        adj_mul_t(X0[j].E, ws.Sdof[d].v, adj_X0[j].E, aw.Sdof[d].v, adj_l[d]);
        adj_mul_t(X0[j].E, ws.Sdof[d].w, adj_X0[j].E, aw.Sdof[d].w, adj_omega[d]);
      }
    // reverse of relative_world_transforms, children first
    for (int i = m.nbody - 1; i >= 0; --i) {
      const int par = m.body_parent[i];
      if (par >= 0) {
        adj_compose(ws.Xup[i], X0[par], aw.Xup[i], adj_X0[par], adj_X0[i]);
      } else {  // a root: X0.r = Xup.r, or Xup.r − the base's (relative_world_transforms)
        aw.Xup[i].E += adj_X0[i].E;
        if (i == 0 && m.jnt_type[0] == kJointFree) continue;
        aw.Xup[i].r += adj_X0[i].r;
        if (m.jnt_type[0] == kJointFree) aw.Xup[0].r += -adj_X0[i].r;
      }
    }
  });
}

// x_a ← L⁻ᵀ x_a for the R rows of block i over its chain at once (x_a at x + a kChain; ltl_solve_t
// of kernels/dynamics.h, R independent chains for the pipeline). The solve only moves values
// towards the root, so the rows stay on the chain (a foot's: the base's 6 and its leg's 3 of
// ANYmal's 18 dofs), and row dof_t of L holds L_{dof_t, dof_s} for s < t at its entry s.
template <int R, class S, class D>
MOREAU_HD void chain_solve_t(const ModelView<S, D>& m, const S* L, const ContactScratch<S, D>& cs, int i, S* x) {
  constexpr int C = D::kChain;
  const int* dof = cs.dof[i];
  for (int t = cs.nd[i] - 1; t >= 0; --t) {
    const S* Lt = L + m.dof_Madr[dof[t]];
    const S inv = Lt[t];  // 1 / L_tt (ltl_factor)
    S a[R];
    for (int r = 0; r < R; ++r) a[r] = x[r * C + t] *= inv;
    for (int s = t - 1; s >= 0; --s)
      for (int r = 0; r < R; ++r) x[r * C + s] -= Lt[s] * a[r];
  }
}

// x_a ← L⁻¹ x_a for three vectors at once (ltl_solve_l of kernels/dynamics.h, three independent
// chains for the pipeline).
template <class S, class D>
MOREAU_HD void ltl_solve_l3(const ModelView<S, D>& m, const S* L, S* x0, S* x1, S* x2) {
  for (int i = 0; i < m.nv; ++i) {
    const S* Li = L + m.dof_Madr[i];
    const int* col = m.M_colind + m.dof_Madr[i];
    const int dep = m.dof_depth[i];
    S a = x0[i], b = x1[i], c = x2[i];
    for (int t = dep - 1; t >= 0; --t) {
      const S l = Li[t];
      a -= l * x0[col[t]];
      b -= l * x1[col[t]];
      c -= l * x2[col[t]];
    }
    const S inv = Li[dep];  // 1 / L_ii (ltl_factor)
    x0[i] = a * inv;
    x1[i] = b * inv;
    x2[i] = c * inv;
  }
}

// c = J v: the rows' velocities at v.
template <class S, class D>
MOREAU_HD void contact_velocity(const ModelView<S, D>& m, const S* v, ContactScratch<S, D>& cs) {
  for_each(m, solve_rows(cs), [&](int r) MOREAU_LAMBDA { cs.c[r] = row_dot(cs, r, cs.J, v); });
}

// g[3 x + y] = Σ_{t < shared} Yi[x C + t] Yj[y C + t]: the sums of an SI x SJ block of G in one pass
// over the dofs two chains share.
template <int SI, int SJ, class S, int C>
MOREAU_HD void block_sums(const S* Yi, const S* Yj, int shared, S* g) {
  for (int t = 0; t < shared; ++t)
    for (int x = 0; x < SI; ++x)
      for (int y = 0; y < SJ; ++y) g[3 * x + y] += Yi[x * C + t] * Yj[y * C + t];
}

// G = J H⁻¹ Jᵀ = Yᵀ Y with Y = L⁻ᵀ Jᵀ (one triangular solve per row of J, kept in cs.Y for the
// adjoint); c = J v. Rows live on their block's chain, so G_rs sums over the chains' shared
// root-first prefix (between two legs, the base's dofs), in increasing dof order as the dense
// sum would; a pair's rows over both halves (four such sums between two pairs).
template <class S, class D>
MOREAU_HD void delassus(const ModelView<S, D>& m, const S* L, const S* v, ContactScratch<S, D>& cs) {
  constexpr int C = D::kChain, KB = D::kBlocks, KR = D::kRows;
  const int nr = solve_rows(cs), nb = cs.n + cs.nj;
  S* Y = cs.Y;
  contact_velocity(m, v, cs);
  for_each(m, nb, [&](int i) MOREAU_LAMBDA {  // block i's rows of Y
    const int r0 = block_row(cs, i), sz = block_size(cs, i);
    for (int h = 0; h < block_halves(cs, i); ++h) {
      const int hb = i + h * KB, h0 = r0 + h * KR;
      for (int r = h0; r < h0 + sz; ++r)
        for (int t = 0; t < cs.nd[hb]; ++t) Y[r * C + t] = cs.J[r * C + t];
      if (sz == 3)
        chain_solve_t<3>(m, L, cs, hb, Y + h0 * C);
      else
        chain_solve_t<1>(m, L, cs, hb, Y + h0 * C);
    }
  });
  for_each(m, nb * (nb + 1) / 2, [&](int k) MOREAU_LAMBDA {  // the block G_ij, k = i (i + 1)/2 + j, j ≤ i
    int i = 0, j = k;
    while (j > i) j -= ++i;
    const int ri = block_row(cs, i), rj = block_row(cs, j), si = block_size(cs, i), sj = block_size(cs, j);
    // (3 x 3 between contacts, 1 x 1 between joint rows)
    S g[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int hi = 0; hi < block_halves(cs, i); ++hi)
      for (int hj = 0; hj < block_halves(cs, j); ++hj) {
        const int bi = i + hi * KB, bj = j + hj * KB;
        const int *di = cs.dof[bi], *dj = cs.dof[bj], lim = mmin(cs.nd[bi], cs.nd[bj]);
        int shared = 0;
        while (shared < lim && di[shared] == dj[shared]) ++shared;
        const S *Yi = Y + (ri + hi * KR) * C, *Yj = Y + (rj + hj * KR) * C;
        if (si == 3 && sj == 3)
          block_sums<3, 3, S, C>(Yi, Yj, shared, g);
        else if (si == 3)
          block_sums<3, 1, S, C>(Yi, Yj, shared, g);
        else if (sj == 3)
          block_sums<1, 3, S, C>(Yi, Yj, shared, g);
        else
          block_sums<1, 1, S, C>(Yi, Yj, shared, g);
      }
    constexpr bool packed = packed_delassus<D>();  // (packed: an entry written twice, as (r, s) and (s, r))
    for (int x = 0; x < si; ++x)
      for (int y = 0; y < sj; ++y)
        cs.G[sym_index<packed>(ri + x, rj + y, nr)] = cs.G[sym_index<packed>(rj + y, ri + x, nr)] = g[3 * x + y];
  });
}

// How far contact i's velocity γ is from satisfying Signorini–Coulomb with its impulse P [m/s]:
// normal |γ_n| when pushing (P_n > 0), else max(−γ_n, 0) (nothing when the normal impulse is
// given: soft contact); tangential ‖γ_t‖ inside the cone, and on its boundary the part of γ_t
// not opposing P_t. Velocity level, so that impulses that keep moving without changing any
// velocity (four corners of a box, statically indeterminate) do not count.
template <class S>
MOREAU_HD S contact_violation(const S* P, const S* gamma, S mu, bool fixed_normal) {
  const S vn = fixed_normal ? S(0) : (P[0] > 0 ? mabs(gamma[0]) : mmax(-gamma[0], S(0)));
  if (!(P[0] > 0)) return vn;
  const S pt = msqrt(P[1] * P[1] + P[2] * P[2]), gt = msqrt(gamma[1] * gamma[1] + gamma[2] * gamma[2]);
  S vt = gt;
  if (pt >= mu * P[0] * (1 - S(1e-6)) && pt > 0) {  // sliding: γ_t = −‖γ_t‖ P_t/‖P_t‖
    const S e1 = gamma[1] + gt * P[1] / pt, e2 = gamma[2] + gt * P[2] / pt;
    vt = msqrt(e1 * e1 + e2 * e2);
  }
  return mmax(vn, vt);
}

// The same for one-row block k with impulse P and velocity γ: a limit as a contact's normal row,
// friction (loss or torque, bound B) interior (|P| < B) |γ|, at +B max(γ, 0), at −B max(−γ, 0);
// nothing where B = 0 (a torque row of a contact that does not push). A torque row's angular
// velocity counts times its μ [m], in m/s as the contacts' (μ_spin ω is to the spin's dissipation
// per unit normal impulse what the slip velocity is to the tangential one's, per unit μ).
template <class S, class D>
MOREAU_HD S joint_row_violation(const ContactScratch<S, D>& cs, int k, S P, S gamma, bool fixed_normal) {
  if (unilateral(cs, cs.n + k)) return fixed_normal ? S(0) : (P > 0 ? mabs(gamma) : mmax(-gamma, S(0)));
  if (!(row_bound(cs, k) > 0)) return S(0);
  const S edge = row_bound(cs, k) * (1 - S(1e-6));
  const S v = P >= edge ? mmax(gamma, S(0)) : (P <= -edge ? mmax(-gamma, S(0)) : mabs(gamma));
  return torque_row(cs.jkind[k]) ? cs.jbound[k] * v : v;
}

// y += Σ_a k_a G[:, c + a] over y's n entries, for the m ≤ 3 adjacent columns c + a of symmetric
// n x n G whose on[a] is set, each entry taking its terms in order of a. One lane runs an axpy per
// column (column c + a is row c + a: contiguous where G is dense); team T spreads the entries over
// its lanes in one call, the values it needs copied into the lambda (by reference, a
// one-environment hard-contact step took 7 % longer on the CPU).
template <class T, bool Packed, class S>
MOREAU_HD void sym_axpy(const S* G, int c, int m, const S* k, const bool* on, S* y, int n) {
  if constexpr (one_lane<T>()) {
    for (int a = 0; a < m; ++a)
      if (on[a]) sym_row<Packed>(G, c + a, n, [&, ka = k[a]](int r, S g) MOREAU_LAMBDA { y[r] += ka * g; });
  } else {
    const S k0 = k[0], k1 = m > 1 ? k[1] : S(0), k2 = m > 2 ? k[2] : S(0);
    const bool o0 = on[0], o1 = m > 1 && on[1], o2 = m > 2 && on[2];
    T::for_each(n, [=](int r) MOREAU_LAMBDA {
      S v = y[r];
      if (o0) v += k0 * G[sym_index<Packed>(r, c, n)];
      if (o1) v += k1 * G[sym_index<Packed>(r, c + 1, n)];
      if (o2) v += k2 * G[sym_index<Packed>(r, c + 2, n)];
      y[r] = v;
    });
  }
}

// Contact i's exact local solve where the sticking step left the cone. With G = G_ii (symmetric,
// 3 x 3 row-major) and a = γ − G P the velocity without contact i's impulse, γ' = a + G P':
//  - no push (a_n ≥ 0; with `fixed_normal`, a given P_n = 0): P' = 0 (γ'_n = a_n ≥ 0);
//  - no friction (μ = 0): P' = (−a_n/G_nn, 0, 0), or (P_n, 0, 0) with a given P_n;
//  - else sliding: P' = (P_n, μ P_n u), u a unit tangent, with γ'_n = 0 (P_n = −a_n/den,
//    den = G_nn + μ G_nt·u; or given) and γ'_t = −λ u, λ ≥ 0 (maximal dissipation). Newton on u's
//    angle θ for f(θ) = γ'_t·u⊥ = 0:
//      f' = (dγ'_t/dθ)·u⊥ − γ'_t·u,  dγ'_t/dθ = P_n' (G_tn + μ G_tt u) + μ P_n G_tt u⊥,
//      P_n' = −P_n μ G_nt·u⊥ / den,
//    each step rotating u to normalise(u + δ u⊥), δ = −f/f' (a rotation by atan δ, so still
//    quadratic), from P's tangent direction or else the sticking step's (st1, st2), until
//    |δ| ≤ 1e-7 or kSlideNewton steps.
// False (out untouched) where the sliding impulse would pull (den ≤ 0) or the result is not a
// sliding impulse to 1e-3 rad: the caller then takes projected steps.
constexpr int kSlideNewton = 12;
template <class S>
MOREAU_HD bool slide_solve(const S* G, const S* P, const S* gamma, S mu, bool fixed_normal, S st1, S st2, S* out) {
  const S gnn = G[0], gn1 = G[1], gn2 = G[2], g11 = G[4], g12 = G[5], g22 = G[8];
  const S a0 = gamma[0] - (gnn * P[0] + gn1 * P[1] + gn2 * P[2]);
  const S a1 = gamma[1] - (gn1 * P[0] + g11 * P[1] + g12 * P[2]);
  const S a2 = gamma[2] - (gn2 * P[0] + g12 * P[1] + g22 * P[2]);
  const bool push = fixed_normal ? P[0] > 0 : a0 < 0;
  if (!push || !(mu > 0)) {
    if (push && !fixed_normal && !(gnn > 0)) return false;
    out[0] = fixed_normal ? P[0] : push ? -a0 / gnn : S(0);
    out[1] = out[2] = 0;
    return true;
  }
  const bool has_dir = P[1] * P[1] + P[2] * P[2] > 0;
  S u1 = has_dir ? P[1] : st1, u2 = has_dir ? P[2] : st2;
  S norm = msqrt(u1 * u1 + u2 * u2);
  if (!(norm > 0)) return false;
  u1 /= norm;
  u2 /= norm;
  S pn = P[0], c1 = 0, c2 = 0, f = 0;  // c: γ'_t
  bool done = false;
  for (int k = 0;; ++k) {
    const S w1 = -u2, w2 = u1;  // u⊥
    S dpn = 0;
    if (!fixed_normal) {
      const S den = gnn + mu * (gn1 * u1 + gn2 * u2);
      if (!(den > 0)) return false;
      pn = -a0 / den;
      dpn = -pn * mu * (gn1 * w1 + gn2 * w2) / den;
    }
    const S e1 = gn1 + mu * (g11 * u1 + g12 * u2), e2 = gn2 + mu * (g12 * u1 + g22 * u2);  // G_tn + μ G_tt u
    c1 = a1 + pn * e1;
    c2 = a2 + pn * e2;
    f = c1 * w1 + c2 * w2;
    if (done || k == kSlideNewton) break;
    const S d1 = dpn * e1 + pn * mu * (g11 * w1 + g12 * w2), d2 = dpn * e2 + pn * mu * (g12 * w1 + g22 * w2);
    // Newton where f' > 0; elsewhere (f' ≤ 0, the slip away from friction's direction) a step
    // against f of the same length |f/f'|, which with a given normal descends the dissipation
    const S df = d1 * w1 + d2 * w2 - (c1 * u1 + c2 * u2), adf = mabs(df);
    const S delta = clamp(adf > 0 ? -f / adf : f > 0 ? S(-1) : S(1), S(-1), S(1));
    u1 += delta * w1;
    u2 += delta * w2;
    norm = msqrt(u1 * u1 + u2 * u2);
    u1 /= norm;
    u2 /= norm;
    done = !(delta * delta > S(1e-14));
  }
  // a sliding impulse: friction against the slip, γ'_t parallel to −u to 1e-3 rad
  if (!(c1 * u1 + c2 * u2 <= 0 && mabs(f) <= S(1e-3) * msqrt(c1 * c1 + c2 * c2))) return false;
  out[0] = pn;
  out[1] = mu * pn * u1;
  out[2] = mu * pn * u2;
  return true;
}

// subspace_step's solve: x with (G_AA + εI) x = −γ_A by conjugate gradients from x = 0, to
// ‖residual‖² ≤ stop or 2 n_A iterations; false where γ_A is already below it (nothing to do).
// ε is a millionth of G_AA's largest diagonal entry: redundant rows (a box's four corners on the
// ground) leave G_AA singular, and the damping keeps the split of their impulse from following
// round-off.
template <class S, class D>
MOREAU_HD bool subspace_cg(const ContactScratch<S, D>& cs, const int* A, int na, const S* gt, S stop, S* x) {
  S r[D::kRows], d[D::kRows], q[D::kRows];
  S rr = 0;
  for (int a = 0; a < na; ++a) {
    x[a] = 0;
    r[a] = d[a] = -gt[A[a]];
    rr += r[a] * r[a];
  }
  if (!(rr > stop)) return false;
  S eps = 0;
  for (int a = 0; a < na; ++a) eps = mmax(eps, delassus_at(cs, A[a], A[a]));
  eps *= S(1e-6);
  for (int iter = 0; iter < 2 * na && rr > stop; ++iter) {
    S dq = 0;
    for (int a = 0; a < na; ++a) {
      S v = eps * d[a];
      for (int b = 0; b < na; ++b) v += delassus_at(cs, A[a], A[b]) * d[b];
      q[a] = v;
      dq += d[a] * v;
    }
    if (!(dq > 0)) break;
    const S alpha = rr / dq;
    S rr1 = 0;
    for (int a = 0; a < na; ++a) {
      x[a] += alpha * d[a];
      r[a] -= alpha * q[a];
      rr1 += r[a] * r[a];
    }
    const S beta = rr1 / rr;
    rr = rr1;
    for (int a = 0; a < na; ++a) d[a] = r[a] + beta * d[a];
  }
  return true;
}

// Subspace minimisation for pgs_solve, hard contact (every gate w = 1, the normals free): the rows
// whose class the sweeps have settled (a sticking contact's three, P_n > 0 inside its cone; a
// limit that pushes, P > 0; a friction-loss or torque row inside its bound) solved together for
// γ_A = 0, the other rows' impulses held: G_AA δ = −γ_A by conjugate gradients from δ = 0 (G_AA is
// symmetric positive semidefinite; redundant rows, as hips on their stops above sticking feet, make
// it singular and Gauss–Seidel slow; CG runs on G_AA + εI, below). P moves along δ as far as every
// row of A stays in its cone or bound (the whole step, or to the first boundary, where the
// blocking rows leave A and the rest is solved again); then the next sweep finds the rows
// converged if their classes were right, and goes on from there if not.
constexpr int kSubspaceRounds = 8;
template <class S, class D>
MOREAU_HD void subspace_step(ContactScratch<S, D>& cs, S* gt, S mu, S tolerance) {
  const int nr = solve_rows(cs), nc = 3 * cs.n;
  const S inside = S(1) - S(1e-4);
  int A[D::kRows];
  int na = 0;
  for (int i = 0; i < cs.n; ++i) {
    const S* P = cs.P + 3 * i;
    if (P[0] > 0 && P[1] * P[1] + P[2] * P[2] < mu * mu * P[0] * P[0] * inside * inside)
      for (int a = 0; a < 3; ++a) A[na++] = 3 * i + a;
  }
  for (int k = 0; k < cs.nj; ++k) {
    const S p = cs.P[nc + k];
    if (!(unilateral(cs, cs.n + k) ? p > 0 : mabs(p) < row_bound(cs, k) * inside)) continue;
    // a dof's friction-loss row is its pushing limit's row again (±e_d): the limit's alone
    bool twin = false;
    for (int l = 0; l < cs.nj && cs.jkind[k] == kRowFriction; ++l)
      twin = twin || (unilateral(cs, cs.n + l) && cs.jdof[l] == cs.jdof[k] && cs.P[nc + l] > 0);
    if (!twin) A[na++] = nc + k;
  }
  S x[D::kRows];
  int out[D::kRows];  // rows that left A on a bound
  int nout = 0;
  // ‖G_AA δ + γ_A‖ ≤ tolerance / 10 (the sweep after the step tests the tolerance; a tighter stop
  // runs CG to its 2 n_A iterations on a redundant G_AA in float32 for nothing), and nothing to
  // do below 1e-12 m/s (a solve run with tolerance 0)
  const S stop = mmax(S(1e-2) * tolerance * tolerance, S(1e-24));
  // Up to kSubspaceRounds rounds: the step, or as far along it as the rows stay feasible (α*
  // bisected to 2⁻³⁰); then the rows that block it (a contact creeping towards sliding, a
  // friction row reaching its bound) leave A and the rest is solved again, and after a whole step
  // a row held on its bound whose velocity points inside comes back. Where the settled
  // rows' equations have no solution with every row inside (rows that must end on a bound), the
  // sweeps alone drift along G's null space towards one for thousands of sweeps.
  for (int round = 0; round < kSubspaceRounds && na > 0; ++round) {
    if (!subspace_cg(cs, A, na, gt, stop, x)) return;
    // whether row A[a] (a contact's three rows where A[a] is its first) stays in its cone or bound
    // at P + α x: true on an interval [0, α*] (the rows' sets are convex, P is in them)
    auto row_feasible = [&](int a, S alpha) {
      const int r = A[a];
      if (r < nc) {
        if (r % 3 != 0) return true;
        const S pn = cs.P[r] + alpha * x[a], p1 = cs.P[r + 1] + alpha * x[a + 1], p2 = cs.P[r + 2] + alpha * x[a + 2];
        return pn > 0 && p1 * p1 + p2 * p2 <= mu * mu * pn * pn;
      }
      const S p = cs.P[r] + alpha * x[a];
      return unilateral(cs, r - nc + cs.n) ? p >= 0 : mabs(p) <= row_bound(cs, r - nc);
    };
    auto feasible = [&](S alpha) {
      for (int a = 0; a < na; ++a)
        if (!row_feasible(a, alpha)) return false;
      return true;
    };
    S lo = 1, hi = 1;
    if (!feasible(S(1))) {
      lo = 0;
      for (int k = 0; k < 30; ++k) (feasible((lo + hi) / 2) ? lo : hi) = (lo + hi) / 2;
    }
    // P moves by lo x, and the rows that block the step leave A (a contact's three together):
    // those infeasible at hi, tested before they move (in float32, P + lo x and a further
    // (hi − lo) x round to the same value)
    const int before = na;
    na = 0;
    for (int a = 0; a < before;) {
      const int width = A[a] < nc ? 3 : 1;
      const bool blocks = lo < S(1) && !row_feasible(a, hi);
      if (blocks && width == 1) out[nout++] = A[a];
      S k[3];
      const bool on[3] = {true, true, true};
      for (int w = 0; w < width; ++w) k[w] = lo * x[a + w];
      sym_axpy<SerialTeam, packed_delassus<D>()>(cs.G, A[a], width, k, on, gt, nr);  // a contact's three rows are adjacent
      for (int w = 0; w < width; ++w) {
        const int row = A[a + w];
        cs.P[row] += lo * x[a + w];
        if (!blocks) A[na++] = row;
      }
      a += width;
    }
    if (lo < S(1)) {
      if (na == before) return;
      continue;
    }
    // a row that left on a bound comes back where its velocity would take its impulse inside
    // (γ > 0 on +b, γ < 0 on −b or on a limit's 0), an active set's multiplier test; γ within
    // the tolerance leaves it where it is
    int held = 0;
    for (int o = 0; o < nout; ++o) {
      const int row = out[o];
      const S g = gt[row];
      const bool inward =
          unilateral(cs, row - nc + cs.n) ? g < -tolerance : cs.P[row] * g > 0 && mabs(g) > tolerance;
      if (inward) A[na++] = row;
      else out[held++] = row;
    }
    if (held == nout) return;
    nout = held;
  }
}

// Projected Gauss–Seidel on 3x3 blocks (block Gauss–Seidel with a local solve per contact), for
// a symmetric G (the Delassus matrix; its gradient is then the symmetric part of adj_pgs_solve's
// Ḡ). For contact i, with γ_i = Σ_j G_ij P_j + c_i (smooth mode: j ≠ i weighted by w_j):
//  1. sticking step: P_i* = P_i − B_i γ_i with B_i = G_ii⁻¹ (the exact local solve when contact
//     i sticks); taken when P_i*_n > 0 and ‖P_i*_t‖ ≤ μ P_i*_n, unless the contact has no
//     impulse and separates without it (P_i,n = 0 and a_i,n ≥ 0, a_i = γ_i − G_ii P_i);
//  2. otherwise the exact local solve (slide_solve): no impulse where the contact separates
//     without it, else the sliding impulse on the cone's boundary, by Newton on the slip angle.
//     Where a_i,n ≥ 0 no impulse is a solution of the local problem, and with a large μ and a
//     G_ii that couples normal and tangent it may not be the only one: a sticking impulse inside
//     the cone can solve it too. A contact keeps the kind it has (none, or an impulse) while both
//     solve it: taking the sticking step first regardless let sweeps alternate for good between a
//     foot sticking and the same foot lifting (ANYmal C with two hips on their stops: 0.66 m/s
//     residual after 20,000 sweeps; 11 sweeps with the rule);
//  3. where that fails, 4 local projected steps P_i ← prox_Cμ(P_i − r_i γ_i), γ_i ← γ_i + G_ii ΔP_i,
//     with one isotropic step r_i = 1/‖G_ii‖_∞ ≤ 1/λ_max(G_ii) (so a sliding contact's friction
//     opposes γ_t: maximal dissipation, and the local iteration cannot overshoot);
//  prox: P_n ≤ 0 → 0; ‖P_t‖ > μ P_n → P_t μ P_n/‖P_t‖.
// With `fixed_normal` (soft contact) the normal impulses in cs.P are given and only the
// tangential ones are solved for: B_i inverts the 2x2 tangent block, the normal rows stay.
// A fixed point satisfies Signorini–Coulomb with maximal dissipation whichever step produced it
// (step 1: γ_i = 0 inside the cone; step 2: the local law itself; step 3: the prox fixed point),
// the same fixed point as the diagonal PGS P_i ← prox(P_i − diag(1/G_nn, r_t, r_t) γ_i) of the
// first version. That one needed ~170 sweeps for a standing quadruped (the normal and tangential rows of
// an articulated foot are strongly coupled inside G_ii) and could cycle for good (a foot
// alternating between two impulses); this one needs ~5 (docs/contact.md gives the figures). With step 3 alone for a
// sliding contact (before step 2), sweeps grew with the slip: on ANYmal C's trot 5.4 on average
// and 49 at the 99th percentile, 4.0 and 4 with step 2 (bench/contact_solver.py). Cold start:
// the solve is a function of the current problem only.
// One-row blocks (torque rows, limits, friction loss) follow the contacts in every sweep, each
// solved exactly on its own row, a torque row bounded by its contact's current P_n (docs/contact.md,
// "Joint rows", "Spin friction" and "Rolling friction").
// Hard contact (every gate 1, the normals free) whose sweeps have not converged after 8, 16, 32,
// ... sweeps takes a subspace_step: rows that stick or push on a limit above sticking feet are
// nearly redundant, and Gauss–Seidel alone then crept for hundreds of sweeps.
// Residual: the largest contact_violation of a sweep (each contact measured before its update)
// [m/s]. Returns the number of sweeps; *residual gets the last residual.
// On a team of lanes every lane runs the sweeps (the local solves, alike on every lane, into its
// own locals) and each update of γ̃ is spread over the lanes; *residual is each lane's own.
template <class S, class D>
MOREAU_HD int pgs_solve(ContactScratch<S, D>& cs, S mu, bool fixed_normal, int max_iterations, S tolerance,
                        S* residual) {
  using Team = TeamFor<D>;
  const int nr = solve_rows(cs), nc = 3 * cs.n;
  const S tiny = S(1e-12);
  Team::for_each(nr, [&](int r) MOREAU_LAMBDA {
    const int b = row_block(cs, r);
    if (!fixed_normal || !unilateral(cs, b) || r != block_row(cs, b)) cs.P[r] = 0;
  });
  // per contact: B_i (symmetric, stored 00 01 02 11 12 22; zero when singular) and the step r_i
  S Binv[6 * D::kActive], step[D::kActive];
  for (int i = 0; i < cs.n; ++i) {
    S Gii[9];
    sym_block3<packed_delassus<D>()>(cs.G, 3 * i, nr, Gii);
    const S a = Gii[0], b = Gii[1], c = Gii[2], d = Gii[4], e = Gii[5], f = Gii[8];
    S* B = Binv + 6 * i;
    if (fixed_normal) {  // tangent block only
      const S det = d * f - e * e;
      const S s = det > S(1e-6) * mabs(d * f) && det > tiny ? S(1) / det : S(0);
      B[0] = B[1] = B[2] = 0;
      B[3] = f * s;
      B[4] = -e * s;
      B[5] = d * s;
    } else {
      B[0] = d * f - e * e;
      B[1] = c * e - b * f;
      B[2] = b * e - c * d;
      B[3] = a * f - c * c;
      B[4] = b * c - a * e;
      B[5] = a * d - b * b;
      const S det = a * B[0] + b * B[1] + c * B[2];
      // guarded: a contact no dof can move (or a nearly singular block) takes the projected steps
      const S s = det > S(1e-6) * mabs(a * d * f) && det > tiny ? S(1) / det : S(0);
      for (int k = 0; k < 6; ++k) B[k] *= s;
    }
    S norm = 0;
    for (int r = 0; r < 3; ++r) norm = mmax(norm, mabs(Gii[3 * r]) + mabs(Gii[3 * r + 1]) + mabs(Gii[3 * r + 2]));
    step[i] = norm > tiny ? S(1) / norm : S(0);
  }
  // γ̃ = c + G (w ∘ P), kept current as each contact's P changes (column s of the symmetric G is
  // its row s), so that γ_i = γ̃_i + (1 − w_i) G_ii P_i (the last term 0 where w_i = 1) needs
  // no sum over the other contacts.
  TeamArray<D, S, D::kRows> gt;
  Team::for_each(nr, [&](int r) MOREAU_LAMBDA { gt[r] = cs.c[r]; });
  for (int s = 0; s < nr; ++s) {
    const S k = cs.w[row_block(cs, s)] * cs.P[s];
    const bool on = cs.P[s] != 0;
    if (on) sym_axpy<Team, packed_delassus<D>()>(cs.G, s, 1, &k, &on, gt.data, nr);
  }
  // rows r0 .. r0 + n − 1 (n ≤ 3) take new impulses pnew: γ̃ += w (pnew_a − P_a) G_a for each row
  // whose impulse changed, in row order, in one pass over γ̃
  auto set_rows = [&](int r0, int n, S w, const S* pnew) {
    S k[3];
    bool on[3], any = false;
    for (int a = 0; a < n; ++a) {
      k[a] = w * (pnew[a] - cs.P[r0 + a]);
      on[a] = pnew[a] != cs.P[r0 + a];
      any = any || on[a];
    }
    if (any) sym_axpy<Team, packed_delassus<D>()>(cs.G, r0, n, k, on, gt.data, nr);
    Team::single([&]() MOREAU_LAMBDA {
      for (int a = 0; a < n; ++a) cs.P[r0 + a] = pnew[a];
    });
  };
  S res = 0;
  // one-row block k, solved exactly: P ← max(P − γ/G_rr, 0) at a limit (given in soft mode),
  // clamp(P − γ/G_rr, −B, B) for friction loss (B = h F) and torque rows (B = μ_spin P_n or μ_roll P_n)
  auto solve_row = [&](int k) {
    const int r = nc + k;
    const S grr = delassus_at(cs, r, r), wk = cs.w[cs.n + k];
    const S gamma = gt[r] + (1 - wk) * grr * cs.P[r];
    res = mmax(res, joint_row_violation(cs, k, cs.P[r], gamma, fixed_normal));
    const bool limit = unilateral(cs, cs.n + k);
    if ((limit && fixed_normal) || !(grr > tiny)) return;
    const S free = cs.P[r] - gamma / grr, bound = row_bound(cs, k);
    const S pnew = limit ? mmax(free, S(0)) : clamp(free, -bound, bound);
    set_rows(r, 1, wk, &pnew);
  };
  bool subspace = !fixed_normal;
  for (int b = 0; b < cs.n + cs.nj; ++b) subspace = subspace && cs.w[b] == S(1);
  int it = 0;
  while (it < max_iterations) {
    ++it;
    res = 0;
    for (int i = 0; i < cs.n; ++i) {
      S Gii[9];  // G_ii, copied where a step needs it (a sticking contact's with w = 1 does not)
      const S wi = cs.w[i];
      if (wi != S(1)) sym_block3<packed_delassus<D>()>(cs.G, 3 * i, nr, Gii);
      S gamma[3] = {gt[3 * i], gt[3 * i + 1], gt[3 * i + 2]};
      if (wi != S(1))
        for (int a = 0; a < 3; ++a)
          gamma[a] += (1 - wi) * (Gii[3 * a] * cs.P[3 * i] + Gii[3 * a + 1] * cs.P[3 * i + 1] +
                                  Gii[3 * a + 2] * cs.P[3 * i + 2]);
      S g0 = gamma[0], g1 = gamma[1], g2 = gamma[2];
      const S* B = Binv + 6 * i;
      S* P = cs.P + 3 * i;
      // 1. sticking step, unless no impulse solves the local problem and is what P_i has
      // (P_i = 0, so a_i = γ_i)
      const bool may_stick = fixed_normal || P[0] > 0 || g0 < 0;
      S pn = P[0] - (B[0] * g0 + B[1] * g1 + B[2] * g2);
      S pt1 = P[1] - (B[1] * g0 + B[3] * g1 + B[4] * g2);
      S pt2 = P[2] - (B[2] * g0 + B[4] * g1 + B[5] * g2);
      const bool sticks =
          may_stick && (B[0] > 0 || fixed_normal) && B[3] > 0 && pn > 0 && pt1 * pt1 + pt2 * pt2 <= mu * mu * pn * pn;
      S slide[3];
      if (!sticks && wi == S(1)) sym_block3<packed_delassus<D>()>(cs.G, 3 * i, nr, Gii);
      if (!sticks && slide_solve(Gii, P, gamma, mu, fixed_normal, pt1, pt2, slide)) {
        // 2. the exact sliding impulse
        pn = slide[0];
        pt1 = slide[1];
        pt2 = slide[2];
      } else if (!sticks) {
        // 3. where that fails, projected steps
        const S r = step[i];
        S q0 = P[0], q1 = P[1], q2 = P[2];
        for (int k = 0; k < 4; ++k) {
          pn = fixed_normal ? q0 : mmax(q0 - r * g0, S(0));
          pt1 = q1 - r * g1;
          pt2 = q2 - r * g2;
          const S pt = msqrt(pt1 * pt1 + pt2 * pt2), limit = mu * pn;
          if (pt > limit) {
            const S scale = pt > 0 ? limit / pt : S(0);
            pt1 *= scale;
            pt2 *= scale;
          }
          const S d0 = pn - q0, d1 = pt1 - q1, d2 = pt2 - q2;
          g0 += Gii[0] * d0 + Gii[1] * d1 + Gii[2] * d2;
          g1 += Gii[3] * d0 + Gii[4] * d1 + Gii[5] * d2;
          g2 += Gii[6] * d0 + Gii[7] * d1 + Gii[8] * d2;
          q0 = pn;
          q1 = pt1;
          q2 = pt2;
        }
      }
      res = mmax(res, contact_violation(P, gamma, mu, fixed_normal));
      const S Pnew[3] = {pn, pt1, pt2};
      set_rows(3 * i, 3, wi, Pnew);
    }
    for (int k = 0; k < cs.nj; ++k) solve_row(k);
    if (res <= tolerance) break;
    if (subspace && it >= 8 && (it & (it - 1)) == 0) Team::single([&]() MOREAU_LAMBDA { subspace_step(cs, gt.data, mu, tolerance); });
  }
  *residual = res;
  return it;
}

// LU factorisation with partial pivoting of a dense n x n row-major A, in place (row c of the
// factor swapped with row piv[c] at step c). False if A is singular to working precision.
template <class S>
MOREAU_HD bool lu_factor(S* A, int* piv, int n) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (mabs(A[r * n + c]) > mabs(A[p * n + c])) p = r;
    if (!(mabs(A[p * n + c]) > S(0))) return false;
    piv[c] = p;
    if (p != c)
      for (int k = 0; k < n; ++k) {
        const S t = A[c * n + k];
        A[c * n + k] = A[p * n + k];
        A[p * n + k] = t;
      }
    for (int r = c + 1; r < n; ++r) {
      const S f = A[r * n + c] /= A[c * n + c];
      if (f == 0) continue;
      for (int k = c + 1; k < n; ++k) A[r * n + k] -= f * A[c * n + k];
    }
  }
  return true;
}

// x ← A⁻¹ x with A's lu_factor (P A = L U: x ← P x, then the two triangular solves).
template <class S>
MOREAU_HD void lu_solve(const S* LU, const int* piv, S* x, int n) {
  for (int c = 0; c < n; ++c)
    if (piv[c] != c) {
      const S t = x[c];
      x[c] = x[piv[c]];
      x[piv[c]] = t;
    }
  for (int c = 0; c < n; ++c)
    for (int r = c + 1; r < n; ++r) x[r] -= LU[r * n + c] * x[c];
  for (int r = n - 1; r >= 0; --r) {
    S t = x[r];
    for (int k = r + 1; k < n; ++k) t -= LU[r * n + k] * x[k];
    x[r] = t / LU[r * n + r];
  }
}

// Classification of a converged contact (docs/contact.md, "The adjoint of the contact solve").
enum : int { kSeparated = 0, kSticking = 1, kSliding = 2 };

// Adjoint of pgs_solve by implicit differentiation at its converged P (docs/gradients.md).
// Per contact, the conditions F = 0 that fix P:
//   separated (P_n = 0):                   P_i = 0
//   sticking (P_n > 0, ‖P_t‖ < μ P_n):      γ_i = 0
//   sliding (‖P_t‖ = μ P_n, ‖γ_t‖ > 0):     γ_n = 0,  P_t + μ P_n γ_t/‖γ_t‖ = 0
// (with `fixed_normal` the normal rows are P_n = the given impulse instead). With M = ∂F/∂P,
// y solves Mᵀ y = P̄ and θ̄ = −(∂F/∂θ)ᵀ y for θ = γ, μ and the given normal impulses (adj_pn);
// γ = (W ∘ G) P + c then passes γ̄ to c̄ = γ̄ and Ḡ = W ∘ (γ̄ Pᵀ) (adj_contact_stage uses that
// structure) and to the gates w off the diagonal blocks (adj_w, here; null where the gates are
// constant: every mode but smooth). Mᵀ y = P̄ is solved
// directly (LU with partial pivoting) when M is well conditioned, else by least squares,
// (M Mᵀ + δ) y = M P̄ with a tiny Tikhonov δ: redundant contacts (four corners of a box on the
// ground) make M singular with P̄ in its range (P̄ = w ∘ J z), and the minimum-norm y gives the
// gradient of the unique velocities. Well conditioned: every pivot of Mᵀ's LU at least 1e-10
// (float: 1e-4) of the largest. At a switch the contact takes the class of its solution
// (separated when P_n = 0; sticking unless ‖P_t‖ reaches the cone within 1e-6 relative and the
// slip velocity is non-zero). adj_pgs_setup does the seed-independent part (γ, the classes and
// the factors of Mᵀ or of M Mᵀ + δ); adj_pgs_solve returns false if neither could be
// factorised. M itself is not kept: its rows are cheap to build again from G, P, γ and the
// classes (pgs_condition_row), which the least-squares case does for M Mᵀ (once) and M P̄.
template <class S, class D = MaxDims>
struct PgsAdjoint {
  S gamma[D::kRows];
  S wr[D::kRows];  // w of each row's block
  int cls[D::kBlocks];
  S LU[D::kRows * D::kRows];  // lu_factor of Mᵀ (direct) or of M Mᵀ + δ
  int piv[D::kRows];
  bool direct;
  bool ok;
};

// Row r of M = ∂F/∂P into row[0..nr) (pa's γ, w per row and classes set).
template <class S, class D>
MOREAU_HD void pgs_condition_row(const ContactScratch<S, D>& cs, S mu, bool fixed_normal, const PgsAdjoint<S, D>& pa,
                                 int r, S* row) {
  const int n = cs.n, nr = solve_rows(cs);
  const int i = row_block(cs, r), o = block_row(cs, i), sz = block_size(cs, i), a = r - o;
  for (int s = 0; s < nr; ++s) row[s] = 0;
  // += k ∂γ_rb/∂P = k (W ∘ G)_rb, W_rs = 1 within a block and w_j for s in another block j
  auto add_wg = [&](int rb, S k) {
    sym_row<packed_delassus<D>()>(cs.G, rb, nr, [&](int s, S g) MOREAU_LAMBDA { row[s] += k * pa.wr[s] * g; });
    for (int s = o; s < o + sz; ++s) row[s] += k * (1 - pa.wr[s]) * delassus_at(cs, rb, s);
  };
  const bool joint = i >= n;
  if (pa.cls[i] == kSeparated || (fixed_normal && a == 0 && unilateral(cs, i)) || (joint && pa.cls[i] == kSliding)) {
    row[r] = 1;
    // a torque row at its bound: P − μ sign(P) P_n = 0
    if (joint && pa.cls[i] == kSliding && torque_row(cs.jkind[i - n]) && cs.P[r] != 0)
      row[3 * cs.jq[i - n]] = cs.P[r] > 0 ? -cs.jbound[i - n] : cs.jbound[i - n];
  } else if (pa.cls[i] == kSticking || a == 0) {
    add_wg(r, S(1));
  } else {  // sliding tangent row: P_ta + μ P_n u_a, u = γ_t/‖γ_t‖
    const S g1 = pa.gamma[o + 1], g2 = pa.gamma[o + 2], gt = msqrt(g1 * g1 + g2 * g2);
    const S u[2] = {g1 / gt, g2 / gt};
    const S pn = cs.P[o];
    row[r] += 1;
    row[o] += mu * u[a - 1];
    for (int b = 1; b < 3; ++b)  // μ P_n (1 − u uᵀ)/‖γ_t‖ ∂γ_t/∂P
      add_wg(o + b, mu * pn * ((a == b ? S(1) : S(0)) - u[a - 1] * u[b - 1]) / gt);
  }
}

template <class S, class D>
MOREAU_HD void adj_pgs_setup(const ContactScratch<S, D>& cs, S mu, bool fixed_normal, PgsAdjoint<S, D>& pa) {
  const int n = cs.n, nr = solve_rows(cs);
  S *gamma = pa.gamma, *wr = pa.wr;
  // γ = (W ∘ G) P + c
  for (int s = 0; s < nr; ++s) wr[s] = cs.w[row_block(cs, s)];
  for (int r = 0; r < nr; ++r) {
    const int b = row_block(cs, r), o = block_row(cs, b), sz = block_size(cs, b);
    S g = cs.c[r], own = 0;
    sym_row<packed_delassus<D>()>(cs.G, r, nr, [&](int s, S grs) MOREAU_LAMBDA { g += wr[s] * grs * cs.P[s]; });
    for (int s = o; s < o + sz; ++s) own += delassus_at(cs, r, s) * cs.P[s];
    gamma[r] = g + (1 - wr[r]) * own;
  }
  const S tiny = S(1e-12);
  for (int i = 0; i < n; ++i) {
    const S* P = cs.P + 3 * i;
    const S pt = msqrt(P[1] * P[1] + P[2] * P[2]);
    const S gt = msqrt(gamma[3 * i + 1] * gamma[3 * i + 1] + gamma[3 * i + 2] * gamma[3 * i + 2]);
    pa.cls[i] = !(P[0] > 0) ? kSeparated : (pt >= mu * P[0] * (1 - S(1e-6)) && gt > tiny ? kSliding : kSticking);
  }
  // one-row blocks: a limit pushing is "sticking" (γ = 0); friction loss or a torque row at its bound
  // B "sliding" (P = ±B)
  for (int k = 0; k < cs.nj; ++k) {
    const S P = cs.P[3 * n + k];
    pa.cls[n + k] = unilateral(cs, n + k) ? (P > 0 ? kSticking : kSeparated)
                                          : (mabs(P) >= row_bound(cs, k) * (1 - S(1e-6)) ? kSliding : kSticking);
  }
  S* A = pa.LU;
  S row[D::kRows];
  for (int r = 0; r < nr; ++r) {  // A = Mᵀ
    pgs_condition_row(cs, mu, fixed_normal, pa, r, row);
    for (int s = 0; s < nr; ++s) A[s * nr + r] = row[s];
  }
  pa.direct = lu_factor(A, pa.piv, nr);
  if (pa.direct) {
    S lo = mabs(A[0]), hi = lo;
    for (int a = 1; a < nr; ++a) {
      lo = mmin(lo, mabs(A[a * nr + a]));
      hi = mmax(hi, mabs(A[a * nr + a]));
    }
    pa.direct = lo >= hi * S(sizeof(S) == 4 ? 1e-4 : 1e-10);
  }
  if (pa.direct) {
    pa.ok = true;
    return;
  }
  // M Mᵀ + δ I, (M Mᵀ)_ac = Σ_k M_ak M_ck, in place over M: row a's entries c ≤ a from the last
  // row up (row a kept aside, the rows above it still M's), then the upper triangle mirrored (the
  // terms of entry (c, a) are those of (a, c))
  for (int r = 0; r < nr; ++r) pgs_condition_row(cs, mu, fixed_normal, pa, r, A + r * nr);
  for (int a = nr - 1; a >= 0; --a) {
    for (int k = 0; k < nr; ++k) row[k] = A[a * nr + k];
    for (int c = 0; c <= a; ++c) {
      const S* Mc = c == a ? row : A + c * nr;
      S sum = 0;
      for (int k = 0; k < nr; ++k)
        if (row[k] != 0) sum += row[k] * Mc[k];
      A[a * nr + c] = sum;
    }
  }
  for (int a = 0; a < nr; ++a)
    for (int c = a + 1; c < nr; ++c) A[a * nr + c] = A[c * nr + a];
  S diag_max = 0;
  for (int a = 0; a < nr; ++a) diag_max = mmax(diag_max, A[a * nr + a]);
  const S delta = diag_max * S(sizeof(S) == 4 ? 1e-7 : 1e-14);
  for (int a = 0; a < nr; ++a) A[a * nr + a] += delta;
  pa.ok = lu_factor(A, pa.piv, nr);
}

template <class S, class D>
MOREAU_HD bool adj_pgs_solve(const ContactScratch<S, D>& cs, S mu, bool fixed_normal, const PgsAdjoint<S, D>& pa,
                             const S* adj_P, S* adj_gamma, S* adj_w, S& adj_mu, S* adj_pn) {
  if (!pa.ok) return false;
  const int n = cs.n, nr = solve_rows(cs);
  const S* gamma = pa.gamma;
  const int* cls = pa.cls;
  S y[D::kRows];  // Mᵀ y = P̄, or (M Mᵀ + δ) y = M P̄
  for (int a = 0; a < nr; ++a) y[a] = pa.direct ? adj_P[a] : S(0);
  if (!pa.direct)
    for (int a = 0; a < nr; ++a) {
      S row[D::kRows];
      pgs_condition_row(cs, mu, fixed_normal, pa, a, row);
      for (int k = 0; k < nr; ++k) y[a] += row[k] * adj_P[k];
    }
  lu_solve(pa.LU, pa.piv, y, nr);
  // γ̄ = −(∂F/∂γ)ᵀ y; μ̄ from the sliding rows; the given normal impulses get y_n
  for (int r = 0; r < nr; ++r) adj_gamma[r] = 0;
  for (int i = 0; i < n; ++i) {
    if (fixed_normal) adj_pn[i] += y[3 * i];
    if (cls[i] == kSeparated) continue;
    if (!fixed_normal) adj_gamma[3 * i] = -y[3 * i];
    if (cls[i] == kSticking) {
      adj_gamma[3 * i + 1] = -y[3 * i + 1];
      adj_gamma[3 * i + 2] = -y[3 * i + 2];
      continue;
    }
    const S g1 = gamma[3 * i + 1], g2 = gamma[3 * i + 2], gt = msqrt(g1 * g1 + g2 * g2);
    const S u[2] = {g1 / gt, g2 / gt};
    const S pn = cs.P[3 * i];
    for (int b = 0; b < 2; ++b) {
      S acc = 0;
      for (int a = 0; a < 2; ++a) acc += ((a == b ? S(1) : S(0)) - u[a] * u[b]) * y[3 * i + 1 + a];
      adj_gamma[3 * i + 1 + b] = -mu * pn * acc / gt;
    }
    adj_mu -= pn * (u[0] * y[3 * i + 1] + u[1] * y[3 * i + 2]);
  }
  // one-row blocks: γ = 0 where a limit pushes or friction is inside its bound; a soft limit's
  // given impulse gets y
  for (int k = 0; k < cs.nj; ++k) {
    const int r = 3 * n + k;
    if (fixed_normal && unilateral(cs, n + k))
      adj_pn[n + k] += y[r];
    else if (cls[n + k] == kSticking)
      adj_gamma[r] = -y[r];
  }
  // γ_r ∋ w_j G_rs P_s for s in another block j: w̄_j = Σ_{s∈j} P_s Σ_{r∉j} γ̄_r G_rs
  if (adj_w)
    for (int j = 0; j < n + cs.nj; ++j) {
      const int o = block_row(cs, j), sz = block_size(cs, j);
      for (int s = o; s < o + sz; ++s) {
        S t = 0;
        sym_row<packed_delassus<D>()>(cs.G, s, nr, [&](int r, S g) MOREAU_LAMBDA { t += adj_gamma[r] * g; });
        for (int r = o; r < o + sz; ++r) t -= adj_gamma[r] * delassus_at(cs, r, s);
        adj_w[j] += cs.P[s] * t;
      }
    }
  return true;
}

// Soft (penalty) normal impulses, for each contact with g < 0:
//   f_n = k_n (−g) − k_d min(v_n, 0),   k_d = 2 ζ sqrt(k_n m_eff) unless given, m_eff = 1/G_nn,
//   P_n = h max(f_n, 0),   v_n = J_n v_k (the spring–damper is explicit).
// Friction is then implicit with these normal impulses fixed (pgs_solve with fixed_normal):
// tangential impulses ‖P_t,i‖ ≤ μ P_n,i such that each point sticks (γ_t,i = 0, γ = G P + c,
// c = J v_free) or slides against γ_t,i — Coulomb friction at the end of the step, so a
// tangential load inside the cone is held exactly at any step size. (The first version's explicit rule
// P_t = −min(μ P_n, ‖v_t‖/D_t) v_t/‖v_t‖ stopped only part of the sliding per step when the
// feet are coupled through the body: a standing quadruped's feet crept apart and it sank.)
// Joint limits take the same law on their row (k_n read in N m/rad on a revolute joint).
template <class S, class D>
MOREAU_HD void soft_normal_impulses(const S* v_k, ContactScratch<S, D>& cs, S h, S kn, S kd_given, S zeta) {
  for (int i = 0; i < cs.n + cs.nj; ++i) {
    if (!unilateral(cs, i)) continue;
    const int r = block_row(cs, i);
    const S vn = row_dot(cs, r, cs.J, v_k);
    const S gnn = mmax(delassus_at(cs, r, r), S(1e-12));
    const S kd = kd_given >= 0 ? kd_given : S(2) * zeta * msqrt(kn / gnn);
    cs.P[r] = h * mmax(kn * (-cs.gap[i]) - kd * mmin(vn, S(0)), S(0));
  }
}

// Adjoint of soft_normal_impulses: adj_pn (per block) into adj_gap (per block), adj_J (normal rows,
// as cs.J), adj_v_k, adj_gnn (per block: the diagonal normal entries G_nn, through m_eff) and adj_kn.
template <class S, class D>
MOREAU_HD void adj_soft_normal_impulses(const S* v_k, const ContactScratch<S, D>& cs, S h, S kn,
                                        S kd_given, S zeta, const S* adj_pn, S* adj_gap, S* adj_J, S* adj_v_k,
                                        S* adj_gnn, S& adj_kn) {
  for (int i = 0; i < cs.n + cs.nj; ++i) {
    const int r = block_row(cs, i);
    if (!unilateral(cs, i) || !(cs.P[r] > 0) || adj_pn[i] == 0) continue;  // the max binds: no gradient
    const S vn = row_dot(cs, r, cs.J, v_k);
    const S G0 = delassus_at(cs, r, r), gnn = mmax(G0, S(1e-12));
    const bool from_zeta = !(kd_given >= 0);
    const S kd = from_zeta ? S(2) * zeta * msqrt(kn / gnn) : kd_given;
    const S a = h * adj_pn[i];               // f̄_n
    const S damp = -mmin(vn, S(0));          // f_n = k_n (−g) + k_d damp
    adj_gap[i] -= kn * a;
    adj_kn += -cs.gap[i] * a;
    if (vn < 0) {  // ∂f/∂v_n = −k_d
      const S adj_vn = -kd * a;
      row_axpy(cs, r, adj_vn, cs.J, adj_v_k);
      row_add_outer(cs, r, adj_vn, v_k, adj_J);
    }
    if (from_zeta && damp > 0) {  // k_d = 2 ζ sqrt(k_n / G_nn)
      adj_kn += damp * a * kd / (2 * kn);
      if (G0 > S(1e-12)) adj_gnn[i] -= damp * a * kd / (2 * gnn);
    }
  }
}

template <class S>
struct ContactResult {
  int status;
  int iterations;
  S residual;
};

// Whether a step has a contact stage: contact points in a contact mode, or joint rows (limits and
// friction loss act in every mode; with contact off they take the hard model's).
template <class S, class D>
MOREAU_HD bool has_constraints(const ModelView<S, D>& m, const ContactSettings<S>& cfg) {
  return (cfg.mode != kContactNone && m.ncon > 0) || m.njrow > 0;
}

// The contact threshold of `mode`: a point enters the solve when its gap ≤ it. Soft: 0
// (g < 0); hard: the speculative reach, 10 m/s in one step; smooth: g_max.
template <class S>
MOREAU_HD S contact_threshold(const ContactSettings<S>& cfg, const Params<S>& p, int env, int mode, S h) {
  if (mode == kContactSmooth) return p.smooth_gmax.get(env);
  return mode != kContactSoft && cfg.speculative ? S(10) * h : S(0);
}

// Keeps the blocks with gap ≤ threshold (a torque row with its contact; every friction-loss row), in
// order, and sets c = J v:
// their rows of J and Y and their block of G are the numbers contact_candidates,
// joint_candidates and delassus give for that set at the same q_M (every candidate below
// threshold must be in cs: not a truncated set).
template <class S, class D>
MOREAU_HD void restrict_active(const ModelView<S, D>& m, S threshold, const S* v, ContactScratch<S, D>& cs) {
  single(m, [&]() MOREAU_LAMBDA {  // the kept blocks, moved down in place
    constexpr int C = D::kChain;
    const int nr0 = solve_rows(cs);
    int keep[D::kBlocks], rowmap[D::kRows], newidx[D::kActive], n = 0, nj = 0, nr = 0;
    for (int i = 0; i < cs.n + cs.nj; ++i)
      if (!gated(cs, i) || cs.gap[i] <= threshold) {
        if (i < cs.n) newidx[i] = n;
        keep[n + nj] = i;
        (i < cs.n ? n : nj) += 1;
        for (int r = block_row(cs, i); r < block_row(cs, i) + block_size(cs, i); ++r) rowmap[nr++] = r;
      }
    // every index moves down or stays, in increasing order: in place
    for (int a = 0; a < n + nj; ++a) {
      const int i = keep[a], r0 = block_row(cs, i), sz = block_size(cs, i);
      const int a0 = a < n ? 3 * a : a + 2 * n;  // the block's first row in the new layout
      if (a < n) {
        cs.con[a] = cs.con[i];
      } else {
        cs.jdof[a - n] = cs.jdof[i - cs.n];
        cs.jq[a - n] = torque_row(cs.jkind[i - cs.n]) ? newidx[cs.jq[i - cs.n]] : cs.jq[i - cs.n];
        cs.jkind[a - n] = cs.jkind[i - cs.n];
        cs.jbound[a - n] = cs.jbound[i - cs.n];
      }
      cs.gap[a] = cs.gap[i];
      cs.w[a] = 1;
      // a contact's second half too (nd 0 but for a pair) where the class holds pairs
      for (int h = 0; h < (a < n && D::kPairBlocks > 0 ? 2 : 1); ++h) {
        const int from = i + h * D::kBlocks, to = a + h * D::kBlocks;
        cs.nd[to] = cs.nd[from];
        cs.dof[to] = cs.dof[from];
        for (int r = 0; r < sz; ++r)
          for (int t = 0; t < cs.nd[from]; ++t) {
            cs.J[(a0 + r + h * D::kRows) * C + t] = cs.J[(r0 + r + h * D::kRows) * C + t];
            cs.Y[(a0 + r + h * D::kRows) * C + t] = cs.Y[(r0 + r + h * D::kRows) * C + t];
          }
      }
    }
    // G entry by entry in storage order: each entry's source is at or after it and after every
    // earlier entry's (rowmap increases, nr ≤ nr0)
    if constexpr (packed_delassus<D>()) {
      for (int s = 0; s < nr; ++s)
        for (int r = s; r < nr; ++r) cs.G[sym_index<true>(r, s, nr)] = cs.G[sym_index<true>(rowmap[r], rowmap[s], nr0)];
    } else {
      for (int r = 0; r < nr; ++r)
        for (int s = 0; s < nr; ++s) cs.G[r * nr + s] = cs.G[rowmap[r] * nr0 + rowmap[s]];
    }
    cs.n = n;
    cs.nj = nj;
  });
  contact_velocity(m, v, cs);
}

// The solve of the contact stage for `mode` at q_M (kinematics and factorised H in ws) and
// v_free: the active set with its Jacobians, G, c (with any bias), the gates w and the solver's
// impulses P (before gating), and the solver statistics. v_k is the velocity at the start of
// the step (the soft model's explicit velocity); gaps of all points go to `gaps` (may be null).
// With `from_active`, the active set comes from the one in cs, a solve at the same q_M and
// v_free whose threshold was at least this mode's (restrict_active), instead of from scratch.
template <class S, class D>
MOREAU_HD ContactResult<S> contact_solve(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                                         int env, int mode, const S* qM, const S* v_k, S h, const Ground<S>& ground,
                                         Workspace<S, D>& ws, ContactScratch<S, D>& cs, const S* v_free, S* gaps,
                                         bool from_active = false) {
  ContactResult<S> result{0, 0, S(0)};
  const S mu = p.friction.get(env);
  const S threshold = contact_threshold(cfg, p, env, mode, h);
  if (from_active) {
    restrict_active(m, threshold, v_free, cs);
  } else {
    single(m, [&]() MOREAU_LAMBDA { cs.n = cs.nj = 0; });
    if (mode != kContactNone && contact_candidates(m, ws, qM, ground, threshold, cs, gaps, p.spin_friction.get(env),
                                                      p.rolling_friction.get(env)))
      result.status |= kStatusContactsDropped;
    const bool speculative = mode != kContactSoft && mode != kContactSmooth && cfg.speculative;
    single(m, [&]() MOREAU_LAMBDA { joint_candidates(m, p, env, qM, speculative ? v_free : nullptr, h, threshold, cs); });
  }
  if (solve_rows(cs) == 0) return result;
  if (!from_active) delassus(m, ws.H, v_free, cs);
  const bool soft = mode == kContactSoft;
  single(m, [&]() MOREAU_LAMBDA {
    if (soft) {
      soft_normal_impulses(v_k, cs, h, p.contact_kn.get(env), p.contact_kd.get(env), p.contact_zeta.get(env));
    } else if (mode == kContactSmooth) {
      const S k = p.smooth_k.get(env);
      for (int i = 0; i < cs.n + cs.nj; ++i)
        if (gated(cs, i)) cs.w[i] = smooth_gate(k, cs.gap[i]);
    } else if (cfg.speculative) {
      // the next midpoint is q_M ⊕ h v_{k+1}: its gap g + h γ_n must not be negative
      for (int i = 0; i < cs.n + cs.nj; ++i)
        if (unilateral(cs, i)) cs.c[block_row(cs, i)] += mmax(cs.gap[i], S(0)) / h;
    }
  });
  result.iterations = pgs_solve(cs, mu, soft, cfg.max_iterations, cfg.tolerance, &result.residual);
  if (result.residual > cfg.tolerance) result.status |= kStatusSolverNotConverged;
  return result;
}

// x = H⁻¹ Jᵀ (w ∘ P) = L⁻¹ Y (w ∘ P): the velocity the solve's impulses add (Y = L⁻ᵀ Jᵀ from
// delassus, so only the root-down half of the solve is left).
template <class Team = SerialTeam, class S, class D>
MOREAU_HD void impulse_velocity(const ModelView<S, D>& m, const Workspace<S, D>& ws, const ContactScratch<S, D>& cs, S* x) {
  Team::single([&]() MOREAU_LAMBDA {
    for (int d = 0; d < m.nv; ++d) x[d] = 0;
    for (int r = 0; r < solve_rows(cs); ++r) row_axpy(cs, r, cs.w[row_block(cs, r)] * cs.P[r], cs.Y, x);
  });
  ltl_solve_l<Team>(m, ws.H, x);
}

// The contact stage of a physics step: v (= v_free on entry) gets H⁻¹ Jᵀ (w ∘ P). Writes
// per-point contact information when `gaps` / `impulses` / `active` are not null.
template <class S, class D>
MOREAU_HD ContactResult<S> contact_stage(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p,
                                         int env, const S* qM, const S* v_k, S h, const Ground<S>& ground,
                                         Workspace<S, D>& ws, ContactScratch<S, D>& cs, S* v, S* gaps, S* impulses,
                                         int* active) {
  const ContactResult<S> result = contact_solve(m, cfg, p, env, cfg.mode, qM, v_k, h, ground, ws, cs, v, gaps);
  if (solve_rows(cs) > 0) {
    TeamArray<D, S, D::kNv> x;
    impulse_velocity<TeamFor<D>>(m, ws, cs, x.data);
    single(m, [&]() MOREAU_LAMBDA {
      for (int d = 0; d < m.nv; ++d) v[d] += x[d];
    });
  }
  single(m, [&]() MOREAU_LAMBDA {
    if (impulses && cfg.mode != kContactNone) {
      for (int k = 0; k < m.ncon; ++k) {
        impulses[k] = 0;
        active[k] = gaps[k] <= 0;
      }
      for (int i = 0; i < cs.n; ++i) {
        if (cs.con[i] >= m.ncon) continue;  // a pair: per point, the ground's impulse only
        impulses[cs.con[i]] = cs.w[i] * cs.P[3 * i];
        if (cs.P[3 * i] > 0) active[cs.con[i]] = 1;
      }
    }
  });
  return result;
}

// Contact parameters that carry gradients.
template <class S>
struct ContactParamAdjoint {
  S friction;
  S contact_kn;
  S smooth_k;
};

// The contact adjoint's Ḡ = W ∘ (γ̄ Pᵀ) = γ̄ P_appᵀ + blockdiag(Ē_j) (adj_pgs_solve): the rank-1
// part joins the RNEA's (adj_contact_stage); the blocks Ē_j = (1 − w_j) γ̄_j P_jᵀ (each contact's
// own block is ungated) and soft's Ḡ_nn (through m_eff) exist only in these modes.
MOREAU_HD bool contact_blocks(int grad_mode) { return grad_mode == kContactSmooth || grad_mode == kContactSoft; }

// The mode whose gradient the adjoint returns (hard_smooth_grad: smooth's).
MOREAU_HD int contact_grad_mode(int mode) { return mode == kContactHardSmoothGrad ? kContactSmooth : mode; }

// The seed-independent part of adj_contact_stage, from the solve in cs (adj_contact_setup).
template <class S, class D = MaxDims>
struct ContactAdjoint {
  S K[D::kRows * D::kNv];  // K = H⁻¹ Jᵀ, row r holding K[:, r] (contact_blocks modes only)
  S x[D::kNv];                   // H⁻¹ Jᵀ P_app, P_app = w ∘ P
  PgsAdjoint<S, D> pgs;
};

// x is the velocity the impulses add, v_next − v_free, except where cs was re-solved for the
// gradient (hard_smooth_grad), whose x is solved for here.
template <class S, class D>
MOREAU_HD void adj_contact_setup(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                                 const Workspace<S, D>& ws, const ContactScratch<S, D>& cs, const S* v_free,
                                 const S* v_next, ContactAdjoint<S, D>& ca) {
  const int nv = m.nv, nr = solve_rows(cs);
  for (int d = 0; d < nv; ++d) ca.x[d] = cfg.mode == kContactHardSmoothGrad ? S(0) : v_next[d] - v_free[d];
  if (nr == 0) return;
  if (cfg.mode == kContactHardSmoothGrad) impulse_velocity(m, ws, cs, ca.x);
  if (contact_blocks(contact_grad_mode(cfg.mode))) {  // K = L⁻¹ Y: Y's rows spread from their chains to every dof
    for (int r = 0; r < nr; ++r) {
      for (int d = 0; d < nv; ++d) ca.K[r * nv + d] = 0;
      row_axpy(cs, r, S(1), cs.Y, ca.K + r * nv);
    }
    for (int r = 0; r < 3 * cs.n; r += 3) ltl_solve_l3(m, ws.H, ca.K + r * nv, ca.K + (r + 1) * nv, ca.K + (r + 2) * nv);
    for (int r = 3 * cs.n; r < nr; ++r) ltl_solve_l(m, ws.H, ca.K + r * nv);
  }
  adj_pgs_setup(cs, p.friction.get(env), cfg.mode == kContactSoft, ca.pgs);
}

// Adjoint of contact_stage (docs/gradients.md, "Contact"), through to the seed of the free
// velocity. cs holds what contact_stage left (the active set, G, c, w and the solver's P) at
// the same inputs; for hard_smooth_grad, the smooth model's solve there (adj_setup; a
// straight-through gradient); ca its adj_contact_setup. With z = H⁻¹ v̄_next, P̄_app = J z and
// the solve's γ̄ (adj_pgs_solve), c = J v_free and G = J H⁻¹ Jᵀ give
//   v̄_free = v̄_next + Jᵀ γ̄,   λ = H⁻¹ v̄_free,
//   J̄ = P_app λᵀ + γ̄ (v_free + x)ᵀ + Σ_j (Ē_j + Ē_jᵀ) K_jᵀ,
//   H̄ = −λ (Δv + x)ᵀ − Σ_j K_j Ē_j K_jᵀ   (x = ca.x; Ē_j: contact_blocks).
// The first H̄ term is the RNEA's at acceleration (Δv + x)/h, taken by adj_physics_step's
// adj_rnea with τ̄ = −h λ (AdjTape::a); the blocks go through adj_crba. Writes adj_v_free and
// lambda; accumulates adj_v_k (soft), adj_qM, aw and the parameter adjoints. Returns status
// bits.
template <class S, class D>
MOREAU_HD int adj_contact_stage(const ModelView<S, D>& m, const ContactSettings<S>& cfg, const Params<S>& p, int env,
                                const S* qM, const S* v_k, S h, const Workspace<S, D>& ws, const ContactScratch<S, D>& cs,
                                const ContactAdjoint<S, D>& ca, const S* v_free, const S* adj_v_next, S* adj_v_free,
                                S* lambda, S* adj_v_k, S* adj_qM, AdjWorkspace<S, D>& aw, ContactParamAdjoint<S>& adj_p) {
  const int mode = contact_grad_mode(cfg.mode);
  const int nv = m.nv, n = cs.n, nb = n + cs.nj, nr = solve_rows(cs);
  single(m, [&]() MOREAU_LAMBDA {
    for (int d = 0; d < nv; ++d) adj_v_free[d] = lambda[d] = adj_v_next[d];
  });
  if (nr == 0) {
    ltl_solve<TeamFor<D>>(m, ws.H, lambda);
    return 0;
  }
  constexpr int C = D::kChain;
  TeamArray<D, S, (D::kRows + D::kPairRows) * C> adj_J;  // as cs.J
  TeamArray<D, S, D::kRows> adj_P, adj_gamma;
  TeamArray<D, S, D::kBlocks> adj_w, adj_gap, adj_pn, adj_gnn;
  TeamArray<D, bool, 1> solved;
  const bool soft = mode == kContactSoft;
  // v_next = v_free + H⁻¹ Jᵀ P_app, P_app = w ∘ P: P̄_app = J H⁻¹ v̄_next = Yᵀ L⁻ᵀ v̄_next
  // (L⁻ᵀ v̄_next in lambda until λ = L⁻¹ (L⁻ᵀ v̄_next + Y γ̄))
  ltl_solve_t<TeamFor<D>>(m, ws.H, lambda);
  single(m, [&]() MOREAU_LAMBDA {  // the solve's adjoint
    for (int i = 0; i < nb; ++i) adj_w[i] = adj_gap[i] = adj_pn[i] = adj_gnn[i] = 0;
    for (int r = 0; r < nr; ++r) {
      const int b = row_block(cs, r);
      const S t = row_dot(cs, r, cs.Y, lambda);
      for (int h = 0; h < block_halves(cs, b); ++h)
        for (int k = 0; k < cs.nd[b + h * D::kBlocks]; ++k) adj_J[(r + h * D::kRows) * C + k] = 0;
      adj_P[r] = cs.w[b] * t;
      adj_w[b] += cs.P[r] * t;
    }
    solved[0] = adj_pgs_solve(cs, p.friction.get(env), soft, ca.pgs, adj_P.data, adj_gamma.data,
                              mode == kContactSmooth ? adj_w.data : nullptr, adj_p.friction, adj_pn.data);
  });
  if (!solved[0]) return kStatusNoGradient;
  TeamArray<D, S, D::kNM> adj_H;  // H's sparse storage (adj_crba)
  single(m, [&]() MOREAU_LAMBDA {  // the rest of J̄ and H̄
    if (soft) {
      adj_soft_normal_impulses(v_k, cs, h, p.contact_kn.get(env), p.contact_kd.get(env), p.contact_zeta.get(env),
                               adj_pn.data, adj_gap.data, adj_J.data, adj_v_k, adj_gnn.data, adj_p.contact_kn);
    } else if (mode == kContactSmooth) {  // w = σ(−k g): ∂w/∂g = −k w (1 − w), ∂w/∂k = −g w (1 − w)
      const S k = p.smooth_k.get(env);
      for (int i = 0; i < nb; ++i) {
        const S kg = k * cs.gap[i];
        if (!gated(cs, i) || kg <= S(-100) || kg >= S(50)) continue;
        const S dw = -cs.w[i] * (1 - cs.w[i]) * adj_w[i];
        adj_gap[i] += k * dw;
        adj_p.smooth_k += cs.gap[i] * dw;
      }
      for (int k = 0; k < cs.nj; ++k)  // a torque row's gap is its contact's
        if (torque_row(cs.jkind[k])) adj_gap[cs.jq[k]] += adj_gap[n + k];
    } else if (cfg.speculative) {  // c_n += max(g, 0)/h
      for (int i = 0; i < nb; ++i)
        if (unilateral(cs, i) && cs.gap[i] > 0) adj_gap[i] += adj_gamma[block_row(cs, i)] / h;
    }
    // v̄_free = v̄_next + Jᵀ γ̄ (c = J v_free), λ = H⁻¹ v̄_free
    for (int r = 0; r < nr; ++r) {
      row_axpy(cs, r, adj_gamma[r], cs.J, adj_v_free);
      row_axpy(cs, r, adj_gamma[r], cs.Y, lambda);
    }
  });
  ltl_solve_l<TeamFor<D>>(m, ws.H, lambda);
  single(m, [&]() MOREAU_LAMBDA {
    // J̄ += P_app λᵀ + γ̄ (v_free + x)ᵀ on the rows' chains
    for (int r = 0; r < nr; ++r) {
      const int b = row_block(cs, r);
      const S pa = cs.w[b] * cs.P[r], ga = adj_gamma[r];
      for (int h = 0; h < block_halves(cs, b); ++h) {
        const int* dof = cs.dof[b + h * D::kBlocks];
        S* aJ = adj_J + (r + h * D::kRows) * C;
        for (int t = 0; t < cs.nd[b + h * D::kBlocks]; ++t)
          aJ[t] += pa * lambda[dof[t]] + ga * (v_free[dof[t]] + ca.x[dof[t]]);
      }
    }
    if (contact_blocks(mode)) {
      // Ē_j = Σ c l rᵀ over the terms (1 − w_j) γ̄_j P_jᵀ and soft's Ḡ_nn e_n e_nᵀ; each adds
      // −c (K_j l)(K_j r)ᵀ to H̄ and c (l (K_j r)ᵀ + r (K_j l)ᵀ) to J̄_j
      for (int k = 0; k < m.nM; ++k) adj_H[k] = 0;
      const S en[3] = {1, 0, 0};
      for (int j = 0; j < nb; ++j) {
        const int o = block_row(cs, j), sz = block_size(cs, j);
        const S* Kj = ca.K + o * nv;
        const struct {
          S c;
          const S *l, *r;
        } terms[2] = {{1 - cs.w[j], adj_gamma.data + o, cs.P + o}, {adj_gnn[j], en, en}};
        for (const auto& t : terms) {
          if (t.c == 0) continue;
          S Kl[D::kNv], Kr[D::kNv];
          for (int d = 0; d < nv; ++d) {
            Kl[d] = Kr[d] = 0;
            for (int a = 0; a < sz; ++a) {
              Kl[d] += Kj[a * nv + d] * t.l[a];
              Kr[d] += Kj[a * nv + d] * t.r[a];
            }
          }
          for (int h = 0; h < block_halves(cs, j); ++h) {
            const int* dof = cs.dof[j + h * D::kBlocks];
            for (int a = 0; a < sz; ++a)
              for (int s = 0; s < cs.nd[j + h * D::kBlocks]; ++s)
                adj_J[(o + a + h * D::kRows) * C + s] += t.c * (t.l[a] * Kr[dof[s]] + t.r[a] * Kl[dof[s]]);
          }
          for (int c = 0; c < nv; ++c) {  // −c Kl Krᵀ on the pattern, both triangles' entries
            S* adj_Hc = adj_H + m.dof_Madr[c];
            const int* col = m.M_colind + m.dof_Madr[c];
            adj_Hc[m.dof_depth[c]] -= t.c * Kl[c] * Kr[c];
            for (int s = m.dof_depth[c] - 1; s >= 0; --s) adj_Hc[s] -= t.c * (Kl[c] * Kr[col[s]] + Kl[col[s]] * Kr[c]);
          }
        }
      }
    }
  });
  if (contact_blocks(mode)) adj_crba(m, ws, adj_H.data, aw);
  adj_contact_kinematics(m, ws, cs, qM, ground_of(m, p, env), adj_J.data, adj_gap.data, adj_qM, aw);
  single(m, [&]() MOREAU_LAMBDA {
    // a limit's gap q − lo or hi − q (its J is constant: J̄ goes nowhere)
    for (int k = 0; k < cs.nj; ++k) {
      if (!unilateral(cs, n + k)) continue;
      adj_qM[cs.jq[k]] += cs.jkind[k] == kRowLower ? adj_gap[n + k] : -adj_gap[n + k];
    }
  });
  return 0;
}

}  // namespace kern
}  // namespace moreau
