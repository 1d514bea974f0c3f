// VJP rules: reduce.
#include "ember/autodiff/rules.h"

namespace ember::autodiff {
void register_rules_reduce() {}
}  // namespace ember::autodiff
