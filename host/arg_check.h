// moreau host — checks of a public function's caller buffers: each names the function and the
// argument, what was expected and what was found.
#pragma once

#include <cmath>
#include <string>

#include "moreau/model.h"

namespace moreau {

// A buffer the call reads or writes (unless it is empty: width 0) must be there.
inline void require(const void* p, const char* fn, const char* arg, int width = 1) {
  if (!p && width > 0) throw Error(std::string(fn) + ": argument '" + arg + "': expected a buffer, got null");
}

// x[0..n) there and finite.
inline void require_finite(const double* x, int n, const char* fn, const char* arg) {
  require(x, fn, arg, n);
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      throw Error(std::string(fn) + ": argument '" + arg + "': element " + std::to_string(i) +
                  ": expected a finite number, got " + std::to_string(x[i]));
}

// The state arguments of a single-environment function: q (nq) and v (nv) there and finite.
inline void require_q(const char* fn, const Model& model, const double* q) { require_finite(q, model.nq, fn, "q"); }
inline void require_qv(const char* fn, const Model& model, const double* q, const double* v) {
  require_q(fn, model, q);
  require_finite(v, model.nv, fn, "v");
}

}  // namespace moreau
