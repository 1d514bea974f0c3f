#pragma once
// What the op files share: the table they register into, and small helpers for the ways ONNX
// passes arguments (host-side integer tensors, negative axes, attributes that became inputs).
// Private to ember::onnx.
#include <map>
#include <string>

#include "ember/ember.h"
#include "ember/onnx/graph.h"

namespace ember::onnx::detail {

using OpTable = std::map<std::string, OpFn, std::less<>>;
void add_elementwise_ops(OpTable& t);
void add_shape_ops(OpTable& t);
void add_index_ops(OpTable& t);
void add_reduce_ops(OpTable& t);
void add_nn_ops(OpTable& t);
void add_loss_ops(OpTable& t);
void add_quant_ops(OpTable& t);
void add_resize_ops(OpTable& t);
void add_rnn_ops(OpTable& t);
void add_select_ops(OpTable& t);
void add_grid_ops(OpTable& t);
void add_pool_ops(OpTable& t);
void add_spectral_ops(OpTable& t);
void add_linalg_ops(OpTable& t);
/// Ops of the ai.onnx.preview.training domain, keyed "ai.onnx.preview.training.<op>".
void add_training_ops(OpTable& t);
using ValueOpTable = std::map<std::string, ValueFn, std::less<>>;
void add_sequence_ops(ValueOpTable& t);
void add_control_ops(ValueOpTable& t);

/// Throws NotImplementedError "[onnx] <node>: <msg>".
[[noreturn]] void unsupported(const Node& n, const std::string& msg);
/// Throws ModelError "[onnx] <node>: <msg>".
[[noreturn]] void invalid(const Node& n, const std::string& msg);

/// The values of an integer (or any) tensor, read on the host (a sync point: ONNX passes shapes,
/// axes and sizes as tensors).
std::vector<int64_t> host_ints(const Tensor& t);
std::vector<double> host_doubles(const Tensor& t);
/// `axis` in [-rank, rank) made non-negative; ModelError naming the node otherwise.
int64_t norm_axis(const Node& n, int64_t axis, int64_t rank);
/// An attribute in older opsets, an input from `input_since` on (Squeeze/Unsqueeze/Reduce axes,
/// Split sizes, Clip bounds...): nothing when neither is given.
std::optional<std::vector<int64_t>> ints_attr_or_input(const OpArgs& a, const char* attr,
                                                       size_t input, int64_t input_since);
/// A shape as ember wants it.
inline Shape to_shape(const std::vector<int64_t>& v) { return Shape(v); }
/// x's dims as a vector.
std::vector<int64_t> dims_of(const Tensor& x);
/// x as 2-D [prod(dims[:axis]), prod(dims[axis:])] (Softmax and friends before opset 13).
Tensor flatten_op_2d(const Tensor& x, int64_t axis);
/// A pooling window's geometry per spatial dim (pads after auto_pad).
struct PoolGeometry {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  bool ceil_mode = false;
};
/// Max or average pooling over any number of spatial dims, as a max or sum over the kernel's
/// taps (each a strided slice of the padded input): ember's pool ops cover 1-d and 2-d.
Tensor pool_by_taps(const Tensor& x, const PoolGeometry& g, bool is_max, bool count_include_pad);
/// A tensor of `dtype` holding one value, on `d`.
Tensor scalar_like(double v, DType dtype, Device d);

}  // namespace ember::onnx::detail
