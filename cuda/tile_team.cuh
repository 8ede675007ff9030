// moreau cuda — the team of T lanes that steps one environment in the team layout (docs/gpu.md,
// "The next layout"): the lanes are a cooperative_groups tile of T consecutive threads of the
// block, a team call strides its work over them between two of the tile's barriers, and TeamArray is
// a slice of the team's arena in the block's dynamic shared memory.
//
// The block's dynamic shared memory: each thread's arena top and end (two 32-bit offsets per
// thread), then one arena of `arena_bytes` per team. The lanes of a team take the same slices in
// the same order, so their tops agree without being shared; a slice beyond the arena traps (the
// launch then fails with an error).
#pragma once

#include <cooperative_groups.h>

#include "kernels/team.h"

namespace moreau {
namespace kern {

template <int T>
struct TileTeam {
  static_assert(T >= 1 && T <= 32 && (T & (T - 1)) == 0, "a team is a power-of-two tile of a warp");

  static __device__ __forceinline__ unsigned char* shared_base() {
    extern __shared__ __align__(16) unsigned char team_shared[];
    return team_shared;
  }
  static __device__ __forceinline__ unsigned& top() { return reinterpret_cast<unsigned*>(shared_base())[2 * threadIdx.x]; }
  static __device__ __forceinline__ unsigned end() { return reinterpret_cast<unsigned*>(shared_base())[2 * threadIdx.x + 1]; }
  static __device__ __forceinline__ int rank() { return threadIdx.x & (T - 1); }
  static __device__ __forceinline__ void sync() {
    cooperative_groups::tiled_partition<T>(cooperative_groups::this_thread_block()).sync();
  }

  // Bytes of dynamic shared memory for `teams` teams per block, each with an arena of arena_bytes.
  static constexpr size_t header_bytes(int threads) { return (size_t(threads) * 2 * sizeof(unsigned) + 15) / 16 * 16; }
  static constexpr size_t shared_bytes(int teams, size_t arena_bytes) {
    return header_bytes(teams * T) + size_t(teams) * arena_bytes;
  }
  // Each thread's arena: its team's, after the header (arena_bytes a multiple of 16).
  static __device__ __forceinline__ void begin(unsigned arena_bytes) {
    const unsigned start = unsigned(header_bytes(blockDim.x)) + (threadIdx.x / T) * arena_bytes;
    unsigned* slot = reinterpret_cast<unsigned*>(shared_base()) + 2 * threadIdx.x;
    slot[0] = start;
    slot[1] = start + arena_bytes;
  }

  template <class X, int N>
  struct Array {
    X* data;
    unsigned below;
    __device__ __forceinline__ Array() : below(top()) {
      const unsigned at = (below + alignof(X) - 1) / alignof(X) * alignof(X);
      data = reinterpret_cast<X*>(shared_base() + at);
      top() = at + unsigned(sizeof(X) * N);
      if (top() > end()) __trap();
    }
    __device__ __forceinline__ ~Array() { top() = below; }
    Array(const Array&) = delete;
    Array& operator=(const Array&) = delete;
    __device__ __forceinline__ operator X*() { return data; }
    __device__ __forceinline__ operator const X*() const { return data; }
  };

  template <class F>
  static __device__ __forceinline__ void for_each(int n, F&& f) {
    sync();
    for (int i = rank(); i < n; i += T) f(i);
    sync();
  }
  template <class S, class F>
  static __device__ __forceinline__ void down_tree(const ModelArrays<S>& m, F&& f) {
    sync();
    for (int l = 0; l < m.nlevel; ++l) {
      for (int k = m.level_adr[l] + rank(); k < m.level_adr[l + 1]; k += T) f(m.level_body[k]);
      sync();
    }
  }
  template <class S, class F>
  static __device__ __forceinline__ void up_tree(const ModelArrays<S>& m, F&& f) {
    sync();
    for (int l = m.nlevel - 1; l >= 0; --l) {
      for (int k = m.level_adr[l] + rank(); k < m.level_adr[l + 1]; k += T) f(m.level_body[k]);
      sync();
    }
  }
  template <class F>
  static __device__ __forceinline__ void single(F&& f) {
    sync();
    if (rank() == 0) f();
    sync();
  }
};

}  // namespace kern
}  // namespace moreau
