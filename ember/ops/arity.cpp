// Input counts per op: each category's, then the ops that differ from it. Derived from every call
// the test suite makes (the goldens and the front ends): a new op whose count differs from its
// category's must be listed here, or its own tests fail at the first call.
#include "ember/ops/arity.h"

#include <array>
#include <cstdint>
#include <string>

#include "ember/error.h"

namespace ember::detail {
namespace {

constexpr uint8_t kAny = 255;  // any count from lo up

struct Arity {
  uint8_t lo = 1, hi = 1;
};

struct Override {
  OpId op;
  uint8_t lo, hi;
};

constexpr Override kOverrides[] = {
    {OpId::empty_like, 1, 1}, {OpId::zeros_like, 1, 1}, {OpId::ones_like, 1, 1},
    {OpId::full_like, 1, 1}, {OpId::bernoulli, 1, 1}, {OpId::rand_like, 1, 1},
    {OpId::randn_like, 1, 1}, {OpId::linear, 3, 3}, {OpId::einsum, 0, kAny},
    {OpId::linalg_solve, 2, 2}, {OpId::linalg_lu_solve, 3, 3},
    {OpId::linalg_solve_triangular, 2, 2}, {OpId::linalg_lstsq, 2, 2}, {OpId::linalg_cross, 2, 2},
    {OpId::linear_int8, 4, 4}, {OpId::linear_int4, 5, 5}, {OpId::index_select, 2, 2},
    {OpId::gather, 2, 2}, {OpId::scatter, 2, 3}, {OpId::scatter_add, 3, 3},
    {OpId::scatter_reduce, 3, 3}, {OpId::index_add, 3, 3}, {OpId::index_put, 2, kAny},
    {OpId::masked_fill, 2, 3}, {OpId::masked_select, 2, 2}, {OpId::take, 2, 2}, {OpId::copy, 1, 2},
    {OpId::cat, 0, kAny}, {OpId::stack, 0, kAny}, {OpId::repeat_interleave, 1, 2},
    {OpId::meshgrid, 0, kAny}, {OpId::unfold, 1, 1}, {OpId::fold, 1, 1},
    {OpId::conv_input_grad, 2, 2}, {OpId::conv_weight_grad, 2, 2}, {OpId::layer_norm, 3, 3},
    {OpId::rms_norm, 2, 2}, {OpId::group_norm, 3, 3}, {OpId::batch_norm, 5, 5},
    {OpId::embedding, 2, 2}, {OpId::scaled_dot_product_attention, 4, 4},
    {OpId::cross_entropy, 3, 3}, {OpId::nll_loss, 3, 3}, {OpId::mse_loss, 2, 2},
    {OpId::l1_loss, 2, 2}, {OpId::smooth_l1_loss, 2, 2}, {OpId::huber_loss, 2, 2},
    {OpId::binary_cross_entropy, 3, 3}, {OpId::binary_cross_entropy_with_logits, 4, 4},
    {OpId::kl_div, 2, 2}, {OpId::cosine_similarity, 2, 2}, {OpId::pairwise_distance, 2, 2},
    {OpId::cdist, 2, 2}, {OpId::layer_norm_backward, 3, 3}, {OpId::rms_norm_backward, 3, 3},
    {OpId::nms, 3, 3}, {OpId::roi_align, 2, 2}, {OpId::erode, 2, 2}, {OpId::dilate, 2, 2},
};

Arity category_arity(OpCategory c) {
  switch (c) {
    case OpCategory::Creation: case OpCategory::Random: return {0, 0};
    case OpCategory::Binary: case OpCategory::Matmul: return {2, 2};
    case OpCategory::Ternary: case OpCategory::Conv: return {3, 3};
    case OpCategory::User: return {0, kAny};
    default: return {1, 1};
  }
}

const std::array<Arity, kNumOps>& table() {
  static const std::array<Arity, kNumOps> t = [] {
    std::array<Arity, kNumOps> a{};
    for (int i = 0; i < kNumOps; ++i) a[size_t(i)] = category_arity(op_def(OpId(i)).category);
    for (const Override& o : kOverrides) a[size_t(o.op)] = {o.lo, o.hi};
    return a;
  }();
  return t;
}

}  // namespace

void check_arity(OpId op, size_t count) {
  if (int(op) >= kNumOps) return;  // registered at run time: the user's inference checks
  const Arity a = table()[size_t(op)];
  if (count >= a.lo && (a.hi == kAny || count <= a.hi)) [[likely]]
    return;
  std::string want = a.hi == kAny   ? "at least " + std::to_string(a.lo)
                     : a.lo == a.hi ? std::to_string(a.lo)
                                    : std::to_string(a.lo) + " to " + std::to_string(a.hi);
  throw_value(op_name(op), "expected " + want + " input tensor" + (a.hi == 1 && a.lo == 1 ? "" : "s") +
                               " (undefined ones for absent optional inputs), found " +
                               std::to_string(count));
}

}  // namespace ember::detail
