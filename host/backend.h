// moreau host — the machinery behind Simulator: the model packed for the kernels, and the
// device backends (CPU here, CUDA in cuda/). Not a public header.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/model_view.h"
#include "kernels/spatial.h"
#include "moreau/simulator.h"

namespace moreau {

// Calls f(view_field, model_array) for every array of the model, in one fixed order.
template <class S, class F>
void for_each_model_array(const Model& m, kern::ModelView<S>& v, F&& f) {
  f(v.body_parent, m.body_parent);
  f(v.body_pos, m.body_pos);
  f(v.body_quat, m.body_quat);
  f(v.body_mass, m.body_mass);
  f(v.body_com, m.body_com);
  f(v.body_inertia, m.body_inertia);
  f(v.jnt_type, m.jnt_type);
  f(v.jnt_qposadr, m.jnt_qposadr);
  f(v.jnt_dofadr, m.jnt_dofadr);
  f(v.jnt_axis, m.jnt_axis);
  f(v.jnt_pos, m.jnt_pos);
  f(v.jnt_stiffness, m.jnt_stiffness);
  f(v.jnt_springref, m.jnt_springref);
  f(v.jnt_limited, m.jnt_limited);
  f(v.jnt_range, m.jnt_range);
  f(v.dof_depth, m.dof_depth);
  f(v.dof_Madr, m.dof_Madr);
  f(v.M_colind, m.M_colind);
  f(v.dof_damping, m.dof_damping);
  f(v.dof_armature, m.dof_armature);
  f(v.dof_frictionloss, m.dof_frictionloss);
  f(v.qpos0, m.qpos0);
  f(v.actuator_type, m.actuator_type);
  f(v.actuator_dof, m.actuator_dof);
  f(v.actuator_qposadr, m.actuator_qposadr);
  f(v.actuator_gear, m.actuator_gear);
  f(v.actuator_ctrllimited, m.actuator_ctrllimited);
  f(v.actuator_ctrlrange, m.actuator_ctrlrange);
  f(v.actuator_forcelimited, m.actuator_forcelimited);
  f(v.actuator_forcerange, m.actuator_forcerange);
  f(v.actuator_peakforce, m.actuator_peakforce);
  f(v.actuator_maxvel, m.actuator_maxvel);
  f(v.con_body, m.con_body);
  f(v.con_pos, m.con_pos);
  f(v.con_radius, m.con_radius);
  f(v.pair_con, m.pair_con);
  f(v.hfield_height, m.hfield_height);
}

// The model's arrays converted to scalar S and packed into one real and one int block, so
// that a backend can copy them anywhere and build a ModelView over the copy.
template <class S>
struct PackedModel {
  std::vector<S> reals;
  std::vector<int> ints;
  const Model* model;

  explicit PackedModel(const Model& m) : model(&m) {
    kern::ModelView<S> unused{};
    for_each_model_array(m, unused, [&](auto& /*field*/, const auto& array) {
      using T = typename std::decay_t<decltype(array)>::value_type;
      if constexpr (std::is_same_v<T, int>) {
        ints.insert(ints.end(), array.begin(), array.end());
      } else {
        for (double x : array) reals.push_back(static_cast<S>(x));
      }
    });
    // derived arrays, computed in double: tree rotations and spatial inertias about the origin
    derived = reals.size();
    for (int i = 0; i < m.nbody; ++i) {
      const kern::Mat3<double> E = kern::transpose(kern::quat_to_mat(kern::quat(m.body_quat.data() + 4 * i)));
      for (double x : E.m) reals.push_back(static_cast<S>(x));
    }
    for (int i = 0; i < m.nbody; ++i) {
      const double* I6 = m.body_inertia.data() + 6 * i;
      const kern::Inertia<double> I = kern::inertia_from_com(
          m.body_mass[i], kern::vec3(m.body_com.data() + 3 * i), kern::Sym3<double>{I6[0], I6[1], I6[2], I6[3], I6[4], I6[5]});
      for (double x : {I.m, I.h.x, I.h.y, I.h.z, I.I.xx, I.I.yy, I.I.zz, I.I.xy, I.I.xz, I.I.yz})
        reals.push_back(static_cast<S>(x));
    }
    // derived int arrays: the bodies by depth (level_adr, level_body) and each body's children
    // (child_adr, child_body; descending index, the order in which a backward sweep over the
    // bodies reaches them)
    derived_ints = ints.size();
    std::vector<int> depth(m.nbody);
    for (int i = 0; i < m.nbody; ++i) {
      depth[i] = m.body_parent[i] < 0 ? 0 : depth[m.body_parent[i]] + 1;
      nlevel = std::max(nlevel, depth[i] + 1);
    }
    std::vector<int> level_adr(nlevel + 1, 0), child_adr(m.nbody + 1, 0);
    for (int i = 0; i < m.nbody; ++i) {
      ++level_adr[depth[i] + 1];
      if (m.body_parent[i] >= 0) ++child_adr[m.body_parent[i] + 1];
    }
    for (int l = 0; l < nlevel; ++l) level_adr[l + 1] += level_adr[l];
    for (int i = 0; i < m.nbody; ++i) child_adr[i + 1] += child_adr[i];
    std::vector<int> level_body(m.nbody), child_body(child_adr[m.nbody]);
    std::vector<int> level_fill(level_adr.begin(), level_adr.end() - 1), child_fill(child_adr.begin(), child_adr.end() - 1);
    for (int i = 0; i < m.nbody; ++i) level_body[level_fill[depth[i]]++] = i;
    for (int i = m.nbody - 1; i >= 0; --i)
      if (m.body_parent[i] >= 0) child_body[child_fill[m.body_parent[i]]++] = i;
    // the dofs' branches (kernels/dynamics.h, ltl_factor): the roots' block is the dofs up to
    // the first that has not one child dof; each dof after it whose parent is in that block (or
    // none) starts a branch, its subtree (contiguous, dofs after their parents); the branches in
    // descending order, each one's dofs descending
    std::vector<int> dof_children(m.nv, 0);
    for (int k = 0; k < m.nv; ++k)
      if (m.dof_parent[k] >= 0) ++dof_children[m.dof_parent[k]];
    branch_first = m.nv;
    for (int k = 0; k < m.nv; ++k)
      if (dof_children[k] != 1) {
        branch_first = k + 1;
        break;
      }
    std::vector<int> branch_adr{0}, branch_dof;
    for (int k = m.nv - 1; k >= branch_first; --k) {
      branch_dof.push_back(k);
      if (m.dof_parent[k] < branch_first) branch_adr.push_back(int(branch_dof.size()));
    }
    nbranch = int(branch_adr.size()) - 1;
    for (const auto* a : {&level_adr, &level_body, &child_adr, &child_body}) ints.insert(ints.end(), a->begin(), a->end());
    branch_ints = ints.size();
    for (const auto* a : {&branch_adr, &branch_dof}) ints.insert(ints.end(), a->begin(), a->end());
  }

  // A view whose arrays live at `reals_base` / `ints_base` (copies of reals / ints).
  kern::ModelView<S> view(const S* reals_base, const int* ints_base) const {
    const Model& m = *model;
    kern::ModelView<S> v{};
    v.nq = m.nq;
    v.nv = m.nv;
    v.nM = m.nM;
    v.nchain = m.nchain;
    v.nu = m.nu;
    v.nbody = m.nbody;
    v.ncon = m.ncon;
    v.npair = m.npair;
    v.decimation = m.decimation;
    v.has_springs = std::any_of(m.jnt_stiffness.begin(), m.jnt_stiffness.end(), [](double k) { return k != 0; });
    v.njrow = joint_rows(m);
    v.timestep = static_cast<S>(m.timestep);
    for (int k = 0; k < 3; ++k) v.gravity[k] = static_cast<S>(m.gravity[k]);
    v.hfield_nx = m.hfield_nx;
    v.hfield_ny = m.hfield_ny;
    v.hfield_x0 = static_cast<S>(m.hfield_origin[0]);
    v.hfield_y0 = static_cast<S>(m.hfield_origin[1]);
    v.hfield_dx = static_cast<S>(m.hfield_spacing[0]);
    v.hfield_dy = static_cast<S>(m.hfield_spacing[1]);
    size_t r = 0, i = 0;
    for_each_model_array(m, v, [&](auto& field, const auto& array) {
      using T = typename std::decay_t<decltype(array)>::value_type;
      if constexpr (std::is_same_v<T, int>) {
        field = ints_base + i;
        i += array.size();
      } else {
        field = reals_base + r;
        r += array.size();
      }
    });
    v.body_rot = reals_base + derived;
    v.body_sinertia = reals_base + derived + 9 * m.nbody;
    v.nlevel = nlevel;
    v.level_adr = ints_base + derived_ints;
    v.level_body = v.level_adr + nlevel + 1;
    v.child_adr = v.level_body + m.nbody;
    v.child_body = v.child_adr + m.nbody + 1;
    v.branch_first = branch_first;
    v.nbranch = nbranch;
    v.branch_adr = ints_base + branch_ints;
    v.branch_dof = v.branch_adr + nbranch + 1;
    return v;
  }

 private:
  size_t derived = 0;       // offset of the derived arrays in reals
  size_t derived_ints = 0;  // and in ints
  size_t branch_ints = 0;   // the dofs' branches in ints
  int nlevel = 0;
  int branch_first = 0, nbranch = 0;
};

// Where the buffers live: allocation and host <-> device copies.
class Memory {
 public:
  virtual ~Memory() = default;
  virtual Device device() const = 0;
  virtual int device_id() const { return 0; }
  virtual void* alloc(size_t bytes) = 0;  // throws Error naming the bytes on failure
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize() {}
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // device to device
  virtual void zero(void* dst, size_t bytes) = 0;
  // Throws Error if `bytes` for `n_env` environments cannot fit (default: allocation decides).
  virtual void check_capacity(size_t /*bytes*/, int /*n_env*/) {}
};

// Simulator's implementation. One TypedBackend<S> (typed_backend.h) holds the buffers for
// both devices; the CPU and CUDA backends add memory and launches.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const Model& model() const = 0;
  virtual const SimulatorOptions& options() const = 0;
  virtual View q() = 0;
  virtual View v() = 0;
  virtual View action() = 0;
  virtual View status() = 0;
  virtual View time() = 0;
  virtual View contact_gap() = 0;
  virtual View contact_impulse() = 0;
  virtual View contact_active() = 0;
  virtual View solver_iterations() = 0;
  virtual View solver_residual() = 0;
  virtual int substeps() const = 0;
  virtual View param(const std::string& name) = 0;
  virtual void set_param(const std::string& name, const double* values, int len, int width) = 0;
  virtual std::vector<std::string> param_names() const = 0;
  virtual void set_state(const double* q, const double* v) = 0;
  virtual void get_state(double* q, double* v) = 0;
  virtual void set_action(const double* action) = 0;
  virtual void get_status(int32_t* status) = 0;
  virtual void step(int k) = 0;
  virtual void step_pure(const void* q_in, const void* v_in, const void* action, void* q_out, void* v_out,
                         int32_t* status) = 0;
  virtual void step_adjoint(const void* q_in, const void* v_in, const void* action, int rows, const void* adj_q_out,
                            const void* adj_v_out, const Simulator::Gradients& grads, int32_t* status,
                            bool accumulate) = 0;
  virtual void rollout(int horizon, const void* actions) = 0;
  virtual void rollout_backward(void* adj_q, void* adj_v, void* adj_actions, const Simulator::Gradients& params) = 0;
  virtual int rollout_horizon() const = 0;
  virtual Memory& memory() = 0;
  virtual void reset(const int32_t* env_ids, int count) = 0;
  virtual void reset_where(const uint8_t* mask) = 0;  // n_env bytes on the device
  virtual void synchronize() = 0;
};

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const SimulatorOptions& options);
std::unique_ptr<Backend> make_cuda_backend(const Model& model, const SimulatorOptions& options);

// Library code that needs a Simulator's backend (host/derivatives.cc).
struct SimulatorAccess {
  static Backend& backend(Simulator& sim) { return *sim.backend_; }
};

}  // namespace moreau
