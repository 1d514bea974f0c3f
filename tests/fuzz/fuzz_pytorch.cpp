// Fuzzes the PyTorch reader on whole files (zip and legacy): open (zip directory, restricted
// unpickler, storage and view validation), every value visited, every small tensor read and
// converted, and load_into from the file's tensors, which must change nothing when it fails.
#include <cstdint>
#include <string>

#include "ember/ember.h"
#include "ember/store/load.h"
#include "ember/store/pytorch.h"
#include "fuzz_util.h"

namespace {
using ember::store::PtValue;

void visit(const PtValue& v) {
  switch (v.kind()) {
    case PtValue::Kind::kBool: (void)v.as_bool(); break;
    case PtValue::Kind::kInt: (void)v.as_float(); break;
    case PtValue::Kind::kFloat: (void)v.as_float(); break;
    case PtValue::Kind::kString: case PtValue::Kind::kBytes: case PtValue::Kind::kObject:
      (void)v.as_string().size();
      break;
    case PtValue::Kind::kList: case PtValue::Kind::kTuple:
      for (size_t i = 0; i < v.size(); ++i) visit(v[i]);
      break;
    case PtValue::Kind::kDict:
      for (auto& [k, x] : v.entries()) {
        visit(k);
        visit(x);
      }
      break;
    default: break;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::run([&] {
    PtValue root = store::load_pytorch_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.pt");
    visit(root);
    store::TensorMap targets;
    for (auto& [k, v] : root.model_state().tensors()) {
      if (numel_of(v.tensor_shape()) > 4096) continue;
      Tensor t = v.tensor();
      if (t.shape() != v.tensor_shape() || t.dtype() != v.tensor_dtype()) std::abort();
      (void)sum(v.tensor(kF64)).item<double>();
      targets.emplace_back(k, full(t.shape(), 7, {t.dtype()}));
    }
    std::vector<Tensor> before;
    for (const auto& [k, t] : targets) before.push_back(t.clone());
    try {
      store::load_into(targets, root.model_state(), {.allow_partial = true});
    } catch (const Error&) {
      for (size_t j = 0; j < targets.size(); ++j)  // all or nothing
        if (!equal(targets[j].second, before[j])) std::abort();
      throw;
    }
  });
  return 0;
}
