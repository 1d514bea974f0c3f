// Text generation: a 4-layer, d=512 Llama-style decoder (8 heads over 4 key/value heads, SwiGLU
// 1408, vocabulary 32000) generating 32 tokens greedily after a 16-token prompt at batch 1,
// through its key/value cache. The peer (bench/peers/torch_text_peer.py) runs the same model and
// algorithm in torch with its cache (tests/gen/text_reference.py):
//   build/tools/ember-bench/ember-bench models --device cpu --rounds 5 --filter llama_decode
// tokens/s = 32 / (ms / 1000).
// The _int8 and _int4 rows run the same model after models::quantize (int8 per row; int4 in
// groups of 128), embeddings included; the peer's _int8 row is torch's dynamic int8
// quantization of its nn.Linear layers (quantize_dynamic, fbgemm), where its build has it.
#include <memory>

#include "bench.h"
#include "ember/ember.h"
#include "ember/models/generate.h"
#include "ember/models/llama.h"
#include "ember/models/quantize.h"

namespace {
using namespace ember;

models::LlamaConfig bench_config() {
  models::LlamaConfig c;
  c.vocab_size = 32000;
  c.hidden_size = 512;
  c.intermediate_size = 1408;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-5;
  return c;
}

// Greedy decoding of 32 tokens; bits 8 or 4 quantize the model first (0: f32).
std::function<void()> decode(int bits) {
  auto m = std::make_shared<models::LlamaForCausalLM>(bench_config());
  m->eval();
  if (bits) models::quantize(*m, {.bits = bits, .group_size = 128});
  std::vector<int64_t> prompt;
  for (int i = 0; i < 16; ++i) prompt.push_back(1 + 37 * i);
  return [m, prompt] { models::generate(*m, prompt, {.max_new_tokens = 32}); };
}

EMBER_BENCH({.name = "llama_decode_d512_L4_32tok",
             .setup = [] { return decode(0); },
             .warmup = 2,
             .iters = 7,
             .suite = "models"});
EMBER_BENCH({.name = "llama_decode_d512_L4_32tok_int8",
             .setup = [] { return decode(8); },
             .warmup = 2,
             .iters = 7,
             .suite = "models"});
EMBER_BENCH({.name = "llama_decode_d512_L4_32tok_int4",
             .setup = [] { return decode(4); },
             .warmup = 2,
             .iters = 7,
             .suite = "models"});

}  // namespace
