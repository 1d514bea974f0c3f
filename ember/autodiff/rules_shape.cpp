// VJP rules: shape.
#include "ember/autodiff/rules.h"

namespace ember::autodiff {
void register_rules_shape() {}
}  // namespace ember::autodiff
