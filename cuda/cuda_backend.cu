// moreau cuda — CUDA backend: one environment per thread, a whole control step (decimation
// physics steps) per launch with the state kept on chip between physics steps. With
// SimulatorOptions::cuda_team the kernels run the team layout instead: a tile of kCudaTeamLanes
// lanes per environment, its scratch in shared memory (cuda/tile_team.cuh).
#include <cstdlib>
#include <type_traits>
#include <unordered_map>

#include "cuda/cuda_check.h"
#include "cuda/tile_team.cuh"
#include "host/typed_backend.h"

namespace moreau {
namespace {

// No __launch_bounds__ by default: a thread holds at most 255 registers, so every block the
// options allow (≤ kMaxCudaBlock = 256 threads, ≤ 65,280 registers) fits an SM's 65,536. Measured
// with ptxas on sm_90 (bench/RESULTS.md): (256, 1) raised the adjoint's registers 138 → 158 (fewer
// resident warps); without bounds nothing spills. The build may set (256, N) on the forward and on
// the adjoint kernels (cuda/CMakeLists.txt: experiments to time on a GPU).
#if MOREAU_CUDA_FORWARD_MIN_BLOCKS > 0
#define MOREAU_FORWARD_BOUNDS __launch_bounds__(256, MOREAU_CUDA_FORWARD_MIN_BLOCKS)
#else
#define MOREAU_FORWARD_BOUNDS
#endif
#if MOREAU_CUDA_ADJOINT_MIN_BLOCKS > 0
#define MOREAU_ADJOINT_BOUNDS __launch_bounds__(256, MOREAU_CUDA_ADJOINT_MIN_BLOCKS)
#else
#define MOREAU_ADJOINT_BOUNDS
#endif
template <class S, class D>
__global__ void MOREAU_FORWARD_BOUNDS control_step_fwd_kernel(kern::ModelView<S, D> m, kern::ContactSettings<S> cfg, kern::Params<S> p,
                                        kern::Batch<S> b, int k) {
  const int env = blockIdx.x * blockDim.x + threadIdx.x;
  if (env >= b.n_env) return;
  for (int s = 0; s < k; ++s) kern::control_step(m, cfg, p, b, env);
}

template <class S, class D>
__global__ void MOREAU_FORWARD_BOUNDS pure_step_fwd_kernel(kern::ModelView<S, D> m, kern::ContactSettings<S> cfg, kern::Params<S> p,
                                     kern::PureStep<S> io) {
  const int env = blockIdx.x * blockDim.x + threadIdx.x;
  if (env < io.n_env) kern::pure_step(m, cfg, p, io, env);
}

// The team layout's forward kernels: environment (global thread) / kCudaTeamLanes, its lanes'
// arena of arena_bytes in the block's dynamic shared memory (TileTeam::shared_bytes).
template <class D>
using TileTeamed = kern::Teamed<D, kern::TileTeam<kCudaTeamLanes>>;

template <class S, class D>
__global__ void control_step_team_kernel(kern::ModelView<S, TileTeamed<D>> m, kern::ContactSettings<S> cfg,
                                         kern::Params<S> p, kern::Batch<S> b, int k, unsigned arena_bytes) {
  kern::TileTeam<kCudaTeamLanes>::begin(arena_bytes);
  const int env = (blockIdx.x * blockDim.x + threadIdx.x) / kCudaTeamLanes;
  if (env >= b.n_env) return;  // the whole team
  for (int s = 0; s < k; ++s) kern::control_step(m, cfg, p, b, env);
}

template <class S, class D>
__global__ void pure_step_team_kernel(kern::ModelView<S, TileTeamed<D>> m, kern::ContactSettings<S> cfg,
                                      kern::Params<S> p, kern::PureStep<S> io, unsigned arena_bytes) {
  kern::TileTeam<kCudaTeamLanes>::begin(arena_bytes);
  const int env = (blockIdx.x * blockDim.x + threadIdx.x) / kCudaTeamLanes;
  if (env < io.n_env) kern::pure_step(m, cfg, p, io, env);
}

template <class S, class D>
__global__ void pure_step_adj_team_kernel(kern::ModelView<S, TileTeamed<D>> m, kern::ContactSettings<S> cfg,
                                          kern::Params<S> p, kern::PureStep<S> io, unsigned arena_bytes) {
  kern::TileTeam<kCudaTeamLanes>::begin(arena_bytes);
  const int env = (blockIdx.x * blockDim.x + threadIdx.x) / kCudaTeamLanes;
  if (env >= io.n_env) return;  // the whole team
  kern::TeamArray<TileTeamed<D>, kern::AdjTape<S, TileTeamed<D>>, 1> tape;  // one: recomputed from checkpoints
  kern::adj_pure_step(m, cfg, p, io, env, &tape[0], 1);
}

template <class S, class D>
__global__ void MOREAU_ADJOINT_BOUNDS pure_step_adj_kernel(kern::ModelView<S, D> m, kern::ContactSettings<S> cfg, kern::Params<S> p,
                                     kern::PureStep<S> io) {
  const int env = blockIdx.x * blockDim.x + threadIdx.x;
  kern::AdjTape<S, D> tape;  // one: the physics steps are recomputed from checkpoints
  if (env < io.n_env) kern::adj_pure_step(m, cfg, p, io, env, &tape, 1);
}

// Resets env_ids[i] for i < count, or (env_ids null) every environment i < count whose mask[i]
// is nonzero.
template <class S>
__global__ void reset_kernel(kern::ModelArrays<S> m, kern::Batch<S> b, const int32_t* env_ids, const uint8_t* mask,
                             int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  if (env_ids) {
    kern::reset_env(m, b, env_ids[i]);
  } else if (mask[i]) {
    kern::reset_env(m, b, i);
  }
}

// After a launch: a failure to reserve the kernel's local memory gets a message that says why.
// The driver reserves the per-thread stack frame for every thread the device can hold at once
// (threads per SM x SMs, about 28 GB for the adjoint's ~100 KB on an H200) and keeps it for the
// context.
// MOREAU_CUDA_SYNC=1 (a debugging switch): every launch is also waited for, so that a fault
// inside a kernel is reported by the launch that caused it, with its name.
bool sync_every_launch() {
  static const bool on = [] {
    const char* v = std::getenv("MOREAU_CUDA_SYNC");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return on;
}

template <class Kernel>
void check_launch(Kernel kernel, const char* what, cudaStream_t stream) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && sync_every_launch()) {
    e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) throw Error(std::string(what) + " kernel (MOREAU_CUDA_SYNC): " + cudaGetErrorString(e));
  }
  if (e == cudaSuccess) return;
  if (e != cudaErrorMemoryAllocation && e != cudaErrorLaunchOutOfResources)
    throw Error(std::string(what) + " kernel launch: " + cudaGetErrorString(e));
  cudaFuncAttributes attr{};
  int dev = 0, sms = 0, threads = 0;
  size_t free_bytes = 0, total = 0;
  cudaGetDevice(&dev);
  cudaFuncGetAttributes(&attr, kernel);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
  cudaMemGetInfo(&free_bytes, &total);
  const size_t need = attr.localSizeBytes * static_cast<size_t>(threads) * static_cast<size_t>(sms);
  throw Error(std::string(what) + " kernel on CUDA device " + std::to_string(dev) + ": " + cudaGetErrorString(e) +
              ". Its " + std::to_string(attr.localSizeBytes) + " bytes of local memory per thread are reserved for " +
              std::to_string(threads) + " threads on each of " + std::to_string(sms) + " SMs: about " +
              std::to_string(need) + " bytes of device memory, of which " + std::to_string(free_bytes) + " of " +
              std::to_string(total) + " are free (docs/gradients.md, \"GPU memory\")");
}

class CudaMemory : public Memory {
 public:
  CudaMemory(int device, cudaStream_t stream) : device_(device), stream_(stream) {
    int count = 0;
    MOREAU_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
      throw Error("cuda_device: expected 0 <= device < " + std::to_string(count) + ", got " + std::to_string(device));
    MOREAU_CUDA_CHECK(cudaSetDevice(device));
  }
  Device device() const override { return Device::CUDA; }
  int device_id() const override { return device_; }
  void check_capacity(size_t bytes, int n_env) override {
    size_t free_bytes = 0, total = 0;
    MOREAU_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    if (bytes > free_bytes)
      throw Error("CUDA device " + std::to_string(device_) + ": a simulator of " + std::to_string(n_env) +
                  " environments needs " + std::to_string(bytes) + " bytes, only " + std::to_string(free_bytes) +
                  " of " + std::to_string(total) + " bytes are free");
  }
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    MOREAU_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* dst, const void* src, size_t bytes) override {
    MOREAU_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    MOREAU_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void download(void* dst, const void* src, size_t bytes) override {
    MOREAU_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    MOREAU_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    MOREAU_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void zero(void* dst, size_t bytes) override { MOREAU_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_)); }
  void synchronize() override { MOREAU_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  cudaStream_t stream() const { return stream_; }

 private:
  int device_;
  cudaStream_t stream_;
};

// A team-layout launch: kCudaTeamLanes threads per environment, as many environments per block
// as cuda_block's threads hold and the device's shared memory per block allows (each an arena of
// arena_bytes: kern::step_arena_bytes, kern::adjoint_arena_bytes).
struct TeamLaunch {
  int threads, envs_per_block;
  unsigned arena_bytes;
  size_t shared_bytes;
  int blocks(int n_env) const { return (n_env + envs_per_block - 1) / envs_per_block; }
};

class CudaBackend : public TypedBackend<float> {
 public:
  CudaBackend(const Model& model, const SimulatorOptions& options)
      : TypedBackend<float>(model, options, std::make_unique<CudaMemory>(options.cuda_device,
                                                                           static_cast<cudaStream_t>(options.cuda_stream))),
        block_(cuda_block_threads(options.cuda_block)),
        team_(cuda_team_lanes(options.cuda_team) > 0),
        device_(options.cuda_device) {
    if (team_) MOREAU_CUDA_CHECK(cudaDeviceGetAttribute(&shared_optin_, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
  }

 protected:
  cudaStream_t stream() { return static_cast<CudaMemory&>(memory()).stream(); }
  int blocks(int n) const { return (n + block_ - 1) / block_; }

  // The team-layout launch of `kernel`, worked out on its first launch: the environments per
  // block, and the kernel allowed that much dynamic shared memory (cudaFuncSetAttribute).
  template <class Kernel>
  TeamLaunch team_launch(Kernel kernel, size_t arena_bytes, const char* what) {
    const void* key = reinterpret_cast<const void*>(kernel);
    if (const auto it = team_launches_.find(key); it != team_launches_.end()) return it->second;
    using Team = kern::TileTeam<kCudaTeamLanes>;
    const unsigned arena = static_cast<unsigned>(arena_bytes);
    const size_t optin = static_cast<size_t>(shared_optin_);
    int envs = block_ / kCudaTeamLanes;
    while (envs > 1 && Team::shared_bytes(envs, arena) > optin) --envs;
    const size_t bytes = Team::shared_bytes(envs, arena);
    if (bytes > optin)
      throw Error(std::string(what) + " kernel (team layout): one environment's scratch, " + std::to_string(arena) +
                  " bytes, does not fit the " + std::to_string(optin) + " bytes of shared memory a block may have on "
                  "CUDA device " + std::to_string(device_) + "; use cuda_team 0");
    MOREAU_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    return team_launches_[key] = {envs * kCudaTeamLanes, envs, arena, bytes};
  }

  void launch_step(const kern::ModelView<float>& m, const kern::ContactSettings<float>& cfg,
                   const kern::Params<float>& p, const kern::Batch<float>& b, int k) override {
    kern::with_dims(m, rolling_rows(), [&](const auto& md) {
      using D = typename std::decay_t<decltype(md)>::Dims;
      if (team_) {
        const auto kernel = control_step_team_kernel<float, D>;
        const TeamLaunch t = team_launch(kernel, kern::step_arena_bytes<float, TileTeamed<D>>(), "step");
        kernel<<<t.blocks(b.n_env), t.threads, t.shared_bytes, stream()>>>(kern::ModelView<float, TileTeamed<D>>{md},
                                                                            cfg, p, b, k, t.arena_bytes);
        check_launch(kernel, "step", stream());
        return;
      }
      control_step_fwd_kernel<float, D><<<blocks(b.n_env), block_, 0, stream()>>>(md, cfg, p, b, k);
      check_launch(control_step_fwd_kernel<float, D>, "step", stream());
    });
  }
  int max_adjoint_rows() const override { return 1; }
  void launch_pure(const kern::ModelView<float>& m, const kern::ContactSettings<float>& cfg,
                   const kern::Params<float>& p, const kern::PureStep<float>& io, bool adjoint) override {
    kern::with_dims(m, rolling_rows(), [&](const auto& md) {
      using D = typename std::decay_t<decltype(md)>::Dims;
      if (adjoint && team_) {
        const auto kernel = pure_step_adj_team_kernel<float, D>;
        const TeamLaunch t = team_launch(kernel, kern::adjoint_arena_bytes<float, TileTeamed<D>>(), "adjoint");
        kernel<<<t.blocks(io.n_env), t.threads, t.shared_bytes, stream()>>>(kern::ModelView<float, TileTeamed<D>>{md},
                                                                             cfg, p, io, t.arena_bytes);
        check_launch(kernel, "adjoint", stream());
      } else if (adjoint) {
        pure_step_adj_kernel<float, D><<<blocks(io.n_env), block_, 0, stream()>>>(md, cfg, p, io);
        check_launch(pure_step_adj_kernel<float, D>, "adjoint", stream());
      } else if (team_) {
        const auto kernel = pure_step_team_kernel<float, D>;
        const TeamLaunch t = team_launch(kernel, kern::step_arena_bytes<float, TileTeamed<D>>(), "step_pure");
        kernel<<<t.blocks(io.n_env), t.threads, t.shared_bytes, stream()>>>(kern::ModelView<float, TileTeamed<D>>{md},
                                                                             cfg, p, io, t.arena_bytes);
        check_launch(kernel, "step_pure", stream());
      } else {
        pure_step_fwd_kernel<float, D><<<blocks(io.n_env), block_, 0, stream()>>>(md, cfg, p, io);
        check_launch(pure_step_fwd_kernel<float, D>, "step_pure", stream());
      }
    });
  }
  // The ids go to a device buffer kept between calls and grown on demand: no allocation, and
  // no cudaFree (which waits for the whole device), per reset.
  void launch_reset(const kern::ModelView<float>& m, const kern::Batch<float>& b, const int32_t* env_ids,
                    int count) override {
    if (count > ids_capacity_) {
      if (ids_ != nullptr) release(ids_);
      ids_ = alloc<int32_t>(count);  // freed with the backend's other buffers
      ids_capacity_ = count;
    }
    memory().upload(ids_, env_ids, sizeof(int32_t) * count);  // returns when the copy is done
    reset_kernel<float><<<blocks(count), block_, 0, stream()>>>(m, b, ids_, nullptr, count);
    check_launch(reset_kernel<float>, "reset", stream());
  }
  void launch_reset_where(const kern::ModelView<float>& m, const kern::Batch<float>& b, const uint8_t* mask) override {
    reset_kernel<float><<<blocks(b.n_env), block_, 0, stream()>>>(m, b, nullptr, mask, b.n_env);
    check_launch(reset_kernel<float>, "reset_where", stream());
  }

 private:
  int block_;  // threads per block
  bool team_;  // the team layout
  int device_;
  int shared_optin_ = 0;  // the device's shared memory per block, bytes (the team layout)
  std::unordered_map<const void*, TeamLaunch> team_launches_;  // per kernel
  int32_t* ids_ = nullptr;
  int ids_capacity_ = 0;
};

}  // namespace

bool cuda_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::unique_ptr<Backend> make_cuda_backend(const Model& model, const SimulatorOptions& options) {
  if (!cuda_available()) throw Error("device cuda: no CUDA device is available");
  return std::make_unique<CudaBackend>(model, options);
}

}  // namespace moreau
