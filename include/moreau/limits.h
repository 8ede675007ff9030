// moreau — compile-time capacity of the kernels (per-environment scratch is fixed-size).
// compile() rejects a model that exceeds any of them.
#pragma once

namespace moreau {

constexpr int kMaxBodies = 32;
constexpr int kMaxNv = 40;
constexpr int kMaxNq = 48;
constexpr int kMaxNu = 32;
constexpr int kMaxContacts = 256;

}  // namespace moreau
