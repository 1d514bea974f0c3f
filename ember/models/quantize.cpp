// models::quantize: walks a module tree and converts its layers' weights in place.
#include "ember/models/quantize.h"

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/models/gpt2.h"
#include "ember/nn/layers.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember::models {
namespace {

bool skipped(const std::string& name, const std::vector<std::string>& skip) {
  for (const std::string& s : skip)
    if (name == s || name.rfind(s + ".", 0) == 0) return true;
  return false;
}

// A layer to convert: its name, its weight's input size, and how to convert it.
struct Target {
  std::string name;
  nn::Linear* linear = nullptr;
  Conv1D* conv1d = nullptr;  // GPT-2's projections: weight [in, out]
  nn::Embedding* embedding = nullptr;
  int64_t in = 0;
  int bits = 0;  // already quantized
};

}  // namespace

std::vector<std::string> quantize(nn::Module& model, const QuantizeOptions& o) {
  const char* op = "quantize";
  if (o.bits != 8 && o.bits != 4)
    ember::detail::throw_value(op, "expected bits 8 or 4, found " + std::to_string(o.bits));
  if (o.bits == 4 && (o.group_size <= 0 || o.group_size % 2))
    ember::detail::throw_value(op, "expected a positive, even group_size, found " +
                                       std::to_string(o.group_size));
  const auto modules = model.named_modules();
  for (const std::string& s : o.skip) {
    bool found = false;
    for (const auto& [name, m] : modules) found = found || name == s;
    if (!found) ember::detail::throw_value(op, "skip names no module of the model: \"" + s + "\"");
  }
  std::vector<Target> targets;
  for (const auto& [name, m] : modules) {
    if (skipped(name, o.skip)) continue;
    Target t{name};
    if (auto* l = dynamic_cast<nn::Linear*>(m)) {
      t.linear = l;
      t.in = l->options.in;
      t.bits = l->quantized_bits();
    } else if (auto* c = dynamic_cast<Conv1D*>(m)) {
      t.conv1d = c;
      t.bits = c->quantized_bits();
      t.in = t.bits ? 0 : c->weight.size(0);
    } else if (auto* e = o.embeddings ? dynamic_cast<nn::Embedding*>(m) : nullptr) {
      t.embedding = e;
      t.in = e->options.dim;
      t.bits = e->quantized_bits();
    } else {
      continue;
    }
    const std::string label = name.empty() ? std::string("the model") : "\"" + name + "\"";
    if (t.bits)
      ember::detail::throw_value(op, label + " is already quantized (int" + std::to_string(t.bits) + ")");
    if (o.bits == 4 && t.in % o.group_size)
      ember::detail::throw_value(op, label + ": group_size " + std::to_string(o.group_size) +
                                         " does not divide its input size " + std::to_string(t.in) +
                                         " (skip it, or pick a group_size that divides it)");
    const Tensor& w = t.linear ? t.linear->weight : t.conv1d ? t.conv1d->weight : t.embedding->weight;
    NoGradGuard ng;
    if (w.numel() && !all(isfinite(w)).item<bool>())
      ember::detail::throw_value(op, label + ": the weight holds NaN or infinite values");
    targets.push_back(std::move(t));
  }
  std::vector<std::string> done;
  for (const Target& t : targets) {
    if (t.linear) t.linear->quantize_(o.bits, o.group_size);
    else if (t.conv1d) t.conv1d->quantize_(o.bits, o.group_size);
    else t.embedding->quantize_(o.bits, o.group_size);
    done.push_back(t.name);
  }
  return done;
}

int64_t state_bytes(const nn::Module& model) {
  int64_t bytes = 0;
  for (const auto& [key, t] : model.state_dict()) bytes += int64_t(t.nbytes());
  return bytes;
}

}  // namespace ember::models
