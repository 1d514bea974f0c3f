#include "gradcheck.h"

#include <cmath>
#include <sstream>

namespace ember::test {
namespace {

TensorList forward(OpId op, const Attrs& attrs, const TensorList& in, uint64_t seed) {
  manual_seed(seed);
  return dispatch(op, attrs, std::span<const Tensor>(in));
}

// <g, out> summed over every output that has a cotangent.
double pairing(const TensorList& outs, const TensorList& gs) {
  double s = 0;
  for (size_t k = 0; k < outs.size() && k < gs.size(); ++k) {
    if (!gs[k].defined()) continue;
    auto o = outs[k].to_vector<double>();
    auto g = gs[k].to_vector<double>();
    for (size_t j = 0; j < o.size(); ++j) s += o[j] * g[j];
  }
  return s;
}

}  // namespace

std::string nothing_to_check(OpId op, const Attrs& attrs, const TensorList& inputs) {
  bool any_float = false;
  for (const Tensor& t : inputs) any_float = any_float || (t.defined() && is_floating(t.dtype()));
  if (!any_float) return "no floating input";
  for (const Tensor& o : dispatch(op, attrs, std::span<const Tensor>(inputs)))
    if (o.defined() && is_floating(o.dtype()) && o.numel()) return "";
  return "no output has a non-empty floating cotangent";
}

std::string gradcheck(OpId op, const Attrs& attrs, const TensorList& inputs,
                      const GradcheckOptions& o) {
  const OpDef& def = op_def(op);
  if (!def.vjp) return std::string("no VJP rule for ") + def.name;
  TensorList in;
  for (const Tensor& t : inputs) in.push_back(t.defined() ? t.contiguous().clone() : t);
  TensorList outs = forward(op, attrs, in, o.seed);
  manual_seed(o.seed + 1);
  TensorList gs;
  for (const Tensor& out : outs)
    gs.push_back(is_floating(out.dtype()) && out.numel() ? randn(out.shape(), {out.dtype(), out.device()}) : Tensor());
  // A check that compares nothing is a failure, not a pass: the caller skips such cases
  // explicitly (tests/data/gradcheck_skip.txt) or the rule is really not checked.
  std::vector<char> needs_c(in.size());
  bool any_need = false;
  for (size_t i = 0; i < in.size(); ++i) {
    needs_c[i] = in[i].defined() && is_floating(in[i].dtype());
    any_need = any_need || needs_c[i];
  }
  bool any_grad = false;
  for (const Tensor& g : gs) any_grad = any_grad || g.defined();
  if (!any_need) return std::string(def.name) + ": checked nothing (no floating input)";
  if (!any_grad)
    return std::string(def.name) + ": checked nothing (no output has a non-empty floating cotangent)";
  int64_t checked = 0;
  std::vector<bool> needs_v(needs_c.begin(), needs_c.end());
  std::unique_ptr<bool[]> needs(new bool[in.size()]);
  for (size_t i = 0; i < in.size(); ++i) needs[i] = needs_c[i];
  VjpCtx ctx{op, attrs, in, outs, gs, std::span<const bool>(needs.get(), in.size())};
  TensorList rule = def.vjp(ctx);
  std::ostringstream err;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!needs_c[i]) continue;
    Tensor gi = i < rule.size() ? rule[i] : Tensor();
    if (gi.defined() && gi.shape() != in[i].shape()) {
      err << "input " << i << ": gradient shape " << shape_str(gi.shape()) << " != input shape "
          << shape_str(in[i].shape());
      return err.str();
    }
    ++checked;  // the gradient's shape (an empty input's whole check)
    std::vector<double> analytic =
        gi.defined() ? gi.to_vector<double>() : std::vector<double>(size_t(in[i].numel()), 0.0);
    const int64_t n = in[i].numel();
    const int64_t step = std::max<int64_t>(1, n / o.max_elements);
    for (int64_t j = 0; j < n; j += step) {
      TensorList plus = in, minus = in;
      plus[i] = in[i].clone();
      minus[i] = in[i].clone();
      double x0 = in[i].to_vector<double>()[size_t(j)];
      double h = o.eps * std::max(1.0, std::fabs(x0));
      plus[i].data_ptr<double>()[j] = x0 + h;
      minus[i].data_ptr<double>()[j] = x0 - h;
      double num = (pairing(forward(op, attrs, plus, o.seed), gs) -
                    pairing(forward(op, attrs, minus, o.seed), gs)) / (2 * h);
      double a = analytic[size_t(j)];
      if (!(std::fabs(a - num) <= o.atol + o.rtol * std::fabs(num))) {
        err << def.name << " input " << i << " element " << j << ": rule " << a
            << ", finite differences " << num;
        return err.str();
      }
    }
  }
  return checked ? "" : std::string(def.name) + ": checked nothing";
}

namespace {
// One layer for every capture: each distinct layer interns a new device layer stack.
class CaptureLayer : public Layer {
 public:
  const char* name() const override { return "capture"; }
  TensorList call(const OpCall& c, const Next& next) override {
    if (!call_.captured && c.op == target_) {
      call_.captured = true;
      call_.op = c.op;
      call_.attrs = c.attrs;
      for (const Tensor& t : c.inputs) call_.inputs.push_back(t.defined() ? t.to(Device::flex()) : t);
    }
    return next(c);
  }
  CapturedCall call_;
  OpId target_{};
};
}  // namespace

CapturedCall capture_op(OpId target, const std::function<void(Device)>& fn) {
  static auto layer = std::make_shared<CaptureLayer>();
  static Device dev = Device::flex().with_layer(layer);
  layer->call_ = CapturedCall{};
  layer->target_ = target;
  fn(dev);
  return layer->call_;
}

}  // namespace ember::test
