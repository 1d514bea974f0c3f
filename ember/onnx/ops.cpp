// The op table (every file's ops registered once, on first use) and the helpers op files share.
#include "ember/onnx/ops.h"

namespace ember::onnx::detail {

OpFn find_op(std::string_view op_type) {
  static const OpTable table = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_shape_ops(t);
    add_index_ops(t);
    add_reduce_ops(t);
    add_nn_ops(t);
    add_loss_ops(t);
    add_quant_ops(t);
    add_resize_ops(t);
    add_rnn_ops(t);
    add_select_ops(t);
    add_grid_ops(t);
    add_pool_ops(t);
    add_spectral_ops(t);
    add_linalg_ops(t);
    add_training_ops(t);
    return t;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : it->second;
}

ValueFn find_value_op(std::string_view op_type) {
  static const ValueOpTable table = [] {
    ValueOpTable t;
    add_sequence_ops(t);
    add_control_ops(t);
    return t;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : it->second;
}

bool is_nondeterministic(std::string_view op_type) {
  return op_type == "RandomUniform" || op_type == "RandomNormal" ||
         op_type == "RandomUniformLike" || op_type == "RandomNormalLike" ||
         op_type == "Bernoulli" || op_type == "Multinomial" || op_type == "Dropout";
}

void unsupported(const Node& n, const std::string& msg) {
  throw NotImplementedError("[onnx] " + n.where() + ": " + msg);
}
void invalid(const Node& n, const std::string& msg) {
  throw ModelError("[onnx] " + n.where() + ": " + msg);
}

std::vector<int64_t> host_ints(const Tensor& t) {
  if (!is_floating(t.dtype())) return t.to_vector<int64_t>();
  std::vector<int64_t> v;
  for (double d : t.to_vector<double>()) v.push_back(int64_t(d));
  return v;
}
std::vector<double> host_doubles(const Tensor& t) { return t.to_vector<double>(); }

int64_t norm_axis(const Node& n, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    invalid(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                   std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::optional<std::vector<int64_t>> ints_attr_or_input(const OpArgs& a, const char* attr,
                                                       size_t input, int64_t input_since) {
  if (a.node.opset >= input_since) {
    if (a.has(input)) return host_ints(a.in[input]);
    return std::nullopt;
  }
  if (a.node.has(attr)) return a.node.ints(attr);
  return std::nullopt;
}

std::vector<int64_t> dims_of(const Tensor& x) {
  return std::vector<int64_t>(x.shape().begin(), x.shape().end());
}

Tensor scalar_like(double v, DType dtype, Device d) { return scalar_tensor(v, dtype, d); }

}  // namespace ember::onnx::detail
