#pragma once
// The usual item of a supervised dataset.
#include <utility>

#include "ember/tensor.h"

namespace ember::data {

/// An (input, target) pair, which StackBatcher stacks into an (inputs, targets) batch.
using Example = std::pair<Tensor, Tensor>;

}  // namespace ember::data
