// Sequences and optionals: SequenceEmpty/Construct/At/Insert/Erase/Length, SplitToSequence,
// ConcatFromSequence, Optional/OptionalHasElement/OptionalGetElement, and Identity (which
// passes any value). A sequence is a list of ember tensors; an optional holding a value is that
// value, an empty one is Value::Kind::None.
#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

using Values = std::vector<Value>;

[[noreturn]] void bad(const Node& n, const std::string& msg) { invalid(n, msg); }

// A position into a sequence of `size` items; `end_ok` allows `size` itself (insertion).
size_t position(const ValueArgs& a, size_t input, size_t size, bool end_ok) {
  const int64_t n = int64_t(size);
  int64_t p = host_ints(a.tensor(input)).at(0);
  if (p < -n || p > n || (p == n && !end_ok))
    bad(a.node, "position " + std::to_string(p) + " is out of range for a sequence of " +
                    std::to_string(n));
  return size_t(p < 0 ? p + n : p);
}

Values identity(const ValueArgs& a) { return {a.in.empty() ? Value() : a.in[0]}; }

Values sequence_empty(const ValueArgs& a) { return {Value::of_sequence({})}; }

Values sequence_construct(const ValueArgs& a) {
  std::vector<Tensor> items;
  for (size_t k = 0; k < a.node.explicit_in; ++k) items.push_back(a.tensor(k));
  return {Value::of_sequence(std::move(items))};
}

Values sequence_at(const ValueArgs& a) {
  const auto& s = a.sequence(0);
  return {s.at(position(a, 1, s.size(), false))};
}

Values sequence_insert(const ValueArgs& a) {
  std::vector<Tensor> s = a.sequence(0);
  size_t p = a.has(2) ? position(a, 2, s.size(), true) : s.size();
  s.insert(s.begin() + std::ptrdiff_t(p), a.tensor(1));
  return {Value::of_sequence(std::move(s))};
}

Values sequence_erase(const ValueArgs& a) {
  std::vector<Tensor> s = a.sequence(0);
  if (s.empty()) bad(a.node, "cannot erase from an empty sequence");
  size_t p = a.has(1) ? position(a, 1, s.size(), false) : s.size() - 1;
  s.erase(s.begin() + std::ptrdiff_t(p));
  return {Value::of_sequence(std::move(s))};
}

Values sequence_length(const ValueArgs& a) {
  return {scalar_tensor(int64_t(a.sequence(0).size()), kI64, a.device)};
}

Values split_to_sequence(const ValueArgs& a) {
  const Tensor& x = a.tensor(0);
  const int64_t axis = norm_axis(a.node, a.node.i("axis", 0), x.dim());
  TensorList parts;
  if (!a.has(1)) {
    parts = split(x, 1, axis);
    if (a.node.i("keepdims", 1) == 0)
      for (auto& p : parts) p = squeeze(p, Shape{axis});
  } else {
    const Tensor& s = a.tensor(1);
    std::vector<int64_t> sizes = host_ints(s);
    if (s.dim() == 0) parts = split(x, sizes.at(0), axis);
    else parts = split(x, Shape(sizes), axis);
  }
  return {Value::of_sequence({parts.begin(), parts.end()})};
}

Values concat_from_sequence(const ValueArgs& a) {
  const auto& s = a.sequence(0);
  if (s.empty()) bad(a.node, "cannot concatenate an empty sequence");
  const bool new_axis = a.node.i("new_axis", 0) != 0;
  const int64_t rank = s[0].dim() + (new_axis ? 1 : 0);
  const int64_t axis = norm_axis(a.node, a.node.i("axis", 0), rank);
  TensorList items(s.begin(), s.end());
  return {new_axis ? stack(items, axis) : cat(items, axis)};
}

Values optional(const ValueArgs& a) { return {a.has(0) ? a.in[0] : Value()}; }

Values optional_has_element(const ValueArgs& a) {
  return {full({}, Scalar(a.has(0)), {.dtype = kBool, .device = a.device})};
}

Values optional_get_element(const ValueArgs& a) {
  if (!a.has(0)) bad(a.node, "the optional input is empty");
  return {a.in[0]};
}

}  // namespace

void add_sequence_ops(ValueOpTable& t) {
  t["Identity"] = identity;
  t["SequenceEmpty"] = sequence_empty;
  t["SequenceConstruct"] = sequence_construct;
  t["SequenceAt"] = sequence_at;
  t["SequenceInsert"] = sequence_insert;
  t["SequenceErase"] = sequence_erase;
  t["SequenceLength"] = sequence_length;
  t["SplitToSequence"] = split_to_sequence;
  t["ConcatFromSequence"] = concat_from_sequence;
  t["Optional"] = optional;
  t["OptionalHasElement"] = optional_has_element;
  t["OptionalGetElement"] = optional_get_element;
}

}  // namespace ember::onnx::detail
