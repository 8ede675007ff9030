// moreau — single-environment dynamics in double precision on the host.
// The same kernels/ functions the batched backends run; for tests, tools and analysis.
#pragma once

#include "moreau/model.h"

namespace moreau {

// H(q): joint-space mass matrix including armature, (nv x nv) row-major, full.
void mass_matrix(const Model& model, const double* q, double* H_out);
// b(q, v) = C(q, v) v + g(q): Coriolis, centrifugal and gravity generalised forces (nv).
// Joint damping is not included (it enters the step as -damping * v).
void bias_forces(const Model& model, const double* q, const double* v, double* b_out);
// Passive joint forces (nv): damping −D v and joint springs −k (q − q_spring) (MuJoCo's
// qfrc_passive without its fluid and gravity-compensation terms). The step takes the damping
// implicitly and the springs at the midpoint q_M.
void passive_forces(const Model& model, const double* q, const double* v, double* tau_out);
// Kinetic energy ½ vᵀ H v (armature included) and potential energy: gravity's and the joint
// springs' ½ k (q − q_spring)².
double kinetic_energy(const Model& model, const double* q, const double* v);
double potential_energy(const Model& model, const double* q);
// World pose of every body frame: pos (nbody x 3), quat (nbody x 4, w x y z).
void body_poses(const Model& model, const double* q, double* pos_out, double* quat_out);
// World position of the centre of mass of the whole robot.
void center_of_mass(const Model& model, const double* q, double* com_out);
// Signed gap of every contact point above the ground (ncon), as the contact stage computes it.
void contact_gaps(const Model& model, const double* q, double* gaps_out);
// The smallest of contact_gaps (+infinity for a model without contact points).
double lowest_gap(const Model& model, const double* q);
// Spatial momentum about the world origin in world coordinates: (angular 3, linear 3).
void momentum(const Model& model, const double* q, const double* v, double* h_out);

}  // namespace moreau
