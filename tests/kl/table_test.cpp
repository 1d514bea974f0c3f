// Every elementwise registry op traced through the table (kl::pointwise), rendered into one
// shared object and run on the golden inputs against flex's eager kernels.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "ember/kl/serialize.h"
#include "ember/kl/trace_op.h"
#include "golden.h"
#include "gradcheck.h"
#include "harness.h"

namespace ember::kl::test {
namespace {

// Ops whose f32 result comes from the renderer's own log/tanh/erf polynomials (a few ulp from
// libm), so they are compared with a tolerance; every other op is compared bitwise.
bool own_polynomial(OpId op) {
  switch (op) {
    case OpId::log: case OpId::tanh: case OpId::erf: case OpId::erfinv: case OpId::gelu: case OpId::mish:
      return true;
    default: return false;
  }
}

TEST(KlTable, EveryElementwiseOpMatchesFlexOnTheGoldenInputs) {
  const Target target = cpp_host_target();
  Batch batch;
  std::vector<std::function<void()>> checks;
  std::set<OpId> covered;
  int exact = 0, close = 0;
  for (const ember::test::Case& c : ember::test::all_cases()) {
    const OpId op = op_from_name(c.op);
    if (!is_elementwise(op) || !c.error.empty()) continue;
    auto run = ember::test::runners().find(c.op);
    if (run == ember::test::runners().end()) continue;
    ember::test::CapturedCall call;
    try {
      call = ember::test::capture_op(op, [&](Device d) { run->second(c, d); });
    } catch (const Error&) {
      continue;
    }
    if (!call.captured) continue;
    MetaList meta;
    op_def(op).infer(op, call.attrs, call.inputs, meta);
    const Shape shape = meta.m[0].shape;
    const DType out = meta.m[0].dtype;
    const Tensor want = dispatch1(op, call.attrs, call.inputs), got = empty(shape, {.dtype = out});
    std::vector<DType> in_dtypes, all_dtypes;
    std::vector<std::vector<int64_t>> strides;
    std::vector<Tensor> views;
    std::vector<bool> present;
    for (const Tensor& t : call.inputs) {
      present.push_back(t.defined());
      all_dtypes.push_back(t.defined() ? t.dtype() : DType::F32);
      if (!t.defined()) continue;
      views.push_back(expand(t, shape));
      strides.push_back(strides_of(views.back()));
      in_dtypes.push_back(t.dtype());
    }
    strides.push_back(strides_of(got));
    // The scalar attributes become kernel parameters, as the fusion layer passes them.
    const DType compute = compute_dtype(op, all_dtypes, meta);
    const std::vector<Scalar> scalars = op_scalars(op, call.attrs, compute);
    const PwLayout layout = collapse(std::span<const int64_t>(shape), strides);
    const PwKey key = pointwise_key(layout, in_dtypes, {out},
                                    std::vector<DType>(scalars.size(), eval_dtype(compute)), target);
    const Attrs attrs = call.attrs;
    Kernel k = pointwise_kernel("k", key, [&](std::span<const Expr> loaded, std::span<const Expr> s) {
      std::vector<Expr> in;
      size_t next = 0;
      for (bool p : present) in.push_back(p ? loaded[next++] : Expr());
      return std::vector<Expr>{pointwise(op, attrs, in, s, compute, out)};
    });
    Kernel copy = k;
    batch.add(std::move(k), [=](KernelFn f) {
      std::vector<const void*> bufs;
      for (const Tensor& t : views) bufs.push_back(t.raw_data());
      bufs.push_back(got.raw_data());
      launch_pieces(f, pointwise_args(copy, key, layout, bufs, scalars), pointwise_items(layout), 3);
    });
    const std::string what = c.op + "/" + c.name + " " + key.str();
    const DType d = want.dtype();
    if (own_polynomial(op) && d != DType::F64) {
      const double rtol = d == DType::F32 ? 2e-6 : d == DType::F16 ? 2e-3 : 1.6e-2;
      checks.push_back([=] { EXPECT_EQ(diff_close(got, want, rtol, rtol * 1e-2), "") << what; });
      ++close;
    } else {
      checks.push_back([=] { EXPECT_EQ(diff_exact(got, want), "") << what; });
      ++exact;
    }
    covered.insert(op);
  }
  batch.run();
  for (auto& f : checks) f();
  std::vector<std::string> missing;
  for (int i = 0; i < kNumOps; ++i)
    if (is_elementwise(OpId(i)) && !covered.count(OpId(i))) missing.push_back(op_name(OpId(i)));
  EXPECT_TRUE(missing.empty()) << "ops without a traced golden case: " << ::testing::PrintToString(missing);
  std::cout << "[ kl ] " << checks.size() << " cases (" << exact << " bitwise, " << close << " within ulps), "
            << batch.distinct() << " distinct kernels\n";
}

}  // namespace
}  // namespace ember::kl::test
