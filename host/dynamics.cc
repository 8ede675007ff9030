// moreau host — single-environment dynamics in double, through the kernels/ functions.
#include "moreau/dynamics.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "host/arg_check.h"
#include "host/backend.h"
#include "kernels/step.h"

namespace moreau {
namespace {

// The model packed in double with its kernel view and a workspace, at configuration q.
struct HostDynamics {
  PackedModel<double> packed;
  kern::ModelView<double> m;
  kern::Workspace<double> ws;
  HostDynamics(const Model& model, const double* q) : packed(model), m(packed.view(packed.reals.data(), packed.ints.data())) {
    kern::body_inertias(m, 0.0, ws);
    kern::forward_kinematics(m, q, ws);
  }
  // World → body transform of every body: X0_i = Xup_i X0_λ.
  void world_transforms(kern::Transform<double>* X0) const {
    for (int i = 0; i < m.nbody; ++i) {
      const int par = m.body_parent[i];
      X0[i] = par < 0 ? ws.Xup[i] : kern::compose(ws.Xup[i], X0[par]);
    }
  }
};

}  // namespace

void mass_matrix(const Model& model, const double* q, double* H_out) {
  require_q("mass_matrix", model, q);
  require(H_out, "mass_matrix", "H_out", model.nv);
  HostDynamics d(model, q);
  kern::crba(d.m, static_cast<const double*>(nullptr), d.ws);
  // the tree-sparse rows (kernels/dynamics.h) into the full symmetric matrix
  const int nv = model.nv;
  std::fill(H_out, H_out + static_cast<size_t>(nv) * nv, 0.0);
  for (int k = 0; k < nv; ++k)
    for (int j = k; j >= 0; j = model.dof_parent[j])
      H_out[k * nv + j] = H_out[j * nv + k] = d.ws.H[model.dof_Madr[k] + model.dof_depth[j]];
}

void bias_forces(const Model& model, const double* q, const double* v, double* b_out) {
  require_qv("bias_forces", model, q, v);
  require(b_out, "bias_forces", "b_out", model.nv);
  HostDynamics d(model, q);
  kern::rnea(d.m, v, static_cast<const double*>(nullptr), d.ws, b_out);
}

void passive_forces(const Model& model, const double* q, const double* v, double* tau_out) {
  require_qv("passive_forces", model, q, v);
  require(tau_out, "passive_forces", "tau_out", model.nv);
  PackedModel<double> packed(model);
  const kern::ModelView<double> m = packed.view(packed.reals.data(), packed.ints.data());
  std::fill(tau_out, tau_out + model.nv, 0.0);
  kern::passive_forces(m, 1.0, q, v, tau_out);
}

double kinetic_energy(const Model& model, const double* q, const double* v) {
  require_qv("kinetic_energy", model, q, v);
  std::vector<double> H(static_cast<size_t>(model.nv) * model.nv);
  mass_matrix(model, q, H.data());
  double e = 0;
  for (int i = 0; i < model.nv; ++i)
    for (int j = 0; j < model.nv; ++j) e += 0.5 * v[i] * H[i * model.nv + j] * v[j];
  return e;
}

double potential_energy(const Model& model, const double* q) {
  require_q("potential_energy", model, q);
  double com[3];
  center_of_mass(model, q, com);
  const double mass = model.total_mass();
  double e = -mass * (model.gravity[0] * com[0] + model.gravity[1] * com[1] + model.gravity[2] * com[2]);
  for (int j = 0; j < model.nbody; ++j) {  // joint springs: ½ k (q − q_spring)²
    if (model.jnt_stiffness[j] == 0) continue;
    const double d = q[model.jnt_qposadr[j]] - model.jnt_springref[j];
    e += 0.5 * model.jnt_stiffness[j] * d * d;
  }
  return e;
}

void body_poses(const Model& model, const double* q, double* pos_out, double* quat_out) {
  require_q("body_poses", model, q);
  require(pos_out, "body_poses", "pos_out", model.nbody);
  require(quat_out, "body_poses", "quat_out", model.nbody);
  HostDynamics d(model, q);
  std::vector<kern::Transform<double>> X0(model.nbody);
  d.world_transforms(X0.data());
  for (int i = 0; i < model.nbody; ++i) {
    for (int k = 0; k < 3; ++k) pos_out[3 * i + k] = X0[i].r[k];
    // R = Eᵀ maps body to world coordinates; quaternion from R (Shepperd's method).
    const kern::Mat3<double> R = kern::transpose(X0[i].E);
    double w, x, y, z;
    const double tr = R(0, 0) + R(1, 1) + R(2, 2);
    if (tr > 0) {
      const double s = 2 * std::sqrt(1 + tr);
      w = s / 4, x = (R(2, 1) - R(1, 2)) / s, y = (R(0, 2) - R(2, 0)) / s, z = (R(1, 0) - R(0, 1)) / s;
    } else if (R(0, 0) > R(1, 1) && R(0, 0) > R(2, 2)) {
      const double s = 2 * std::sqrt(1 + R(0, 0) - R(1, 1) - R(2, 2));
      w = (R(2, 1) - R(1, 2)) / s, x = s / 4, y = (R(0, 1) + R(1, 0)) / s, z = (R(0, 2) + R(2, 0)) / s;
    } else if (R(1, 1) > R(2, 2)) {
      const double s = 2 * std::sqrt(1 + R(1, 1) - R(0, 0) - R(2, 2));
      w = (R(0, 2) - R(2, 0)) / s, x = (R(0, 1) + R(1, 0)) / s, y = s / 4, z = (R(1, 2) + R(2, 1)) / s;
    } else {
      const double s = 2 * std::sqrt(1 + R(2, 2) - R(0, 0) - R(1, 1));
      w = (R(1, 0) - R(0, 1)) / s, x = (R(0, 2) + R(2, 0)) / s, y = (R(1, 2) + R(2, 1)) / s, z = s / 4;
    }
    const double sign = w < 0 ? -1 : 1;
    double* qo = quat_out + 4 * i;
    qo[0] = sign * w, qo[1] = sign * x, qo[2] = sign * y, qo[3] = sign * z;
  }
}

void center_of_mass(const Model& model, const double* q, double* com_out) {
  require_q("center_of_mass", model, q);
  require(com_out, "center_of_mass", "com_out", 3);
  HostDynamics d(model, q);
  std::vector<kern::Transform<double>> X0(model.nbody);
  d.world_transforms(X0.data());
  double mc[3] = {0, 0, 0}, mass = 0;
  for (int i = 0; i < model.nbody; ++i) {
    // world position of the body's com: r + Eᵀ c
    const kern::Vec3<double> c = X0[i].r + kern::mul_t(X0[i].E, kern::vec3(model.body_com.data() + 3 * i));
    for (int k = 0; k < 3; ++k) mc[k] += model.body_mass[i] * c[k];
    mass += model.body_mass[i];
  }
  for (int k = 0; k < 3; ++k) com_out[k] = mc[k] / mass;
}

void contact_gaps(const Model& model, const double* q, double* gaps_out) {
  require_q("contact_gaps", model, q);
  require(gaps_out, "contact_gaps", "gaps_out", model.ncon);
  HostDynamics d(model, q);
  kern::ContactScratch<double> cs;
  kern::contact_candidates(d.m, d.ws, q, kern::ground_of(d.m, 0.0, 0.0), -1e300, cs, gaps_out);
}

double lowest_gap(const Model& model, const double* q) {
  require_q("lowest_gap", model, q);
  std::vector<double> gaps(model.ncon);
  contact_gaps(model, q, gaps.data());
  double g = std::numeric_limits<double>::infinity();
  for (double x : gaps) g = std::min(g, x);
  return g;
}

void momentum(const Model& model, const double* q, const double* v, double* h_out) {
  require_qv("momentum", model, q, v);
  require(h_out, "momentum", "h_out", 6);
  HostDynamics d(model, q);
  std::vector<double> tau(model.nv);
  kern::rnea(d.m, v, static_cast<const double*>(nullptr), d.ws, tau.data());  // fills ws.vel
  std::vector<kern::Transform<double>> X0(model.nbody);
  d.world_transforms(X0.data());
  kern::Force<double> h{{0, 0, 0}, {0, 0, 0}};
  // h = Σ X0_iᵀ (I_i v_i): each body's momentum expressed at the world origin
  for (int i = 0; i < model.nbody; ++i) h += kern::apply_t(X0[i], d.ws.I[i] * d.ws.vel[i]);
  for (int k = 0; k < 3; ++k) h_out[k] = h.n[k], h_out[3 + k] = h.f[k];
}

}  // namespace moreau
