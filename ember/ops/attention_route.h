#pragma once
// A backend's fused attention (private to ember/ops/attention.cpp and the backends): the
// decomposition of scaled_dot_product_attention asks the inputs' backend first, so every path
// that lowers the op (autodiff recording its pieces, the fusion layer, an eager backend) reaches
// the fused kernel where one serves the call.
#include <span>

#include "ember/ops/registry.h"

namespace ember::detail {

/// The attention's output for (attrs, {q, k, v, attn_mask}) as scaled_dot_product_attention's
/// decomposition sees them, or an undefined tensor when the fused kernel does not serve the call
/// (the decomposition then runs as before).
using FusedAttentionFn = Tensor (*)(const Attrs& a, std::span<const Tensor> in);
void set_fused_attention(Backend b, FusedAttentionFn fn);
FusedAttentionFn fused_attention(Backend b);

}  // namespace ember::detail
