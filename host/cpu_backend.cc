// moreau host — CPU backend: kernels/ functions looped over environments on a thread pool.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <unistd.h>

#include "host/thread_pool.h"
#include "host/typed_backend.h"

namespace moreau {
namespace {

class HostMemory : public Memory {
 public:
  Device device() const override { return Device::CPU; }
  void check_capacity(size_t bytes, int n_env) override {
    const size_t physical = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
    if (bytes > physical)
      throw Error("CPU: a simulator of " + std::to_string(n_env) + " environments needs " + std::to_string(bytes) +
                  " bytes, more than the " + std::to_string(physical) + " bytes of memory of this machine");
  }
  void* alloc(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw Error("CPU: cannot allocate " + std::to_string(bytes) + " bytes");
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);  // src may be null for an empty field
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  void zero(void* dst, size_t bytes) override { std::memset(dst, 0, bytes); }
};

// The most physics steps of one control step whose intermediates the adjoint keeps (118 KB each
// in double); longer control steps are recomputed from checkpoints.
constexpr int kMaxTapes = 64;
// The most adjoint rows one pass takes (Simulator::step_adjoint_rows; on the thread's stack).
constexpr int kMaxRows = 40;

template <class S>
class CpuBackend : public TypedBackend<S> {
 public:
  CpuBackend(const Model& model, const SimulatorOptions& options)
      : TypedBackend<S>(model, options, std::make_unique<HostMemory>()), pool_(options.n_threads) {}

 protected:
  void launch_step(const kern::ModelView<S>& m, const kern::ContactSettings<S>& cfg, const kern::Params<S>& p,
                   const kern::Batch<S>& b, int k) override {
    pool_.parallel_for(b.n_env, [&](int begin, int end) {
      for (int env = begin; env < end; ++env)
        for (int s = 0; s < k; ++s) kern::control_step(m, cfg, p, b, env);
    });
  }
  int max_adjoint_rows() const override { return kMaxRows; }
  void launch_pure(const kern::ModelView<S>& m, const kern::ContactSettings<S>& cfg, const kern::Params<S>& p,
                   const kern::PureStep<S>& io, bool adjoint) override {
    const int n_steps = m.decimation * cfg.substeps, chosen = this->options().adjoint_tapes;
    const int n_tapes = std::min(n_steps, chosen > 0 ? chosen : kMaxTapes);
    pool_.parallel_for(io.n_env, [&](int begin, int end) {
      // one tape per physics step, kept by each thread across calls
      thread_local std::vector<kern::AdjTape<S>> tapes;
      if (adjoint && static_cast<int>(tapes.size()) < n_tapes) tapes.resize(n_tapes);
      for (int env = begin; env < end; ++env) {
        if (adjoint && io.rows > 1) {
          kern::adj_pure_step<S, kMaxRows>(m, cfg, p, io, env, tapes.data(), n_tapes);
        } else if (adjoint) {
          kern::adj_pure_step(m, cfg, p, io, env, tapes.data(), n_tapes);
        } else {
          kern::pure_step(m, cfg, p, io, env);
        }
      }
    });
  }
  void launch_reset(const kern::ModelView<S>& m, const kern::Batch<S>& b, const int32_t* env_ids,
                    int count) override {
    for (int i = 0; i < count; ++i) kern::reset_env(m, b, env_ids[i]);
  }

 private:
  ThreadPool pool_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const SimulatorOptions& options) {
  if (options.dtype == DType::Float64) return std::make_unique<CpuBackend<double>>(model, options);
  return std::make_unique<CpuBackend<float>>(model, options);
}

}  // namespace moreau
