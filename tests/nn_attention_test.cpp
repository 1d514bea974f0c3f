// The matmul-based nn decompositions (scaled_dot_product_attention, cdist's p = 2 expansion)
// against their golden cases. Until the matmul op is built these cases live in
// tests/data/pending/ and run here against a stand-in matmul (broadcast multiply and sum) that
// is installed only for the duration of the test; once matmul exists they run against it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/backends/backend.h"
#include "golden.h"

namespace ember {
namespace {

using test::json;

std::vector<test::Case> attention_cases() {
  std::vector<test::Case> cs;
  for (const char* dir : {"", "/pending"}) {
    std::filesystem::path p = std::string(EMBER_TEST_DATA) + dir + "/nn_attention.json";
    if (!std::filesystem::exists(p)) continue;
    std::ifstream in(p);
    json j = json::parse(in);
    for (const auto& jc : j.at("cases")) {
      test::Case c;
      c.file = p.filename().string();
      c.op = jc.at("op").get<std::string>();
      c.name = jc.value("name", c.op);
      c.inputs = jc.value("inputs", json::array());
      c.attrs = jc.value("attrs", json::object());
      c.outputs = jc.value("outputs", json::array());
      c.error = jc.value("error", "");
      c.rtol = jc.value("rtol", 1e-5);
      c.atol = jc.value("atol", 1e-6);
      cs.push_back(std::move(c));
    }
    break;
  }
  return cs;
}

std::string kind_of(const Error& e) {
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const DTypeError*>(&e)) return "DTypeError";
  if (dynamic_cast<const IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  return "Error";
}

// matmul for >= 2-D operands with broadcast batch dims: sum over k of a[.., i, k] * b[.., k, j].
void infer_standin(OpId, const Attrs&, std::span<const Tensor> in, MetaList& out) {
  Shape ba = in[0].shape(), bb = in[1].shape();
  ba.resize(ba.size() - 2);
  bb.resize(bb.size() - 2);
  Shape s = broadcast_shapes(ba, bb, "matmul");
  s.push_back(in[0].size(-2));
  s.push_back(in[1].size(-1));
  out.add(s, promote_types(in[0].dtype(), in[1].dtype()));
}
TensorList decompose_standin(const Attrs&, std::span<const Tensor> in) {
  return {sum(in[0].unsqueeze(-1) * in[1].unsqueeze(-3), {-2})};
}

// Installs the stand-in when the registry has no matmul, and restores the definition after.
class StandInMatmul {
 public:
  StandInMatmul() {
    detail::init();  // registration first: the restore must not undo it
    saved_ = op_def(OpId::matmul);
    if (!saved_.infer) {
      op_def_mut(OpId::matmul).infer = infer_standin;
      op_def_mut(OpId::matmul).decompose = decompose_standin;
    }
  }
  ~StandInMatmul() { op_def_mut(OpId::matmul) = saved_; }
  bool active() const { return !saved_.infer; }

 private:
  OpDef saved_{};
};

TEST(NnAttention, GoldenCases) {
  auto cases = attention_cases();
  ASSERT_FALSE(cases.empty()) << "tests/data/pending/nn_attention.json is missing";
  StandInMatmul standin;
  if (standin.active()) std::cout << "[ note ] matmul is not built: using a stand-in\n";
  for (const test::Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto it = test::runners().find(c.op);
    ASSERT_NE(it, test::runners().end()) << "no runner for " << c.op;
    for (Device dev : {Device::flex(), Device::cpu()}) {
      if (!c.error.empty()) {
        try {
          it->second(c, dev);
          ADD_FAILURE() << "expected " << c.error;
        } catch (const Error& e) {
          std::string what = e.what();
          EXPECT_EQ(kind_of(e), c.error) << what;
          EXPECT_NE(what.find("[" + c.op + "]"), std::string::npos) << what;
        }
        continue;
      }
      TensorList got = it->second(c, dev);
      ASSERT_EQ(got.size(), c.outputs.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(test::compare(got[i], c.outputs[i], c.rtol, c.atol), "") << "output " << i;
    }
  }
}

TEST(NnAttention, DropoutIsReproducibleUnderSeed) {
  StandInMatmul standin;
  Tensor q = randn({2, 4, 8}), k = randn({2, 6, 8}), v = randn({2, 6, 3});
  nn::functional::AttentionOptions o;
  o.dropout_p = 0.5;
  manual_seed(11);
  Tensor a = nn::functional::scaled_dot_product_attention(q, k, v, o);
  manual_seed(11);
  Tensor b = nn::functional::scaled_dot_product_attention(q, k, v, o);
  Tensor plain = nn::functional::scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(a.shape(), Shape({2, 4, 3}));
  EXPECT_TRUE(equal(a, b));
  EXPECT_FALSE(allclose(a, plain));
}

}  // namespace
}  // namespace ember
