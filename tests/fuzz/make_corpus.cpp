// Writes the fuzzers' seed corpora with ember's own writers: `fuzz_make_corpus DIR` fills
// DIR/<target>/ for every target in tests/fuzz. The seeds are valid inputs (so mutations start
// from files ember really reads) and small (the corpora are committed).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#ifdef EMBER_HAVE_REMOTE
#include "ember/backends/remote/protocol.h"
#endif
#include "ember/data/idx.h"
#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "ember/store/pytorch.h"
#include "ember/store/safetensors.h"
#include "ember/store/state.h"
#include "ember/train/learner.h"
#include "ember/train/metric_log.h"
#include "../gzip_util.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

fs::path g_root;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void put(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_root / target);
  std::ofstream(g_root / target / name, std::ios::binary)
      .write(bytes.data(), std::streamsize(bytes.size()));
}
// The bytes `write(path)` leaves in a scratch file.
template <class F>
std::string written(F write) {
  fs::path p = g_root / ".scratch";
  write(p.string());
  std::string bytes = read(p);
  fs::remove(p);
  return bytes;
}

void safetensors_seeds() {
  Tensor base = arange(0.0, 6.0).reshape({2, 3});
  std::vector<std::pair<std::string, store::TensorMap>> files = {
      {"one", {{"w", base}}},
      {"dtypes",
       {{"b", base > 2},
        {"u8", base.to(kU8)},
        {"i8", base.to(kI8)},
        {"i16", base.to(kI16)},
        {"i32", base.to(kI32)},
        {"i64", base.to(kI64)},
        {"f16", base.to(kF16)},
        {"bf16", base.to(kBF16)},
        {"f32", base},
        {"f64", base.to(kF64)}}},
      {"shapes",
       {{"scalar", scalar_tensor(1.5)},
        {"empty", zeros({0, 3})},
        {"cube", ones({2, 2, 2}, {kF16})}}},
      {"model",
       {{"model.encoder.0.weight", full({2, 2}, 0.5)},
        {"model.encoder.0.bias", ones({2})},
        {"model.head.weight", ones({3, 2}, {kBF16})}}},
  };
  for (const auto& file : files) {
    // clang 14 cannot capture structured bindings in a lambda, hence file.first / file.second.
    const std::string& name = file.first;
    std::string bytes = written([&](const std::string& p) {
      store::save_safetensors(p, file.second,
                              name == "one" ? store::Metadata{{"epoch", "3"}} : store::Metadata{});
    });
    put("safetensors", name + ".safetensors", bytes);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    put("safetensors_header", name,
        bytes.substr(8, n) + std::string(1, '\0') + bytes.substr(8 + n));
    put("safetensors_load", name + "-plain", "\n" + bytes);
  }
  std::string model = read(g_root / "safetensors" / "model.safetensors");
  put("safetensors_load", "rename", "r:^model\\.=>;r:^encoder\\.=>layers.\n" + model);
  put("safetensors_load", "filters", "i:weight;e:^model\\.head;partial;unexpected\n" + model);
  put("safetensors_load", "nocast", "nocast;r:(\\w+)\\.(\\d+)=>$2.$1\n" + model);
  // Found by fuzzing: counts libstdc++'s regex compiler overflowed, a pattern it backtracked on.
  put("safetensors_load", "regex-counts",
      "r:a{6666666666666666666}=>w;i:(x{1000}){1000}\n" + model);
  put("safetensors_load", "regex-backtracking", "i:(e*)*(a|aa)*b;r:(\\w*)*\\.=>$1\n" + model);
}

void idx_seeds() {
  for (DType d : {kU8, kI8, kI16, kI32, kF32, kF64}) {
    Tensor t = arange(-3, 9).reshape({2, 2, 3}).to(d);
    if (d == kU8) t = arange(0, 12).reshape({3, 4}).to(d);
    std::string raw = written([&](const std::string& p) { data::write_idx(p, t); });
    std::string name(dtype_name(d));
    put("idx", name + ".idx", raw);
    put("idx", name + ".idx.gz", test::gzip(raw));
  }
  std::string empty = written([](const std::string& p) {
    data::write_idx(p, zeros({0, 4}, {kU8}));
  });
  put("idx", "empty.idx", empty);
}

void csv_seeds() {
  put("csv", "numbers.csv", "1,2,3\n4.5,-6,7e3\n");
  put("csv", "quoted.csv",
      "length,width,species\n5.1,3.5,setosa\n6.3,3.3,\"virginica, \"\"probably\"\"\"\r\n");
  put("csv", "blanks.csv", "\n \t\n1;2\n\n3;4");
  put("csv", "ints.csv", "-9223372036854775808,9223372036854775807\n0x10,1e999\n");
}

struct Net : nn::Module {  // the same model as fuzz_checkpoint.cpp's
  nn::Linear fc{{.in = 4, .out = 2}};
  Net() { register_modules({{"fc", fc}}); }
  Tensor forward(const Tensor& x) override { return fc(x); }
};

void state_seeds() {
  std::vector<Tensor> p{ones({3}).requires_grad_(), ones({2, 2}).requires_grad_()};
  optim::Adam adam(p, {.lr = 0.1});
  Tensor loss = (p[0].sum() + p[1].pow(2).sum());
  adam.step(loss.backward());
  put("state", "adam.safetensors",
      written([&](const std::string& f) { store::save_optimizer(f, adam); }));
  std::vector<Tensor> q{ones({3}).requires_grad_()};
  optim::SGD sgd(q, {.lr = 0.1, .momentum = 0.9});
  sgd.step((q[0] * q[0]).sum().backward());
  put("state", "sgd.safetensors",
      written([&](const std::string& f) { store::save_optimizer(f, sgd); }));
  auto a = std::make_shared<optim::StepLR>(sgd, 2);
  auto b = std::make_shared<optim::CosineAnnealingWarmRestarts>(sgd, 3, 2);
  optim::SequentialLR seq(sgd, {a, b}, {2});
  for (int i = 0; i < 4; ++i) seq.step();
  put("state", "sequential.safetensors",
      written([&](const std::string& f) { store::save_scheduler(f, seq); }));
  put("state", "warm.safetensors",
      written([&](const std::string& f) { store::save_scheduler(f, *b); }));
  std::string lines = "#\n";
  for (const auto& [k, v] : seq.state_dict().scalars) lines += k + "=" + std::to_string(v) + "\n";
  put("state", "sequential.txt", lines);
  lines = "#\n";
  for (const auto& [k, v] : adam.state_dict().scalars) lines += k + "=" + std::to_string(v) + "\n";
  put("state", "adam.txt", lines);
}

void checkpoint_seeds() {
  manual_seed(1);
  std::vector<data::Example> items;
  for (int i = 0; i < 8; ++i) items.emplace_back(randn({4}), scalar_tensor(int64_t(i % 2), kI64));
  data::DataLoader<data::Example> loader(data::in_memory(items), {.batch_size = 4});
  Net net;
  optim::Adam opt(net.parameters(), {.lr = 1e-2});
  optim::StepLR sched(opt, 2);
  fs::path dir = g_root / ".ckpt";
  train::Learner learner(net, opt,
                         {.epochs = 2,
                          .checkpoint_dir = dir.string(),
                          .keep_last = 0,
                          .handle_interrupt = false,
                          .renderer = train::silent_renderer()});
  learner.set_scheduler(sched);
  learner.add_metric(train::accuracy());
  learner.fit(loader, train::classification_step(net));
  std::string last = train::Learner::latest_checkpoint(dir.string());
  put("checkpoint", "epoch-0002.safetensors", read(last));
  store::SafetensorsFile f(last);
  put("checkpoint", "metadata.json",
      f.metadata().at("ember.learner") + "\n" + f.metadata().at("ember.history"));
  fs::remove_all(dir);

  std::vector<train::EpochRecord> history = {
      {.epoch = 1,
       .seconds = 0.5,
       .train = {{"loss", 1.25}, {"accuracy", 0.5}},
       .valid = {{"loss", 1.5}}},
      {.epoch = 2, .seconds = 0.25, .train = {{"loss", 0.75}}}};
  put("metric_log", "history.json", train::history_to_json(history));
  put("metric_log", "log.csv", written([&](const std::string& p) {
        train::write_metric_log(p + ".csv", history);
        fs::rename(p + ".csv", p);
      }));
  put("metric_log", "log.jsonl", written([&](const std::string& p) {
        train::write_metric_log(p + ".jsonl", history);
        fs::rename(p + ".jsonl", p);
      }));
}

// ember's own .pt files, and the ones torch wrote for the tests (zip, legacy, deflated).
void pytorch_seeds() {
  Tensor base = arange(0.0, 6.0).reshape({2, 3});
  put("pytorch", "ember-one", written([&](const std::string& p) {
        store::save_pytorch(p, {{"w", base}});
      }));
  put("pytorch", "ember-mixed", written([&](const std::string& p) {
        store::save_pytorch(p, {{"fc.weight", base.t()}, {"fc.bias", ones({2}, {kBF16})},
                                {"mask", ones({3}, {kBool})}, {"n", zeros({}, {kI64})}});
      }));
  for (const auto& e : fs::directory_iterator(EMBER_PT_GOLDENS))
    if (e.path().extension() == ".pt") put("pytorch", e.path().stem().string(), read(e.path()));
}

#ifdef EMBER_HAVE_REMOTE
// fuzz_remote's seeds start with 0xEE, which the target replaces with a valid Hello.
void remote_seeds() {
  using remote::TensorRef;
  auto frame = [](auto fill) {
    std::vector<uint8_t> f;
    remote::Encoder e(f);
    fill(e);
    return "\xEE" + std::string(f.begin(), f.end());
  };
  const float v[6] = {1, 2, 3, 4, 5, 6};
  TensorRef view;
  view.kind = TensorRef::View;
  view.handle = 1;
  view.shape = {2, 3};
  view.strides = {3, 1};
  TensorRef t = view;
  t.shape = {3, 2};
  t.strides = {1, 3};
  TensorRef k;
  k.kind = TensorRef::Constant;
  k.constant = Scalar(2.5);
  k.wrapped = true;
  put("remote", "upload_add_read", frame([&](remote::Encoder& e) {
        e.upload(1, sizeof v, 0, v, sizeof v);
        TensorRef in[] = {view, k};
        const uint64_t out[] = {2};
        e.call(0, OpId::add, {}, false, in, out);
        e.download(1, 2, 0, sizeof v);
        e.sync(2);
        e.free(2);
      }));
  put("remote", "matmul_view", frame([&](remote::Encoder& e) {
        e.upload(1, sizeof v, 0, v, sizeof v);
        TensorRef in[] = {view, t};
        const uint64_t out[] = {3};
        e.call(0, OpId::matmul, {}, false, in, out);
        e.download(1, 3, 0, 16);
      }));
  put("remote", "create_wait", frame([&](remote::Encoder& e) {
        Attrs a;
        a.ints = {4};
        a.s[0] = Scalar(1.5);
        const uint64_t out[] = {10};
        e.call(0, OpId::full, a, true, {}, out);
        TensorRef x = view;
        x.handle = 10;
        x.shape = {4};
        x.strides = {1};
        TensorRef in[] = {x};
        e.call(7, OpId::nonzero, {}, false, in, out);
        e.sync(8);
      }));
  std::vector<uint8_t> raw;
  remote::Encoder(raw).hello();
  put("remote", "hello", std::string(raw.begin(), raw.end()));
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_corpus DIR\n";
    return 2;
  }
  g_root = argv[1];
  fs::create_directories(g_root);
  safetensors_seeds();
  idx_seeds();
  csv_seeds();
  state_seeds();
  checkpoint_seeds();
  pytorch_seeds();
#ifdef EMBER_HAVE_REMOTE
  remote_seeds();
#endif
  std::cout << "seeds written to " << g_root.string() << "\n";
}
