// Control flow: If, Loop, Scan (opset 8's batched form and 9+) and SequenceMap run their
// subgraphs with the same runtime as the main graph (graph.cpp): outer values a subgraph reads
// reach it as captures, and subgraphs nest. Conditions and trip counts are read on the host.
#include <limits>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

using Values = std::vector<Value>;

bool host_bool(const Tensor& t) { return host_doubles(t).at(0) != 0; }

Values if_op(const ValueArgs& a) {
  return run_subgraph(a, host_bool(a.tensor(0)) ? "then_branch" : "else_branch", {});
}

// Loop(M, cond, v...): body(i, cond, v...) -> (cond, v..., scan...); scan outputs are stacked.
Values loop(const ValueArgs& a) {
  const size_t carried_n = a.node.explicit_in - 2;
  int64_t trips = a.has(0) ? host_ints(a.tensor(0)).at(0) : std::numeric_limits<int64_t>::max();
  bool cond = a.has(1) ? host_bool(a.tensor(1)) : true;
  Values carried(a.in.begin() + 2, a.in.begin() + 2 + std::ptrdiff_t(carried_n));
  const size_t outs_n = Graph::of(a.node, "body").graph->outputs.size();
  if (outs_n < 1 + carried_n) invalid(a.node, "the body has fewer outputs than loop values + 1");
  std::vector<TensorList> scans(outs_n - 1 - carried_n);
  for (int64_t i = 0; i < trips && cond; ++i) {
    Values ins{scalar_tensor(i, kI64, a.device), full({}, Scalar(cond), {.dtype = kBool, .device = a.device})};
    ins.insert(ins.end(), carried.begin(), carried.end());
    Values outs = run_subgraph(a, "body", ins);
    cond = host_bool(outs.at(0).tensor);
    for (size_t k = 0; k < carried_n; ++k) carried[k] = outs[1 + k];
    for (size_t k = 0; k < scans.size(); ++k) {
      const Value& v = outs[1 + carried_n + k];
      if (!v.is_tensor()) unsupported(a.node, "scan outputs that are not tensors");
      scans[k].push_back(v.tensor);
    }
  }
  Values out = carried;
  for (auto& s : scans)
    out.push_back(s.empty() ? Value(zeros({0}, {.device = a.device})) : Value(stack(s, 0)));
  return out;
}

// Scan-9+: states, then scan inputs sliced along their axes (reversed where the direction says).
Values scan_once(const ValueArgs& a, const Values& states, const TensorList& xs,
                 const std::vector<int64_t>& in_axes, const std::vector<int64_t>& in_dirs,
                 const std::vector<int64_t>& out_axes, const std::vector<int64_t>& out_dirs) {
  const Node& n = a.node;
  if (xs.empty()) invalid(n, "Scan needs at least one scan input");
  const int64_t steps = xs[0].size(in_axes[0]);
  Values st = states;
  const size_t outs_n = Graph::of(n, "body").graph->outputs.size();
  std::vector<TensorList> ys(outs_n - states.size());
  for (int64_t s = 0; s < steps; ++s) {
    Values ins = st;
    for (size_t k = 0; k < xs.size(); ++k) {
      if (xs[k].size(in_axes[k]) != steps) invalid(n, "scan inputs differ in length");
      ins.push_back(select(xs[k], in_axes[k], in_dirs[k] ? steps - 1 - s : s));
    }
    Values outs = run_subgraph(a, "body", ins);
    for (size_t k = 0; k < st.size(); ++k) st[k] = outs[k];
    for (size_t k = 0; k < ys.size(); ++k) ys[k].push_back(outs[st.size() + k].tensor);
  }
  Values out = st;
  for (size_t k = 0; k < ys.size(); ++k) {
    TensorList y = ys[k];
    if (out_dirs[k]) std::reverse(y.begin(), y.end());
    const int64_t rank = y.empty() ? 1 : y[0].dim() + 1;
    out.push_back(stack(y, norm_axis(n, out_axes[k], rank)));
  }
  return out;
}

Values scan(const ValueArgs& a) {
  const Node& n = a.node;
  const int64_t m = n.i("num_scan_inputs", 0);
  const bool batched = n.opset < 9;  // Scan-8: a batch axis 0 and an optional sequence_lens
  const size_t first = batched ? 1 : 0;
  if (m <= 0 || size_t(m) > n.explicit_in - first) invalid(n, "num_scan_inputs is out of range");
  const size_t states_n = n.explicit_in - first - size_t(m);
  const size_t outs_n = Graph::of(n, "body").graph->outputs.size();
  if (outs_n < states_n) invalid(n, "the body has fewer outputs than states");
  const size_t ys_n = outs_n - states_n;
  auto list = [&](const char* attr, size_t count, int64_t def) {
    std::vector<int64_t> v = n.ints(attr);
    if (v.empty()) v.assign(count, def);
    if (v.size() != count) invalid(n, std::string(attr) + " has the wrong length");
    return v;
  };
  std::vector<int64_t> in_dirs = list(batched ? "directions" : "scan_input_directions", size_t(m), 0);
  std::vector<int64_t> out_dirs = batched ? std::vector<int64_t>(ys_n, 0)
                                          : list("scan_output_directions", ys_n, 0);
  std::vector<int64_t> in_axes = batched ? std::vector<int64_t>(size_t(m), 0)
                                         : list("scan_input_axes", size_t(m), 0);
  std::vector<int64_t> out_axes = batched ? std::vector<int64_t>(ys_n, 0)
                                          : list("scan_output_axes", ys_n, 0);
  Values states(a.in.begin() + std::ptrdiff_t(first),
                a.in.begin() + std::ptrdiff_t(first + states_n));
  TensorList xs;
  for (size_t k = 0; k < size_t(m); ++k) xs.push_back(a.tensor(first + states_n + k));
  if (!batched) {
    for (size_t k = 0; k < xs.size(); ++k) in_axes[k] = norm_axis(n, in_axes[k], xs[k].dim());
    return scan_once(a, states, xs, in_axes, in_dirs, out_axes, out_dirs);
  }
  if (a.has(0)) {
    for (int64_t l : host_ints(a.tensor(0)))
      if (xs[0].dim() < 2 || l != xs[0].size(1))
        unsupported(n, "Scan-8 sequence_lens shorter than the sequence");
  }
  // Each batch entry scans on its own; the results are stacked on the batch axis again.
  const int64_t batch = xs[0].size(0);
  std::vector<TensorList> outs(outs_n);
  for (int64_t b = 0; b < batch; ++b) {
    Values st;
    for (const auto& s : states) st.push_back(select(s.tensor, 0, b));
    TensorList xb;
    for (const auto& x : xs) xb.push_back(select(x, 0, b));
    Values r = scan_once(a, st, xb, in_axes, in_dirs, out_axes, out_dirs);
    for (size_t k = 0; k < outs_n; ++k) outs[k].push_back(r[k].tensor);
  }
  Values out;
  for (auto& o : outs) out.push_back(stack(o, 0));
  return out;
}

// SequenceMap(seq, more...): body(seq[i], more[i] or more...) per item; outputs are sequences.
Values sequence_map(const ValueArgs& a) {
  const size_t len = a.sequence(0).size();
  for (size_t k = 1; k < a.node.explicit_in; ++k)
    if (a.in[k].is_sequence() && a.in[k].sequence.size() != len)
      invalid(a.node, "input sequences differ in length");
  const size_t outs_n = Graph::of(a.node, "body").graph->outputs.size();
  std::vector<std::vector<Tensor>> outs(outs_n);
  for (size_t i = 0; i < len; ++i) {
    Values ins;
    for (size_t k = 0; k < a.node.explicit_in; ++k)
      ins.push_back(a.in[k].is_sequence() ? Value(a.in[k].sequence[i]) : a.in[k]);
    Values r = run_subgraph(a, "body", ins);
    for (size_t k = 0; k < outs_n; ++k) outs[k].push_back(r[k].tensor);
  }
  Values out;
  for (auto& o : outs) out.push_back(Value::of_sequence(std::move(o)));
  return out;
}

}  // namespace

void add_control_ops(ValueOpTable& t) {
  t["If"] = if_op;
  t["Loop"] = loop;
  t["Scan"] = scan;
  t["SequenceMap"] = sequence_map;
}

}  // namespace ember::onnx::detail
