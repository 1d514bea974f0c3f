// The C++ renderer's semantics: 16-bit float conversions bit-exact with ember/half.h, the IR's
// defined integer and float->int edge cases (the same as the table's built-in instantiation),
// the accuracy of its own maths, IR features the templates do not all use, the legalisation
// passes, and how long a typical source takes to compile.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <limits>

#include "ember/kl/elementwise.h"
#include "ember/kl/serialize.h"
#include "harness.h"

namespace ember::kl::test {
namespace {

// A tensor of `d` holding the raw 16-bit patterns `bits`.
Tensor from_bits(const std::vector<int16_t>& bits, DType d) {
  Tensor t = empty({int64_t(bits.size())}, {.dtype = d});
  std::memcpy(t.raw_data(), bits.data(), bits.size() * 2);
  return t;
}
std::vector<int16_t> bits_of(const Tensor& t) {
  std::vector<int16_t> b(size_t(t.numel()));
  std::memcpy(b.data(), t.contiguous().raw_data(), b.size() * 2);
  return b;
}

// Runs body over `n` elements of 1-d inputs with a vector loop and a scalar tail (n % 8 != 0).
std::vector<Tensor> map(const std::vector<Tensor>& in, std::vector<DType> out, const PwBody& body) {
  return run_pointwise(in, out, in[0].shape(), body);
}

TEST(KlRender, HalfConversionsAreBitExact) {
  std::vector<int16_t> bits(65536 + 3);
  for (int i = 0; i < 65536; ++i) bits[size_t(i)] = int16_t(i);
  Tensor h16 = from_bits(bits, kF16), b16 = from_bits(bits, kBF16);
  auto up = map({h16, b16}, {kF32, kF32}, [](std::span<const Expr> x, std::span<const Expr>) {
    return std::vector<Expr>{cast(x[0], kF32), cast(x[1], kF32)};
  });
  EXPECT_EQ(diff_exact(up[0], h16.to(kF32)), "");
  EXPECT_EQ(diff_exact(up[1], b16.to(kF32)), "");
  // Down: every f16/bf16 value, the midpoints between neighbours, and random f32 bit patterns.
  std::vector<float> f;
  for (int i = 0; i < 65536; ++i) {
    float a = ember::detail::f16_to_f32(uint16_t(i)),
          b = ember::detail::f16_to_f32(uint16_t(i + 1));
    f.insert(f.end(), {a, (a + b) / 2, ember::detail::bf16_to_f32(uint16_t(i))});
  }
  uint32_t s = 12345;
  for (int i = 0; i < 100000; ++i) {
    s = s * 1664525u + 1013904223u;
    float v;
    std::memcpy(&v, &s, 4);
    f.push_back(v);
  }
  Tensor x = tensor(f, {int64_t(f.size())});
  auto down = map({x}, {kF16, kBF16}, [](std::span<const Expr> v, std::span<const Expr>) {
    return std::vector<Expr>{cast(v[0], kF16), cast(v[0], kBF16)};
  });
  EXPECT_EQ(bits_of(down[0]), bits_of(x.to(kF16)));
  EXPECT_EQ(bits_of(down[1]), bits_of(x.to(kBF16)));
}

template <class T>
std::vector<T> edge_ints() {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  return {lo,        T(lo + 1), T(-7), T(-1), T(0),   T(1), T(2), T(7),
          T(hi - 1), hi,        T(3),  T(-3), T(100), T(5), T(-5)};
}

// Every pair of edge values through div (both roundings), remainder, fmod, mul, add, shifts
// and pow, compared with the table's built-in instantiation (which is the specification).
template <class T>
void integer_edges(DType d) {
  std::vector<T> e = edge_ints<T>(), a, b;
  for (T x : e)
    for (T y : e) a.push_back(x), b.push_back(y);
  for (int64_t sh : {-1, 0, 1, 63, 64, 100}) a.push_back(T(-5)), b.push_back(T(sh));
  Tensor ta = tensor(a, {int64_t(a.size())}), tb = tensor(b, {int64_t(b.size())});
  std::vector<DType> outs(9, d);
  auto got = map({ta, tb}, outs, [](std::span<const Expr> v, std::span<const Expr>) {
    using namespace ew;
    const Expr &x = v[0], &y = v[1];
    return std::vector<Expr>{Def<OpId::div>::f_trunc(x, y),
                             Def<OpId::div>::f_floor(x, y),
                             Def<OpId::remainder>::f(x, y),
                             Def<OpId::fmod>::f(x, y),
                             Def<OpId::mul>::f(x, y),
                             Def<OpId::add>::f(x, y),
                             Def<OpId::bitwise_left_shift>::f(x, y),
                             Def<OpId::bitwise_right_shift>::f(x, y),
                             Def<OpId::pow>::f(x, y)};
  });
  ASSERT_EQ(got.size(), outs.size());
  for (size_t i = 0; i < a.size(); ++i) {
    using namespace ew;
    const T x = a[i], y = b[i];
    const T want[] = {Def<OpId::div>::f_trunc(x, y),
                      Def<OpId::div>::f_floor(x, y),
                      Def<OpId::remainder>::f(x, y),
                      Def<OpId::fmod>::f(x, y),
                      Def<OpId::mul>::f(x, y),
                      Def<OpId::add>::f(x, y),
                      Def<OpId::bitwise_left_shift>::f(x, y),
                      Def<OpId::bitwise_right_shift>::f(x, y),
                      Def<OpId::pow>::f(x, y)};
    for (size_t o = 0; o < outs.size(); ++o) {
      T g = got[o].template to_vector<T>()[i];
      EXPECT_EQ(int64_t(g), int64_t(want[o]))
          << dtype_name(d) << " op " << o << " on " << int64_t(x) << ", " << int64_t(y);
    }
  }
}

TEST(KlRender, IntegerEdgeCasesAreDefined) {
  integer_edges<int32_t>(kI32);
  integer_edges<int64_t>(kI64);
  integer_edges<int8_t>(kI8);
  integer_edges<int16_t>(kI16);
  integer_edges<uint8_t>(kU8);
  // The documented results, spelled out.
  EXPECT_EQ(int_div_trunc<int32_t>(7, 0), 0);
  EXPECT_EQ(int_rem<int32_t>(7, 0), 7);
  EXPECT_EQ(int_div_trunc<int32_t>(INT32_MIN, -1), INT32_MIN);
  EXPECT_EQ(int_rem<int32_t>(INT32_MIN, -1), 0);
  EXPECT_EQ(int_shl<int32_t>(1, 32), 0);
  EXPECT_EQ(int_shr<int32_t>(-8, 40), -1);
}

TEST(KlRender, FloatToIntCastsAreDefined) {
  std::vector<float> v = {NAN,           INFINITY,       -INFINITY, 1e20f, -1e20f,
                          2147483648.0f, -2147483904.0f, 3.7f,      -3.7f, 255.5f,
                          256.0f,        -129.0f,        0.0f,      -0.0f, 9.3e18f,
                          -9.3e18f,      1.0f,           0.5f,      -0.5f};
  Tensor x = tensor(v, {int64_t(v.size())});
  auto got =
      map({x}, {kI8, kU8, kI32, kI64, kBool}, [](std::span<const Expr> e, std::span<const Expr>) {
        return std::vector<Expr>{cast(e[0], kI8), cast(e[0], kU8), cast(e[0], kI32),
                                 cast(e[0], kI64), cast(e[0], kBool)};
      });
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(got[0].to_vector<int8_t>()[i], convert<int8_t>(v[i])) << v[i];
    EXPECT_EQ(got[1].to_vector<uint8_t>()[i], convert<uint8_t>(v[i])) << v[i];
    EXPECT_EQ(got[2].to_vector<int32_t>()[i], convert<int32_t>(v[i])) << v[i];
    EXPECT_EQ(got[3].to_vector<int64_t>()[i], convert<int64_t>(v[i])) << v[i];
    EXPECT_EQ(got[4].to(kI64).to_vector<int64_t>()[i], int64_t(convert<bool>(v[i]))) << v[i];
  }
  // ember/detail/convert.h's rule (torch's x86 results).
  EXPECT_EQ(convert<int64_t>(NAN), INT64_MIN);
  EXPECT_EQ(convert<int64_t>(INFINITY), INT64_MIN);
  EXPECT_EQ(convert<int32_t>(3e9f), INT32_MIN);
  EXPECT_EQ(convert<uint8_t>(300.7f), 44);
}

// The same rule against PyTorch's results (Debian's torch on x86), rendered, converted on the
// host and folded as constants, from f64 and from f32.
TEST(KlRender, FloatToIntCastsMatchTorch) {
  const double v[] = {-2147483649.0, 3e9, 1e10, NAN, INFINITY, -5.0, 300.7, 4294967303.0, -1e19};
  constexpr int64_t M32 = INT32_MIN, M64 = INT64_MIN;
  struct Want {
    DType from;
    std::vector<std::vector<int64_t>> to;  // u8, i8, i16, i32, i64
  };
  const Want wants[] = {
      {kF64,
       {{255, 0, 0, 0, 0, 251, 44, 7, 0},
        {0, 0, 0, 0, 0, -5, 44, 0, 0},
        {0, 0, 0, 0, 0, -5, 300, 0, 0},
        {M32, M32, M32, M32, M32, -5, 300, M32, M32},
        {-2147483649, 3000000000, 10000000000, M64, M64, -5, 300, 4294967303, M64}}},
      {kF32,
       {{0, 0, 0, 0, 0, 251, 44, 0, 0},
        {0, 0, 0, 0, 0, -5, 44, 0, 0},
        {0, 0, 0, 0, 0, -5, 300, 0, 0},
        {M32, M32, M32, M32, M32, -5, 300, M32, M32},
        {-2147483648, 3000000000, 10000000000, M64, M64, -5, 300, 4294967296, M64}}}};
  const DType tos[] = {kU8, kI8, kI16, kI32, kI64};
  for (const Want& w : wants) {
    Tensor x = tensor(std::vector<double>(std::begin(v), std::end(v)), {9}).to(w.from);
    // Loaded values (vector and scalar paths: 9 elements) and the same values as constants.
    auto got =
        map({x}, {kU8, kI8, kI16, kI32, kI64}, [&](std::span<const Expr> e, std::span<const Expr>) {
          std::vector<Expr> r;
          for (DType to : tos) r.push_back(cast(e[0], to));
          return r;
        });
    const std::vector<double> xs = x.to(kF64).to_vector<double>();
    for (size_t t = 0; t < 5; ++t) {
      const std::vector<int64_t> g = got[t].to(kI64).to_vector<int64_t>();
      for (size_t i = 0; i < 9; ++i) {
        const std::string what = std::string(dtype_name(w.from)) + " " + std::to_string(xs[i]) +
                                 " -> " + std::string(dtype_name(tos[t]));
        EXPECT_EQ(g[i], w.to[t][i]) << what;
        EXPECT_EQ(const_bits_int(tos[t], const_bits(tos[t], xs[i])), w.to[t][i])
            << what << " (constant)";
        int64_t host = 0;
        if (w.from == kF64) {
          switch (tos[t]) {
            case kU8:
              host = convert<uint8_t>(xs[i]);
              break;
            case kI8:
              host = convert<int8_t>(xs[i]);
              break;
            case kI16:
              host = convert<int16_t>(xs[i]);
              break;
            case kI32:
              host = convert<int32_t>(xs[i]);
              break;
            default:
              host = convert<int64_t>(xs[i]);
          }
        } else {
          const float f = float(xs[i]);
          switch (tos[t]) {
            case kU8:
              host = convert<uint8_t>(f);
              break;
            case kI8:
              host = convert<int8_t>(f);
              break;
            case kI16:
              host = convert<int16_t>(f);
              break;
            case kI32:
              host = convert<int32_t>(f);
              break;
            default:
              host = convert<int64_t>(f);
          }
        }
        EXPECT_EQ(host, w.to[t][i]) << what << " (host)";
      }
    }
  }
}

int64_t ulps(float a, float b) {
  if (a == b || (a != a && b != b)) return 0;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = int32_t(0x80000000u - uint32_t(ia));
  if (ib < 0) ib = int32_t(0x80000000u - uint32_t(ib));
  return std::llabs(int64_t(ia) - int64_t(ib));
}

TEST(KlRender, OwnMathIsAccurateAndExpMatchesFlex) {
  std::vector<float> v;
  for (float x = -110; x < 110; x += 0.00731f) v.push_back(x);
  for (float x = 1e-30f; x < 1e30f; x *= 1.37f) v.insert(v.end(), {x, -x});
  v.insert(v.end(), {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, 3e-45f});
  Tensor x = tensor(v, {int64_t(v.size())});
  auto got = map({x}, {kF32, kF32, kF32, kF32}, [](std::span<const Expr> e, std::span<const Expr>) {
    return std::vector<Expr>{exp(e[0]), log(e[0]), tanh(e[0]), erf(e[0])};
  });
  // flex's exp is the same polynomial compiled with ember's flags (this test file is not).
  const std::vector<float> flex_exp = ember::exp(x).to_vector<float>();
  auto ge = got[0].to_vector<float>(), gl = got[1].to_vector<float>(),
       gt = got[2].to_vector<float>(), gf = got[3].to_vector<float>();
  int64_t worst_log = 0, worst_tanh = 0, worst_erf = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(ulps(ge[i], flex_exp[i]), 0) << "exp(" << v[i] << ")";
    worst_log = std::max(worst_log, ulps(gl[i], float(std::log(double(v[i])))));
    worst_tanh = std::max(worst_tanh, ulps(gt[i], float(std::tanh(double(v[i])))));
    worst_erf = std::max(worst_erf, ulps(gf[i], float(std::erf(double(v[i])))));
  }
  EXPECT_LE(worst_log, 2);
  EXPECT_LE(worst_tanh, 4);
  EXPECT_LE(worst_erf, 4);
  std::cout << "[ kl ] worst ulps: log " << worst_log << ", tanh " << worst_tanh << ", erf "
            << worst_erf << "\n";
}

// Masked vector loads/stores, local arrays, a bool-vector variable, if/else and bitcasts, in a
// kernel written directly against the builder (out[i] = prefix data, masked tail).
TEST(KlRender, IrFeaturesRenderAndRun) {
  Builder kb("features");
  const int in = kb.buffer(kF32, Access::Read), out = kb.buffer(kF32, Access::Write);
  const int bits = kb.buffer(kI32, Access::Write);
  const Expr n = kb.index("n");
  Array tmp = kb.array({kF32, 1}, 8);
  for_range(Expr(0), (n + Expr(7)) / Expr(8), [&](Expr blk) {
    const Expr base = blk * Expr(8);
    const Expr lane = broadcast(base, 8) + iota(kI64, 8);
    const Expr m = lane < broadcast(n, 8);  // a 64-bit-wide mask used on 32-bit values
    Expr v = kb.load(in, base, 8, m);
    Var neg = kb.var(v < Expr(0.0f));
    tmp.store(Expr(0), v * lit(v, 2));
    Expr w = tmp.load(Expr(0), 8);
    if_(blk == Expr(0), [&] { neg.set(neg.get() || v == lit(v, 1)); });
    Expr r = select(neg.get(), -w, w);
    kb.store(out, base, r, m);
    kb.store(bits, base, bitcast(r, kI32), m);
  });
  Kernel k = kb.finish();
  auto mod = build(k);
  ASSERT_TRUE(mod->ok());
  Tensor x = tensor(std::vector<float>{1, -2, 3, -4, 5, 6, 7, -8, 9, 1, -1}, {11});
  Tensor y = full({16}, 99.0f), b = zeros({16}, {.dtype = kI32});
  ArgPack a(k);
  a.buffer(0, x.raw_data()).buffer(1, y.raw_data()).buffer(2, b.raw_data()).index(0, 11);
  mod->fn("features")(a.data(), 0, 1);
  // negatives doubled and negated, the first block's 1.0 too; lanes past n untouched.
  EXPECT_EQ(y.to_vector<float>(),
            (std::vector<float>{-2, 4, 6, 8, 10, 12, 14, 16, 18, 2, 2, 99, 99, 99, 99, 99}));
  EXPECT_EQ(b.to_vector<int32_t>()[1], int32_t(0x40800000));  // bits of 4.0f
}

TEST(KlRender, CollectivesLowerForEveryKindOfTarget) {
  auto make = [] {
    Builder kb("coll");
    kb.set_workgroup_size(8);
    const int out = kb.buffer(kF32, Access::Write);
    Expr v = cast(local_id(), kF32);
    Expr s = plane_reduce(v, ReduceKind::Sum), m = plane_reduce(v, ReduceKind::Max);
    Expr b = plane_broadcast(v, Expr(1)), x = plane_shuffle_xor(v, 1);
    kb.store(out, local_id(), s + m + b + x + cast(lane_id() + plane_size(), kF32));
    return kb.finish();
  };
  auto count = [](const Kernel& k, Op op) {
    return std::count_if(k.body.begin(), k.body.end(), [&](const Inst& in) { return in.op == op; });
  };
  const Kernel k = make();
  Target one;  // the C++ target: a plane of one lane, collectives are the identity
  Kernel l1 = lower_collectives(k, one);
  for (Op op :
       {Op::PlaneReduce, Op::PlaneBroadcast, Op::PlaneShuffleXor, Op::LaneId, Op::PlaneSize})
    EXPECT_EQ(count(l1, op), 0) << op_name(op);
  Target shared;  // a plane of 4 lanes without plane ops: shared memory and barriers
  shared.plane_size = 4;
  Kernel l4 = lower_collectives(k, shared);
  for (Op op :
       {Op::PlaneReduce, Op::PlaneBroadcast, Op::PlaneShuffleXor, Op::LaneId, Op::PlaneSize})
    EXPECT_EQ(count(l4, op), 0) << op_name(op);
  EXPECT_GE(count(l4, Op::Barrier), 6);
  EXPECT_EQ(count(l4, Op::ArrayDecl), 4);
  EXPECT_NO_THROW(verify(l4));
  Target native = shared;
  native.plane_ops = true;
  EXPECT_EQ(canonical_hash(lower_collectives(k, native)), canonical_hash(k));
  // On the host the identity lowering runs: one lane, so each collective returns its input.
  auto mod = build(k);
  ASSERT_TRUE(mod->ok());
  Tensor out = zeros({1});
  ArgPack a(k);
  a.buffer(0, out.raw_data());
  mod->fn("coll")(a.data(), 0, 1);
  EXPECT_EQ(out.item<float>(), 1.0f);  // 0 + 0 + 0 + 0 + (0 + 1)
}

TEST(KlRender, HalfArithmeticIsComputedInF32AndRoundedPerOp) {
  Builder kb("half");
  const int in = kb.buffer(kF16, Access::Read), out = kb.buffer(kF16, Access::Write);
  for_range(kb.work_begin(), kb.work_end(), [&](Expr i) {
    Expr x = kb.load(in, i, 1);
    kb.store(out, i, x * x + lit(x, 1));
  });
  Kernel k = kb.finish();
  Kernel l = lower_half(k, Target{});
  for (const Inst& i : l.body)
    if (i.op == Op::Mul || i.op == Op::Add) EXPECT_EQ(i.type.dtype, kF32);
  auto mod = build(k);
  ASSERT_TRUE(mod->ok());
  Tensor t = randn({100}).to(kF16), o = empty({100}, {.dtype = kF16});
  ArgPack a(k);
  a.buffer(0, t.raw_data()).buffer(1, o.raw_data());
  launch(mod->fn("half"), a, 100, 7);
  EXPECT_EQ(diff_exact(o, t * t + 1), "");  // the eager ops round to f16 after each op too
}

// A typical flush: a gelu chain, softmax, layer_norm, a cumsum and an AdamW step in one source.
TEST(KlRender, TypicalSourceCompilesQuickly) {
  const Target t = cpp_host_target();
  std::vector<Kernel> ks;
  PwLayout pl = collapse(std::vector<int64_t>{4096}, {{1}, {1}});
  ks.push_back(pointwise_kernel("gelu_chain", pointwise_key(pl, {kF32}, {kF32}, {}, t),
                                [](std::span<const Expr> in, std::span<const Expr>) {
                                  return std::vector<Expr>{gelu(in[0] * Expr(2.0) + Expr(1.0)) *
                                                           in[0]};
                                }));
  RowLayout rl =
      row_layout(std::vector<int64_t>{64, 512}, {{512, 1}, {512, 1}}, std::vector<int64_t>{1});
  ks.push_back(row_reduce_kernel(
      "softmax", row_reduce_key(rl, {kF32}, 1, {{Combiner::Softmax, kF32}}, {kF32}, true, {}, t),
      [](std::span<const Expr> in, std::span<const Expr>) { return std::vector<Expr>{in[0]}; },
      [](std::span<const Expr> r, std::span<const Expr> in, std::span<const Expr>) {
        return std::vector<Expr>{exp(in[0] - r[0]) / r[1]};
      }));
  ks.push_back(row_reduce_kernel(
      "layer_norm",
      row_reduce_key(rl, {kF32}, 1, {{Combiner::Welford, kF32}}, {kF32}, true, {kF32}, t),
      [](std::span<const Expr> in, std::span<const Expr>) { return std::vector<Expr>{in[0]}; },
      [](std::span<const Expr> r, std::span<const Expr> in, std::span<const Expr> s) {
        return std::vector<Expr>{(in[0] - r[0]) * rsqrt(r[1] / r[2] + s[0])};
      }));
  const std::string src = cpp_renderer(t)->render(ks);
  EXPECT_EQ(src.find("#include"), std::string::npos);
  const auto t0 = std::chrono::steady_clock::now();
  Module m(src);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(m.ok());
  for (const Kernel& k : ks) EXPECT_NE(m.fn(k.name), nullptr);
  std::cout << "[ kl ] " << ks.size() << " kernels, " << std::count(src.begin(), src.end(), '\n')
            << " lines, compiled in " << ms << " ms\n";
}

}  // namespace
}  // namespace ember::kl::test
