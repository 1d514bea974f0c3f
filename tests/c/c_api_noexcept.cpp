// The C ABI from C++ built with -fno-exceptions (a game engine's or an embedded build's rules):
// ember's exceptions must stay on its side; every failure arrives as a status. RAII owners
// free each handle. Usage: c_api_noexcept
#include <ember/c/ember.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#error "this test must be compiled with -fno-exceptions"
#endif

namespace {
int failures = 0;
void check(bool ok, const char* what, int line) {
  if (!ok) {
    std::fprintf(stderr, "line %d: %s failed; last error: %s\n", line, what, ember_last_error());
    ++failures;
  }
}
#define CHECK(c) check((c), #c, __LINE__)

struct TensorFree {
  void operator()(ember_tensor* t) const { ember_tensor_free(t); }
};
struct ModuleFree {
  void operator()(ember_module* m) const { ember_module_free(m); }
};
using Tensor = std::unique_ptr<ember_tensor, TensorFree>;
using Module = std::unique_ptr<ember_module, ModuleFree>;

Tensor from(const std::vector<float>& v, std::vector<int64_t> shape) {
  ember_tensor* t = nullptr;
  CHECK(ember_tensor_from_data(v.data(), EMBER_F32, shape.data(), int(shape.size()), nullptr,
                               &t) == EMBER_OK);
  return Tensor(t);
}
}  // namespace

int main() {
  Tensor a = from({1, 2, 3, 4}, {2, 2}), b = from({1, 1, 1}, {3});
  ember_tensor* raw = nullptr;
  // Broadcasting [2,2] with [3] is a shape error, reported, not thrown through us.
  CHECK(ember_add(a.get(), b.get(), &raw) == EMBER_ERR_SHAPE);
  CHECK(std::strstr(ember_last_error(), "ember_add: [add]") != nullptr);
  CHECK(raw == nullptr);
  CHECK(ember_matmul(a.get(), a.get(), &raw) == EMBER_OK);
  Tensor mm(raw);
  float out[4];
  CHECK(ember_tensor_read_f32(mm.get(), out, 4) == EMBER_OK);
  CHECK(out[0] == 7 && out[1] == 10 && out[2] == 15 && out[3] == 22);

  // The CNN runs and its softmax sums to one; a rank-2 input is an error naming conv2d.
  ember_module* m = nullptr;
  CHECK(ember_model_fashion_cnn(&m) == EMBER_OK);
  Module cnn(m);
  CHECK(ember_module_train(cnn.get(), 0) == EMBER_OK);
  Tensor img = from(std::vector<float>(2 * 28 * 28, 0.5f), {2, 1, 28, 28});
  CHECK(ember_module_forward(cnn.get(), img.get(), &raw) == EMBER_OK);
  Tensor logits(raw);
  CHECK(ember_softmax(logits.get(), 1, &raw) == EMBER_OK);
  Tensor probs(raw);
  float p[20];
  CHECK(ember_tensor_read_f32(probs.get(), p, 20) == EMBER_OK);
  float total = 0;
  for (float v : p) total += v;
  CHECK(std::fabs(total - 2) < 1e-5f);
  Tensor flat = from(std::vector<float>(28 * 28, 0.f), {28, 28});
  CHECK(ember_module_forward(cnn.get(), flat.get(), &raw) == EMBER_ERR_SHAPE);
  CHECK(std::strstr(ember_last_error(), "[conv2d]") != nullptr);

  // Null handles everywhere are statuses.
  CHECK(ember_module_forward(nullptr, nullptr, nullptr) == EMBER_ERR_NULL);
  CHECK(ember_state_dict_load_file(nullptr, nullptr) == EMBER_ERR_NULL);
  CHECK(ember_tensor_read(nullptr, nullptr, 0) == EMBER_ERR_NULL);
  CHECK(ember_module_load_state_dict(cnn.get(), nullptr, 1) == EMBER_ERR_NULL);
  CHECK(std::strstr(ember_last_error(), "'state_dict' is NULL") != nullptr);
  ember_state_dict* sd = nullptr;
  CHECK(ember_state_dict_load_file("/proc/self", &sd) == EMBER_ERR_IO);
  CHECK(sd == nullptr);

  if (failures) std::fprintf(stderr, "%d checks failed\n", failures);
  else std::printf("c_api_noexcept: all checks passed\n");
  return failures ? 1 : 0;
}
