// nn VJP rules where golden cases say too little: broadcasting and vector operands of matmul,
// conv geometry combinations (conv3d, asymmetric "same" padding, output_padding past the
// stride), the sparse form of the pooling/interpolation adjoints, non-contiguous inputs,
// multi-output ops with some cotangents undefined, torch's special cases (padding_idx, ignored
// targets, -inf logits) and the float index maths of interpolate.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/ops/modes.h"
#include "ember/backends/backend.h"
#include "gradcheck.h"

namespace ember::test {
namespace {

Tensor rnd(const Shape& s) { return randn(s, {DType::F64}); }

// The rule's gradients for explicit cotangents (undefined = none), every input asking for one.
TensorList rule(OpId op, const Attrs& a, const TensorList& in, const TensorList& gs) {
  TensorList outs = dispatch(op, a, std::span<const Tensor>(in));
  std::unique_ptr<bool[]> needs(new bool[in.size()]);
  for (size_t i = 0; i < in.size(); ++i) needs[i] = in[i].defined() && is_floating(in[i].dtype());
  VjpCtx ctx{op, a, in, outs, gs, std::span<const bool>(needs.get(), in.size())};
  return op_def(op).vjp(ctx);
}

// Undefined gradients are zeros.
void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  if (!a.defined() && !b.defined()) return;
  if (a.defined() && b.defined()) ASSERT_EQ(a.shape(), b.shape()) << what;
  auto va = a.defined() ? a.to_vector<double>() : std::vector<double>(size_t(b.numel()));
  auto vb = b.defined() ? b.to_vector<double>() : std::vector<double>(size_t(a.numel()));
  for (size_t i = 0; i < va.size(); ++i)
    ASSERT_NEAR(va[i], vb[i], tol * (1 + std::fabs(vb[i]))) << what << " element " << i;
}

TEST(NnRules, MatmulBroadcastsAndVectors) {
  detail::init();
  const std::pair<Shape, Shape> cases[] = {
      {{2, 1, 3, 4}, {5, 4, 2}},  // both operands broadcast their batch
      {{3, 4}, {2, 4, 5}},        // a shared left matrix
      {{2, 3, 4}, {4, 5}},        // a shared right matrix (one flattened GEMM)
      {{4}, {2, 4, 3}},           // vector @ batch
      {{2, 3, 4}, {4}},           // batch @ vector
      {{4}, {4}},                 // dot
  };
  for (const auto& [sa, sb] : cases)
    EXPECT_EQ(gradcheck(OpId::matmul, {}, {rnd(sa), rnd(sb)}), "")
        << shape_str(sa) << " @ " << shape_str(sb);
  EXPECT_EQ(gradcheck(OpId::linear, {}, {rnd({2, 3, 4}), rnd({5, 4}), rnd({5})}), "");
  EXPECT_EQ(gradcheck(OpId::linear, {}, {rnd({3, 4}), rnd({4}), rnd({})}), "");
  EXPECT_EQ(gradcheck(OpId::bmm, {}, {rnd({2, 3, 4}), rnd({2, 4, 5})}), "");
}

TEST(NnRules, NonContiguousInputsGiveTheSameGradients) {
  detail::init();
  const Tensor a = rnd({4, 3}).t(), b = rnd({5, 4}).t(), g = rnd({5, 3}).t();
  for (OpId op : {OpId::mm, OpId::matmul}) {
    TensorList nc = rule(op, {}, {a, b}, {g});
    TensorList c = rule(op, {}, {a.contiguous(), b.contiguous()}, {g.contiguous()});
    for (size_t i = 0; i < 2; ++i) expect_close(nc[i], c[i], 1e-12, op_name(op));
  }
  // A channels-last view into conv2d.
  const Tensor x = rnd({2, 5, 6, 3}).permute({0, 3, 1, 2}), w = rnd({4, 3, 3, 3});
  Attrs a2;
  a2.ints2 = {2}, a2.ints3 = {1}, a2.ints4 = {1}, a2.i[0] = 1;
  const Tensor gy = rnd({2, 4, 3, 3});
  TensorList nc = rule(OpId::conv2d, a2, {x, w, Tensor()}, {gy});
  TensorList c = rule(OpId::conv2d, a2, {x.contiguous(), w, Tensor()}, {gy});
  expect_close(nc[0], c[0], 1e-12, "conv2d x");
  expect_close(nc[1], c[1], 1e-12, "conv2d w");
  // Broadcast (stride-0) cotangents, as the tape hands out for sums.
  const Tensor gb = rnd({1, 4, 1, 1}).expand({2, 4, 3, 3});
  nc = rule(OpId::conv2d, a2, {x, w, rnd({4})}, {gb});
  c = rule(OpId::conv2d, a2, {x, w, rnd({4})}, {gb.contiguous()});
  for (size_t i = 0; i < 3; ++i) expect_close(nc[i], c[i], 1e-12, "conv2d expanded cotangent");
  Attrs bl;
  bl.mode = uint8_t(ops::InterpMode::Bilinear), bl.ints = {7, 3};
  const Tensor gi = rnd({1, 1, 7, 1}).expand({2, 3, 7, 3});
  expect_close(rule(OpId::interpolate, bl, {rnd({2, 3, 4, 5})}, {gi})[0],
               rule(OpId::interpolate, bl, {rnd({2, 3, 4, 5})}, {gi.contiguous()})[0], 1e-12,
               "interpolate expanded cotangent");
}

struct ConvCase {
  Shape x, w;
  Shape stride, pad, dil;
  int64_t groups;
  std::string mode;  // "", "same"
};

TEST(NnRules, ConvGeometries) {
  detail::init();
  const ConvCase cases[] = {
      {{2, 4, 9}, {6, 2, 3}, {2}, {1}, {2}, 2, ""},
      {{4, 7}, {3, 4, 2}, {1}, {0}, {1}, 1, "same"},  // unbatched; even kernel: asymmetric
      {{1, 2, 10}, {2, 2, 4}, {3}, {2}, {1}, 1, ""},  // trailing input never read
      {{2, 4, 6, 5}, {4, 1, 3, 2}, {1, 2}, {1, 0}, {2, 1}, 4, ""},
      {{1, 3, 6, 7}, {2, 3, 4, 3}, {1}, {0}, {2, 1}, 1, "same"},
      {{1, 2, 5, 4, 5}, {4, 1, 3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1}, 2, ""},
      {{2, 4, 4, 5}, {2, 2, 2, 2, 3}, {1}, {1}, {2, 1, 1}, 1, ""},  // unbatched conv3d
      {{1, 2, 4, 5, 4}, {2, 2, 3, 2, 3}, {1}, {0}, {1, 2, 1}, 1, "same"},
      {{1, 2, 7, 4, 4}, {2, 1, 2, 2, 2}, {3, 2, 1}, {0}, {1}, 2, ""},
  };
  for (const ConvCase& k : cases) {
    const int64_t nsp = int64_t(k.w.size()) - 2;
    const OpId op = nsp == 1 ? OpId::conv1d : nsp == 2 ? OpId::conv2d : OpId::conv3d;
    Attrs a;
    a.ints2 = k.stride, a.ints3 = k.pad, a.ints4 = k.dil, a.i[0] = k.groups, a.mode = uint8_t(ops::parse_conv_padding("conv", k.mode));
    EXPECT_EQ(gradcheck(op, a, {rnd(k.x), rnd(k.w), rnd({k.w[0]})}), "")
        << op_name(op) << " x " << shape_str(k.x) << " w " << shape_str(k.w);
  }
}

TEST(NnRules, ConvTransposeGeometries) {
  detail::init();
  struct Case {
    Shape x, w, stride, pad, out_pad, dil;
    int64_t groups;
  };
  const Case cases[] = {
      {{2, 4, 5}, {4, 3, 3}, {2}, {1}, {1}, {1}, 2},
      {{1, 2, 4}, {2, 2, 2}, {1}, {0}, {2}, {3}, 1},  // output_padding past the stride
      {{3, 4, 3}, {3, 2, 2, 3}, {2, 1}, {0, 1}, {1, 0}, {1, 2}, 1},  // unbatched
      {{1, 4, 3, 3}, {4, 1, 3, 3}, {3, 2}, {1}, {2, 1}, {1}, 4},
  };
  for (const Case& k : cases) {
    const OpId op = k.w.size() == 3 ? OpId::conv_transpose1d : OpId::conv_transpose2d;
    Attrs a;
    a.ints2 = k.stride, a.ints3 = k.pad, a.ints = k.out_pad, a.ints4 = k.dil, a.i[0] = k.groups;
    EXPECT_EQ(gradcheck(op, a, {rnd(k.x), rnd(k.w), rnd({k.w[1] * k.groups})}), "")
        << op_name(op) << " x " << shape_str(k.x) << " w " << shape_str(k.w);
  }
}

TEST(NnRules, UnfoldAndFold) {
  detail::init();
  Attrs a;
  a.ints = {2, 3}, a.ints2 = {2, 1}, a.ints3 = {1, 0}, a.ints4 = {1, 2};
  EXPECT_EQ(gradcheck(OpId::unfold, a, {rnd({2, 5, 7})}), "");  // unbatched, trailing row unread
  Attrs f = a;
  f.i[0] = 5, f.i[1] = 7, f.i[2] = 2;
  EXPECT_EQ(gradcheck(OpId::fold, f, {rnd({12, 9})}), "");
}

TEST(NnRules, Pooling) {
  detail::init();
  Attrs mp;
  mp.ints = {3, 2}, mp.ints2 = {2, 2}, mp.ints3 = {1, 1}, mp.b[0] = true;  // no indices asked
  EXPECT_EQ(gradcheck(OpId::max_pool2d, mp, {rnd({2, 3, 6, 5})}), "");
  Attrs ap;
  ap.ints = {3}, ap.ints2 = {2}, ap.ints3 = {1}, ap.b[0] = true, ap.b[1] = false;
  EXPECT_EQ(gradcheck(OpId::avg_pool1d, ap, {rnd({2, 8})}), "");
  Attrs ad;
  ad.ints = {5, 3};  // upsampling windows overlap
  EXPECT_EQ(gradcheck(OpId::adaptive_avg_pool2d, ad, {rnd({1, 2, 3, 7})}), "");
  EXPECT_EQ(gradcheck(OpId::adaptive_max_pool2d, ad, {rnd({2, 4, 7})}), "");
}

TEST(NnRules, InterpolateLargeAxesUseTheSparseAdjoint) {
  detail::init();
  Attrs lin;
  lin.mode = uint8_t(ops::InterpMode::Linear), lin.ints = {2300};  // 1100 x 2300 is too large for the dense map
  EXPECT_EQ(gradcheck(OpId::interpolate, lin, {rnd({1, 1, 1100})}), "");
  Attrs bi;
  bi.mode = uint8_t(ops::InterpMode::Bicubic), bi.ints = {2300, 2}, bi.b[1] = bi.b[2] = true;
  EXPECT_EQ(gradcheck(OpId::interpolate, bi, {rnd({1, 1, 1100, 3})}), "");
}

// f32 (and f16) gradients use the float taps the forward kernel used; they match f64's closely.
TEST(NnRules, InterpolateInFloat) {
  detail::init();
  for (const char* mode : {"nearest", "bilinear", "bicubic"}) {
    Attrs a;
    a.mode = uint8_t(ops::parse_interp_mode("interpolate", mode)), a.b[0] = true, a.i[0] = 2, a.f[0] = 1.7, a.f[1] = 0.6;
    const Tensor x = rnd({1, 2, 5, 9}), g = rnd({1, 2, 8, 5});
    const Tensor ref = rule(OpId::interpolate, a, {x}, {g})[0];
    expect_close(rule(OpId::interpolate, a, {x.to(DType::F32)}, {g.to(DType::F32)})[0], ref,
                 1e-5, mode);
    expect_close(rule(OpId::interpolate, a, {x.to(DType::F16)}, {g.to(DType::F16)})[0], ref,
                 1e-2, mode);
  }
}

TEST(NnRules, UndefinedCotangentsCountAsZero) {
  detail::init();
  // nll_loss: (loss, total_weight); the weight sees both.
  Attrs nl;
  nl.mode = uint8_t(ops::Reduction::Mean), nl.i[0] = -100;
  const TensorList nin = {rnd({4, 3}), tensor<int64_t>({0, 2, -100, 1}, {4}), rnd({3}).abs()};
  const Tensor zero = zeros({}, {DType::F64});
  const Tensor gl = rnd({}), gt = rnd({});
  for (size_t i : {0, 2}) {
    expect_close(rule(OpId::nll_loss, nl, nin, {Tensor(), gt})[i],
                 rule(OpId::nll_loss, nl, nin, {zero, gt})[i], 1e-12, "nll_loss total only");
    expect_close(rule(OpId::nll_loss, nl, nin, {gl, Tensor()})[i],
                 rule(OpId::nll_loss, nl, nin, {gl, zero})[i], 1e-12, "nll_loss loss only");
  }
  // batch_norm in training: (y, batch mean, unbiased variance).
  Attrs bn;
  bn.b[0] = true, bn.f[0] = 1e-5;
  const TensorList bin = {rnd({4, 3, 2}), rnd({3}), rnd({3}).abs(), rnd({3}), rnd({3})};
  const Tensor gy = rnd({4, 3, 2}), gm = rnd({3}), gv = rnd({3});
  const Tensor zy = zeros({4, 3, 2}, {DType::F64}), zc = zeros({3}, {DType::F64});
  const TensorList full = rule(OpId::batch_norm, bn, bin, {zy, gm, zc});
  const TensorList part = rule(OpId::batch_norm, bn, bin, {Tensor(), gm, Tensor()});
  expect_close(part[0], full[0], 1e-12, "batch_norm mean only");
  const TensorList full_v = rule(OpId::batch_norm, bn, bin, {gy, zc, gv});
  const TensorList part_v = rule(OpId::batch_norm, bn, bin, {gy, Tensor(), gv});
  for (size_t i : {0, 3, 4}) expect_close(part_v[i], full_v[i], 1e-12, "batch_norm no mean");
}

TEST(NnRules, EmbeddingPaddingRowGetsNoGradient) {
  detail::init();
  const Tensor idx = tensor<int64_t>({0, 4, 2, 1, 1, 3}, {2, 3});
  const Tensor w = rnd({5, 2}), g = rnd({2, 3, 2});
  Attrs plain, padded;
  padded.b[0] = true, padded.i[0] = -4;  // row 1
  const Tensor ref = rule(OpId::embedding, plain, {idx, w}, {g})[1];
  const Tensor got = rule(OpId::embedding, padded, {idx, w}, {g})[1];
  const Tensor keep = tensor<double>({1, 0, 1, 1, 1}, {5, 1});
  expect_close(got, ref * keep, 1e-12, "embedding padding_idx");
  EXPECT_EQ(gradcheck(OpId::embedding, plain, {idx, w}), "");
}

TEST(NnRules, TorchSpecialCases) {
  detail::init();
  // Every target ignored: "mean" divides by zero, but like torch nothing is written.
  Attrs nl;
  nl.mode = uint8_t(ops::Reduction::Mean), nl.i[0] = 1;
  const TensorList in = {rnd({2, 3}), tensor<int64_t>({1, 1}, {2}), Tensor()};
  const Tensor gx = rule(OpId::nll_loss, nl, in, {rnd({}), Tensor()})[0];
  for (double v : gx.to_vector<double>()) EXPECT_EQ(v, 0.0);
  // -inf logits (rows not all -inf) have zero probability and gradients as at a very negative
  // finite logit (finite differences cannot step from -inf, so they check the finite twin).
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor logits = tensor<double>({-inf, 1, 2, 0.5, -inf, 3}, {2, 3});
  const Tensor finite = tensor<double>({-1000, 1, 2, 0.5, -1000, 3}, {2, 3});
  const Tensor g = rnd({2, 3});
  Attrs sm;
  sm.i[0] = 1;
  for (OpId op : {OpId::softmax, OpId::log_softmax}) {
    EXPECT_EQ(gradcheck(op, sm, {finite}), "") << op_name(op);
    expect_close(rule(op, sm, {logits}, {g})[0], rule(op, sm, {finite}, {g})[0], 1e-12,
                 op_name(op));
  }
}

TEST(NnRules, NormsWithoutAffineAndEvalBatchNorm) {
  detail::init();
  Attrs ln;
  ln.ints = {3, 4}, ln.f[0] = 1e-5;
  EXPECT_EQ(gradcheck(OpId::layer_norm, ln, {rnd({3, 4}), Tensor(), Tensor()}), "");
  Attrs rn;
  rn.ints = {4}, rn.f[0] = 1e-6, rn.b[0] = true;
  EXPECT_EQ(gradcheck(OpId::rms_norm, rn, {rnd({2, 3, 4}), Tensor()}), "");
  Attrs gn;
  gn.i[0] = 2, gn.f[0] = 1e-5;
  EXPECT_EQ(gradcheck(OpId::group_norm, gn, {rnd({2, 4, 3}), Tensor(), rnd({4})}), "");
  Attrs bn;
  bn.f[0] = 1e-5;
  EXPECT_EQ(gradcheck(OpId::batch_norm, bn,
                      {rnd({3, 2, 4}), rnd({2}), rnd({2}).abs() + 0.5, Tensor(), rnd({2})}),
            "");
}

}  // namespace
}  // namespace ember::test
