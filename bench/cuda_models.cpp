// Whole-model training steps on a GPU (run only on --device cuda), beside
// bench/peers/torch_cuda_models_peer.py (the same models in PyTorch, the rows of
// ../shared/peers/torch_gpu.py):
// - ResNet-50 (models::resnet50, torchvision's layers), batch 64 of 224x224 images, SGD with
//   momentum, f32. PyTorch's cuDNN convolutions use TF32 by default (torch.backends.cudnn.allow_tf32),
//   so the row turns ember's TF32 switch on for its steps, as PyTorch's peer runs;
// - the same under bf16 mixed precision (`Device::mixed_precision(kBF16)`, f32 master weights);
// - GPT-2 small (12 pre-norm blocks, d 768, 12 heads, T 1024, vocabulary 50304, untied head, exact
//   GELU, as the peer's model), batch 8, bf16 mixed precision, AdamW.
// Each call is one step: forward, loss, backward, optimizer step.
#include <memory>

#include "bench.h"
#include "ember/cuda.h"
#include "ember/ember.h"
#include "ember/models/resnet.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {
// TF32 on for the duration of the row's steps (PyTorch's cuDNN default), back off afterwards.
struct Tf32 {
  bool was = cuda::allow_tf32();
  explicit Tf32(bool on) { cuda::set_allow_tf32(on); }
  ~Tf32() { cuda::set_allow_tf32(was); }
};

std::function<void()> resnet50_step(bool bf16) {
  struct State {
    Device d;
    std::shared_ptr<models::ResNet> net = models::resnet50();
    std::unique_ptr<optim::SGD> opt;
    Tensor x, y;
  };
  auto s = std::make_shared<State>();
  s->d = bf16 ? bench::device().autodiff().mixed_precision(kBF16) : bench::device().autodiff();
  s->net->to(s->d);
  s->opt = std::make_unique<optim::SGD>(s->net->parameters(),
                                        optim::SGDOptions{.lr = 0.01, .momentum = 0.9});
  s->x = randn({64, 3, 224, 224}).to(s->d);
  s->y = randint(0, 1000, {64}).to(s->d);
  return [s, bf16] {
    Tf32 tf32(!bf16);
    Tensor loss = F::cross_entropy((*s->net)(s->x), s->y);
    s->opt->step(loss.backward({.accumulate_grad = false}));
    bench::keep(loss);
  };
}

// The peer's GPT: wte + wpe, blocks of (ln1, qkv, causal attention, proj) and (ln2, fc, gelu,
// out), final norm, head.
struct Block : nn::Module {
  int64_t d, h;
  nn::LayerNorm ln1, ln2;
  nn::Linear qkv, proj, fc, out;
  Block(int64_t d_, int64_t h_)
      : d(d_), h(h_), ln1({.shape = {d_}}), ln2({.shape = {d_}}), qkv({.in = d_, .out = 3 * d_}),
        proj({.in = d_, .out = d_}), fc({.in = d_, .out = 4 * d_}), out({.in = 4 * d_, .out = d_}) {
    register_modules({{"ln1", ln1}, {"ln2", ln2}, {"qkv", qkv}, {"proj", proj}, {"fc", fc},
                      {"out", out}});
  }
  Tensor forward(const Tensor& x) override {
    const int64_t b = x.size(0), t = x.size(1);
    auto parts = split(qkv(ln1(x)), d, 2);
    auto heads = [&](const Tensor& p) { return p.reshape({b, t, h, d / h}).transpose(1, 2); };
    Tensor y = F::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]),
                                               {.is_causal = true});
    Tensor r = x + proj(y.transpose(1, 2).reshape({b, t, d}));
    return r + out(gelu(fc(ln2(r))));
  }
};
struct Gpt : nn::Module {
  static constexpr int64_t V = 50304, D = 768, L = 12, H = 12, T = 1024;
  nn::Embedding wte{{.num = V, .dim = D}}, wpe{{.num = T, .dim = D}};
  std::vector<std::shared_ptr<Block>> blocks;
  nn::LayerNorm lnf{{.shape = {D}}};
  nn::Linear head{{.in = D, .out = V, .bias = false}};
  Gpt() {
    register_modules({{"wte", wte}, {"wpe", wpe}, {"lnf", lnf}, {"head", head}});
    for (int64_t i = 0; i < L; ++i) {
      blocks.push_back(std::make_shared<Block>(D, H));
      register_module("block" + std::to_string(i), blocks.back());
    }
  }
  Tensor forward(const Tensor& idx) override {
    Tensor x = wte(idx) + wpe(arange(idx.size(1), {.dtype = kI64, .device = idx.device()}));
    for (auto& b : blocks) x = (*b)(x);
    return head(lnf(x));
  }
};
std::function<void()> gpt2_step() {
  struct State {
    Device d = bench::device().autodiff().mixed_precision(kBF16);
    Gpt net;
    std::unique_ptr<optim::AdamW> opt;
    Tensor idx;
  };
  auto s = std::make_shared<State>();
  s->net.to(s->d);
  s->opt = std::make_unique<optim::AdamW>(s->net.parameters(), optim::AdamWOptions{.lr = 3e-4});
  s->idx = randint(0, Gpt::V, {8, Gpt::T}).to(s->d);
  return [s] {
    Tensor logits = s->net(s->idx);
    Tensor loss = F::cross_entropy(logits.reshape({-1, Gpt::V}).to(kF32), s->idx.reshape({-1}));
    s->opt->step(loss.backward({.accumulate_grad = false}));
    bench::keep(loss);
  };
}
}  // namespace

// clang-format off
EMBER_BENCH({.name = "resnet50_train_b64_f32", .setup = [] { return resnet50_step(false); },
             .warmup = 3, .iters = 10, .gpu = true});
EMBER_BENCH({.name = "resnet50_train_b64_bf16", .setup = [] { return resnet50_step(true); },
             .warmup = 3, .iters = 10, .gpu = true});
EMBER_BENCH({.name = "gpt2s_train_b8_t1024_bf16", .setup = gpt2_step,
             .warmup = 3, .iters = 10, .gpu = true});
// clang-format on
