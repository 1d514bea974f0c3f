// Cross-checks with the python writer of the spec (tests/gen/safetensors_tool.py): its file loads
// in ember with the values it recorded, and ember writes the very same bytes for those tensors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/store/safetensors.h"
#include "store/store_test_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {

const std::string kDir = std::string(EMBER_TEST_DATA) + "/store/";

json fixture() {
  std::ifstream f(kDir + "mixed.json");
  return json::parse(f);
}

DType dtype_of_name(const std::string& s) {
  for (DType d : {kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64})
    if (store::safetensors_dtype_name(d) == s) return d;
  throw std::runtime_error("unknown dtype " + s);
}

// The tensor the python side recorded, built from its JSON values (exact in every dtype).
Tensor from_entry(const json& e) {
  DType dt = dtype_of_name(e["dtype"]);
  Shape shape(e["shape"].get<std::vector<int64_t>>());
  if (is_floating(dt)) {
    auto v = e["values"].get<std::vector<double>>();
    return from_blob_copy(v.data(), kF64, shape, dt, resolve_device({}));
  }
  auto v = e["values"].get<std::vector<int64_t>>();
  return from_blob_copy(v.data(), kI64, shape, dt, resolve_device({}));
}

}  // namespace

TEST(StorePython, FileWrittenByPythonLoadsWithItsValues) {
  json fx = fixture();
  store::SafetensorsFile f(kDir + "mixed.safetensors");
  ASSERT_EQ(f.keys().size(), fx["tensors"].size());
  EXPECT_EQ(f.metadata(), fx["metadata"].get<store::Metadata>());
  for (size_t i = 0; i < f.keys().size(); ++i) {
    const json& e = fx["tensors"][i];
    SCOPED_TRACE(e["name"].get<std::string>());
    EXPECT_EQ(f.keys()[i], e["name"].get<std::string>());
    Tensor t = f.get(e["name"]);
    EXPECT_EQ(store::safetensors_dtype_name(t.dtype()), e["dtype"].get<std::string>());
    EXPECT_EQ(t.shape(), Shape(e["shape"].get<std::vector<int64_t>>()));
    if (is_floating(t.dtype()))
      EXPECT_EQ(t.to_vector<double>(), e["values"].get<std::vector<double>>());
    else
      EXPECT_EQ(t.to_vector<int64_t>(), e["values"].get<std::vector<int64_t>>());
  }
}

TEST(StorePython, EmberWritesTheSameBytesAsThePythonWriter) {
  json fx = fixture();
  store::TensorMap tensors;
  for (const auto& e : fx["tensors"]) tensors.emplace_back(e["name"], from_entry(e));
  test::ScratchDir dir;
  store::save_safetensors(dir.file("ember.safetensors"), tensors,
                          fx["metadata"].get<store::Metadata>());
  std::string ours = test::read_bytes(dir.file("ember.safetensors"));
  std::string theirs = test::read_bytes(kDir + "mixed.safetensors");
  ASSERT_FALSE(theirs.empty());
  EXPECT_EQ(ours.size(), theirs.size());
  EXPECT_TRUE(ours == theirs) << "header ours:   " << ours.substr(8, 200)
                              << "\nheader theirs: " << theirs.substr(8, 200);
}
