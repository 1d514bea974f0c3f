#pragma once
// The fusion layer (private): Device::cpu() carries it unless fusion is turned off.
#include <memory>

#include "ember/ops/registry.h"

namespace ember::fusion {
/// The one fusion layer (it keeps a queue per thread and device).
const std::shared_ptr<Layer>& fusion_layer();
}  // namespace ember::fusion
