// MuJoCo reference harness: loads an MJCF (e.g. from export_mjcf) into MuJoCo 2.2.2 and
// evaluates the quantities our dynamics is compared against, at a given state.
#pragma once

#include <mujoco/mujoco.h>

#include <string>
#include <vector>

namespace moreau::test {

class MjRef {  // owns mjModel* + mjData*
 public:
  // Loads from memory through MuJoCo's virtual file system; throws std::runtime_error with
  // MuJoCo's error text.
  explicit MjRef(const std::string& mjcf_text);
  // Loads from disk, so that relative includes and assets resolve.
  static MjRef from_file(const std::string& path);
  ~MjRef();
  MjRef(MjRef&& other) noexcept;
  MjRef& operator=(MjRef&&) = delete;
  MjRef(const MjRef&) = delete;
  MjRef& operator=(const MjRef&) = delete;

  int nq() const { return m->nq; }
  int nv() const { return m->nv; }

  // Joint-space mass matrix incl. armature at q (nq): (nv x nv) row-major.
  std::vector<double> mass_matrix(const double* q);
  // qfrc_bias = C(q, v) v + g(q) (nv); no damping, no actuation.
  std::vector<double> bias(const double* q, const double* v);
  // Unconstrained forward dynamics (qacc_smooth, nv): M⁻¹(qfrc_applied + passive damping −
  // bias + actuation). Joint limits and contacts are not applied. ctrl (nu) may be null:
  // then actuation is disabled (a position servo would otherwise act at ctrl = 0).
  std::vector<double> qacc(const double* q, const double* v, const double* qfrc_applied,
                           const double* ctrl = nullptr);

  mjModel* m = nullptr;
  mjData* d = nullptr;

 private:
  explicit MjRef(mjModel* model);
  // Sets qpos, qvel (null = 0), clears applied forces and controls, runs mj_forward.
  void forward(const double* q, const double* v);
};

}  // namespace moreau::test
