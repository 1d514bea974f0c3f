// The text models against torch (tests/data/text_models, from tests/gen/gen_text_models.py:
// reference implementations with Hugging Face's names and computations): HF folders load
// unchanged (one safetensors file, shards with an index, pytorch_model.bin), outputs match
// within 1e-4, greedy decoding gives torch's 32 tokens, and cached decoding equals recomputing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/models/bert.h"
#include "ember/models/generate.h"
#include "ember/models/gpt2.h"
#include "ember/models/llama.h"
#include "ember/store/load.h"
#include "ember/store/safetensors.h"

namespace ember {
namespace {

std::string folder(const char* name) {
  return std::string(EMBER_TEST_DATA) + "/text_models/" + name;
}

store::TensorMap reference(const char* name) {
  return store::load_safetensors(folder(name) + "/reference.safetensors");
}
Tensor ref(const store::TensorMap& m, const std::string& key) {
  for (const auto& [k, t] : m)
    if (k == key) return t;
  ADD_FAILURE() << "no " << key << " in the reference";
  return {};
}

double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  auto x = a.to(kF32).contiguous().to_vector<float>(),
       y = b.to(kF32).contiguous().to_vector<float>();
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    m = std::max(m, double(std::abs(x[i] - y[i])));
  return m;
}

std::vector<int64_t> ids_of(const Tensor& t) { return t.to(kI64).to_vector<int64_t>(); }

bool has_key(const nn::Module& m, const std::string& key, const Shape& shape) {
  for (const auto& [k, t] : m.state_dict())
    if (k == key) return t.shape() == shape;
  return false;
}

// Logits, greedy tokens and the cache against a full recomputation, for either decoder.
void check_decoder(models::CausalLM& m, const char* name) {
  auto r = reference(name);
  NoGradGuard g;
  Tensor logits = m(ref(r, "input_ids"));
  EXPECT_LT(max_diff(logits, ref(r, "logits")), 1e-4) << name;

  std::vector<int64_t> prompt = ids_of(ref(r, "prompt"));
  std::vector<int64_t> want = ids_of(ref(r, "greedy"));
  EXPECT_EQ(models::generate(m, prompt, {.max_new_tokens = 32}), want) << name;
  EXPECT_EQ(models::generate(m, prompt, {.max_new_tokens = 32, .use_cache = false}), want) << name;

  // The prompt through the cache in two pieces, then one token at a time, gives the logits of
  // one forward over the whole sequence.
  std::vector<int64_t> seq = prompt;
  seq.insert(seq.end(), want.begin(), want.begin() + 8);
  int64_t n = static_cast<int64_t>(seq.size());
  Tensor ids = tensor(seq, {1, n});
  Tensor full = m(ids);
  models::KVCache cache = m.make_cache(1, n);
  std::vector<Tensor> steps = {m.forward(ids.narrow(1, 0, 3), &cache),
                               m.forward(ids.narrow(1, 3, 2), &cache)};
  for (int64_t i = 5; i < n; ++i) steps.push_back(m.forward(ids.narrow(1, i, 1), &cache));
  EXPECT_EQ(cache.length(), n);
  EXPECT_LT(max_diff(cat(steps, 1), full), 1e-4) << name;
  EXPECT_THROW(m.forward(ids.narrow(1, 0, 1), &cache), ValueError);  // the cache is full
}

TEST(TextModels, Gpt2LoadsHfFolderAndMatchesTorch) {
  auto m = models::GPT2LMHeadModel::from_pretrained(folder("gpt2"));
  EXPECT_TRUE(has_key(*m, "transformer.h.0.attn.c_attn.weight", {64, 192}));
  EXPECT_TRUE(has_key(*m, "transformer.h.1.mlp.c_proj.weight", {256, 64}));
  EXPECT_TRUE(has_key(*m, "transformer.ln_f.bias", {64}));
  EXPECT_EQ(m->state_dict().size(), 2 + 2 * 12 + 2u);
  check_decoder(*m, "gpt2");
}

TEST(TextModels, LlamaLoadsShardedFolderAndMatchesTorch) {
  auto m = models::LlamaForCausalLM::from_pretrained(folder("llama"));
  EXPECT_EQ(m->config.kv_heads(), 2);
  EXPECT_TRUE(has_key(*m, "model.layers.0.self_attn.q_proj.weight", {64, 64}));
  EXPECT_TRUE(has_key(*m, "model.layers.0.self_attn.k_proj.weight", {32, 64}));
  EXPECT_TRUE(has_key(*m, "model.layers.1.mlp.gate_proj.weight", {160, 64}));
  EXPECT_TRUE(has_key(*m, "model.layers.1.post_attention_layernorm.weight", {64}));
  EXPECT_TRUE(has_key(*m, "lm_head.weight", {256, 64}));
  check_decoder(*m, "llama");
}

// The native cpu backend (oneDNN matmuls, fused kernels) gives the same.
TEST(TextModels, DecodersMatchTorchOnTheCpuBackend) {
  DeviceGuard on_cpu(Device::cpu());
  check_decoder(*models::LlamaForCausalLM::from_pretrained(folder("llama")), "llama");
  check_decoder(*models::GPT2LMHeadModel::from_pretrained(folder("gpt2")), "gpt2");
}

TEST(TextModels, BertLoadsPytorchBinAndMatchesTorch) {
  auto m = models::BertModel::from_pretrained(folder("bert"));
  EXPECT_TRUE(has_key(*m, "encoder.layer.0.attention.self.query.weight", {64, 64}));
  EXPECT_TRUE(has_key(*m, "encoder.layer.1.output.LayerNorm.weight", {64}));
  EXPECT_TRUE(has_key(*m, "pooler.dense.weight", {64, 64}));
  auto r = reference("bert");
  NoGradGuard g;
  auto out = m->forward(
      models::BertInputs{ref(r, "input_ids"), ref(r, "token_type_ids"), ref(r, "attention_mask")});
  EXPECT_LT(max_diff(out.last_hidden_state, ref(r, "last_hidden_state")), 1e-4);
  EXPECT_LT(max_diff(out.pooler_output, ref(r, "pooler_output")), 1e-4);
  // Without a pooler the pooler's keys are skipped.
  auto bare = models::BertModel::from_pretrained(folder("bert"), /*add_pooling_layer=*/false);
  EXPECT_FALSE(bare->pooler);
  EXPECT_LT(max_diff(bare->forward(ref(r, "input_ids")), m->forward(ref(r, "input_ids"))), 1e-6);
}

TEST(TextModels, ConfigErrorsNameTheProblem) {
  EXPECT_THROW(models::GPT2Config::from_json("{"), store::FormatError);
  EXPECT_THROW(models::GPT2Config::from_json("[1]"), store::FormatError);
  try {
    models::LlamaConfig::from_json(R"({"hidden_size": "big"})");
    FAIL();
  } catch (const store::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_size"), std::string::npos) << e.what();
  }
  try {
    models::LlamaConfig::from_json(R"({"rope_scaling": {"type": "yarn", "factor": 4}})");
    FAIL();
  } catch (const store::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("rope_scaling"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      models::LlamaConfig::from_json(R"({"num_attention_heads": 6, "num_key_value_heads": 4})"),
      store::FormatError);
  auto c = models::LlamaConfig::from_json(R"({"eos_token_id": [7, 9], "rope_scaling": null})");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{7, 9}));
  EXPECT_THROW(models::BertModel::from_pretrained(folder("no_such_model")), store::IOError);
}

TEST(TextModels, MissingAndMisshapedWeightsAreOneError) {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / "ember_text_models_bad";
  fs::create_directories(d);
  fs::copy_file(fs::path(folder("gpt2")) / "config.json", d / "config.json",
                fs::copy_options::overwrite_existing);
  store::save_safetensors((d / "model.safetensors").string(),
                          {{"wte.weight", zeros({3, 64})}, {"h.0.ln_1.weight", ones({64})}});
  try {
    models::GPT2LMHeadModel::from_pretrained(d.string());
    FAIL();
  } catch (const store::LoadError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("transformer.wte.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("transformer.h.0.attn.c_attn.weight"), std::string::npos) << msg;
  }
  fs::remove_all(d);
}

}  // namespace
}  // namespace ember
