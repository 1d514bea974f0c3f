// Shape-family VJP rules beyond the golden cases: attribute variants the goldens lack (negative
// dims and starts, steps, offsets, mixed pads, repeated indices, masks mixed with slices, zeros
// in scatter_reduce prod, ties in amax/amin), gradients keeping each input's dtype under type
// promotion, cotangents that are not contiguous, and second order: every op a rule's graph runs
// has a rule that agrees with finite differences at the inputs the rule gave it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "ember/backends/backend.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"
#include "gradcheck.h"

namespace ember::test {
namespace {

struct RuleCase {
  const char* name;
  OpId op;
  std::function<void(Device)> run;  // calls the public API once on the given device
};

Tensor rn(const Shape& s, Device d, DType t = DType::F32) { return randn(s, {t, d}); }
Tensor ix(std::vector<int64_t> v, const Shape& s, Device d) { return tensor(v, s, DType::I64, d); }
Tensor mask(std::vector<uint8_t> v, const Shape& s, Device d) {
  return tensor(v, s, DType::Bool, d);
}

std::vector<RuleCase> view_cases() {
  return {
      {"reshape_copying", OpId::reshape,
       [](Device d) { reshape(transpose(rn({3, 4}, d), 0, 1), {2, -1}); }},
      {"view", OpId::view, [](Device d) { view(rn({2, 3, 4}, d), {6, 4}); }},
      {"flatten_middle", OpId::flatten, [](Device d) { flatten(rn({2, 3, 4, 2}, d), 1, 2); }},
      {"unflatten", OpId::unflatten, [](Device d) { unflatten(rn({2, 12}, d), -1, {3, -1}); }},
      {"squeeze_one", OpId::squeeze, [](Device d) { squeeze(rn({2, 1, 3, 1}, d), {-1}); }},
      {"squeeze_all", OpId::squeeze, [](Device d) { squeeze(rn({2, 1, 3, 1}, d)); }},
      {"unsqueeze_last", OpId::unsqueeze, [](Device d) { unsqueeze(rn({2, 3}, d), -1); }},
      {"permute_negative", OpId::permute, [](Device d) { permute(rn({2, 3, 4}, d), {-1, 0, 1}); }},
      {"transpose_negative", OpId::transpose,
       [](Device d) { transpose(rn({2, 3, 4}, d), 0, -1); }},
      {"movedim_two", OpId::movedim,
       [](Device d) { movedim(rn({2, 3, 4, 5}, d), {0, 1}, {3, 0}); }},
      {"expand_new_dims", OpId::expand, [](Device d) { expand(rn({3, 1}, d), {2, 3, 4}); }},
      {"broadcast_to", OpId::broadcast_to,
       [](Device d) { broadcast_to(rn({1, 4}, d), {3, 2, 4}); }},
      {"expand_0d", OpId::expand, [](Device d) { expand(rn({}, d), {2, 2}); }},
      {"slice_step_negative", OpId::slice, [](Device d) { slice(rn({5, 7}, d), 1, -5, -1, 2); }},
      {"slice_step_whole", OpId::slice, [](Device d) { slice(rn({7, 3}, d), 0, {}, {}, 3); }},
      {"slice_clamped", OpId::slice, [](Device d) { slice(rn({3, 5}, d), 1, -100, 3); }},
      {"select_negative", OpId::select, [](Device d) { select(rn({3, 4, 5}, d), 1, -1); }},
      {"narrow_negative", OpId::narrow, [](Device d) { narrow(rn({3, 6}, d), 1, -4, 3); }},
      {"diagonal_3d_swapped", OpId::diagonal,
       [](Device d) { diagonal(rn({3, 4, 5}, d), -1, 2, 0); }},
      {"diagonal_above_swapped", OpId::diagonal,
       [](Device d) { diagonal(rn({4, 3}, d), 1, 1, 0); }},
      {"contiguous", OpId::contiguous,
       [](Device d) { contiguous(transpose(rn({3, 4}, d), 0, 1)); }},
      {"clone", OpId::copy, [](Device d) { clone(rn({2, 3}, d)); }},
      {"copy_broadcast_cast", OpId::copy,
       [](Device d) { rn({2, 3}, d).copy_(rn({3}, d, DType::F64)); }},
  };
}

std::vector<RuleCase> layout_cases() {
  return {
      {"cat_middle_promoted", OpId::cat,
       [](Device d) { cat({rn({2, 1, 3}, d), rn({2, 4, 3}, d, DType::F64)}, 1); }},
      {"cat_skips_empty", OpId::cat,
       [](Device d) { cat({rn({2, 2}, d), rn({0}, d), rn({2, 3}, d)}, -1); }},
      {"repeat_leading", OpId::repeat, [](Device d) { repeat(rn({2, 3}, d), {2, 1, 3}); }},
      {"repeat_size1_dim", OpId::repeat, [](Device d) { repeat(rn({2, 1}, d), {2, 3}); }},
      {"repeat_zero", OpId::repeat, [](Device d) { repeat(rn({2, 1}, d), {0, 3}); }},
      {"flip_two", OpId::flip, [](Device d) { flip(rn({2, 3, 4}, d), {0, -1}); }},
      {"roll_two", OpId::roll, [](Device d) { roll(rn({3, 4, 5}, d), {2, -1}, {2, 0}); }},
      {"roll_flat", OpId::roll, [](Device d) { roll(rn({3, 4}, d), {5}); }},
      {"tril_batched", OpId::tril, [](Device d) { tril(rn({2, 3, 4}, d), -1); }},
      {"triu_above", OpId::triu, [](Device d) { triu(rn({4, 3}, d), 1); }},
      {"pad_constant_mixed", OpId::pad,
       [](Device d) { pad(rn({2, 3, 4}, d), {1, 2, -1, 1, 2, 0}, "constant", 1.5); }},
      {"pad_reflect_2d", OpId::pad,
       [](Device d) { pad(rn({2, 3, 5}, d), {2, 1, 1, 2}, "reflect"); }},
      {"pad_replicate_wide", OpId::pad,
       [](Device d) { pad(rn({2, 3, 2}, d), {3, 0, 0, 4}, "replicate"); }},
      {"pad_circular_cropped", OpId::pad,
       [](Device d) { pad(rn({1, 3, 4}, d), {-1, 2, 2, 1}, "circular"); }},
      {"pad_replicate_bf16", OpId::pad,
       [](Device d) { pad(rn({2, 3}, d, DType::BF16), {1, 2}, "replicate"); }},
      {"split_sizes", OpId::split, [](Device d) { split(rn({5, 3}, d), Shape{2, 0, 3}, 0); }},
      {"chunk_uneven", OpId::chunk, [](Device d) { chunk(rn({2, 7}, d), 3, -1); }},
      {"unbind_middle", OpId::unbind, [](Device d) { unbind(rn({2, 3, 4}, d), 1); }},
  };
}

std::vector<RuleCase> index_cases() {
  return {
      {"index_select_i32_repeated", OpId::index_select,
       [](Device d) { index_select(rn({4, 3}, d), 1, tensor<int32_t>({2, 0, 2}, DType::I32, d)); }},
      {"gather_dim1", OpId::gather,
       [](Device d) { gather(rn({3, 4}, d), 1, ix({3, 3, 0, 1, 2, 2}, {3, 2}, d)); }},
      {"take_negative", OpId::take,
       [](Device d) { take(rn({3, 4}, d), ix({-1, 3, 3, 0}, {2, 2}, d)); }},
      {"scatter_repeated", OpId::scatter,
       [](Device d) {
         scatter(rn({4, 3}, d), 0, ix({1, 0, 2, 1, 3, 2}, {2, 3}, d), rn({3, 4}, d));
       }},
      {"scatter_value", OpId::scatter,
       [](Device d) { scatter(rn({3, 4}, d), 1, ix({0, 3, 2, 2, 1, 0}, {3, 2}, d), 2.0); }},
      {"scatter_add_repeated", OpId::scatter_add,
       [](Device d) {
         scatter_add(rn({4, 3}, d), 0, ix({1, 0, 2, 1, 3, 2}, {2, 3}, d), rn({3, 4}, d));
       }},
      {"scatter_reduce_sum_noself", OpId::scatter_reduce,
       [](Device d) {
         scatter_reduce(rn({4, 3}, d), 0, ix({1, 0, 2, 1, 0, 2}, {2, 3}, d), rn({3, 3}, d), "sum",
                        false);
       }},
      {"scatter_reduce_mean_noself_bigger_src", OpId::scatter_reduce,
       [](Device d) {
         scatter_reduce(rn({4, 3}, d), 0, ix({1, 0, 2, 1, 0, 2}, {2, 3}, d), rn({3, 4}, d), "mean",
                        false);
       }},
      {"scatter_reduce_mean_f16", OpId::scatter_reduce,
       [](Device d) {
         scatter_reduce(rn({3, 2}, d, DType::F16), 0, ix({2, 0, 2, 2}, {2, 2}, d),
                        rn({2, 2}, d, DType::F16), "mean", true);
       }},
      {"scatter_reduce_prod_zeros", OpId::scatter_reduce,
       [](Device d) {
         // target 0: self 0 and one src 0; target 1: two src zeros; target 2: one src zero
         Tensor x = tensor<double>({0, 2, 3, -1.5}, {4}, DType::F64, d);
         Tensor src = tensor<double>({0, 1.5, 0, 0, 2, 0.5, -2}, {7}, DType::F64, d);
         scatter_reduce(x, 0, ix({0, 0, 1, 1, 1, 2, 2}, {7}, d), src, "prod", true);
       }},
      {"scatter_reduce_prod_noself", OpId::scatter_reduce,
       [](Device d) {
         Tensor x = tensor<double>({0, 2, 3, -1.5}, {4}, DType::F64, d);
         Tensor src = tensor<double>({1.5, 0.5, 0, -2, 3}, {5}, DType::F64, d);
         scatter_reduce(x, 0, ix({0, 0, 2, 2, 1}, {5}, d), src, "prod", false);
       }},
      {"scatter_reduce_amax_tie", OpId::scatter_reduce,
       [](Device d) {  // target 0: self ties with a src; target 2: two srcs tie
         Tensor x = tensor<double>({1, 5, -3}, {3}, DType::F64, d);
         Tensor src = tensor<double>({1, 0.5, 2, 2, -7}, {5}, DType::F64, d);
         scatter_reduce(x, 0, ix({0, 0, 2, 2, 1}, {5}, d), src, "amax", true);
       }},
      {"scatter_reduce_amin_noself_equal_self", OpId::scatter_reduce,
       [](Device d) {  // self equals the result at target 0 but takes no part in it
         Tensor x = tensor<double>({0.5, 5, -3}, {3}, DType::F64, d);
         Tensor src = tensor<double>({1, 0.5, 2}, {3}, DType::F64, d);
         scatter_reduce(x, 0, ix({0, 0, 2}, {3}, d), src, "amin", false);
       }},
      {"index_add_alpha_dim1", OpId::index_add,
       [](Device d) { index_add(rn({3, 4}, d), 1, ix({0, 2, 0}, {3}, d), rn({3, 3}, d), 2.5); }},
      {"index_put_repeated", OpId::index_put,
       [](Device d) { index_put(rn({5, 3}, d), {ix({1, 3, 1}, {3}, d)}, rn({3, 3}, d)); }},
      {"index_put_repeated_accumulate", OpId::index_put,
       [](Device d) { index_put(rn({5, 3}, d), {ix({1, 3, 1}, {3}, d)}, rn({3, 3}, d), true); }},
      {"index_put_non_adjacent_broadcast", OpId::index_put,
       [](Device d) {
         index_put(rn({3, 4, 5}, d), {ix({0, -1}, {2, 1}, d), Tensor(), ix({1, 4, -2}, {3}, d)},
                   rn({4}, d));
       }},
      {"index_put_middle_values_leading_1", OpId::index_put,
       [](Device d) {
         index_put(rn({3, 4, 5}, d), {Tensor(), ix({3, -4}, {2}, d)}, rn({1, 1, 2, 5}, d));
       }},
      {"index_put_mask_then_index", OpId::index_put,
       [](Device d) {
         index_put(rn({2, 3, 4}, d), {mask({1, 0, 1, 1, 0, 0}, {2, 3}, d), ix({3, 0, 3}, {3}, d)},
                   rn({3}, d), true);
       }},
      {"masked_fill_input_broadcast", OpId::masked_fill,
       [](Device d) { masked_fill(rn({4}, d), mask({1, 0, 0, 1, 1, 1, 0, 0}, {2, 4}, d), 3.0); }},
      {"masked_fill_tensor_value", OpId::masked_fill,
       [](Device d) {
         masked_fill(rn({3, 2}, d), mask({1, 0}, {2}, d), rn({}, d, DType::F64));
       }},
      {"masked_select_broadcast", OpId::masked_select,
       [](Device d) {
         masked_select(rn({3, 1}, d), mask({1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1}, {3, 4}, d));
       }},
  };
}

std::vector<RuleCase> all_rule_cases() {
  std::vector<RuleCase> v = view_cases();
  for (auto& c : layout_cases()) v.push_back(c);
  for (auto& c : index_cases()) v.push_back(c);
  return v;
}

CapturedCall capture(const RuleCase& rc) {
  manual_seed(7);
  return capture_op(rc.op, rc.run);
}

TensorList to_f64(TensorList in) {
  for (Tensor& t : in)
    if (t.defined() && is_floating(t.dtype())) t = t.to(DType::F64);
  return in;
}

// The rule at (attrs, inputs) for cotangents gs, every input asking for a gradient.
TensorList run_rule(const CapturedCall& c, const TensorList& in, const TensorList& gs) {
  TensorList outs = dispatch(c.op, c.attrs, in);
  std::unique_ptr<bool[]> needs(new bool[in.size()]);
  for (size_t i = 0; i < in.size(); ++i) needs[i] = true;
  VjpCtx ctx{c.op, c.attrs, in, outs, gs, std::span<const bool>(needs.get(), in.size())};
  return op_def(c.op).vjp(ctx);
}

// Same values and shape as g, laid out with reversed strides (or every other element).
Tensor scrambled(const Tensor& g) {
  if (g.dim() >= 2) {
    Shape rev;
    for (int64_t d = g.dim() - 1; d >= 0; --d) rev.push_back(d);
    return permute(clone(permute(g, rev)), rev);
  }
  return select(stack({g, g}, -1), -1, 0);
}

void PrintTo(const RuleCase& c, std::ostream* os) { *os << c.name; }

class ShapeRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(ShapeRule, MatchesFiniteDifferences) {
  CapturedCall c = capture(GetParam());
  ASSERT_TRUE(c.captured);
  const TensorList in = to_f64(c.inputs);
  if (std::string why = nothing_to_check(c.op, c.attrs, in); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(gradcheck(c.op, c.attrs, in), "");
}

// Gradients keep each input's shape and dtype (cat and copy promote or cast), and do not depend
// on the cotangent's layout.
TEST_P(ShapeRule, KeepsDTypesAndIgnoresCotangentLayout) {
  CapturedCall c = capture(GetParam());
  ASSERT_TRUE(c.captured);
  TensorList outs = dispatch(c.op, c.attrs, c.inputs);
  manual_seed(11);
  TensorList gs, gs2;
  for (const Tensor& o : outs) {
    gs.push_back(randn(o.shape(), {o.dtype()}));
    gs2.push_back(scrambled(gs.back()));
  }
  TensorList a = run_rule(c, c.inputs, gs), b = run_rule(c, c.inputs, gs2);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& x = c.inputs[i];
    if (!x.defined() || !is_floating(x.dtype()) || i >= a.size() || !a[i].defined()) continue;
    EXPECT_EQ(a[i].dtype(), x.dtype()) << "input " << i;
    EXPECT_EQ(a[i].shape(), x.shape()) << "input " << i;
    ASSERT_TRUE(b[i].defined());
    auto va = a[i].to(DType::F64).to_vector<double>(), vb = b[i].to(DType::F64).to_vector<double>();
    for (size_t j = 0; j < va.size(); ++j)  // sums may add in another order
      EXPECT_NEAR(va[j], vb[j], 1e-5 * (1 + std::fabs(va[j]))) << "input " << i << " at " << j;
  }
}

// Records every op run on its device, with attrs and inputs, for gradchecks of a rule's graph.
class Recorder : public Layer {
 public:
  const char* name() const override { return "record"; }
  TensorList call(const OpCall& c, const Next& next) override {
    CapturedCall r;
    r.op = c.op;
    r.attrs = c.attrs;
    r.captured = true;
    for (const Tensor& t : c.inputs) r.inputs.push_back(t.defined() ? t.to(Device::flex()) : t);
    calls.push_back(std::move(r));
    return next(c);
  }
  std::vector<CapturedCall> calls;
};

// Second order: the rule is a graph of ember ops; where those ops have rules, each must agree
// with finite differences at the inputs the rule passed it, so the engine can differentiate the
// rule itself (ops of other families without rules yet are left to their own tests).
TEST_P(ShapeRule, RuleGraphIsDifferentiable) {
  CapturedCall c = capture(GetParam());
  ASSERT_TRUE(c.captured);
  static auto rec = std::make_shared<Recorder>();
  static Device dev = Device::flex().with_layer(rec);
  TensorList in = to_f64(c.inputs);
  TensorList outs = dispatch(c.op, c.attrs, in);
  manual_seed(13);
  TensorList gs;
  for (const Tensor& o : outs)
    gs.push_back(is_floating(o.dtype()) ? randn(o.shape(), {o.dtype(), dev}) : Tensor());
  for (Tensor& t : in)
    if (t.defined()) t = t.to(dev);
  rec->calls.clear();
  run_rule(c, in, gs);
  std::vector<CapturedCall> calls = std::move(rec->calls);
  int checked = 0;
  for (const CapturedCall& r : calls) {
    const OpDef& d = op_def(r.op);
    if (!d.vjp || !d.differentiable) continue;
    const TensorList rin = to_f64(r.inputs);
    if (!nothing_to_check(r.op, r.attrs, rin).empty()) continue;  // index maths, empty slices
    SCOPED_TRACE(std::string("rule graph op ") + d.name);
    EXPECT_EQ(gradcheck(r.op, r.attrs, rin), "");
    ++checked;
  }
  RecordProperty("graph_ops_checked", checked);
}

std::string case_name(const ::testing::TestParamInfo<RuleCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Views, ShapeRule, ::testing::ValuesIn(view_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Layout, ShapeRule, ::testing::ValuesIn(layout_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Index, ShapeRule, ::testing::ValuesIn(index_cases()), case_name);

TEST(ShapeRules, NonzeroAndOneHotAreNotDifferentiable) {
  detail::init();
  EXPECT_FALSE(op_def(OpId::nonzero).differentiable);
  EXPECT_FALSE(op_def(OpId::one_hot).differentiable);
}

// split/chunk/unbind: pieces without a cotangent count as zeros.
TEST(ShapeRules, PiecesWithUndefinedCotangents) {
  Tensor x = randn({5, 3});
  CapturedCall sp = capture_op(OpId::split, [&](Device d) { split(x.to(d), Shape{2, 1, 2}); });
  ASSERT_TRUE(sp.captured);
  Tensor g0 = randn({2, 3}), g2 = randn({2, 3});
  TensorList r = run_rule(sp, sp.inputs, {g0, Tensor(), g2});
  EXPECT_EQ(r[0].to_vector<float>(), cat({g0, zeros({1, 3}), g2}).to_vector<float>());
  CapturedCall ub = capture_op(OpId::unbind, [&](Device d) { unbind(x.to(d), 1); });
  ASSERT_TRUE(ub.captured);
  Tensor g1 = randn({5});
  r = run_rule(ub, ub.inputs, {Tensor(), g1, Tensor()});
  EXPECT_EQ(r[0].to_vector<float>(),
            stack({zeros({5}), g1, zeros({5})}, 1).to_vector<float>());
}

// With repeated indices only the last write reaches the output, so only it gets a gradient.
TEST(ShapeRules, ScatterAndIndexPutGiveTheWinningWriteTheGradient) {
  Tensor x = zeros({3});
  Tensor idx = tensor<int64_t>({1, 1});
  Tensor src = tensor<float>({5, 6});
  Tensor g = tensor<float>({10, 20, 30});
  Attrs a;
  TensorList in{x, idx, src};
  CapturedCall sc;
  sc.op = OpId::scatter;
  sc.attrs = a;
  TensorList r = run_rule(sc, in, {g});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{10, 0, 30}));
  EXPECT_EQ(r[2].to_vector<float>(), (std::vector<float>{0, 20}));
  CapturedCall ip;
  ip.op = OpId::index_put;
  ip.attrs = a;
  r = run_rule(ip, {x, src, idx}, {g});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{10, 0, 30}));
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{0, 20}));
}

}  // namespace
}  // namespace ember::test
