// moreau kernels — what a kernel sees of the model, the per-environment parameters and the
// batched state buffers. Plain pointers: the host fills them for CPU or device memory.
#pragma once

#include "kernels/config.h"

namespace moreau {
namespace kern {

// Joint types, as moreau::JointType.
enum : int { kJointFree = 0, kJointBall = 1, kJointRevolute = 2, kJointPrismatic = 3 };
// Actuator types, as moreau::ActuatorType.
enum : int { kActPosition = 0, kActMotor = 1 };
// Contact modes, as moreau::ContactMode.
enum : int { kContactNone = 0, kContactHard = 1, kContactSoft = 2, kContactSmooth = 3, kContactHardSmoothGrad = 4 };
// Status bits, as moreau::Status.
enum : int {
  kStatusNanState = 1,
  kStatusNanAction = 2,
  kStatusSingularMass = 4,
  kStatusSolverNotConverged = 8,
  kStatusNanGradient = 16,
  kStatusNoGradient = 32,
  kStatusContactsDropped = 64
};
// Bits that freeze an environment (it is not stepped again until reset). The others are
// warnings: the environment keeps stepping and the bit stays until reset.
enum : int { kStatusFatal = kStatusNanState | kStatusNanAction | kStatusSingularMass };

// The compiled model in scalar S (field meanings: include/moreau/model.h).
template <class S>
struct ModelArrays {
  int nq, nv, nu, nbody, ncon, npair;
  int nM;                     // entries of the sparse mass matrix (dof_Madr)
  int nchain;                 // dofs on the longest root-to-dof path (1 + max dof_depth)
  int decimation;
  S timestep;
  S gravity[3];
  const int* body_parent;     // (nbody)
  const S* body_pos;          // (nbody x 3)
  const S* body_quat;         // (nbody x 4)
  const S* body_mass;         // (nbody)
  const S* body_com;          // (nbody x 3)
  const S* body_inertia;      // (nbody x 6)
  // derived when packed, for speed
  const S* body_rot;          // (nbody x 9)  E_tree = R(body_quat)ᵀ, row-major
  const S* body_sinertia;     // (nbody x 10) spatial inertia about the body origin: m, h = m c, I_O (6)
  // the tree by depth and each body's children, derived when packed (kernels/team.h)
  int nlevel;                 // 1 + the deepest body's depth
  const int* level_adr;       // (nlevel + 1) level_body[level_adr[l] .. level_adr[l + 1]) are the bodies of depth l
  const int* level_body;      // (nbody) the bodies by depth, then index
  const int* child_adr;       // (nbody + 1) child_body[child_adr[i] .. child_adr[i + 1]) are body i's children
  const int* child_body;      // (nbody − roots) each body's children, by descending index
  // the dofs' branches, derived when packed (kernels/dynamics.h, ltl_factor): dofs from
  // branch_first on make subtrees that share no row of the mass matrix's factor
  int branch_first;           // the roots' block: dofs 0 .. branch_first − 1
  int nbranch;
  const int* branch_adr;      // (nbranch + 1) branch b's dofs: branch_dof[branch_adr[b] .. branch_adr[b + 1])
  const int* branch_dof;      // (nv − branch_first) the branches by descending index, each one's dofs descending
  const int* jnt_type;        // (nbody)
  const int* jnt_qposadr;     // (nbody)
  const int* jnt_dofadr;      // (nbody)
  const S* jnt_axis;          // (nbody x 3)
  const S* jnt_pos;           // (nbody x 3)
  const S* jnt_stiffness;     // (nbody) joint spring k (revolute, prismatic; 0: none)
  const S* jnt_springref;     // (nbody) its rest position
  int has_springs;            // any jnt_stiffness ≠ 0
  const int* jnt_limited;     // (nbody) position limits enforced (revolute, prismatic)
  const S* jnt_range;         // (nbody x 2)
  int njrow;                  // joint constraint rows a solve may hold: limited 1-dof joints + dofs with friction loss
  const int* dof_depth;       // (nv)
  const int* dof_Madr;        // (nv)
  const int* M_colind;        // (nM)
  const S* dof_damping;       // (nv)
  const S* dof_armature;      // (nv)
  const S* dof_frictionloss;  // (nv) dry-friction bound [N m or N]
  const S* qpos0;             // (nq)
  const int* actuator_type;   // (nu)
  const int* actuator_dof;    // (nu)
  const int* actuator_qposadr;  // (nu)
  const S* actuator_gear;     // (nu)
  const int* actuator_ctrllimited;   // (nu)
  const S* actuator_ctrlrange;       // (nu x 2)
  const int* actuator_forcelimited;  // (nu)
  const S* actuator_forcerange;      // (nu x 2)
  const S* actuator_peakforce;       // (nu)
  const S* actuator_maxvel;          // (nu)
  const int* con_body;        // (ncon)
  const S* con_pos;           // (ncon x 3)
  const S* con_radius;        // (ncon)
  const int* pair_con;        // (npair x 2) two contact points of different bodies
  int hfield_nx, hfield_ny;   // the ground's heightfield samples (0: the plane z = 0)
  S hfield_x0, hfield_y0;     // sample (0, 0) [m]
  S hfield_dx, hfield_dy;     // spacing [m]
  const S* hfield_height;     // (ny x nx) [m]
};

// The model as the kernels see it: its arrays and the size class D of their scratch, which it
// must fit (fits<D>).
template <class S, class D = MaxDims>
struct ModelView : ModelArrays<S> {
  using Dims = D;
};

// (a pair of points takes an active slot as a point does: kActive holds every point and pair;
// `rolling`: room for rolling friction's rows)
template <class D, class S>
MOREAU_HD bool fits(const ModelArrays<S>& m, bool rolling = false) {
  return m.nbody <= D::kBodies && m.nv <= D::kNv && m.nq <= D::kNq && m.nu <= D::kNu &&
         m.ncon + m.npair <= D::kContacts && (m.npair == 0 || D::kPairBlocks > 0) && m.nM <= D::kNM &&
         m.nchain <= D::kChain && m.njrow <= D::kJointRows && (!rolling || D::kTorque == 3);
}

// Calls f(view) with the model's view in the smallest size class it fits, one with room for
// rolling friction's rows where `rolling` (a simulator with contact condim 6).
template <class S, class F>
void with_dims(const ModelArrays<S>& m, bool rolling, F&& f) {
  if (fits<QuadrupedDims>(m, rolling)) {
    f(ModelView<S, QuadrupedDims>{m});
  } else if (fits<SmallDims>(m, rolling)) {
    f(ModelView<S, SmallDims>{m});
  } else {
    f(ModelView<S, MaxDims>{m});
  }
}

// A per-environment parameter: `len` rows (1 or n_env) of `width` values, element k of
// row r at data[k * len + r]; environment e reads row e, or row 0 when shared (len 1; a
// branch the whole warp takes alike, not an integer modulo).
template <class S>
struct Param {
  const S* data;
  int len;
  MOREAU_HD S get(int env, int k = 0) const { return len == 1 ? data[k] : data[k * len + env]; }
};

template <class S>
struct Params {
  Param<S> kp;               // (len x nu) position-servo gains
  Param<S> kd;               // (len x nu)
  Param<S> added_base_mass;  // (len x 1) added at the root body's centre of mass
  Param<S> friction;         // (len x 1) Coulomb coefficient μ
  Param<S> contact_kn;       // (len x 1) soft: normal stiffness [N/m]
  Param<S> contact_kd;       // (len x 1) soft: normal damping [N s/m]; < 0: from contact_zeta
  Param<S> contact_zeta;     // (len x 1) soft: damping ratio of the contact's effective mass
  Param<S> smooth_k;         // (len x 1) smooth: sigmoid scale k [1/m]
  Param<S> smooth_gmax;      // (len x 1) smooth: contacts with gap ≤ g_max enter [m]
  Param<S> motor_strength;   // (len x nu) scale of each actuator's force, after its limits
  Param<S> frictionloss_scale;  // (len x 1) scale of the model's joint friction loss
  Param<S> spin_friction;       // (len x 1) torsional friction μ_spin [m]: |τ_n| ≤ μ_spin f_n at a contact
  Param<S> rolling_friction;    // (len x 1) rolling friction μ_roll [m]: |τ_t1|, |τ_t2| ≤ μ_roll f_n at a contact
  Param<S> damping_scale;       // (len x 1) scale of the model's joint damping D
  Param<S> armature_scale;      // (len x 1) scale of the model's joint armature
  Param<S> terrain_x;           // (len x 1) the environment's origin in the heightfield's frame [m]
  Param<S> terrain_y;           // (len x 1)
};

// Per-simulator contact settings.
template <class S>
struct ContactSettings {
  int mode;            // kContact*
  int max_iterations;  // projected Gauss–Seidel cap (hard, smooth)
  S tolerance;         // stop when no impulse changes by more than this, in velocity units [m/s]
  int speculative;     // hard: a contact within reach this step may not end it penetrating
  int substeps;        // physics substeps per step (soft contact with stiff springs)
};

// Batched state: element k of environment e of a field at [k * n_env + e].
template <class S>
struct Batch {
  int n_env;
  S* q;            // (n_env x nq)
  S* v;            // (n_env x nv)
  S* action;       // (n_env x nu)
  int* status;     // (n_env)
  S* time;         // (n_env)
  // contact information of the last physics step (may be null when ncon == 0)
  S* con_gap;       // (n_env x ncon) signed distance [m], negative = penetration
  S* con_impulse;   // (n_env x ncon) normal impulse applied over the step [N s]
  int* con_active;  // (n_env x ncon) 1 if touching (gap ≤ 0 or a normal impulse acts)
  int* solver_iterations;  // (n_env)
  S* solver_residual;      // (n_env)
};

}  // namespace kern
}  // namespace moreau
