// A robot asset packed in double for calling the kernels directly (stage-level tests).
#pragma once

#include <string>

#include "host/backend.h"
#include "moreau/model.h"
#include "support/test_util.h"

namespace moreau::test {

struct KernelModel {
  Model model;
  PackedModel<double> packed;
  kern::ModelView<double> m;
  explicit KernelModel(const std::string& name)
      : model(load_model(asset(name))), packed(model), m(packed.view(packed.reals.data(), packed.ints.data())) {}
};

}  // namespace moreau::test
