// One environment's parameters for calling the kernels directly, owned: the model's gains,
// μ 0.8, soft contact kn 2e4 (kd from ζ = 1), smooth k 300 and g_max 0.02, spin friction 0.02,
// rolling friction as given, every scale 1, the terrain origin at 0.
#pragma once

#include <vector>

#include "kernels/model_view.h"
#include "moreau/model.h"

namespace moreau::test {

template <class S>
struct OneEnvParams {
  std::vector<S> kp, kd, ones;
  S zero = 0, mu = S(0.8), kn = S(2e4), kdn = S(-1), zeta = S(1), sk = S(300), gmax = S(0.02), spin = S(0.02), roll;
  OneEnvParams(const Model& model, S rolling)
      : kp(model.actuator_kp.begin(), model.actuator_kp.end()),
        kd(model.actuator_kd.begin(), model.actuator_kd.end()),
        ones(model.nu + 1, S(1)),  // motor strength; friction-loss, damping, armature scales
        roll(rolling) {}
  // Points into this object: keep it alive while the view is used.
  kern::Params<S> view() const {
    return {{kp.data(), 1},   {kd.data(), 1},   {&zero, 1}, {&mu, 1},   {&kn, 1},         {&kdn, 1},
            {&zeta, 1},       {&sk, 1},         {&gmax, 1}, {ones.data(), 1}, {ones.data(), 1}, {&spin, 1},
            {&roll, 1},       {ones.data(), 1}, {ones.data(), 1}, {&zero, 1}, {&zero, 1}};
  }
};

}  // namespace moreau::test
