// Every elementwise registry op traced through the table (kl::pointwise), rendered into one
// shared object and run on the golden inputs against flex's eager kernels.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

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

struct Check {
  std::string what, kernel;
  PwKey key;
  PwLayout layout;
  std::vector<Tensor> keep;  // views whose storage the pack points into
  Tensor want, got;
  std::vector<Scalar> scalars;
  OpId op;
};

TEST(KlTable, EveryElementwiseOpMatchesFlexOnTheGoldenInputs) {
  const Target target = cpp_host_target();
  std::vector<Check> checks;
  std::map<std::string, Kernel> kernels;  // by canonical hash: cases share specialisations
  std::set<OpId> covered;
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
    Check ch;
    ch.op = op;
    ch.what = c.op + "/" + c.name;
    ch.want = dispatch1(op, call.attrs, call.inputs);
    ch.got = empty(shape, {.dtype = out});
    std::vector<DType> in_dtypes, all_dtypes;
    std::vector<std::vector<int64_t>> strides;
    std::vector<bool> present;
    for (const Tensor& t : call.inputs) {
      present.push_back(t.defined());
      all_dtypes.push_back(t.defined() ? t.dtype() : DType::F32);
      if (!t.defined()) continue;
      ch.keep.push_back(expand(t, shape));
      strides.push_back(strides_of(ch.keep.back()));
      in_dtypes.push_back(t.dtype());
    }
    strides.push_back(strides_of(ch.got));
    const DType compute = compute_dtype(op, all_dtypes, meta);
    ch.scalars = op_scalars(op, call.attrs, compute);
    std::vector<DType> sdt(ch.scalars.size(), eval_dtype(compute));
    ch.layout = collapse(std::span<const int64_t>(shape), strides);
    ch.key = pointwise_key(ch.layout, in_dtypes, {out}, sdt, target);
    Attrs attrs = call.attrs;
    Kernel k = pointwise_kernel("k", ch.key, [&](std::span<const Expr> loaded, std::span<const Expr> s) {
      std::vector<Expr> in;
      size_t next = 0;
      for (bool p : present) in.push_back(p ? loaded[next++] : Expr());
      return std::vector<Expr>{pointwise(op, attrs, in, s, compute, out)};
    });
    k.name = "k" + canonical_hash(k).hex();
    ch.kernel = k.name;
    kernels.emplace(k.name, std::move(k));
    covered.insert(op);
    checks.push_back(std::move(ch));
  }
  // One source per core, compiled side by side (several hundred distinct kernels).
  const size_t parts = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  std::vector<std::vector<Kernel>> lists(parts);
  std::map<std::string, size_t> part_of;
  for (auto& [name, k] : kernels) {
    part_of[name] = part_of.size() % parts;
    lists[part_of[name]].push_back(k);
  }
  std::vector<std::unique_ptr<Module>> modules(parts);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < parts; ++i)
    threads.emplace_back([&, i] { modules[i] = std::make_unique<Module>(cpp_renderer(target)->render(lists[i])); });
  for (auto& t : threads) t.join();
  for (auto& m : modules) ASSERT_TRUE(m->ok());
  int exact = 0, close = 0;
  for (Check& ch : checks) {
    std::vector<const void*> bufs;
    for (const Tensor& t : ch.keep) bufs.push_back(t.raw_data());
    bufs.push_back(ch.got.raw_data());
    ArgPack a = pointwise_args(kernels.at(ch.kernel), ch.key, ch.layout, bufs, ch.scalars);
    launch_pieces(modules[part_of.at(ch.kernel)]->fn(ch.kernel), a, pointwise_items(ch.layout), 3);
    const DType d = ch.want.dtype();
    if (own_polynomial(ch.op) && d != DType::F64) {
      const double rtol = d == DType::F32 ? 2e-6 : d == DType::F16 ? 2e-3 : 1.6e-2;
      EXPECT_EQ(diff_close(ch.got, ch.want, rtol, rtol * 1e-2), "") << ch.what << " " << ch.key.str();
      ++close;
    } else {
      EXPECT_EQ(diff_exact(ch.got, ch.want), "") << ch.what << " " << ch.key.str();
      ++exact;
    }
  }
  std::vector<std::string> missing;
  for (int i = 0; i < kNumOps; ++i)
    if (is_elementwise(OpId(i)) && !covered.count(OpId(i))) missing.push_back(op_name(OpId(i)));
  EXPECT_TRUE(missing.empty()) << "ops without a traced golden case: " << ::testing::PrintToString(missing);
  std::cout << "[ kl ] " << checks.size() << " cases (" << exact << " bitwise, " << close << " within ulps), "
            << kernels.size() << " distinct kernels\n";
}

}  // namespace
}  // namespace ember::kl::test
