// moreau host — the CPU backend's memory: 64-byte aligned host allocations and memcpy.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "host/backend.h"

namespace moreau {

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

}  // namespace moreau
