// The kernel language end to end, as the fusion layer uses it: relu(x * 2 + 1) * x traced op by
// op through the elementwise table into a pointwise kernel (the scalar operands as parameters),
// softmax as a row-reduce kernel, both rendered into one source, compiled and loaded through
// the kernel cache and the host toolchain, and run on the thread pool over their work items.
#include <gtest/gtest.h>

#include "ember/backends/cpu/jit/host_toolchain.h"
#include "ember/backends/cpu/jit/launch.h"
#include "ember/ember.h"
#include "ember/kl/cache/kernel_cache.h"
#include "ember/kl/render.h"
#include "ember/kl/serialize.h"
#include "ember/kl/templates/pointwise.h"
#include "ember/kl/templates/row_reduce.h"
#include "ember/kl/trace_op.h"
#include "ember/tensor_impl.h"
#include "store/store_test_util.h"

namespace ember::kl {
namespace {

std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().vec(); }

// One graph node traced: `op` on traced operands. The dtypes come from the node's inference
// (here run on stand-in tensors `ins` of the operands' dtypes and shapes).
Expr trace(OpId op, std::span<const Expr> operands, std::vector<Tensor> ins) {
  MetaList meta;
  op_def(op).infer(op, {}, ins, meta);
  std::vector<DType> dtypes;
  for (const Tensor& t : ins) dtypes.push_back(t.dtype());
  return pointwise(op, {}, operands, {}, compute_dtype(op, dtypes, meta), meta.m[0].dtype);
}

TEST(KlExample, ReluChainAndSoftmaxThroughTheCacheAndToolchain) {
  manual_seed(7);
  const Target target = cpp_host_target();
  Tensor x = randn({37, 129});
  // The graph: t1 = mul(x, 2), t2 = add(t1, 1), t3 = relu(t2), y = mul(t3, x). The scalar
  // operands are graph constants (0-d f64 wrapped numbers); each becomes a scalar parameter of
  // its own dtype, so the compiled kernel serves every value.
  const Tensor two = ember::detail::constant_tensor(2.0, kF64, x.device(), true);
  const Tensor one = ember::detail::constant_tensor(1.0, kF64, x.device(), true);
  Tensor y = empty(x.shape());

  // Pointwise: layout over the output's shape (inputs first, then outputs), key, kernel.
  const PwLayout pl = collapse(std::span<const int64_t>(x.shape()), {strides_of(x), strides_of(y)});
  const PwKey pk = pointwise_key(pl, {kF32}, {kF32}, {kF64, kF64}, target);
  const Kernel k0 = pointwise_kernel("k0", pk, [&](std::span<const Expr> in, std::span<const Expr> s) {
    Expr t1 = trace(OpId::mul, std::vector<Expr>{in[0], s[0]}, {x, two});
    Expr t2 = trace(OpId::add, std::vector<Expr>{t1, s[1]}, {x, one});
    Expr t3 = trace(OpId::relu, std::vector<Expr>{t2}, {x});
    return std::vector<Expr>{trace(OpId::mul, std::vector<Expr>{t3, in[0]}, {x, x})};
  });

  // Softmax over dim 1: the online (max, sum of exp) pair, broadcast back over the row.
  Tensor z = empty(x.shape());
  const RowLayout rl = row_layout(std::span<const int64_t>(x.shape()), {strides_of(x), strides_of(z)},
                                  std::vector<int64_t>{1});
  const RowReduceKey rk =
      row_reduce_key(rl, {kF32}, 1, {{Combiner::Softmax, kF32}}, {kF32}, true, {}, target);
  const Kernel k1 = row_reduce_kernel(
      "k1", rk, [](std::span<const Expr> in, std::span<const Expr>) { return std::vector<Expr>{in[0]}; },
      [](std::span<const Expr> r, std::span<const Expr> in, std::span<const Expr>) {
        return std::vector<Expr>{exp(in[0] - r[0]) / r[1]};  // r = {max, sum of exp(x - max)}
      });

  // One source per flush; the cache key: the renderer's id, the kernels' names and canonical forms.
  const std::vector<Kernel> kernels{k0, k1};
  const std::unique_ptr<Renderer> renderer = cpp_renderer(target);
  const std::string source = renderer->render(kernels);
  std::string key = renderer->cache_id();
  for (const Kernel& k : kernels) key += " " + k.name + ":" + canonical_hash(k).hex();
  ember::test::ScratchDir dir;
  KernelCacheOptions opts;
  opts.root = dir.path.string();
  opts.message = [](const std::string&) {};
  KernelCache cache(std::make_shared<cpu::jit::HostToolchain>(), opts);
  const KernelSet& set = cache.request(key, source, {"k0", "k1"}).get();
  ASSERT_TRUE(set.ok) << set.error;

  // The argument packs: buffers (element pointers), scalar parameters, index parameters.
  const void* pw_bufs[] = {x.raw_data(), y.raw_data()};
  const Scalar pw_scalars[] = {2.0, 1.0};
  const ArgPack a0 = pointwise_args(k0, pk, pl, pw_bufs, pw_scalars);
  cpu::jit::launch(set.fns[0], a0.data(), pointwise_items(pl), kPointwiseGrain);
  const void* rr_bufs[] = {x.raw_data(), z.raw_data()};
  const ArgPack a1 = row_reduce_args(k1, rk, rl, rr_bufs, {});
  cpu::jit::launch(set.fns[1], a1.data(), row_reduce_items(rk, rl), row_reduce_grain(rk, rl));

  EXPECT_TRUE(equal(y, relu(x * 2 + 1) * x));  // bitwise: every op rounds where eager's does
  EXPECT_TRUE(allclose(z, softmax(x, 1), 2e-6, 1e-7));
}

}  // namespace
}  // namespace ember::kl
