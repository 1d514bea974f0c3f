// models::quantize on the Llama and GPT-2 test models (tests/data/text_models): the int8 model
// keeps the float model's next-token argmax on >= 99% of a text's positions in <= 0.3x the bytes,
// quantized checkpoints round-trip through safetensors, mismatched loads name their keys, and
// bad requests are typed errors that leave the model as it was. The kernels' goldens are in
// tests/data/quant.json (tests/gen/gen_quant.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "ember/ember.h"
#include "ember/models/generate.h"
#include "ember/models/gpt2.h"
#include "ember/models/llama.h"
#include "ember/models/quantize.h"
#include "ember/store/load.h"
#include "ember/store/safetensors.h"

namespace ember {
namespace {

const std::string kLlama = std::string(EMBER_TEST_DATA) + "/text_models/llama";

// The test text as byte tokens (the model's vocabulary has 256 entries), in windows of the
// model's 64 positions: [4, 64].
Tensor text_ids() {
  const std::string text =
      "Weight-only quantization stores each row of a linear layer as small integers and a "
      "scale, so that a decoder reads a quarter of the bytes at every step. The tokens that "
      "follow should not change: a model that predicted the next word before quantization "
      "predicts it after, at nearly every position of a text such as this one. Sixty-four "
      "positions make a window; four windows are checked.";
  std::vector<int64_t> ids;
  for (size_t i = 0; i < 256; ++i) ids.push_back(static_cast<unsigned char>(text[i % text.size()]));
  return tensor(ids, {4, 64});
}

std::shared_ptr<models::LlamaForCausalLM> llama() {
  return models::LlamaForCausalLM::from_pretrained(kLlama);
}

// A model's state_dict after some Adam steps of next-byte prediction on the test text: a model
// with the confident predictions a trained language model has. (The checkpoints' random weights
// give nearly flat logits through a chaotic network, whose argmax any rounding flips.)
template <class Model>
nn::StateDict trained_state(const std::function<std::shared_ptr<Model>()>& make, int64_t vocab) {
  DeviceGuard on(Device::cpu().autodiff());
  auto m = make();
  const Tensor ids = text_ids().to(default_device());
  const Tensor in = ids.narrow(1, 0, 63), target = ids.narrow(1, 1, 63).reshape({4 * 63});
  optim::Adam opt(m->parameters(), {.lr = 1e-2});
  for (int step = 0; step < 40; ++step)
    opt.step(cross_entropy((*m)(in).reshape({4 * 63, vocab}), target).backward());
  nn::StateDict sd;
  for (const auto& [k, t] : m->state_dict()) sd.emplace_back(k, t.to(Device::cpu()).clone());
  return sd;
}

std::shared_ptr<models::LlamaForCausalLM> trained_llama() {
  static const nn::StateDict trained =
      trained_state<models::LlamaForCausalLM>(llama, 256);
  auto m = llama();
  m->load_state_dict(trained);
  return m;
}

const std::string kGpt2 = std::string(EMBER_TEST_DATA) + "/text_models/gpt2";

std::shared_ptr<models::GPT2LMHeadModel> gpt2() {
  return models::GPT2LMHeadModel::from_pretrained(kGpt2);
}

// GPT-2's test model (a 297-entry vocabulary: the byte ids of the text are in it), trained the
// same way.
std::shared_ptr<models::GPT2LMHeadModel> trained_gpt2() {
  static const nn::StateDict trained = trained_state<models::GPT2LMHeadModel>(gpt2, 297);
  auto m = gpt2();
  m->load_state_dict(trained);
  return m;
}

double agreement(const Tensor& a, const Tensor& b) {
  Tensor same = eq(argmax(a, -1), argmax(b, -1));
  return sum(same.to(kF64)).item<double>() / double(same.numel());
}

std::vector<std::string> keys(const nn::Module& m) {
  std::vector<std::string> k;
  for (const auto& [name, t] : m.state_dict()) k.push_back(name);
  return k;
}

bool has_key(const nn::Module& m, const std::string& key) {
  for (const auto& k : keys(m))
    if (k == key) return true;
  return false;
}

// The quantized model's next-token argmax agreement with the float model over the test text,
// and its bytes as a fraction of the float model's; prints both.
std::pair<double, double> agreement_and_ratio(const models::QuantizeOptions& o) {
  auto m = trained_llama();
  NoGradGuard ng;
  const Tensor ids = text_ids();
  const Tensor want = (*m)(ids);
  const int64_t f32_bytes = models::state_bytes(*m);
  const auto done = models::quantize(*m, o);
  EXPECT_EQ(done.size(), 2u + 2 * 7);  // embed_tokens, lm_head and 7 projections a layer
  const double ratio = double(models::state_bytes(*m)) / double(f32_bytes);
  const double agree = agreement((*m)(ids), want);
  const std::string scheme =
      o.bits == 8 ? "int8" : "int4 (group " + std::to_string(o.group_size) + ")";
  std::printf("[ quant ] %s: argmax agreement %.4f over %lld positions, bytes %.3fx of f32\n",
              scheme.c_str(), agree, static_cast<long long>(ids.numel()), ratio);
  return {agree, ratio};
}

TEST(Quantize, Int8KeepsTheArgmaxInAThirdOfTheBytes) {
  const auto [agree, ratio] = agreement_and_ratio({.bits = 8});
  EXPECT_GE(agree, 0.99);
  EXPECT_LE(ratio, 0.3);
}

TEST(Quantize, Int4Group32KeepsMostOfTheArgmax) {
  const auto [agree, ratio] = agreement_and_ratio({.bits = 4, .group_size = 32});
  EXPECT_GE(agree, 0.9);
  EXPECT_LE(ratio, 0.2);
}

TEST(Quantize, QuantizedModelGeneratesWithItsCache) {
  NoGradGuard ng;
  auto m = llama();
  models::quantize(*m, {.bits = 8});
  const std::vector<int64_t> prompt = {72, 101, 108, 108, 111};
  const auto cached = models::generate(*m, prompt, {.max_new_tokens = 16});
  EXPECT_EQ(cached.size(), 16u);
  EXPECT_EQ(models::generate(*m, prompt, {.max_new_tokens = 16, .use_cache = false}), cached);
}

TEST(Quantize, StateDictKeysAndSkip) {
  auto m = llama();
  models::quantize(*m, {.bits = 8, .skip = {"lm_head", "model.layers.1"}});
  EXPECT_TRUE(has_key(*m, "model.layers.0.self_attn.q_proj.weight_int8"));
  EXPECT_TRUE(has_key(*m, "model.layers.0.self_attn.q_proj.weight_scale"));
  EXPECT_FALSE(has_key(*m, "model.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(has_key(*m, "model.embed_tokens.weight_int8"));
  EXPECT_TRUE(has_key(*m, "lm_head.weight"));                      // skipped
  EXPECT_TRUE(has_key(*m, "model.layers.1.mlp.down_proj.weight"));  // below a skipped name
  EXPECT_EQ(m->lm_head->quantized_bits(), 0);
  EXPECT_EQ(m->model.layers.at<models::LlamaDecoderLayer>(0).self_attn.q_proj.quantized_bits(), 8);
  // The quantized buffers are not parameters: an optimizer sees only float tensors.
  for (const Tensor& p : m->parameters()) EXPECT_TRUE(is_floating(p.dtype()));

  auto m4 = llama();
  models::quantize(*m4, {.bits = 4, .group_size = 32, .embeddings = false});
  EXPECT_TRUE(has_key(*m4, "model.layers.1.mlp.up_proj.weight_int4"));
  EXPECT_TRUE(has_key(*m4, "model.layers.1.mlp.up_proj.weight_zero"));
  EXPECT_TRUE(has_key(*m4, "model.embed_tokens.weight"));
}

TEST(Quantize, SafetensorsRoundTripAndMismatchedLoads) {
  NoGradGuard ng;
  const auto dir = std::filesystem::temp_directory_path() / "ember_quantize_test";
  std::filesystem::create_directories(dir);
  for (int bits : {8, 4}) {
    SCOPED_TRACE(bits);
    const models::QuantizeOptions o{.bits = bits, .group_size = 32};
    auto m = llama();
    models::quantize(*m, o);
    const std::string path = (dir / ("llama_int" + std::to_string(bits) + ".safetensors")).string();
    store::save_safetensors(path, m->state_dict());

    // A fresh model from the config, quantized the same way, loads it exactly.
    auto fresh = std::make_shared<models::LlamaForCausalLM>(
        models::LlamaConfig::from_file(kLlama + "/config.json"));
    models::quantize(*fresh, o);
    store::load_into(fresh->state_dict(), path);
    const auto a = m->state_dict(), b = fresh->state_dict();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].first, b[i].first);
      EXPECT_EQ(a[i].second.dtype(), b[i].second.dtype()) << a[i].first;
      EXPECT_TRUE(equal(a[i].second, b[i].second)) << a[i].first;
    }
    const Tensor ids = text_ids();
    EXPECT_TRUE(equal((*m)(ids), (*fresh)(ids)));

    // Into a float model: the quantized keys are named.
    auto plain = llama();
    try {
      store::load_into(plain->state_dict(), path);
      ADD_FAILURE() << "a quantized checkpoint loaded into a float model";
    } catch (const store::LoadError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bits == 8 ? "q_proj.weight_int8" : "q_proj.weight_int4"),
                std::string::npos) << what;
    }
    // A float checkpoint into a quantized model: the float keys are named.
    const std::string float_path = (dir / "llama_f32.safetensors").string();
    store::save_safetensors(float_path, plain->state_dict());
    try {
      store::load_into(fresh->state_dict(), float_path);
      ADD_FAILURE() << "a float checkpoint loaded into a quantized model";
    } catch (const store::LoadError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("q_proj.weight"), std::string::npos) << what;
    }
  }
  // int8 into an int4 model (the same layers, another scheme).
  auto m4 = std::make_shared<models::LlamaForCausalLM>(
      models::LlamaConfig::from_file(kLlama + "/config.json"));
  models::quantize(*m4, {.bits = 4, .group_size = 32});
  EXPECT_THROW(store::load_into(m4->state_dict(), (dir / "llama_int8.safetensors").string()),
               store::LoadError);
  std::filesystem::remove_all(dir);
}

TEST(Quantize, BadRequestsAreTypedErrorsAndChangeNothing) {
  auto m = llama();
  const auto before = keys(*m);
  EXPECT_THROW(models::quantize(*m, {.bits = 3}), ValueError);
  EXPECT_THROW(models::quantize(*m, {.bits = 4, .group_size = 0}), ValueError);
  EXPECT_THROW(models::quantize(*m, {.bits = 4, .group_size = 7}), ValueError);
  // 128 divides no input size of this model (64, 160): the error names the first layer.
  try {
    models::quantize(*m, {.bits = 4, .group_size = 128});
    ADD_FAILURE() << "group_size 128 was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("\"model.embed_tokens\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(models::quantize(*m, {.skip = {"model.no_such_layer"}}), ValueError);
  EXPECT_EQ(keys(*m), before);  // nothing was converted by any of them

  {
    NoGradGuard ng;
    m->model.layers.at<models::LlamaDecoderLayer>(1).mlp.up_proj.weight.index_put_({0, 0}, NAN);
  }
  try {
    models::quantize(*m);
    ADD_FAILURE() << "a NaN weight was quantized";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.mlp.up_proj"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(keys(*m), before);
  models::quantize(*m, {.skip = {"model.layers.1.mlp.up_proj"}});
  EXPECT_THROW(models::quantize(*m), ValueError);  // already quantized

  EXPECT_THROW(quantize_int8(ones({2, 3}, {.dtype = kI32})), DTypeError);
  EXPECT_THROW(quantize_int8(ones({3})), ShapeError);
  EXPECT_THROW(quantize_int4(ones({2, 6}), 4), ValueError);
  EXPECT_THROW(quantize_int4(ones({2, 8}), -2), ValueError);
  nn::Linear fc({.in = 8, .out = 4});
  EXPECT_THROW(fc.quantize_(2), ValueError);
  EXPECT_EQ(fc.quantized_bits(), 0);
  EXPECT_TRUE(fc.weight.defined());
}

// A quantized layer gives the input its gradient (through the dequantized weight); the integer
// values themselves can never require one.
TEST(Quantize, GradientsReachTheInputNotTheIntegers) {
  manual_seed(3);
  nn::Linear fc({.in = 32, .out = 6});
  fc.quantize_(4, 32);
  const Tensor w = dequantize(fc.weight_int4);
  for (Device d : {Device::flex().autodiff(), Device::cpu().autodiff()}) {
    SCOPED_TRACE(d.str());
    Tensor x = randn({3, 32}).to(d).set_requires_grad(true);
    nn::Linear& layer = fc;
    layer.to(d.without_layers());
    Gradients g = sum(square(layer(x))).backward();
    Tensor x2 = x.detach().set_requires_grad(true);
    Gradients g2 = sum(square(linear(x2, w.to(d.without_layers()), fc.bias.detach()))).backward();
    EXPECT_TRUE(allclose(x.grad(g), x2.grad(g2), 1e-4, 1e-5));
  }
  EXPECT_THROW(fc.weight_int4.values.requires_grad_(), DTypeError);
}

TEST(Quantize, EmbeddingLooksUpAndAttendsQuantized) {
  NoGradGuard ng;
  manual_seed(4);
  nn::Embedding e({.num = 10, .dim = 64});
  const Tensor table = e.weight.clone();
  const Tensor idx = tensor(std::vector<int64_t>{3, 0, 9, 3}, {2, 2});
  const Tensor h = randn({5, 64});
  for (int bits : {8, 4}) {
    nn::Embedding q({.num = 10, .dim = 64});
    q.load_state_dict({{"weight", table}});
    q.quantize_(bits, 32);
    const Tensor deq = bits == 8 ? dequantize(q.weight_int8) : dequantize(q.weight_int4);
    EXPECT_TRUE(allclose(q(idx), index_select(deq, 0, idx.reshape({4})).reshape({2, 2, 64})));
    EXPECT_TRUE(allclose(q.attend(h), matmul(h, deq.t()), 1e-4, 1e-4));
    EXPECT_LT(amax(abs(deq - table)).item<float>(), bits == 8 ? 0.05f : 0.6f);
    auto c = std::static_pointer_cast<nn::Embedding>(q.clone());
    EXPECT_TRUE(equal(c->forward(idx), q(idx)));
  }
}

// A tied head (the table is also the output projection) runs quantized too.
TEST(Quantize, TiedHeadRunsQuantized) {
  NoGradGuard ng;
  auto cfg = models::LlamaConfig::from_file(kLlama + "/config.json");
  cfg.tie_word_embeddings = true;
  manual_seed(5);
  models::LlamaForCausalLM m(cfg);
  const Tensor ids = text_ids();
  const Tensor want = m(ids);
  models::quantize(m, {.bits = 8});
  EXPECT_FALSE(has_key(m, "lm_head.weight"));
  EXPECT_GE(agreement(m(ids), want), 0.95);
  EXPECT_EQ(models::generate(m, {1, 2, 3}, {.max_new_tokens = 4}).size(), 4u);
}

// GPT-2's projections are Conv1D (weight [in, out]): they are quantized as the Linear they stand
// for, and the model keeps its argmax as the Llama does.
TEST(Quantize, Gpt2Conv1DProjectionsKeepTheArgmax) {
  const Tensor ids = text_ids();
  for (int bits : {8, 4}) {
    SCOPED_TRACE(bits);
    auto m = trained_gpt2();  // trained with gradients on first use
    NoGradGuard ng;
    const Tensor want = (*m)(ids);
    const int64_t f32_bytes = models::state_bytes(*m);
    const auto done = models::quantize(*m, {.bits = bits, .group_size = 32});
    EXPECT_EQ(done.size(), 2u + 2 * 4);  // wte, wpe and 4 projections a block
    const std::string suffix = bits == 8 ? ".weight_int8" : ".weight_int4";
    for (const char* layer : {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}) {
      const std::string name = std::string("transformer.h.1.") + layer;
      EXPECT_TRUE(has_key(*m, name + suffix)) << name;
      EXPECT_FALSE(has_key(*m, name + ".weight")) << name;
      EXPECT_TRUE(has_key(*m, name + ".bias")) << name;
    }
    const double ratio = double(models::state_bytes(*m)) / double(f32_bytes);
    const double agree = agreement((*m)(ids), want);
    std::printf("[ quant ] GPT-2 int%d: argmax agreement %.4f over %lld positions, bytes %.3fx "
                "of f32\n", bits, agree, static_cast<long long>(ids.numel()), ratio);
    EXPECT_GE(agree, bits == 8 ? 0.99 : 0.9);
    EXPECT_LE(ratio, bits == 8 ? 0.3 : 0.2);
  }
}

TEST(Quantize, Gpt2QuantizedSafetensorsRoundTrip) {
  NoGradGuard ng;
  const auto dir = std::filesystem::temp_directory_path() / "ember_quantize_gpt2_test";
  std::filesystem::create_directories(dir);
  const Tensor ids = text_ids();
  for (int bits : {8, 4}) {
    SCOPED_TRACE(bits);
    const models::QuantizeOptions o{.bits = bits, .group_size = 32};
    auto m = gpt2();
    models::quantize(*m, o);
    const std::string path = (dir / ("gpt2_int" + std::to_string(bits) + ".safetensors")).string();
    store::save_safetensors(path, m->state_dict());
    auto fresh = std::make_shared<models::GPT2LMHeadModel>(
        models::GPT2Config::from_file(kGpt2 + "/config.json"));
    models::quantize(*fresh, o);
    store::load_into(fresh->state_dict(), path);
    EXPECT_TRUE(equal((*m)(ids), (*fresh)(ids)));
    EXPECT_THROW(store::load_into(gpt2()->state_dict(), path), store::LoadError);
  }
  std::filesystem::remove_all(dir);
}

// A quantized Conv1D computes x @ W + b with W = the dequantized [out, in] weight, transposed.
TEST(Quantize, Conv1DQuantizesItsTransposedWeight) {
  NoGradGuard ng;
  manual_seed(6);
  models::Conv1D c(24, 64);  // out 24, in 64: weight [64, 24]
  {
    Tensor b = c.bias;
    b.copy_(randn({24}));
  }
  const Tensor w = c.weight.clone(), x = randn({3, 5, 64});
  for (int bits : {8, 4}) {
    models::Conv1D q(24, 64);
    q.load_state_dict({{"weight", w}, {"bias", c.bias}});
    q.quantize_(bits, 32);
    EXPECT_EQ(q.quantized_bits(), bits);
    EXPECT_FALSE(q.weight.defined());
    const Tensor deq = bits == 8 ? dequantize(q.weight_int8) : dequantize(q.weight_int4);
    EXPECT_EQ(deq.shape(), Shape({24, 64}));
    EXPECT_LT(amax(abs(deq.t() - w)).item<float>(), bits == 8 ? 0.01f : 0.1f);
    EXPECT_TRUE(allclose(q(x), matmul(x, deq.t()) + c.bias, 1e-4, 1e-5));
    EXPECT_THROW(q.quantize_(bits, 32), ValueError);  // already quantized
  }
  EXPECT_THROW(c.quantize_(3), ValueError);
  EXPECT_TRUE(c.weight.defined());
}

}  // namespace
}  // namespace ember
