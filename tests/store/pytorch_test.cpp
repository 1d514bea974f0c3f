// The PyTorch reader and writer against files torch wrote (tests/gen/gen_pytorch_files.py): every
// dtype, views of one storage, nested containers, Lightning checkpoints, both formats, deflated
// entries; a malicious pickle refused without running; damaged files refused with clear errors;
// and ember's files read back by torch.load(weights_only=True) when Debian's python3 is there.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/store/load.h"
#include "ember/store/pytorch.h"
#include "store/store_test_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {

const std::string kDir = std::string(EMBER_TEST_DATA) + "/store/pytorch/";

json expected(const std::string& name) {
  std::ifstream f(kDir + name + ".json");
  return json::parse(f);
}

void expect_tensor(const Tensor& t, const json& e, const std::string& key) {
  SCOPED_TRACE(key);
  EXPECT_EQ(std::string(dtype_name(t.dtype())), e["dtype"].get<std::string>());
  EXPECT_EQ(t.shape(), Shape(e["shape"].get<std::vector<int64_t>>()));
  Tensor flat = t.reshape({-1});
  if (is_floating(t.dtype())) {
    TensorData d = flat.to(kF64).data();
    auto v = d.as<double>();
    auto want = e["values"].get<std::vector<double>>();
    ASSERT_EQ(v.size(), want.size());
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], want[i]) << i;
  } else {
    TensorData d = flat.to(kI64).data();
    auto v = d.as<int64_t>();
    auto want = e["values"].get<std::vector<int64_t>>();
    ASSERT_EQ(v.size(), want.size());
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], want[i]) << i;
  }
}

void expect_file(const std::string& file, const std::string& golden) {
  SCOPED_TRACE(file);
  json e = expected(golden);
  store::PtValue root = store::load_pytorch(kDir + file);
  auto flat = root.tensors();
  std::vector<std::string> keys;
  for (auto& [k, v] : flat) keys.push_back(k);
  EXPECT_EQ(keys, e["order"].get<std::vector<std::string>>());
  for (auto& [k, v] : flat) {
    EXPECT_EQ(std::string(dtype_name(v.tensor_dtype())), e["tensors"][k]["dtype"].get<std::string>());
    expect_tensor(v.tensor(), e["tensors"][k], k);
  }
}

}  // namespace

TEST(PyTorchFile, ReadsWhatTorchWrote) {
  for (std::string n : {"dtypes", "views", "nested", "lightning"}) {
    expect_file(n + ".pt", n);
    expect_file(n + "_legacy.pt", n);
  }
  expect_file("nested_p4.pt", "nested_p4");       // protocol 4: FRAME, MEMOIZE, ...
  expect_file("views_deflated.pt", "views");      // compressed entries
}

TEST(PyTorchFile, ScalarsAndContainers) {
  for (std::string f : {"nested.pt", "nested_legacy.pt", "nested_p4.pt"}) {
    SCOPED_TRACE(f);
    store::PtValue r = store::load_pytorch(kDir + f);
    ASSERT_TRUE(r.is_dict());
    EXPECT_EQ(r.at("epoch").as_int(), 5);
    EXPECT_EQ(r.at("name").as_string(), "run");
    EXPECT_TRUE(r.at("flag").as_bool());
    EXPECT_EQ(r.at("nothing").kind(), store::PtValue::Kind::kNone);
    EXPECT_EQ(r.at("ratio").as_float(), 0.5);
    store::PtValue sizes = r.at("sizes");
    ASSERT_EQ(sizes.kind(), store::PtValue::Kind::kTuple);
    EXPECT_EQ(sizes[1].as_int(), 3);
    store::PtValue groups = r.at("optimizer").at("param_groups");
    EXPECT_EQ(groups[0].at("lr").as_float(), 0.1);
    EXPECT_EQ(r.at("optimizer").at("state").entries()[0].first.as_int(), 0);
    EXPECT_EQ(r.at("model").at("1.num_batches_tracked").tensor_dtype(), kI64);
    EXPECT_THROW(r.at("missing"), store::KeyError);
    EXPECT_THROW(r.at("epoch").as_string(), ValueError);
    EXPECT_THROW(groups[5], IndexError);
  }
}

TEST(PyTorchFile, LightningModelStateAndLoadInto) {
  store::PtValue r = store::load_pytorch(kDir + "lightning.pt");
  EXPECT_EQ(r.at("global_step").as_int(), 100);
  auto sd = r.model_state().state_dict();
  ASSERT_EQ(sd.size(), 7u);
  EXPECT_EQ(sd[0].first, "model.0.weight");

  Tensor w = zeros({2, 3}, {kF64}), b = zeros({2}), mean = zeros({2});
  w.requires_grad_();
  store::LoadReport rep = store::load_into(
      {{"fc.weight", w}, {"fc.bias", b}, {"bn.running_mean", mean}}, kDir + "lightning_legacy.pt",
      {.rename = {{"^model\\.0\\.", "fc."}, {"^model\\.1\\.", "bn."}},
       .allow_unexpected = true});
  EXPECT_EQ(rep.loaded.size(), 3u);
  EXPECT_TRUE(allclose(w.to(kF32), r.at("state_dict").at("model.0.weight").tensor()));
  EXPECT_TRUE(w.requires_grad());

  // One combined error, and nothing written.
  Tensor before = b.clone(), wrong = zeros({3, 3});
  try {
    store::load_into({{"model.0.bias", b}, {"model.0.weight", wrong}, {"model.extra", zeros({1})}},
                     kDir + "lightning.pt", {.allow_unexpected = true});
    FAIL();
  } catch (const store::LoadError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("missing (a target, not in the file): model.extra"), std::string::npos) << m;
    EXPECT_NE(m.find("model.0.weight: shape [2, 3] in the file, [3, 3]"), std::string::npos) << m;
  }
  EXPECT_TRUE(equal(b, before));
}

TEST(PyTorchFile, MaliciousPickleIsRefusedAndRunsNothing) {
  const char* marker = "/tmp/ember_pytorch_malicious_marker";
  std::remove(marker);
  for (std::string f : {"malicious.pt", "malicious_legacy.pt"}) {
    try {
      store::load_pytorch(kDir + f);
      FAIL() << f;
    } catch (const store::UnsafePickleError& e) {
      EXPECT_EQ(e.global, "posix.system");
      EXPECT_EQ(std::string(e.what()).rfind("[load_pytorch] ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("refused global posix.system"), std::string::npos);
    }
    Tensor t = zeros({2});
    EXPECT_THROW(store::load_into({{"weight", t}}, kDir + f), store::UnsafePickleError);
  }
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(PyTorchFile, DamagedFilesGiveClearErrors) {
  for (std::string f : {"dtypes.pt", "dtypes_legacy.pt", "views_deflated.pt"}) {
    std::string bytes = test::read_bytes(kDir + f);
    for (size_t n = 0; n < bytes.size(); n += std::max<size_t>(1, bytes.size() / 97)) {
      try {
        store::PtValue r = store::load_pytorch_bytes(bytes.substr(0, n), "cut.pt");
        for (auto& [k, v] : r.tensors()) v.tensor();
        ADD_FAILURE() << f << " cut at " << n << " loaded";
      } catch (const store::StoreError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("[load_pytorch] cut.pt: ", 0), 0u) << e.what();
      }
    }
    for (size_t i = 0; i < bytes.size(); i += 7) {  // flipped bytes: loads or a store error
      std::string bad = bytes;
      bad[i] = char(bad[i] ^ 0x5a);
      try {
        store::PtValue r = store::load_pytorch_bytes(bad, "flip.pt");
        for (auto& [k, v] : r.tensors()) v.tensor();
      } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("[load_pytorch] flip.pt: ", 0), 0u) << e.what();
      }
    }
  }
  EXPECT_THROW(store::load_pytorch("/dev/zero"), store::IOError);
  EXPECT_THROW(store::load_pytorch_bytes("hello world", "x.pt"), store::FormatError);
}

// A safetensors header of 128 bytes makes the file start with 0x80, as a pickle does.
TEST(PyTorchFile, LoadIntoTellsSafetensorsFromPickles) {
  test::ScratchDir dir;
  std::string path = dir.file("w.safetensors");
  for (size_t n = 1; n < 200; ++n) {
    store::save_safetensors(path, {{std::string(n, 'w'), ones({2})}});
    if (uint8_t(test::read_bytes(path)[0]) == 0x80) break;
  }
  ASSERT_EQ(uint8_t(test::read_bytes(path)[0]), 0x80);
  EXPECT_FALSE(store::is_pytorch_file(path));
  EXPECT_TRUE(store::is_pytorch_file(kDir + "dtypes_legacy.pt"));
  EXPECT_TRUE(store::is_pytorch_file(kDir + "dtypes.pt"));
  Tensor t = zeros({2});
  EXPECT_NO_THROW(store::load_into({{"x", t}}, path, {.allow_partial = true,
                                                      .allow_unexpected = true}));
}

TEST(PyTorchFile, SaveReadsBack) {
  test::ScratchDir dir;
  Tensor base = arange(0.0, 12.0).reshape({3, 4});
  store::TensorMap sd = {{"w", base},
                         {"t", base.t()},  // written in logical order
                         {"h", base.to(kBF16)},
                         {"f16", base.to(kF16)},
                         {"b", tensor({1, 0, 1}).to(kBool)},
                         {"n", scalar_tensor(int64_t(1) << 40).to(kI64)},
                         {"u", tensor({200, 3}).to(kU8)},
                         {"e", zeros({0, 2})}};
  std::string path = dir.file("m.pt");
  store::save_pytorch(path, sd);
  store::PtValue r = store::load_pytorch(path);
  ASSERT_EQ(r.size(), sd.size());
  for (auto& [k, t] : sd) {
    SCOPED_TRACE(k);
    Tensor got = r.at(k).tensor();
    EXPECT_EQ(got.dtype(), t.dtype());
    EXPECT_TRUE(equal(got, t));
  }
  EXPECT_THROW(store::save_pytorch(dir.file("d.pt"), {{"a", base}, {"a", base}}), ValueError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("d.pt")));
}

TEST(PyTorchFile, TorchLoadsWhatEmberSaved) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  test::ScratchDir dir;
  Tensor base = arange(0.0, 6.0).reshape({2, 3});
  store::TensorMap sd = {{"fc.weight", base}, {"fc.bias", tensor({1.5, -2.0}).to(kBF16)},
                         {"bn.num_batches_tracked", scalar_tensor(int64_t(7)).to(kI64)},
                         {"mask", tensor({1, 0}).to(kBool)}, {"t", base.t().to(kF16)}};
  std::string pt = dir.file("e.pt"), out = dir.file("e.json");
  store::save_pytorch(pt, sd);
  std::string cmd = "/usr/bin/python3 -c \"import torch, json, sys; d = torch.load(sys.argv[1], "
                    "weights_only=True); json.dump({k: [str(v.dtype), list(v.shape), "
                    "v.flatten().double().tolist()] for k, v in d.items()}, open(sys.argv[2], "
                    "'w'))\" " + pt + " " + out;
  int rc = std::system(cmd.c_str());
  if (rc != 0) GTEST_SKIP() << "python3 with torch did not run (" << rc << ")";
  json got = json::parse(test::read_bytes(out));
  const char* names[] = {"torch.float32", "torch.bfloat16", "torch.int64", "torch.bool",
                         "torch.float16"};
  ASSERT_EQ(got.size(), sd.size());
  for (size_t i = 0; i < sd.size(); ++i) {
    auto& [k, t] = sd[i];
    SCOPED_TRACE(k);
    EXPECT_EQ(got[k][0].get<std::string>(), names[i]);
    EXPECT_EQ(Shape(got[k][1].get<std::vector<int64_t>>()), t.shape());
    TensorData d = t.reshape({-1}).to(kF64).data();
    auto v = d.as<double>();
    EXPECT_EQ(got[k][2].get<std::vector<double>>(), std::vector<double>(v.begin(), v.end()));
  }
}
