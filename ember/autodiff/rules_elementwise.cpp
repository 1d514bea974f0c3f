// VJP rules: elementwise.
#include "ember/autodiff/rules.h"

namespace ember::autodiff {
void register_rules_elementwise() {}
}  // namespace ember::autodiff
