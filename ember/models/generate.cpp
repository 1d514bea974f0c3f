// The generation loop and the token choice (on the host: one row of logits a step).
#include "ember/models/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/models/detail/config_json.h"
#include "ember/models/gpt2.h"
#include "ember/models/llama.h"

namespace ember::models {
namespace {

// splitmix64: a small, well-mixed generator whose whole state is one word, so a run is
// reproducible from its seed on every platform (std's distributions are not).
uint64_t next_u64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double next_unit(uint64_t& s) { return double(next_u64(s) >> 11) * 0x1.0p-53; }

void check(const GenerationOptions& o) {
  if (o.max_new_tokens < 0)
    detail::throw_value("generate",
                        "max_new_tokens must be >= 0, got " + std::to_string(o.max_new_tokens));
  if (o.do_sample && !(o.temperature > 0))
    detail::throw_value(
        "generate", "temperature must be > 0 when sampling, got " + std::to_string(o.temperature));
  if (o.top_k < 0)
    detail::throw_value("generate", "top_k must be >= 0, got " + std::to_string(o.top_k));
  if (!(o.top_p > 0 && o.top_p <= 1))
    detail::throw_value("generate", "top_p must be in (0, 1], got " + std::to_string(o.top_p));
}

}  // namespace

int64_t choose_token(const std::vector<float>& logits, const GenerationOptions& o,
                     uint64_t& state) {
  if (logits.empty()) detail::throw_value("generate", "no logits to choose from");
  if (!o.do_sample)  // the first of equal maxima, as torch.argmax
    return std::max_element(logits.begin(), logits.end()) - logits.begin();
  // Candidates by falling logit (ties by index), cut to top_k, then to the top_p mass.
  std::vector<int64_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  size_t k = o.top_k > 0 ? std::min<size_t>(o.top_k, idx.size()) : idx.size();
  auto by_logit = [&](int64_t a, int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), by_logit);
  idx.resize(k);
  std::vector<double> p(k);
  double top = logits[idx[0]] / o.temperature, sum = 0;
  for (size_t i = 0; i < k; ++i) sum += p[i] = std::exp(logits[idx[i]] / o.temperature - top);
  size_t keep = k;
  if (o.top_p < 1) {
    double acc = 0;
    for (size_t i = 0; i < k; ++i) {
      acc += p[i] / sum;
      if (acc >= o.top_p) {
        keep = i + 1;
        break;
      }
    }
    sum = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  }
  double u = next_unit(state) * sum;
  for (size_t i = 0; i < keep; ++i) {
    u -= p[i];
    if (u < 0) return idx[i];
  }
  return idx[keep - 1];
}

std::vector<int64_t> generate(CausalLM& model, const std::vector<int64_t>& prompt,
                              const GenerationOptions& o) {
  check(o);
  if (prompt.empty()) detail::throw_value("generate", "the prompt has no tokens");
  int64_t total = static_cast<int64_t>(prompt.size()) + o.max_new_tokens;
  if (model.max_positions() > 0 && total > model.max_positions())
    detail::throw_value("generate", std::to_string(prompt.size()) + " prompt tokens + " +
                                        std::to_string(o.max_new_tokens) +
                                        " new ones exceed the model's " +
                                        std::to_string(model.max_positions()) + " positions");
  NoGradGuard no_grad;
  std::vector<int64_t> seq = prompt, out;
  uint64_t state = o.seed;
  KVCache cache;
  if (o.use_cache) cache = model.make_cache(1, total);
  Device dev = model.parameters().empty() ? default_device() : model.parameters()[0].device();
  std::vector<int64_t> step = prompt;  // the tokens the next forward reads
  while (static_cast<int64_t>(out.size()) < o.max_new_tokens) {
    const std::vector<int64_t>& in = o.use_cache ? step : seq;
    Tensor ids = tensor(in, {1, static_cast<int64_t>(in.size())}, kI64, dev);
    Tensor logits = model.forward(ids, o.use_cache ? &cache : nullptr);
    std::vector<float> row = logits.select(1, -1).to(kF32).reshape({-1}).to_vector<float>();
    int64_t token = choose_token(row, o, state);
    out.push_back(token);
    seq.push_back(token);
    step.assign(1, token);
    bool go_on = !o.on_token || o.on_token(token);
    if (!go_on ||
        std::find(o.stop_tokens.begin(), o.stop_tokens.end(), token) != o.stop_tokens.end())
      break;
  }
  return out;
}

std::shared_ptr<CausalLM> causal_lm_from_pretrained(const std::string& dir) {
  std::string path = dir + "/config.json";
  auto j = cfg::parse_config(read_text_file(path), path);
  std::string type;
  cfg::read(j, "model_type", type, path);
  if (type == "gpt2") return GPT2LMHeadModel::from_pretrained(dir);
  if (type == "llama" || type == "mistral") return LlamaForCausalLM::from_pretrained(dir);
  throw store::FormatError("[models] " + path + ": model_type \"" + type +
                           "\" is not a decoder ember has (gpt2, llama, mistral)");
}

std::vector<int64_t> eos_tokens(const CausalLM& model) {
  if (auto* g = dynamic_cast<const GPT2LMHeadModel*>(&model)) return g->config.eos_token_ids;
  if (auto* l = dynamic_cast<const LlamaForCausalLM*>(&model)) return l->config.eos_token_ids;
  return {};
}

}  // namespace ember::models
