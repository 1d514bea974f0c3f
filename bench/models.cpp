// Small-model workloads (rows of bench/peers/torch_models_peer.py and torch_ops_peer.py, built from ember's nn modules as the
// peer builds them from torch.nn): an MLP's inference and training step, the training steps of
// two small language models, the Fashion-MNIST CNN's step, ResNet-18 inference and one tiny op's
// end-to-end cost. They run on bench::device()
// (`--device cpu` or EMBER_BENCH_DEVICE=cpu for the native backend), side by side with
//   build/tools/ember-bench/ember-bench train models --rounds 5 --filter NAME
// Dropout is 0 in the transformer, so that both sides do the same work and no random stream.
#include <memory>

#include "bench.h"
#include "ember/ember.h"
#include "ember/models/fashion_cnn.h"
#include "ember/models/resnet.h"

namespace {
using namespace ember;
namespace F = nn::functional;

// 784-512-512-10 with relu.
struct Mlp : nn::Module {
  nn::Linear fc1{{.in = 784, .out = 512}}, fc2{{.in = 512, .out = 512}}, fc3{{.in = 512, .out = 10}};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}, {"fc3", fc3}}); }
  Tensor forward(const Tensor& x) override { return fc3(relu(fc2(relu(fc1(x))))); }
};

// A training step: the loss on one batch, backward, one optimizer step.
template <class Net, class Opt>
struct Step {
  Net net;
  Opt opt;
  Tensor x, y;
  template <class Options>
  Step(const Options& o, Tensor x_, Tensor y_)
      : opt(net.parameters(), o), x(std::move(x_)), y(std::move(y_)) {}
  void run() {
    Tensor logits = net(x);
    Tensor loss = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
    opt.step(loss.backward());
  }
};
template <class S>
std::function<void()> body(std::shared_ptr<S> s) {
  return [s] { s->run(); };
}

// Embedding 256 x 128, a 2-layer LSTM of hidden 128 over [T, B], a linear head to the vocab.
struct LstmLm : nn::Module {
  nn::Embedding emb{{.num = 256, .dim = 128}};
  nn::LSTM lstm{{.in = 128, .hidden = 128, .layers = 2}};
  nn::Linear head{{.in = 128, .out = 256}};
  LstmLm() { register_modules({{"emb", emb}, {"lstm", lstm}, {"head", head}}); }
  Tensor forward(const Tensor& tokens) override { return head(lstm(emb(tokens))); }
};

// Token and learned position embeddings, 2 pre-norm encoder layers (d 128, 4 heads, FF 512) with
// a causal mask and a final LayerNorm, a linear head to the vocab; [B, T] batch first.
nn::TransformerEncoderLayer lm_layer() {
  return nn::TransformerEncoderLayer({.d_model = 128,
                                      .nhead = 4,
                                      .dim_feedforward = 512,
                                      .dropout = 0.0,
                                      .batch_first = true,
                                      .norm_first = true});
}
struct TransformerLm : nn::Module {
  nn::Embedding tok{{.num = 256, .dim = 128}}, pos{{.num = 64, .dim = 128}};
  nn::TransformerEncoder enc{lm_layer(), 2, nn::LayerNormOptions{.shape = {128}}};
  nn::Linear head{{.in = 128, .out = 256}};
  Tensor mask = nn::generate_square_subsequent_mask(64), positions = arange(64);
  TransformerLm() { register_modules({{"tok", tok}, {"pos", pos}, {"enc", enc}, {"head", head}}); }
  Tensor forward(const Tensor& tokens) override {
    Tensor h = tok(tokens) + pos(positions);
    return head(enc.forward(h, {.attn_mask = mask}));
  }
};

EMBER_BENCH({.name = "mlp_fwd_b16",
             .setup =
                 [] {
                   auto net = std::make_shared<Mlp>();
                   Tensor x = randn({16, 784});
                   return std::function<void()>([net, x] {
                     NoGradGuard ng;
                     bench::keep((*net)(x));
                   });
                 },
             .warmup = 20,
             .iters = 200,
             .flops = 2.0 * 16 * (784 * 512 + 512 * 512 + 512 * 10)});

EMBER_BENCH({.name = "mlp_train_step_b128",
             .setup =
                 [] {
                   return body(std::make_shared<Step<Mlp, optim::Adam>>(
                       optim::AdamOptions{.lr = 1e-3}, randn({128, 784}),
                       randint(0, 10, {128})));
                 },
             .warmup = 5,
             .iters = 50,
             .suite = "train"});

EMBER_BENCH({.name = "lstm_lm_step",
             .setup =
                 [] {
                   return body(std::make_shared<Step<LstmLm, optim::AdamW>>(
                       optim::AdamWOptions{.lr = 1e-3}, randint(0, 256, {64, 32}),
                       randint(0, 256, {64, 32})));
                 },
             .warmup = 2,
             .iters = 10,
             .suite = "train"});

EMBER_BENCH({.name = "transformer_lm_step",
             .setup =
                 [] {
                   return body(std::make_shared<Step<TransformerLm, optim::AdamW>>(
                       optim::AdamWOptions{.lr = 1e-3}, randint(0, 256, {32, 64}),
                       randint(0, 256, {32, 64})));
                 },
             .warmup = 2,
             .iters = 10,
             .suite = "train"});

// The Fashion-MNIST CNN's training step on one batch of 64 (torch_cpu.py's
// cnn_fmnist_train_step_b64: the same layers, Adam 1e-3).
EMBER_BENCH({.name = "cnn_fmnist_train_step_b64",
             .setup =
                 [] {
                   return body(std::make_shared<Step<models::FashionCnn, optim::Adam>>(
                       optim::AdamOptions{.lr = 1e-3}, randn({64, 1, 28, 28}),
                       randint(0, 10, {64})));
                 },
             .warmup = 3,
             .iters = 20,
             .suite = "train"});

// The zoo's ResNet-18 (torchvision's layout), batch-1 inference in eval mode, no grad
// (torch_cpu.py's resnet18_infer_b1).
EMBER_BENCH({.name = "resnet18_infer_b1",
             .setup =
                 [] {
                   auto net = models::resnet18();
                   net->to(bench::device());
                   net->eval();
                   Tensor x = randn({1, 3, 224, 224});
                   return std::function<void()>([net, x] {
                     NoGradGuard ng;
                     bench::keep((*net)(x));
                   });
                 },
             .warmup = 3,
             .iters = 10});

// One op on 4 floats, 1000 times per call: the row's milliseconds are microseconds per op.
EMBER_BENCH({.name = "tiny_op_eager",
             .setup =
                 [] {
                   Tensor x = ones({4}), w = ones({4});
                   return std::function<void()>([=] {
                     for (int i = 0; i < 1000; ++i) bench::keep(x + w);
                   });
                 },
             .warmup = 3,
             .iters = 30,
             .suite = "elementwise"});

}  // namespace
