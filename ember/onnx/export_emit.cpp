// The Emitter (export_emit.h): value names, initializers, nodes, and sizes that follow the
// graph's dynamic input dims.
#include "ember/onnx/export_emit.h"

#include "ember/ember.h"
#include "ember/tensor_impl.h"

namespace ember::onnx::detail {

using ::onnx::TensorProto;

int32_t onnx_dtype(DType d) {
  switch (d) {
    case DType::F32:
      return TensorProto::FLOAT;
    case DType::F64:
      return TensorProto::DOUBLE;
    case DType::F16:
      return TensorProto::FLOAT16;
    case DType::BF16:
      return TensorProto::BFLOAT16;
    case DType::I64:
      return TensorProto::INT64;
    case DType::I32:
      return TensorProto::INT32;
    case DType::I16:
      return TensorProto::INT16;
    case DType::I8:
      return TensorProto::INT8;
    case DType::U8:
      return TensorProto::UINT8;
    case DType::Bool:
      return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

void to_proto(const Tensor& t, const std::string& name, TensorProto& out) {
  out.set_name(name);
  out.set_data_type(onnx_dtype(t.dtype()));
  for (int64_t d : t.shape()) out.add_dims(d);
  // On the host, dense (the trace has stopped: these ops are not recorded).
  Tensor h = t.to(Device::flex()).contiguous();
  if (h.numel() > 0) out.set_raw_data(h.raw_data(), h.nbytes());
}

void Emitter::begin(const TracedOp& op, const TracedOp& twin, size_t index) {
  op_ = &op;
  twin_ = &twin;
  base_ = std::string(op_name(op.op)) + "_" + std::to_string(index);
  counter_ = 0;
  failed_ = false;
}

std::string Emitter::fresh() { return base_ + "_" + std::to_string(counter_++); }

std::string Emitter::in(size_t i) { return input_value(i, DType::F32, false); }
std::string Emitter::in_as(size_t i, DType d) { return input_value(i, d, true); }

const std::string* Emitter::parameter(const Tensor& t) const {
  for (const auto& [p, name] : params_)
    if (p.is_alias_of(t) && p.offset() == t.offset() && p.shape() == t.shape() &&
        p.strides() == t.strides() && p.dtype() == t.dtype())
      return &name;
  return nullptr;
}

// A tensor that no recorded op made (a table a kernel's caller built on the host) is written as
// the constant it was in the first trace: with dynamic axes it must be the same in the second.
std::string Emitter::input_value(size_t i, DType as, bool do_cast) {
  const Tensor& t = op_->inputs[i];
  const TensorImpl* k = t.defined() ? t.impl() : nullptr;
  if (k && twin_ != op_ && !names_.count(k) && !poisoned_.count(k) && !unbound_.count(k) &&
      !parameter(t)) {
    const Tensor& u = i < twin_->inputs.size() ? twin_->inputs[i] : Tensor();
    bool same = u.defined() && u.shape() == t.shape() && u.dtype() == t.dtype();
    if (same && t.numel() > 0) same = !any(ne(t, u)).item<bool>();
    if (!same) {
      unsupported("a tensor made outside ember ops whose values follow a dynamic size");
      return "<unsupported>";
    }
  }
  return value(t, as, do_cast);
}

std::string Emitter::value(const Tensor& t, DType as, bool do_cast) {
  if (!t.defined()) return "";
  auto it = names_.find(t.impl());
  if (it != names_.end()) return do_cast ? cast(it->second, t.dtype(), as) : it->second;
  if (poisoned_.count(t.impl())) return "<unsupported>";  // already reported
  if (auto u = unbound_.find(t.impl()); u != unbound_.end()) {
    unsupported("reads " + u->second + ", which has no ONNX form");
    return "<unsupported>";
  }
  // A parameter or buffer: an initializer named by its state_dict key.
  if (const std::string* p = parameter(t)) {
    const std::string name = *p;
    if (written_.insert(name).second) to_proto(t, name, *g_.add_initializer());  // tied: once
    names_[t.impl()] = name;
    keep_.push_back(t);
    return do_cast ? cast(name, t.dtype(), as) : name;
  }
  // Any other tensor made outside the trace: a constant of the value it had.
  const DType d = do_cast ? as : t.dtype();
  auto key = std::make_pair(static_cast<const TensorImpl*>(t.impl()), int(d));
  if (auto c = cast_constants_.find(key); c != cast_constants_.end()) return c->second;
  std::string name = constant(t.dtype() == d ? t : t.to(d));
  cast_constants_[key] = name;
  keep_.push_back(t);
  return name;
}

std::string Emitter::constant(const Tensor& t) {
  std::string name = "_const_" + std::to_string(constants_++);
  to_proto(t, name, *g_.add_initializer());
  return name;
}

// Small constants are written once and shared by every node that reads them.
std::string Emitter::ints(const std::vector<int64_t>& v) {
  auto it = ints_.find(v);
  if (it != ints_.end()) return it->second;
  return ints_[v] = constant(tensor(v, Shape{int64_t(v.size())}, kI64, Device::flex()));
}

std::string Emitter::scalar(double v, DType d) {
  uint64_t bits;
  static_assert(sizeof bits == sizeof v);
  __builtin_memcpy(&bits, &v, sizeof v);
  auto key = std::make_pair(bits, int(d));
  auto it = scalars_.find(key);
  if (it != scalars_.end()) return it->second;
  return scalars_[key] = constant(full({}, v, {.dtype = d, .device = Device::flex()}));
}

std::vector<std::string> Emitter::node(const std::string& type, const std::vector<std::string>& ins,
                                       size_t n_out) {
  ::onnx::NodeProto* n = g_.add_node();
  n->set_op_type(type);
  n->set_name(base_ + "/" + type + "_" + std::to_string(counter_));
  for (const std::string& s : ins) n->add_input(s);
  std::vector<std::string> outs;
  for (size_t k = 0; k < n_out; ++k) {
    outs.push_back(fresh());
    n->add_output(outs.back());
  }
  last_ = n;
  return outs;
}

void Emitter::attr(const std::string& name, int64_t v) {
  auto* a = last_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
void Emitter::attr_f(const std::string& name, double v) {
  auto* a = last_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(float(v));
}
void Emitter::attr(const std::string& name, const std::vector<int64_t>& v) {
  auto* a = last_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void Emitter::attr(const std::string& name, const std::string& v) {
  auto* a = last_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
void Emitter::attr(const std::string& name, const Tensor& v) {
  auto* a = last_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::TENSOR);
  to_proto(v, "", *a->mutable_t());
}

void Emitter::out(size_t i, const std::string& name) {
  const Tensor& t = op_->outputs[i];
  names_[t.impl()] = name;
  unbound_.erase(t.impl());
}

void Emitter::finish_op() {
  for (size_t i = 0; i < op_->outputs.size(); ++i) {
    const Tensor& t = op_->outputs[i];
    if (!t.defined() || names_.count(t.impl())) continue;
    if (failed_)
      poisoned_.insert(t.impl());  // its consumers are not reported again
    else
      unbound_[t.impl()] = "output " + std::to_string(i) + " of " + op_name(op_->op);
  }
}

std::string Emitter::cast(const std::string& name, DType from, DType to) {
  if (from == to || name == "<unsupported>") return name;
  std::string r = node1("Cast", {name});
  attr("to", int64_t(onnx_dtype(to)));
  return r;
}

std::string Emitter::symbol_for(int64_t a, int64_t b) const {
  for (const SymbolicDim& s : symbols_)
    if (s.a == a && s.b == b) return s.symbol;
  return "";
}

std::string Emitter::dim_of(const SymbolicDim& s) {
  const std::string key = s.input + ":" + std::to_string(s.dim);
  if (auto it = dims_.find(key); it != dims_.end()) return it->second;
  const std::string skey = s.input + ":shape";
  if (!dims_.count(skey)) dims_[skey] = node1("Shape", {s.input});
  std::string r = node1("Gather", {dims_[skey], ints({s.dim})});
  attr("axis", int64_t(0));
  dims_[key] = r;
  return r;
}

std::string Emitter::express(int64_t a, int64_t b) {
  for (const SymbolicDim& s : symbols_)
    if (s.a == a && s.b == b) return dim_of(s);
  for (const SymbolicDim& s : symbols_)
    if (s.a > 0 && s.b > 0 && a % s.a == 0 && b % s.b == 0 && a / s.a == b / s.b)
      return node1("Mul", {dim_of(s), ints({a / s.a})});
  for (const SymbolicDim& s : symbols_)
    if (a - s.a == b - s.b) return node1("Add", {dim_of(s), ints({a - s.a})});
  for (const SymbolicDim& s : symbols_)
    for (const SymbolicDim& t : symbols_)
      if (s.a * t.a == a && s.b * t.b == b) return node1("Mul", {dim_of(s), dim_of(t)});
  return "";
}

std::string Emitter::sizes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool infer,
                           const char* what) {
  if (a.size() != b.size())
    throw ValueError(std::string("[onnx] export: ") + what + " " + op_name(op_->op) +
                     ": the traces at two sizes of the dynamic axes give ranks " +
                     std::to_string(a.size()) + " and " + std::to_string(b.size()));
  if (a == b) return ints(a);
  std::vector<std::string> pieces;
  std::vector<int64_t> run;
  bool inferred = false;
  auto flush = [&] {
    if (!run.empty()) pieces.push_back(ints(run));
    run.clear();
  };
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] == b[k]) {
      run.push_back(a[k]);
      continue;
    }
    std::string v = express(a[k], b[k]);
    if (!v.empty()) {
      flush();
      pieces.push_back(v);
    } else if (infer && !inferred) {
      inferred = true;
      run.push_back(-1);
    } else {
      throw ValueError(std::string("[onnx] export: ") + op_name(op_->op) + ": " + what + " entry " +
                       std::to_string(k) + " is " + std::to_string(a[k]) + " in one trace and " +
                       std::to_string(b[k]) +
                       " in the other, and neither a dynamic input dim, a multiple of one, one "
                       "plus a constant nor a product of two has those sizes");
    }
  }
  flush();
  if (pieces.size() == 1) return pieces[0];
  std::string r = node1("Concat", pieces);
  attr("axis", int64_t(0));
  return r;
}

std::string Emitter::size(int64_t a, int64_t b, const char* what) {
  if (a == b) return scalar(double(a), kI64);
  std::string v = sizes({a}, {b}, false, what);
  std::string r = node1("Squeeze", {v});
  return r;
}

void Emitter::unsupported(const std::string& why) {
  failed_ = true;
  saw_random_ = saw_random_ || op_def(op_->op).category == OpCategory::Random;
  std::string name = op_name(op_->op);
  if (!why.empty()) name += " (" + why + ")";
  for (auto& [n, count] : unsupported_)
    if (n == name) {
      ++count;
      return;
    }
  unsupported_.push_back({name, 1});
}

}  // namespace ember::onnx::detail
