// moreau — compile-time capacity of the kernels (per-environment scratch is fixed-size).
// compile() rejects a model that exceeds any of them.
#pragma once

namespace moreau {

constexpr int kMaxBodies = 32;
constexpr int kMaxNv = 40;
constexpr int kMaxNq = 48;
constexpr int kMaxNu = 32;
constexpr int kMaxContacts = 256;
constexpr int kMaxActive = 16;  // contacts a solve holds at once (a model may have more points)
constexpr int kMaxJointRows = 48;  // joint constraint rows: limited revolute/prismatic joints + dofs with friction loss

// A size class of the kernels' scratch: every per-environment array is sized by it, not by the
// maxima. A backend runs a model with the smallest class it fits (kern::with_dims). NM bounds the
// mass matrix's tree-sparse entries (Model::nM; a chain of Nv dofs has them all, Nv (Nv + 1) / 2),
// Chain the dofs on a root-to-dof path (Model::nchain), the length of a contact's Jacobian rows;
// JointRows the joint constraint rows (joint_rows(Model)), Torque the torque rows a contact may
// have: 1 (spin friction) or 3 (spin and rolling friction; a simulator with contact condim 6),
// Pairs whether contacts between two of the robot's bodies (pairs) may be active (1) or not (0).
// A solve holds 3 kActive + kJointRows rows, and Torque more per contact; a pair's second half
// (its second body's chain) takes one of kPairBlocks blocks of kPairRows rows beside them.
template <int Bodies, int Nv, int Nq, int Nu, int Contacts, int NM = Nv * (Nv + 1) / 2, int Chain = Nv,
          int JointRows = kMaxJointRows, int Torque = 3, int Pairs = 1>
struct Dims {
  static constexpr int kBodies = Bodies, kNv = Nv, kNq = Nq, kNu = Nu, kContacts = Contacts, kNM = NM;
  static constexpr int kChain = Chain, kJointRows = JointRows, kTorque = Torque;
  static constexpr int kActive = Contacts < kMaxActive ? Contacts : kMaxActive;
  static constexpr int kBlocks = (1 + Torque) * kActive + kJointRows, kRows = (3 + Torque) * kActive + kJointRows;
  static constexpr int kPairBlocks = Pairs ? kActive : 0, kPairRows = 3 * kPairBlocks;
};
// Every model compile() accepts.
using MaxDims = Dims<kMaxBodies, kMaxNv, kMaxNq, kMaxNu, kMaxContacts>;
// A quadruped with a free base and four 3-dof legs (ANYmal C, Go1: nM = 21 + 4 (7 + 8 + 9) = 117,
// chains of 6 + 3 dofs), its four feet and a limit on each leg joint: ANYmal C as shipped, sized
// to it, with spin friction but no rolling friction and no pairs (the solve's 28 rows; the CUDA
// kernels' scratch per thread grows with the square of the rows: docs/gpu.md).
using QuadrupedDims = Dims<13, 18, 19, 12, 4, 117, 9, 12, 1, 0>;
// The same quadruped with 8 contact points at most (knees or a box's corners), a limit and a
// friction loss on each leg joint, and pairs; it also holds the small models (cube, cart-pole,
// pendulums).
using SmallDims = Dims<13, 18, 19, 12, 8, 117, 9, 24>;

}  // namespace moreau
