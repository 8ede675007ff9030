// moreau kernels — rigid-body dynamics in reduced coordinates (Featherstone, RBDA):
// forward kinematics, recursive Newton–Euler (RNEA), composite-rigid-body mass matrix
// (CRBA) and its branch-sparse H = Lᵀ L factorisation (RBDA §6.5).
//
// H and L are stored by the tree's sparsity (MuJoCo's M): H_kj ≠ 0 only for j = k or an ancestor
// dof of k (or the transpose), so row k holds its lower triangle's entries at its ancestors,
// root-first, then the diagonal: H_kj at dof_Madr[k] + dof_depth[j] (117 of ANYmal's 324).
#pragma once

#include "kernels/joints.h"
#include "kernels/team.h"

namespace moreau {
namespace kern {

// Per-environment scratch (registers/local memory on the GPU, stack on the CPU).
template <class S, class D = MaxDims>
struct Workspace {
  Transform<S> Xup[D::kBodies];  // parent → body
  Inertia<S> I[D::kBodies];      // body inertias (body coordinates)
  Motion<S> Sdof[D::kNv];        // motion subspace column of each dof (its body's coordinates)
  Motion<S> vel[D::kBodies];
  Motion<S> acc[D::kBodies];
  Force<S> f[D::kBodies];
  Inertia<S> Ic[D::kBodies];     // composite inertias
  S H[D::kNM];                   // mass matrix, tree-sparse rows (above); after factorisation L
};

// Adjoints of the Workspace quantities (the backward pass's scratch): Xup, I and Sdof are
// zeroed by adj_clear; vel, acc and f are adj_rnea's own scratch.
template <class S, class D = MaxDims>
struct AdjWorkspace {
  Transform<S> Xup[D::kBodies];
  Inertia<S> I[D::kBodies];
  Motion<S> Sdof[D::kNv];
  Motion<S> vel[D::kBodies];
  Motion<S> acc[D::kBodies];
  Force<S> f[D::kBodies];
};

template <class S, class D>
MOREAU_HD void adj_clear(const ModelView<S, D>& m, AdjWorkspace<S, D>& adj) {
  const Vec3<S> z{0, 0, 0};
  const Mat3<S> Z{{0, 0, 0, 0, 0, 0, 0, 0, 0}};
  for (int i = 0; i < m.nbody; ++i) {
    adj.Xup[i] = {Z, z};
    adj.I[i] = {S(0), z, {0, 0, 0, 0, 0, 0}};
  }
  for (int k = 0; k < m.nv; ++k) adj.Sdof[k] = {z, z};
}

// Euclidean inner product of two 6-vectors stored as motions (a motion and its adjoint).
template <class S>
MOREAU_HD S inner(const Motion<S>& a, const Motion<S>& b) {
  return dot(a.w, b.w) + dot(a.v, b.v);
}

// Body inertias (the packed spatial inertias); `added_base_mass` goes to body 0 at its centre
// of mass.
template <class S, class D>
MOREAU_HD void body_inertias(const ModelView<S, D>& m, S added_base_mass, Workspace<S, D>& ws) {
  for_each(m, m.nbody, [&](int i) MOREAU_LAMBDA {
    const S* I = m.body_sinertia + 10 * i;
    ws.I[i] = {I[0], {I[1], I[2], I[3]}, {I[4], I[5], I[6], I[7], I[8], I[9]}};
  });
  const auto added = added_base_mass != S(0);
  if (m.nbody > 0 && any_lane(added)) {
    single(m, [&]() MOREAU_LAMBDA {
      const S* I6 = m.body_inertia;
      const Inertia<S> I = inertia_from_com(m.body_mass[0] + added_base_mass, vec3(m.body_com),
                                            Sym3<S>{I6[0], I6[1], I6[2], I6[3], I6[4], I6[5]});
      ws.I[0] = select_inertia(added, I, ws.I[0]);
    });
  }
}

// Only the added base mass is differentiable (the model's inertias are constants).
template <class S, class D>
MOREAU_HD void adj_body_inertias(const ModelView<S, D>& m, S added_base_mass, S& adj_added_base_mass,
                                 const AdjWorkspace<S, D>& adj) {
  if (m.nbody == 0) return;
  const S* I6 = m.body_inertia;
  Vec3<S> adj_c{0, 0, 0};
  Sym3<S> adj_Ic{0, 0, 0, 0, 0, 0};
  adj_inertia_from_com(m.body_mass[0] + added_base_mass, vec3(m.body_com),
                       Sym3<S>{I6[0], I6[1], I6[2], I6[3], I6[4], I6[5]}, adj_added_base_mass, adj_c, adj_Ic,
                       adj.I[0]);
}

// Xup and motion subspaces at configuration q.
template <class S, class D>
MOREAU_HD void forward_kinematics(const ModelView<S, D>& m, const S* q, Workspace<S, D>& ws) {
  for_each(m, m.nbody, [&](int i) MOREAU_LAMBDA {
    ws.Xup[i] = joint_transform(m, i, q);
    const int d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    for (int k = 0; k < n; ++k) ws.Sdof[d + k] = joint_motion(m, i, k, ws.Xup[i]);
  });
}

// Needs ws.Xup as forward_kinematics left it at q; adj.Xup and adj.Sdof are the incoming adjoints.
template <class S, class D>
MOREAU_HD void adj_forward_kinematics(const ModelView<S, D>& m, const S* q, const Workspace<S, D>& ws, S* adj_q,
                                      AdjWorkspace<S, D>& adj) {
  for_each(m, m.nbody, [&](int i) MOREAU_LAMBDA {  // body i's joint has its own entries of q
    const int d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    for (int k = 0; k < n; ++k) adj_joint_motion(m, i, k, ws.Xup[i], adj.Xup[i], adj.Sdof[d + k]);
    adj_joint_transform(m, i, q, ws.Xup[i], adj_q, adj.Xup[i]);
  });
}

// τ = RNEA(q, v, v̇) = H(q) v̇ + b(q, v), gravity included; v̇ may be null (= 0, giving b).
// Needs forward_kinematics and body_inertias at q.
template <class S, class D>
MOREAU_HD void rnea(const ModelView<S, D>& m, const S* v, const S* vdot, Workspace<S, D>& ws, S* tau_out) {
  // forward pass over bodies: v_i = X v_λ + S q̇;  a_i = X a_λ + S q̈ + c_J + v_i × S q̇;
  // f_i = I a_i + v_i ×* I v_i. The world accelerates at −g (gravity as a fictitious force).
  const Motion<S> a_world{{0, 0, 0}, {-m.gravity[0], -m.gravity[1], -m.gravity[2]}};
  down_tree(m, [&](int i) MOREAU_LAMBDA {
    const int par = m.body_parent[i], d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    const Transform<S>& X = ws.Xup[i];
    Motion<S> vJ{{0, 0, 0}, {0, 0, 0}}, aJ = joint_bias(m, i, v, X);
    for (int k = 0; k < n; ++k) {
      vJ += v[d + k] * ws.Sdof[d + k];
      if (vdot) aJ += vdot[d + k] * ws.Sdof[d + k];
    }
    ws.vel[i] = par < 0 ? vJ : apply(X, ws.vel[par]) + vJ;
    ws.acc[i] = apply(X, par < 0 ? a_world : ws.acc[par]) + aJ + cross_m(ws.vel[i], vJ);
    ws.f[i] = ws.I[i] * ws.acc[i] + cross_f(ws.vel[i], ws.I[i] * ws.vel[i]);
  });
  // backward pass over bodies: f_i += Σ_c X_cᵀ f_c over its children c;  τ_i = Sᵀ f_i
  up_tree(m, [&](int i) MOREAU_LAMBDA {
    ws.f[i] = sum_children(m, i, ws.f[i], [&](int b) MOREAU_LAMBDA { return apply_t(ws.Xup[b], ws.f[b]); });
    const int d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    for (int k = 0; k < n; ++k) tau_out[d + k] = dot(ws.f[i], ws.Sdof[d + k]);
  });
}

// rnea's quantities at (q, v, v̇ + δv̇) from those rnea left in ws at (q, v, v̇) (τ not
// returned): δa_i = X δa_λ + S δv̇, f_i += I δa_i, and the subtree sums f_λ += Xᵀ δf_i.
template <class S, class D>
MOREAU_HD void rnea_add_acceleration(const ModelView<S, D>& m, const S* dvdot, Workspace<S, D>& ws) {
  TeamArray<D, Motion<S>, D::kBodies> da;
  TeamArray<D, Force<S>, D::kBodies> df;
  down_tree(m, [&](int i) MOREAU_LAMBDA {
    const int par = m.body_parent[i], d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    da[i] = par < 0 ? Motion<S>{{0, 0, 0}, {0, 0, 0}} : apply(ws.Xup[i], da[par]);
    for (int k = 0; k < n; ++k) da[i] += dvdot[d + k] * ws.Sdof[d + k];
    ws.acc[i] += da[i];
    df[i] = ws.I[i] * da[i];
  });
  up_tree(m, [&](int i) MOREAU_LAMBDA {
    df[i] = sum_children(m, i, df[i], [&](int c) MOREAU_LAMBDA { return apply_t(ws.Xup[c], df[c]); });
    ws.f[i] += df[i];
  });
}

// Reverse of rnea (its passes mirrored: adjoint of the backward pass, then of the forward
// pass). Needs ws.vel/acc/f as rnea left them (call rnea first with the same inputs);
// tau_adj is the adjoint of τ. Accumulates into adj_v, adj_vdot (may be null),
// adj.Xup, adj.Sdof and adj.I[0] (adj.vel/acc/f are the sweep's own scratch).
template <class S, class D>
MOREAU_HD void adj_rnea(const ModelView<S, D>& m, const S* v, const S* vdot, const Workspace<S, D>& ws, S* adj_v,
                        S* adj_vdot, const S* tau_adj, AdjWorkspace<S, D>& adj) {
  const Motion<S> a_world{{0, 0, 0}, {-m.gravity[0], -m.gravity[1], -m.gravity[2]}};
  const Motion<S> zero{{0, 0, 0}, {0, 0, 0}};
  // adjoint of the backward pass, parents first: f_i (total) feeds τ_i and f_λ, so
  // f̄_i = X f̄_λ + Σ_k τ̄_k S_k
  down_tree(m, [&](int i) MOREAU_LAMBDA {
    const int par = m.body_parent[i], d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    adj.f[i] = {{0, 0, 0}, {0, 0, 0}};
    if (par >= 0) adj_apply_t(ws.Xup[i], ws.f[i], adj.Xup[i], adj.f[i], adj.f[par]);
    for (int k = 0; k < n; ++k) {  // τ_k = f · S_k
      const S t = tau_adj[d + k];
      const Motion<S>& Sk = ws.Sdof[d + k];
      adj.f[i].n += t * Sk.w;
      adj.f[i].f += t * Sk.v;
      adj.Sdof[d + k].w += t * ws.f[i].n;
      adj.Sdof[d + k].v += t * ws.f[i].f;
    }
  });
  // adjoint of the forward pass, children first (adj.f now holds the adjoint of each body's
  // own f_i = I a_i + v_i ×* I v_i). A body gathers ā and v̄ from its children, which leave in
  // adj.acc and adj.vel what they pass up (X_cᵀ ā_c and X_cᵀ v̄_c, the adjoints of their parent terms).
  up_tree(m, [&](int i) MOREAU_LAMBDA {
    const int par = m.body_parent[i], d = m.jnt_dofadr[i], n = joint_nv(m.jnt_type[i]);
    const Transform<S>& X = ws.Xup[i];
    const Inertia<S>& I = ws.I[i];
    const Motion<S>& vel = ws.vel[i];
    Motion<S> adj_acc = sum_children(m, i, zero, [&](int c) MOREAU_LAMBDA { return adj.acc[c]; });
    Motion<S> adj_vel = sum_children(m, i, zero, [&](int c) MOREAU_LAMBDA { return adj.vel[c]; });
    Motion<S> vJ = zero;
    for (int k = 0; k < n; ++k) vJ += v[d + k] * ws.Sdof[d + k];
    // f_i = I a_i + v_i ×* (I v_i)
    // body inertias are constant in body coordinates but the root's (added_base_mass)
    Inertia<S>* adj_I = i == 0 ? &adj.I[0] : nullptr;
    adj_mul_inertia(I, ws.acc[i], adj_I, adj_acc, adj.f[i]);
    Force<S> adj_Iv{{0, 0, 0}, {0, 0, 0}};
    adj_cross_f(vel, I * vel, adj_vel, adj_Iv, adj.f[i]);
    adj_mul_inertia(I, vel, adj_I, adj_vel, adj_Iv);
    // a_i = X a_λ + a_J + v_i × v_J
    Motion<S> adj_vJ = zero;
    adj_cross_m(vel, vJ, adj_vel, adj_vJ, adj_acc);
    Motion<S> adj_parent_acc = zero;
    adj_apply(X, par < 0 ? a_world : ws.acc[par], adj.Xup[i], adj_parent_acc, adj_acc);
    // a_J = c_J(v, X) + Σ S_k v̇_k
    adj_joint_bias(m, i, v, X, adj_v, adj.Xup[i], adj_acc);
    // v_i = X v_λ + v_J
    adj_vJ += adj_vel;
    Motion<S> adj_parent_vel = zero;
    if (par >= 0) adj_apply(X, ws.vel[par], adj.Xup[i], adj_parent_vel, adj_vel);
    for (int k = 0; k < n; ++k) {  // v_J = Σ S_k v_k, a_J ∋ Σ S_k v̇_k
      adj_v[d + k] += inner(adj_vJ, ws.Sdof[d + k]);
      adj.Sdof[d + k] += v[d + k] * adj_vJ;
      if (adj_vdot) adj_vdot[d + k] += inner(adj_acc, ws.Sdof[d + k]);
      if (vdot) adj.Sdof[d + k] += vdot[d + k] * adj_acc;
    }
    adj.acc[i] = adj_parent_acc;  // what the parent gathers
    adj.vel[i] = adj_parent_vel;
  });
}

// H(q) by the composite-rigid-body algorithm, its tree-sparse lower triangle, plus the armature
// (times armature_scale) and `diag_extra[k]` on the diagonal (may be null). Needs
// forward_kinematics and body_inertias.
template <class S, class D>
MOREAU_HD void crba(const ModelView<S, D>& m, const S* diag_extra, Workspace<S, D>& ws, S armature_scale = S(1)) {
  // backward pass over bodies: I^c_i = I_i + Σ_c X_cᵀ I^c_c X_c over its children c
  up_tree(m, [&](int i) MOREAU_LAMBDA {
    ws.Ic[i] = sum_children(m, i, ws.I[i], [&](int b) MOREAU_LAMBDA { return transform_t(ws.Xup[b], ws.Ic[b]); });
  });
  for_each(m, m.nbody, [&](int i) MOREAU_LAMBDA {  // the rows of body i's dofs
    const int di = m.jnt_dofadr[i], ni = joint_nv(m.jnt_type[i]);
    for (int a = di; a < di + ni; ++a) {
      // F = I^c_i S_a, carried to each ancestor j: H_ab = F · S_b for the dofs b of j (and of i up to a)
      S* Ha = ws.H + m.dof_Madr[a];
      Force<S> F = ws.Ic[i] * ws.Sdof[a];
      for (int b = di; b <= a; ++b) Ha[m.dof_depth[b]] = dot(F, ws.Sdof[b]);
      for (int j = i; m.body_parent[j] >= 0;) {
        F = apply_t(ws.Xup[j], F);
        j = m.body_parent[j];
        const int dj = m.jnt_dofadr[j], nj = joint_nv(m.jnt_type[j]);
        for (int b = dj; b < dj + nj; ++b) Ha[m.dof_depth[b]] = dot(F, ws.Sdof[b]);
      }
    }
  });
  for_each(m, m.nv, [&](int k) MOREAU_LAMBDA {
    ws.H[m.dof_Madr[k] + m.dof_depth[k]] += armature_scale * m.dof_armature[k] + (diag_extra ? diag_extra[k] : S(0));
  });
}

// Adjoint of crba for H̄ in H's sparse storage: H̄_kj there is the gradient of the one value
// H_kj = H_jk stands for (the sum of a full H̄'s two entries off the diagonal; the constant
// diagonal terms carry no gradient). Recomputes each F chain from ws.Ic (left by crba) and
// reverses it. Accumulates into aw.Xup, aw.Sdof and aw.I. On one lane of a team: each chain
// adds into every ancestor's S̄ and X̄, and a gather that lets the chains run side by side costs
// more than it saves (docs/gpu.md, "Order of work").
template <class S, class D>
MOREAU_HD void adj_crba(const ModelView<S, D>& m, const Workspace<S, D>& ws, const S* adj_H, AdjWorkspace<S, D>& aw) {
  single(m, [&]() MOREAU_LAMBDA {
    Inertia<S> adj_Ic[D::kBodies];
    for (int i = 0; i < m.nbody; ++i) adj_Ic[i] = {S(0), {0, 0, 0}, {0, 0, 0, 0, 0, 0}};
    Force<S> F[D::kBodies], adj_F[D::kBodies];
    int chain[D::kBodies];
    for (int i = 0; i < m.nbody; ++i) {
      const int di = m.jnt_dofadr[i], ni = joint_nv(m.jnt_type[i]);
      for (int a = di; a < di + ni; ++a) {
        // the chain F_0 = I^c_i S_a, F_{l+1} = Xᵀ_{j_l} F_l up to the root
        const S* adj_Ha = adj_H + m.dof_Madr[a];
        int L = 0;
        chain[0] = i;
        F[0] = ws.Ic[i] * ws.Sdof[a];
        for (int j = i; m.body_parent[j] >= 0; j = m.body_parent[j]) {
          F[L + 1] = apply_t(ws.Xup[j], F[L]);
          chain[++L] = m.body_parent[j];
        }
        for (int l = L; l >= 0; --l) {
          adj_F[l] = {{0, 0, 0}, {0, 0, 0}};
          const int j = chain[l], dj = m.jnt_dofadr[j], end = l == 0 ? a + 1 : dj + joint_nv(m.jnt_type[j]);
          for (int b = dj; b < end; ++b) {  // H_ab = F_l · S_b
            const S w = adj_Ha[m.dof_depth[b]];
            adj_F[l].n += w * ws.Sdof[b].w;
            adj_F[l].f += w * ws.Sdof[b].v;
            aw.Sdof[b].w += w * F[l].n;
            aw.Sdof[b].v += w * F[l].f;
          }
          if (l < L) adj_apply_t(ws.Xup[chain[l]], F[l], aw.Xup[chain[l]], adj_F[l], adj_F[l + 1]);
        }
        adj_mul_inertia(ws.Ic[i], ws.Sdof[a], &adj_Ic[i], aw.Sdof[a], adj_F[0]);
      }
    }
    // I^c_λ += Xᵀ I^c_i X (children last in the forward): parents first
    for (int i = 0; i < m.nbody; ++i) {
      const int par = m.body_parent[i];
      if (par >= 0) adj_transform_t(ws.Xup[i], ws.Ic[i], aw.Xup[i], adj_Ic[i], adj_Ic[par]);
      aw.I[i] += adj_Ic[i];
    }
  });
}

// On a team of lanes the factorisation and its solves run by the dofs' branches
// (ModelArrays::branch_first, branch_adr, branch_dof): row k's elimination changes the rows of k's
// ancestors, which are in k's branch or in the roots' block. So each branch eliminates its own
// rows (a lane each), the roots' rows then take the branches' updates (a lane per row, in
// descending k as the serial loop gives them), and the roots' block goes last. Every entry sees
// the serial loop's operations in the serial loop's order: the same bits on any team. On one
// lane the whole tree is the roots' block: the serial loop itself (the split costs time there).
template <class Team, class S, class D>
MOREAU_HD int roots_end(const ModelView<S, D>& m) {
  return one_lane<Team>() ? m.nv : m.branch_first;
}
template <class Team, class S, class D>
MOREAU_HD int branches(const ModelView<S, D>& m) {
  return one_lane<Team>() ? 0 : m.nbranch;
}

// Is dof k below dof i (i at depth s)?
template <class S, class D>
MOREAU_HD bool dof_below(const ModelView<S, D>& m, int k, int i, int s) {
  return m.dof_depth[k] > s && m.M_colind[m.dof_Madr[k] + s] == i;
}
// Branch b's root (its first dof: the last in branch_dof's descending order).
template <class S, class D>
MOREAU_HD int branch_root(const ModelView<S, D>& m, int b) {
  return m.branch_dof[m.branch_adr[b + 1] - 1];
}

// f(k) for every dof k of the branches below dof i of the roots' block (i at depth s), in
// descending k: the order in which the serial elimination reaches row i.
template <class S, class D, class F>
MOREAU_HD void for_branch_dofs_below(const ModelView<S, D>& m, int nbranch, int i, int s, F&& f) {
  for (int b = 0; b < nbranch; ++b)
    if (dof_below(m, branch_root(m, b), i, s))
      for (int e = m.branch_adr[b]; e < m.branch_adr[b + 1]; ++e) f(m.branch_dof[e]);
}

// Row i (dof depth s) after the elimination of row k below it: H_ij −= H_ki H_kj / d_k, j ≤ s.
template <class S>
MOREAU_HD void ltl_update(S* Li, const S* Lk, int s, S inv_dk) {
  const S lki = Lk[s] * inv_dk;
  for (int t = 0; t <= s; ++t) Li[t] -= lki * Lk[t];
}
// Row k's elimination on the rows of its ancestors at depths s0 .. d_k − 1, deepest first;
// returns 1 / d_k.
template <class S, class D>
MOREAU_HD S ltl_eliminate(const ModelView<S, D>& m, S* H, int k, int s0) {
  const S* Lk = H + m.dof_Madr[k];
  const int* col = m.M_colind + m.dof_Madr[k];
  const S inv = S(1) / Lk[m.dof_depth[k]];
  for (int s = m.dof_depth[k] - 1; s >= s0; --s) ltl_update(H + m.dof_Madr[col[s]], Lk, s, inv);
  return inv;
}

// In place H = Lᵀ L in the sparse storage (L_kj ≠ 0 only for j an ancestor dof of k: no
// fill-in), the diagonal holding 1 / L_kk so that the solves multiply (as MuJoCo keeps D⁻¹).
// False if H is not positive definite. The elimination runs as Lᵀ D L with a unit L (pivot d_k,
// H_ij −= H_ki H_kj / d_k, from the last row up), which keeps the square roots off its chain of
// dependent rows; a last pass scales each row by 1 / √d_k (L_kj = H_kj / √d_k, L_kk = √d_k).
template <class S, class D>
MOREAU_HD MaskOf<S> ltl_factor(const ModelView<S, D>& m, S* H) {
  using Team = TeamFor<D>;
  const int first = roots_end<Team>(m), nbranch = branches<Team>(m);
  TeamArray<D, S, D::kNv> inv;  // 1 / d_k of the branches' dofs
  TeamArray<D, MaskOf<S>, 1> ok;
  for_each(m, nbranch, [&](int b) MOREAU_LAMBDA {
    const int s0 = m.dof_depth[branch_root(m, b)];
    for (int e = m.branch_adr[b]; e < m.branch_adr[b + 1]; ++e) inv[m.branch_dof[e]] = ltl_eliminate(m, H, m.branch_dof[e], s0);
  });
  for_each(m, nbranch > 0 ? first : 0, [&](int i) MOREAU_LAMBDA {
    const int s = m.dof_depth[i];
    for_branch_dofs_below(m, nbranch, i, s, [&](int k) MOREAU_LAMBDA { ltl_update(H + m.dof_Madr[i], H + m.dof_Madr[k], s, inv[k]); });
  });
  single(m, [&]() MOREAU_LAMBDA {
    for (int k = first - 1; k >= 0; --k) ltl_eliminate(m, H, k, 0);
    MaskOf<S> positive = S(1) > S(0);  // every pivot d_k > 0 (false for NaN)
    for (int k = 0; k < m.nv; ++k) positive = positive & (H[m.dof_Madr[k] + m.dof_depth[k]] > S(0));
    ok[0] = positive;
  });
  for_each(m, m.nv, [&](int k) MOREAU_LAMBDA {
    S* Lk = H + m.dof_Madr[k];
    const int dk = m.dof_depth[k];
    const S inv_sqrt = S(1) / msqrt(Lk[dk]);
    Lk[dk] = inv_sqrt;
    for (int t = 0; t < dk; ++t) Lk[t] *= inv_sqrt;
  });
  return ok[0];
}

// The solves take the team as their first template argument: SerialTeam (one lane, the
// default) where a `single` calls them, the size class's team (TeamFor<D>) where every lane does.

// Row i's step of x ← L⁻ᵀ x: x_i ← x_i / L_ii, then x_j −= L_ij x_i for i's ancestors j at depths
// s0 .. d_i − 1.
template <class S, class D>
MOREAU_HD void ltl_solve_t_row(const ModelView<S, D>& m, const S* L, S* x, int i, int s0) {
  const S* Li = L + m.dof_Madr[i];
  const int* col = m.M_colind + m.dof_Madr[i];
  const int dep = m.dof_depth[i];
  const S xi = x[i] *= Li[dep];  // 1 / L_ii
  for (int t = dep - 1; t >= s0; --t) x[col[t]] -= Li[t] * xi;
}

// x ← L⁻ᵀ x (solves Lᵀ y = x), from the leaves up.
template <class Team = SerialTeam, class S, class D>
MOREAU_HD void ltl_solve_t(const ModelView<S, D>& m, const S* L, S* x) {
  const int first = roots_end<Team>(m), nbranch = branches<Team>(m);
  Team::for_each(nbranch, [&](int b) MOREAU_LAMBDA {
    const int s0 = m.dof_depth[branch_root(m, b)];
    for (int e = m.branch_adr[b]; e < m.branch_adr[b + 1]; ++e) ltl_solve_t_row(m, L, x, m.branch_dof[e], s0);
  });
  Team::for_each(nbranch > 0 ? first : 0, [&](int i) MOREAU_LAMBDA {  // the branches' terms, descending k
    const int s = m.dof_depth[i];
    S xi = x[i];
    for_branch_dofs_below(m, nbranch, i, s, [&](int k) MOREAU_LAMBDA { xi -= L[m.dof_Madr[k] + s] * x[k]; });
    x[i] = xi;
  });
  Team::single([&]() MOREAU_LAMBDA {
    for (int i = first - 1; i >= 0; --i) ltl_solve_t_row(m, L, x, i, 0);
  });
}

// Row i's step of x ← L⁻¹ x: x_i ← (x_i − Σ_j L_ij x_j) / L_ii over i's ancestors j.
template <class S, class D>
MOREAU_HD void ltl_solve_l_row(const ModelView<S, D>& m, const S* L, S* x, int i) {
  const S* Li = L + m.dof_Madr[i];
  const int* col = m.M_colind + m.dof_Madr[i];
  const int dep = m.dof_depth[i];
  S xi = x[i];
  for (int t = dep - 1; t >= 0; --t) xi -= Li[t] * x[col[t]];
  x[i] = xi * Li[dep];  // 1 / L_ii
}

// x ← L⁻¹ x (solves L y = x), from the root down: the roots' block, then each branch.
template <class Team = SerialTeam, class S, class D>
MOREAU_HD void ltl_solve_l(const ModelView<S, D>& m, const S* L, S* x) {
  const int first = roots_end<Team>(m), nbranch = branches<Team>(m);
  Team::single([&]() MOREAU_LAMBDA {
    for (int i = 0; i < first; ++i) ltl_solve_l_row(m, L, x, i);
  });
  Team::for_each(nbranch, [&](int b) MOREAU_LAMBDA {
    for (int e = m.branch_adr[b + 1] - 1; e >= m.branch_adr[b]; --e) ltl_solve_l_row(m, L, x, m.branch_dof[e]);
  });
}

// x ← H⁻¹ x = L⁻¹ L⁻ᵀ x with H = Lᵀ L from ltl_factor.
template <class Team = SerialTeam, class S, class D>
MOREAU_HD void ltl_solve(const ModelView<S, D>& m, const S* L, S* x) {
  ltl_solve_t<Team>(m, L, x);
  ltl_solve_l<Team>(m, L, x);
}

}  // namespace kern
}  // namespace moreau
