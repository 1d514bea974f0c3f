#pragma once
// Golden cases: reference inputs/outputs produced by PyTorch (tests/gen/*.py, run with Debian's
// /usr/bin/python3) and committed under tests/data/*.json. Each op family registers a runner
// that calls ember's public API with a case's attrs; the conformance test runs every case on
// every backend and checks that every registered op has cases.
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::test {

using json = nlohmann::json;

struct Case {
  std::string op, name, file;
  json inputs;  // list of tensor specs (or {"scalar": v}, or null for an undefined tensor)
  json attrs;
  json outputs;  // list of tensor specs
  std::string error;  // expected exception class ("ShapeError", ...) or empty
  double rtol = 1e-5, atol = 1e-6;
};

/// Builds a tensor from a spec on `device`: base data + shape + dtype, then "views" applied
/// (permute / transpose / slice / expand / select) to make it non-contiguous.
Tensor make_tensor(const json& spec, Device device);
/// The case's inputs as tensors (undefined for null; scalars become 0-d tensors).
std::vector<Tensor> inputs_of(const Case& c, Device device);
/// Scalar value of input i (for ops whose API takes a Scalar there).
Scalar scalar_of(const json& spec);

/// A device every golden case runs on: each built backend as Device::X() gives it, and, where
/// that device is lazy, its eager form too. `name` ends the test names ("flex", "cpu",
/// "cpu_eager", "cuda0", ...), so `--gtest_filter=Golden/*_cpu_eager` picks one.
struct GoldenDevice {
  std::string name;
  Device device;
};
const std::vector<GoldenDevice>& golden_devices();

/// Every case in tests/data/*.json.
const std::vector<Case>& all_cases();

using Runner = std::function<TensorList(const Case&, Device)>;
std::map<std::string, Runner>& runners();
struct RegisterRunner {
  RegisterRunner(const char* op, Runner r) { runners()[op] = std::move(r); }
};
#define EMBER_RUNNER(op)                                                         \
  static ember::TensorList run_##op(const ember::test::Case& c, ember::Device dev); \
  static ember::test::RegisterRunner reg_##op(#op, run_##op);                     \
  static ember::TensorList run_##op(const ember::test::Case& c, ember::Device dev)

/// Compares an ember result with a golden spec; returns an empty string when they match.
std::string compare(const Tensor& got, const json& want, double rtol, double atol);

/// The golden files' name for the kind of `e` ("ShapeError", ..., "Error" for the base class).
std::string error_kind(const Error& e);

// attrs helpers
Shape ints(const json& a, const char* key, Shape fallback = {});
std::optional<int64_t> opt_int(const json& a, const char* key);

}  // namespace ember::test
