// VJP rules: nn.
#include "ember/autodiff/rules.h"

namespace ember::autodiff {
void register_rules_nn() {}
}  // namespace ember::autodiff
