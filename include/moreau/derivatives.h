// moreau — analytic derivatives (docs/gradients.md): of inverse dynamics (RNEA), of forward
// dynamics, and the transition Jacobians of a whole control step.
//
// Matrices are row-major. "Raw" derivatives are with respect to the coordinates of q as
// stored (quaternions as 4 numbers, their unit norm ignored); "tangent" derivatives are with
// respect to δ ∈ R^nv in q ⊕ δ, moreau's own ⊕ (kern::integrate, the one the step uses):
//   revolute/prismatic: q + δ;  ball: quat ⊗ exp(δ) (δ in the body frame);
//   free: position + δ_lin (WORLD frame, like the free joint's v), quat ⊗ exp(δ_ang) (BODY).
// Tangent = raw · ∂(q ⊕ δ)/∂δ at δ = 0 (tangent_map). This is MuJoCo's convention. Pinocchio's
// free flyer differs: its v, a, τ and the translation part of δ are in the base BODY frame
// (docs/gradients.md, "Pinocchio" gives the mapping; tests/python/test_pinocchio.py applies it).
#pragma once

#include <cstdint>

#include "moreau/model.h"
#include "moreau/simulator.h"

namespace moreau {

// ∂(q ⊕ δ)/∂δ at δ = 0, (nq x nv). q must have unit quaternions.
void tangent_map(const Model& model, const double* q, double* dq_ddelta);

// τ = RNEA(q, v, a) = M(q) a + b(q, v) with M the rigid-body mass matrix WITHOUT armature
// and b = bias_forces (gravity, Coriolis; no damping). dtau_dq (nv x nq, raw q) and dtau_dv
// (nv x nv), each of which may be null; a may be null (= 0); tau_out (nv) may be null.
// One reverse sweep (kern::adj_rnea + adj_forward_kinematics) per row.
void rnea_derivatives(const Model& model, const double* q, const double* v, const double* a, double* dtau_dq,
                      double* dtau_dv, double* tau_out = nullptr);
// The same with dtau_dq_tangent (nv x nv) = dtau_dq · tangent_map(q).
void rnea_derivatives_tangent(const Model& model, const double* q, const double* v, const double* a,
                              double* dtau_dq_tangent, double* dtau_dv, double* tau_out = nullptr);

// a = H⁻¹ (τ − b(q, v)) with H = mass_matrix (armature included; no damping, no contact):
// da_dq = −H⁻¹ ∂RNEA/∂q (nv x nq, raw q), da_dv = −H⁻¹ ∂RNEA/∂v (nv x nv), da_dtau = H⁻¹
// (nv x nv), all at (q, v, a). Any output may be null; a_out (nv) may be null. Throws Error if
// H is not positive definite.
void forward_dynamics_derivatives(const Model& model, const double* q, const double* v, const double* tau,
                                  double* da_dq, double* da_dv, double* da_dtau, double* a_out = nullptr);
// The same with da_dq_tangent (nv x nv) = da_dq · tangent_map(q).
void forward_dynamics_derivatives_tangent(const Model& model, const double* q, const double* v, const double* tau,
                                          double* da_dq_tangent, double* da_dv, double* da_dtau,
                                          double* a_out = nullptr);

// Transition Jacobians of one control step (Simulator::step_pure) of every environment, with
// N = nq + nv, in raw coordinates of x = (q, v):
//   A = ∂(q_out, v_out)/∂(q_in, v_in)  (n_env x N x N),  B = ∂(q_out, v_out)/∂action (n_env x N x nu),
// environment-major blocks, each row-major: A[e][r][c] at e N² + r N + c, B[e][r][c] at
// e N nu + r nu + c. q_in, v_in, action are laid out like Simulator's buffers (element k of
// environment e at k n_env + e). All buffers on the simulator's device in its dtype; B may be
// null; status (n_env, int32) is the OR of the statuses of the adjoint rows (rows of an
// environment with a status are not meaningful). Computed by one step_adjoint_rows call with the
// N unit adjoints as rows (one recompute of the step per environment on the CPU; one per row on
// CUDA), the seeds and the assembly of A and B on the host.
void transition_jacobians(Simulator& sim, const void* q_in, const void* v_in, const void* action, void* A, void* B,
                          int32_t* status);

// The same in tangent coordinates (like MuJoCo's mjd_transitionFD), with x = (δq, v) of
// size 2 nv: A (n_env x 2nv x 2nv), B (n_env x 2nv x nu), same block layout. The output
// tangent is δq_out = q_out ⊖ q̄_out, whose derivative at the nominal q̄_out is the
// pseudo-inverse of tangent_map(q̄_out) (for a quaternion 2 [0 I] L(q̄)ᵀ); the input side
// multiplies by tangent_map(q_in). Quaternions in q_in must be unit.
void transition_jacobians_tangent(Simulator& sim, const void* q_in, const void* v_in, const void* action, void* A,
                                  void* B, int32_t* status);

}  // namespace moreau
