#include "support/mujoco_ref.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace moreau::test {
namespace {

mjModel* load_from_memory(const std::string& text) {
  // mjVFS holds ~2 MB of fixed-size name tables: keep it off the stack.
  auto vfs = std::make_unique<mjVFS>();
  mj_defaultVFS(vfs.get());
  const char* name = "model.xml";
  if (mj_makeEmptyFileVFS(vfs.get(), name, static_cast<int>(text.size())) != 0) {
    throw std::runtime_error("MjRef: cannot create the in-memory MJCF file");
  }
  const int id = mj_findFileVFS(vfs.get(), name);
  std::memcpy(vfs->filedata[id], text.data(), text.size());
  char err[1000] = "";
  mjModel* m = mj_loadXML(name, vfs.get(), err, sizeof err);
  mj_deleteVFS(vfs.get());
  if (!m) throw std::runtime_error(std::string("MuJoCo: ") + err);
  return m;
}

}  // namespace

MjRef::MjRef(mjModel* model) : m(model), d(mj_makeData(model)) {
  if (!d) {
    mj_deleteModel(m);
    throw std::runtime_error("MuJoCo: mj_makeData failed");
  }
}

MjRef::MjRef(const std::string& mjcf_text) : MjRef(load_from_memory(mjcf_text)) {}

MjRef MjRef::from_file(const std::string& path) {
  char err[1000] = "";
  mjModel* m = mj_loadXML(path.c_str(), nullptr, err, sizeof err);
  if (!m) throw std::runtime_error("MuJoCo: " + path + ": " + err);
  return MjRef(m);
}

MjRef::~MjRef() {
  if (d) mj_deleteData(d);
  if (m) mj_deleteModel(m);
}

MjRef::MjRef(MjRef&& other) noexcept : m(other.m), d(other.d) {
  other.m = nullptr;
  other.d = nullptr;
}

void MjRef::forward(const double* q, const double* v) {
  std::copy(q, q + m->nq, d->qpos);
  if (v) {
    std::copy(v, v + m->nv, d->qvel);
  } else {
    std::fill(d->qvel, d->qvel + m->nv, 0.0);
  }
  std::fill(d->qfrc_applied, d->qfrc_applied + m->nv, 0.0);
  std::fill(d->xfrc_applied, d->xfrc_applied + 6 * m->nbody, 0.0);
  std::fill(d->ctrl, d->ctrl + m->nu, 0.0);
  mj_forward(m, d);
}

std::vector<double> MjRef::mass_matrix(const double* q) {
  forward(q, nullptr);
  std::vector<double> H(static_cast<size_t>(m->nv) * m->nv);
  mj_fullM(m, H.data(), d->qM);
  return H;
}

std::vector<double> MjRef::bias(const double* q, const double* v) {
  forward(q, v);
  return std::vector<double>(d->qfrc_bias, d->qfrc_bias + m->nv);
}

std::vector<double> MjRef::qacc(const double* q, const double* v, const double* qfrc_applied,
                                const double* ctrl) {
  std::copy(q, q + m->nq, d->qpos);
  std::copy(v, v + m->nv, d->qvel);
  std::copy(qfrc_applied, qfrc_applied + m->nv, d->qfrc_applied);
  std::fill(d->xfrc_applied, d->xfrc_applied + 6 * m->nbody, 0.0);
  if (ctrl) {
    std::copy(ctrl, ctrl + m->nu, d->ctrl);
  } else {
    std::fill(d->ctrl, d->ctrl + m->nu, 0.0);
  }
  const int flags = m->opt.disableflags;
  if (!ctrl) m->opt.disableflags |= mjDSBL_ACTUATION;
  mj_forward(m, d);
  m->opt.disableflags = flags;
  return std::vector<double>(d->qacc_smooth, d->qacc_smooth + m->nv);
}

}  // namespace moreau::test
