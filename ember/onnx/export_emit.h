#pragma once
// Export's second half: a recorded trace (trace.h) becomes ONNX nodes. The Emitter walks the
// trace one op at a time; each op's mapping (export_{math,reduce,layout,nn}.cpp) reads the op
// through it and adds nodes. Where tracing ran twice (dynamic axes), a mapping that writes a
// size asks the Emitter for it with both traces' values: sizes that differ are computed in the
// graph from the input dims they follow. Private to ember::onnx.
#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ember/onnx/trace.h"

namespace ember::onnx::detail {

/// The ONNX TensorProto.DataType of an ember dtype.
int32_t onnx_dtype(DType d);
/// A TensorProto holding `t`'s values (raw_data).
void to_proto(const Tensor& t, const std::string& name, ::onnx::TensorProto& out);

/// A dim of a graph input that tracing varied: its name and its sizes in the two traces.
struct SymbolicDim {
  std::string input, symbol;
  int64_t dim = 0, a = 0, b = 0;
};

class Emitter {
 public:
  Emitter(::onnx::GraphProto& g, int64_t opset, std::vector<SymbolicDim> symbols)
      : g_(g), opset_(opset), symbols_(std::move(symbols)) {}

  int64_t opset() const { return opset_; }
  /// The op being mapped (first trace) and its twin in the second trace (the same op when
  /// tracing ran once).
  const TracedOp& op() const { return *op_; }
  const TracedOp& twin() const { return *twin_; }
  /// Starts mapping op number `index`.
  void begin(const TracedOp& op, const TracedOp& twin, size_t index);

  /// Names `t` (a graph input, a parameter, a recorded value, or a constant that becomes an
  /// initializer).
  void bind_input(const Tensor& t, const std::string& name) { names_[t.impl()] = name; }
  void add_parameter(const Tensor& t, const std::string& name) { params_.push_back({t, name}); }
  /// Input i's value; constants not made by a recorded op become initializers.
  std::string in(size_t i);
  /// Input i cast to `d` (a constant is written in `d` directly).
  std::string in_as(size_t i, DType d);
  /// Whether input i is given (optional inputs are undefined tensors).
  bool has(size_t i) const { return i < op_->inputs.size() && op_->inputs[i].defined(); }
  const Tensor& input(size_t i) const { return op_->inputs[i]; }
  const Tensor& output(size_t i = 0) const { return op_->outputs[i]; }
  /// The name of any tensor's value (as in()).
  std::string value(const Tensor& t, DType as, bool cast);

  /// Adds a node; returns its output names (fresh, or `outs` as given).
  std::vector<std::string> node(const std::string& type, const std::vector<std::string>& ins,
                                size_t n_out = 1);
  std::string node1(const std::string& type, const std::vector<std::string>& ins) {
    return node(type, ins, 1)[0];
  }
  /// Attributes of the last node added.
  void attr(const std::string& name, int64_t v);
  void attr_f(const std::string& name, double v);
  void attr(const std::string& name, const std::vector<int64_t>& v);
  void attr(const std::string& name, const std::string& v);
  void attr(const std::string& name, const Tensor& v);
  /// Binds output i of the op to `name`.
  void out(size_t i, const std::string& name);
  /// Ends the op: outputs left unbound have no ONNX form (an op reading one is unsupported).
  void finish_op();
  /// `name` cast to `to` when `from` differs.
  std::string cast(const std::string& name, DType from, DType to);

  /// A 1-D int64 initializer.
  std::string ints(const std::vector<int64_t>& v);
  /// A 0-d initializer of dtype d.
  std::string scalar(double v, DType d);
  /// A constant tensor as an initializer.
  std::string constant(const Tensor& t);
  /// A 1-D int64 value holding sizes that are `a` in the first trace and `b` in the second:
  /// an initializer when they agree; otherwise each differing entry is computed from the input
  /// dims (express()), and with `infer` one entry that fits none may be -1 (Reshape).
  /// ValueError naming `what` when an entry cannot be expressed.
  std::string sizes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool infer,
                    const char* what);
  /// A 1-D int64 value [size] that is `a` in the first trace and `b` in the second, computed
  /// from the dynamic input dims: one of them, a multiple of one, one plus a constant, or a
  /// product of two ("" when none fits).
  std::string express(int64_t a, int64_t b);
  /// One size as a 0-d int64 value (as sizes()).
  std::string size(int64_t a, int64_t b, const char* what);
  /// The symbol of a graph dim whose sizes in the two traces are a and b ("" if none).
  std::string symbol_for(int64_t a, int64_t b) const;

  /// Records that the current op has no ONNX form (`why` adds to its name, may be empty).
  void unsupported(const std::string& why = "");
  /// "op (3 calls, ...)" lines of every unsupported op, in order of first call.
  const std::vector<std::pair<std::string, int>>& unsupported_ops() const { return unsupported_; }
  /// Whether an unsupported op was a random one.
  bool saw_random() const { return saw_random_; }

  /// A fresh value name from the current op.
  std::string fresh();

 private:
  std::string dim_of(const SymbolicDim& s);
  std::string input_value(size_t i, DType as, bool cast);
  /// The state_dict key of the parameter or buffer `t` is (same storage and geometry), or null.
  const std::string* parameter(const Tensor& t) const;
  ::onnx::GraphProto& g_;
  int64_t opset_;
  std::vector<SymbolicDim> symbols_;
  const TracedOp* op_ = nullptr;
  const TracedOp* twin_ = nullptr;
  std::string base_;
  int counter_ = 0, constants_ = 0;
  std::unordered_map<const TensorImpl*, std::string> names_;
  std::vector<std::pair<Tensor, std::string>> params_;
  std::set<std::string> written_;            // parameters written as initializers
  std::map<std::string, std::string> dims_;  // "input:dim" -> its 1-D value
  std::map<std::pair<const TensorImpl*, int>, std::string> cast_constants_;
  std::map<std::vector<int64_t>, std::string> ints_;
  std::map<std::pair<uint64_t, int>, std::string> scalars_;
  std::vector<std::pair<std::string, int>> unsupported_;
  std::unordered_map<const TensorImpl*, std::string> unbound_;
  std::unordered_set<const TensorImpl*> poisoned_;  // outputs of unsupported ops
  bool failed_ = false;
  bool saw_random_ = false;  // the current op is unsupported
  ::onnx::NodeProto* last_ = nullptr;
  std::vector<Tensor> keep_;  // constants named here stay alive (their addresses are keys)
};

/// Adds the nodes of one op; false when the op (with these attributes) has no ONNX form, after
/// calling e.unsupported() with the reason.
using EmitFn = bool (*)(Emitter& e);
/// The mapping of `op`, or nullptr.
EmitFn find_emit(OpId op);

}  // namespace ember::onnx::detail
