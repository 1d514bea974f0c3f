// The CUDA renderer without a GPU: every template variant and generated kernels rendered for
// cuda_target(9, 0) and compiled by NVRTC to sm_90 cubins (a compile error fails), and spot
// checks of the IR's semantics in the rendered text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/backends/cuda/nvrtc.h"
#include "ember/fusion.h"
#include "ember/fusion/executor.h"
#include "ember/kl/random.h"
#include "ember/kl/render.h"
#include "ember/kl/scalar.h"
#include "ember/kl/templates/index.h"
#include "ember/kl/templates/multi_tensor.h"
#include "ember/kl/templates/pointwise.h"
#include "ember/kl/templates/row_reduce.h"
#include "ember/kl/templates/scan.h"
#include "fusion/programs.h"

namespace ember::kl {
namespace {

const Target& gpu() {
  static const Target t = cuda_target(9, 0, 227 << 10);
  return t;
}

// Renders and compiles `kernels` (named k0, k1, ...); returns the source.
std::string compile_ok(std::vector<Kernel> kernels) {
  for (size_t i = 0; i < kernels.size(); ++i) kernels[i].name = "k" + std::to_string(i);
  const std::string src = cuda_renderer(gpu())->render(kernels);
  cuda::NvrtcToolchain tc;
  EXPECT_TRUE(tc.identify(nullptr).ok);
  CompileResult r = tc.compile(src, {});
  EXPECT_TRUE(r.ok) << r.log << "\n" << src;
  if (r.ok) EXPECT_TRUE(tc.plausible(r.image));
  return src;
}

Kernel pointwise(std::vector<DType> in, std::vector<DType> out, std::vector<int64_t> shape,
                 std::vector<std::vector<int64_t>> strides, const PwBody& body,
                 std::vector<DType> sc = {}) {
  PwLayout l = collapse(shape, strides);
  return pointwise_kernel("pw", pointwise_key(l, in, out, sc, gpu()), body);
}

std::vector<Expr> gelu_body(std::span<const Expr> x, std::span<const Expr>) {
  return {fence(gelu(x[0]))};
}

TEST(KlCudaRender, PointwiseVariantsCompile) {
  std::vector<Kernel> ks;
  ks.push_back(pointwise({kF32}, {kF32}, {1 << 20}, {{1}, {1}}, gelu_body));
  ks.push_back(
      pointwise({kF32, kF32}, {kF32}, {64, 33}, {{33, 1}, {0, 1}, {33, 1}},
                [](auto x, auto) { return std::vector<Expr>{fence(x[0] * x[1]) + x[0]}; }));
  ks.push_back(
      pointwise({kF16, kBF16}, {kF16, kBF16}, {1000}, {{1}, {1}, {1}, {1}}, [](auto x, auto) {
        return std::vector<Expr>{exp(x[0]), cast(cast(x[1], kF32) * Expr(2.0), kBF16)};
      }));
  ks.push_back(pointwise({kI64, kI64}, {kI64, kI64}, {7, 5}, {{1, 7}, {5, 1}, {5, 1}, {5, 1}},
                         [](auto x, auto) {
                           return std::vector<Expr>{x[0] / x[1], x[0] % x[1]};
                         }));
  ks.push_back(pointwise({kI32, kI8}, {kI32, kI8}, {100}, {{1}, {1}, {1}, {1}}, [](auto x, auto) {
    return std::vector<Expr>{(x[0] << cast(x[1], kI32)) >> Expr(3), -x[1] * x[1]};
  }));
  ks.push_back(pointwise({kF64, kBool}, {kBool, kF64, kU8}, {300}, {{1}, {1}, {1}, {1}, {1}},
                         [](auto x, auto s) {
                           Expr nan = isnan(x[0]) || isinf(x[0]);
                           return std::vector<Expr>{nan && x[1],
                                                    select(x[1], x[0] * s[0], floor(x[0])),
                                                    cast(x[0], kU8)};
                         },
                         {kF64}));
  ks.push_back(pointwise({kF32}, {kI64, kI32, kF32}, {50}, {{1}, {1}, {1}, {1}}, [](auto x, auto) {
    return std::vector<Expr>{cast(x[0], kI64), bitcast(x[0], kI32),
                             fmod(x[0], Expr(0.5f)) + round_even(x[0])};
  }));
  compile_ok(std::move(ks));
}

Kernel row(std::vector<int64_t> shape, std::vector<int64_t> dims, Combiner c, bool back,
           DType d = kF32, std::vector<int64_t> in_strides = {}) {
  std::vector<std::vector<int64_t>> st;
  std::vector<int64_t> cs(shape.size(), 1);
  for (size_t i = shape.size() - 1; i-- > 0;) cs[i] = cs[i + 1] * shape[i + 1];
  st.push_back(in_strides.empty() ? cs : in_strides);
  if (back) {
    st.push_back(cs);
  } else {
    std::vector<int64_t> o = cs;
    int64_t n = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      bool red = std::find(dims.begin(), dims.end(), int64_t(i)) != dims.end();
      o[i] = red ? 0 : n;
      if (!red) n *= shape[i];
    }
    st.push_back(o);
  }
  RowLayout l = row_layout(shape, st, dims);
  const DType acc = d == kF64 ? kF64 : kF32;
  const DType out = c == Combiner::ArgMax ? kI64 : d;
  RowReduceKey key = row_reduce_key(l, {d}, 1, {{c, acc}}, {out}, back, {}, gpu());
  return row_reduce_kernel(
      "row", key, [&](auto in, auto) { return std::vector<Expr>{cast(in[0], acc)}; },
      [&, c, back](auto r, auto in, auto) {
        if (c == Combiner::Softmax)
          return std::vector<Expr>{cast(exp(cast(in[0], acc) - r[0]) / r[1], out)};
        if (c == Combiner::Welford && back)
          return std::vector<Expr>{cast((cast(in[0], acc) - r[0]) / sqrt(r[1] / r[2]), out)};
        if (c == Combiner::ArgMax) return std::vector<Expr>{r[1]};
        return std::vector<Expr>{cast(r[0], out)};
      });
}

// Dropout's in-kernel Philox (kl/random.h: words in I64, the 64-bit products split by shifts and
// masks) is plain IR: the renderer needs nothing new for it.
TEST(KlCudaRender, DropoutPhiloxCompiles) {
  std::vector<Kernel> ks;
  for (DType d : {kF32, kBF16}) {
    const std::vector<int64_t> shape{4099};
    PwLayout l = collapse(shape, {{1}, {1}, {1}});
    PwKey key = pointwise_key(l, {d, d}, {d}, {kI64, kI64, kF64}, gpu());
    ks.push_back(pointwise_kernel_at("dropout", key, [d](auto x, auto s, const Expr& pos) {
      const Expr keep = cast(bernoulli_keep(s[0], s[1], pos, s[2]), d);
      return std::vector<Expr>{x[1] + x[0] * keep};
    }));
  }
  compile_ok(ks);
}

TEST(KlCudaRender, RowReduceGpuFormsCompile) {
  std::vector<Kernel> ks;
  ks.push_back(row({8192, 4096}, {1}, Combiner::Softmax, true));  // 256 threads a row
  ks.push_back(row({512, 100}, {1}, Combiner::Welford, true));    // a plane a row, 8 a block
  ks.push_back(row({64, 4096}, {1}, Combiner::Sum, false, kBF16));
  ks.push_back(row({64, 33}, {1}, Combiner::ArgMax, false));
  ks.push_back(row({200, 70}, {0}, Combiner::Max, false));  // Col: a thread a column
  ks.push_back(row({16, 1 << 16}, {1}, Combiner::Sum, false, kF64));
  ks.push_back(row({64, 40}, {1}, Combiner::Min, false, kF32, {1, 64}));  // strided rows
  for (const Kernel& k : ks) EXPECT_NE(k.spec.find("gpu"), std::string::npos) << k.spec;
  ks.push_back(row({64, 4098}, {1}, Combiner::Softmax, true));  // a tail: the row is read twice
  // Few long columns: each split over planes of a workgroup (a bias's gradient), any combiner.
  ks.push_back(row({8192, 768}, {0}, Combiner::Sum, false, kBF16));
  ks.push_back(row({4096, 100}, {0}, Combiner::Welford, false));
  ks.push_back(row({2048, 50}, {0}, Combiner::ArgMax, false));
  EXPECT_EQ(ks[0].workgroup_size, 256);
  EXPECT_EQ(ks[4].workgroup_size, 1);
  EXPECT_EQ(ks[8].workgroup_size, 1024) << ks[8].spec;  // 24 workgroups of 32 planes
  EXPECT_NE(ks[8].spec.find(" g32/1024"), std::string::npos) << ks[8].spec;
  EXPECT_GT(ks[9].workgroup_size, 1) << ks[9].spec;
  EXPECT_GT(ks[10].workgroup_size, 1) << ks[10].spec;
  // Whole vectors, a few a thread: the row stays in registers (4 vectors a thread, then 1).
  EXPECT_NE(ks[0].spec.find(" c4"), std::string::npos) << ks[0].spec;
  EXPECT_NE(ks[1].spec.find(" c1"), std::string::npos) << ks[1].spec;
  EXPECT_EQ(ks[2].spec.find(" c"), std::string::npos) << ks[2].spec;  // reduced, not broadcast back
  EXPECT_EQ(ks[7].spec.find(" c"), std::string::npos) << ks[7].spec;
  const std::string src = compile_ok(ks);
  EXPECT_NE(src.find("__shfl_xor_sync"), std::string::npos);
  EXPECT_NE(src.find("__syncthreads()"), std::string::npos);
  EXPECT_NE(src.find("__launch_bounds__(256)"), std::string::npos);
}

// A loss's row kernel: a per-row target beside the row, and a status word the prologue fails
// (a target out of range), in the GPU Row and Col forms.
TEST(KlCudaRender, RowReduceWithAStatusWordCompiles) {
  std::vector<Kernel> ks;
  for (const bool col : {false, true}) {
    const std::vector<int64_t> shape = col ? std::vector<int64_t>{6, 10, 7} : std::vector<int64_t>{64, 10};
    const std::vector<std::vector<int64_t>> st =
        col ? std::vector<std::vector<int64_t>>{{70, 7, 1}, {7, 0, 1}, {7, 0, 1}}
            : std::vector<std::vector<int64_t>>{{10, 1}, {1, 0}, {1, 0}};
    RowLayout l = row_layout(shape, st, std::vector<int64_t>{1});
    RowReduceKey key = row_reduce_key(l, {kF32, kI64}, 2, {{Combiner::Softmax, kF32}, {Combiner::Sum, kF32}},
                                      {kF32}, false, {kI64}, gpu());
    key.status = true;
    ks.push_back(row_reduce_kernel_at(
        "loss", key,
        [](auto in, auto s, const Expr& pos) {
          const Expr x = in[0], cls = cast(in[1], kI64);
          return std::vector<Expr>{x, select(pos == cls, x, lit(x, 0)), cls >= s[0] || cls < lit(cls, 0), cls};
        },
        [](auto r, auto, auto) { return std::vector<Expr>{r[2] - r[0] - log(r[1])}; }));
    EXPECT_NE(ks.back().spec.find("status"), std::string::npos);
  }
  const std::string src = compile_ok(ks);
  EXPECT_NE(src.find("*(volatile long long*)"), std::string::npos) << src;
}

TEST(KlCudaRender, ScanIndexAndMultiTensorCompile) {
  std::vector<Kernel> ks;
  for (ScanOp op : {ScanOp::Sum, ScanOp::Max}) {
    const bool idx = op == ScanOp::Max;
    std::vector<std::vector<int64_t>> st = {{100, 1}, {100, 1}};
    if (idx) st.push_back({100, 1});
    RowLayout l = row_layout(std::vector<int64_t>{20, 100}, st, std::vector<int64_t>{1});
    ks.push_back(scan_kernel("scan", scan_key(l, kF32, kF32, kF32, op, idx, gpu())));
  }
  ks.push_back(gather_kernel("g", GatherKey{kF32, kI64, 2, 1, true}));
  ks.push_back(scatter_kernel("s", ScatterKey{kF32, kI64, kF32, ScatterReduce::Sum, 2, 0, false}));
  MultiTensorKey mk =
      multi_tensor_key({{kF32, Access::ReadWrite}, {kF32, Access::Read}}, {kF32}, kF32, gpu());
  EXPECT_EQ(mk.workgroup, 256);
  ks.push_back(multi_tensor_kernel("mt", mk, [](auto in, auto s) {
    return std::vector<Expr>{in[0] - s[0] * in[1], in[1] * in[1]};
  }));
  compile_ok(std::move(ks));
}

TEST(KlCudaRender, TextFollowsTheIrSemantics) {
  std::vector<Kernel> ks;
  ks.push_back(pointwise({kF32, kF32}, {kF32}, {1024}, {{1}, {1}, {1}}, [](auto x, auto) {
    return std::vector<Expr>{fence(x[0] * x[1]) + x[0]};
  }));
  ks.push_back(pointwise({kI64, kI64}, {kI64}, {1024}, {{1}, {1}, {1}},
                         [](auto x, auto) { return std::vector<Expr>{x[0] / x[1]}; }));
  const std::string src = compile_ok(ks);
  EXPECT_EQ(src.find("#include"), std::string::npos);
  // The multiply a Fence reads is rounded on its own; the fence itself is opaque.
  EXPECT_NE(src.find("__fmul_rn("), std::string::npos) << src;
  EXPECT_NE(src.find("asm volatile(\"\" : \"+f\""), std::string::npos);
  // Integer division: zero divisors and INT_MIN / -1 defined; 16-byte accesses when aligned.
  EXPECT_NE(src.find("if (b == 0) return (long long)0;"), std::string::npos);
  EXPECT_NE(src.find("if (b == (long long)-1)"), std::string::npos);
  EXPECT_NE(src.find("kl_b16"), std::string::npos);
  EXPECT_NE(src.find("& 15u) == 0"), std::string::npos);
  EXPECT_NE(
      src.find("extern \"C\" __global__ void __launch_bounds__(128) k0(const kl_args_k0 kl_p"),
      std::string::npos);
  // No 16-bit helpers without 16-bit dtypes; with them, only the ones used.
  EXPECT_EQ(src.find("kl_f32_to_f16"), std::string::npos);
  const std::string half =
      compile_ok({pointwise({kBF16}, {kBF16}, {64}, {{1}, {1}},
                            [](auto x, auto) { return std::vector<Expr>{x[0] + x[0]}; })});
  EXPECT_NE(half.find("kl_f32_to_bf16"), std::string::npos);
  EXPECT_NE(half.find("kl_bf16_to_f32"), std::string::npos);
  EXPECT_EQ(half.find("kl_f32_to_f16"), std::string::npos);
}

TEST(KlCudaRender, PlaneCollectivesAreWarpShuffles) {
  Builder kb("planes");
  kb.set_workgroup_size(64);
  const int out = kb.buffer(kF32, Access::Write);
  const Expr id = local_id();
  const Expr x = cast(id, kF32);
  const Expr s =
      plane_reduce(x, ReduceKind::Max) + plane_broadcast(x, Expr(3)) + plane_shuffle_xor(x, 1);
  kb.store(out, id, s + plane_shuffle(x, lane_id()));
  const std::string src = compile_ok({kb.finish()});
  EXPECT_NE(src.find("__shfl_xor_sync(0xffffffffu"), std::string::npos);
  EXPECT_NE(src.find("__shfl_sync(0xffffffffu"), std::string::npos);
  EXPECT_EQ(src.find("__shared__"), std::string::npos);  // native: no shared-memory lowering
}

TEST(KlCudaRender, ToolchainIdentityAndImages) {
  cuda::NvrtcToolchain a, b({.sm_major = 8, .sm_minor = 0});
  EXPECT_EQ(a.target(), "cuda-sm90");
  EXPECT_EQ(b.target(), "cuda-sm80");
  ToolchainIdentity ia = a.identify(nullptr), ib = b.identify(nullptr);
  ASSERT_TRUE(ia.ok);
  EXPECT_NE(ia.fingerprint, ib.fingerprint);
  EXPECT_EQ(ia.name, "nvrtc-" + cuda::NvrtcToolchain::version());
  EXPECT_FALSE(a.plausible("not an elf"));
  CompileResult bad = a.compile("extern \"C\" __global__ void k() { undefined_thing(); }", {});
  EXPECT_FALSE(bad.ok);
  EXPECT_FALSE(bad.toolchain_broken);
  EXPECT_NE(bad.log.find("undefined_thing"), std::string::npos) << bad.log;
}

// The fused kernels of generated programs (the property tests' generator, on the cpu) rendered
// for the GPU and compiled: the IR fusion produces, in all its variety, is valid CUDA.
TEST(KlCudaRender, GeneratedFusedProgramsCompile) {
  std::vector<Kernel> seen;
  fusion::observe_kernels([&](const Kernel& k) { seen.push_back(k); });
  fusion::set_wait_for_kernels(true);
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    fusion_test::run(seed, Device::cpu(), false, nullptr);
    fusion_test::run(seed + 1000, Device::cpu(), true, nullptr);
    synchronize(Device::cpu());
  }
  fusion::set_wait_for_kernels(false);
  fusion::observe_kernels({});
  // (Kernels this process compiled earlier are not seen again: some tests ran before.)
  ASSERT_GT(seen.size(), 5u);
  std::vector<Kernel> part;
  for (size_t i = 0; i < seen.size(); ++i) {  // a few sources, as flushes make them
    part.push_back(seen[i]);
    if (part.size() == 16 || i + 1 == seen.size()) compile_ok(std::exchange(part, {}));
  }
}

}  // namespace
}  // namespace ember::kl
