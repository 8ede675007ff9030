// moreau cuda — every CUDA call is checked; failures throw moreau::Error with file and line.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "moreau/model.h"

#define MOREAU_CUDA_CHECK(call)                                                                       \
  do {                                                                                                \
    cudaError_t moreau_err_ = (call);                                                                 \
    if (moreau_err_ != cudaSuccess)                                                                   \
      throw ::moreau::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #call ": " + \
                            cudaGetErrorString(moreau_err_));                                         \
  } while (0)
