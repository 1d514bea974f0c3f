#pragma once
// User ops: an op registered at run time, whose kernel is written in the kernel language with
// one of the templates (pointwise, row-reduce), with inference and an optional VJP in ember ops.
// After register_op() the op is called through its ember::UserOp handle (ember/user_op.h) like
// any op: eagerly, under autodiff, on a lazy device (run as one opaque op).
//
// Where it runs: every host device (Device::flex(), Device::cpu(), with or without layers). The
// kernel is built for each specialisation (the template's key: dtypes, rank, broadcast pattern,
// vector width), rendered to C++, compiled once through the process's kernel cache (on disk, so
// a second run compiles nothing) and run on ember's thread pool. When the host compiler is
// missing or broken the op runs its `fallback` (ember ops) if it has one, else throws
// DeviceError naming the op and the compiler's error. Devices without a host JIT run the
// fallback, or throw NotImplementedError.
//
//   kl::UserOpDef def;
//   def.name = "scaled_gelu";
//   def.params = {"scale"};
//   def.infer = [](std::span<const Tensor> in, std::span<const double>) {
//     return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
//   };
//   def.kernel = [](const kl::UserCall&) {
//     return kl::pointwise_op_kernel([](std::span<const kl::Expr> in, std::span<const kl::Expr> s)
//     {
//       return std::vector<kl::Expr>{kl::gelu(in[0] * s[0])};
//     });
//   };
//   UserOp op = kl::register_op(std::move(def));
//   Tensor y = op({x}, {2.0});
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/kl/templates/pointwise.h"
#include "ember/kl/templates/row_reduce.h"
#include "ember/ops/registry.h"
#include "ember/user_op.h"

namespace ember::kl {

class KernelCache;

/// What a kernel builder sees of one call: the inputs (dtypes, shapes), the inferred outputs
/// and the scalar parameters. The kernel it returns is reused for every call with the same
/// specialisation key, so it may depend on dtypes and ranks but not on extents or values.
struct UserCall {
  std::string_view name;
  std::span<const Tensor> inputs;
  std::span<const TensorMeta> outputs;
  std::span<const double> params;
};

/// A user op's kernel: a template and the callbacks that trace its body.
struct UserKernel {
  enum class Kind : uint8_t { Pointwise, RowReduce };
  Kind kind = Kind::Pointwise;
  /// Pointwise: every output has one shape, every input broadcasts to it; the body maps the
  /// loaded inputs (in their dtypes) and the scalar parameters to the outputs.
  PwBody body;
  /// Row reduce over `reduce_dims` (negative counts from the end) of input 0's shape; the other
  /// inputs broadcast to that shape. The first `prologue_inputs` inputs feed the prologue, which
  /// gives one value per reduction; the epilogue maps the reduced values (and, when
  /// `broadcast_back`, every input at the element) to the outputs: full-shape outputs when
  /// broadcasting back, else reduced-shape ones (the reduced dims of size 1 or dropped).
  std::vector<int64_t> reduce_dims;
  int prologue_inputs = 1;
  std::vector<Reduction> reductions;
  bool broadcast_back = false;
  RowPrologue prologue;
  RowEpilogue epilogue;
  /// The dtype of each scalar parameter inside the kernel. Empty: the dtype the first output
  /// computes in (f64 for f64 outputs, else f32).
  std::vector<DType> param_dtypes;
};
UserKernel pointwise_op_kernel(PwBody body);
UserKernel row_reduce_op_kernel(std::vector<int64_t> reduce_dims, int prologue_inputs,
                                std::vector<Reduction> reductions, bool broadcast_back,
                                RowPrologue prologue, RowEpilogue epilogue);

struct UserOpDef {
  std::string name;
  /// Names of the scalar parameters a call passes (at most 4), e.g. {"eps"}.
  std::vector<std::string> params;
  /// Shapes and dtypes of the outputs (1 to 4); throws an ember::Error for bad inputs.
  std::function<std::vector<TensorMeta>(std::span<const Tensor> inputs,
                                        std::span<const double> params)>
      infer;
  /// The kernel for a call's specialisation (see UserCall).
  std::function<UserKernel(const UserCall&)> kernel;
  /// Optional: the VJP in ember ops, one gradient per input (undefined = none). ctx.inputs and
  /// ctx.outputs are the forward values, ctx.grads the outputs' cotangents. Without it, a
  /// backward pass through the op throws NotImplementedError.
  std::function<TensorList(const VjpCtx& ctx, std::span<const double> params)> vjp;
  /// Optional: the same op in ember ops, run where the kernel cannot be (no host compiler, a
  /// device without a host JIT).
  std::function<TensorList(std::span<const Tensor> inputs, std::span<const double> params)>
      fallback;
};

/// Registers `def` and returns its handle; throws ValueError when the name is taken or a
/// required field (name, infer, kernel) is missing.
UserOp register_op(UserOpDef def);

/// How a user op ran so far (this process).
struct UserOpStats {
  int64_t kernels = 0;         // specialisations built (traced, rendered, compiled or loaded)
  int64_t jit_calls = 0;       // calls run by a compiled kernel
  int64_t fallback_calls = 0;  // calls run by the fallback
};
UserOpStats user_op_stats(UserOp op);

namespace detail {
/// Tests: compile user kernels through `cache` instead of the process's host kernel cache
/// (nullptr restores it). Forgets the kernels built so far.
void set_user_op_cache(KernelCache* cache);
}  // namespace detail

}  // namespace ember::kl
