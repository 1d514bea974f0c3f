#include "golden.h"
#ifdef EMBER_HAVE_REMOTE
#include "remote/remote_util.h"
#endif

#include "ember/tensor_impl.h"

#include <cmath>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember::test {
namespace {

double num(const json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    throw std::runtime_error("bad number " + s);
  }
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return v.get<double>();
}

}  // namespace

Scalar scalar_of(const json& spec) {
  const json& v = spec.at("scalar");
  if (v.is_boolean()) return Scalar(v.get<bool>());
  if (v.is_number_integer() && !spec.contains("imag")) return Scalar(v.get<int64_t>());
  if (spec.contains("imag")) return Scalar(std::complex<double>(num(v), num(spec["imag"])));
  return Scalar(num(v));
}

Tensor make_tensor(const json& spec, Device device) {
  if (spec.is_null()) return Tensor();
  if (spec.contains("scalar")) return scalar_tensor(scalar_of(spec), {}, device);
  DType dt = dtype_from_name(spec.at("dtype").get<std::string>());
  Shape shape = spec.at("shape").get<std::vector<int64_t>>();
  const json& data = spec.at("data");
  Tensor t;
  if (is_complex(dt)) {  // data: interleaved (real, imaginary) pairs
    std::vector<double> v;
    for (const auto& x : data) v.push_back(num(x));
    Shape pairs = shape;
    pairs.push_back(2);
    t = view_as_complex(tensor(v, pairs, complex_part_dtype(dt), device));
  } else if (dt == DType::I64 || dt == DType::I32 || dt == DType::I16 || dt == DType::I8 ||
      dt == DType::U8) {
    std::vector<int64_t> v;
    for (const auto& x : data) v.push_back(x.get<int64_t>());
    t = tensor(v, shape, dt, device);
  } else {
    std::vector<double> v;
    for (const auto& x : data) v.push_back(num(x));
    t = tensor(v, shape, dt, device);
  }
  if (spec.contains("views")) {
    for (const auto& vw : spec["views"]) {
      std::string k = vw.at(0).get<std::string>();
      if (k == "permute") t = permute(t, vw.at(1).get<std::vector<int64_t>>());
      else if (k == "transpose") t = transpose(t, vw.at(1).get<int64_t>(), vw.at(2).get<int64_t>());
      else if (k == "slice")
        t = slice(t, vw.at(1).get<int64_t>(), vw.at(2).get<int64_t>(), vw.at(3).get<int64_t>(),
                  vw.at(4).get<int64_t>());
      else if (k == "expand") t = expand(t, vw.at(1).get<std::vector<int64_t>>());
      else if (k == "select") t = select(t, vw.at(1).get<int64_t>(), vw.at(2).get<int64_t>());
      else throw std::runtime_error("unknown view " + k);
    }
  }
  return t;
}

std::vector<Tensor> inputs_of(const Case& c, Device device) {
  std::vector<Tensor> out;
  for (const auto& s : c.inputs) out.push_back(make_tensor(s, device));
  return out;
}

const std::vector<GoldenDevice>& golden_devices() {
  static const std::vector<GoldenDevice> devices = [] {
    detail::init();
    std::vector<GoldenDevice> v;
    for (int b = 0; b < kNumBackends; ++b) {
      const Backend kind = Backend(b);
      for (int i = 0; i < device_count(kind); ++i) {
        Device d = kind == Backend::Flex  ? Device::flex()
                   : kind == Backend::Cpu ? Device::cpu()
                   : kind == Backend::Cuda ? Device::cuda(i)
                                           : Device();
        if (kind == Backend::Remote) break;  // below
        std::string name = backend_name(kind);
        if (kind == Backend::Cuda) name += std::to_string(i);
        v.push_back({name, d});
        if (d.is_lazy()) v.push_back({name + "_eager", d.eager()});
      }
    }
#ifdef EMBER_HAVE_REMOTE
    // A remote device needs a server: with EMBER_TEST_REMOTE=1 (ctest golden_remote), a
    // flex-backed one on loopback, started in this process.
    if (const char* e = std::getenv("EMBER_TEST_REMOTE"); e && std::string(e) == "1")
      v.push_back({"remote", remote_golden_device()});
#endif
    return v;
  }();
  return devices;
}

const std::vector<Case>& all_cases() {
  static std::vector<Case> cases = [] {
    std::vector<Case> cs;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(EMBER_TEST_DATA))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f);
      json j = json::parse(in);
      for (const auto& jc : j.at("cases")) {
        Case c;
        c.file = f.filename().string();
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
    }
    return cs;
  }();
  return cases;
}

std::map<std::string, Runner>& runners() {
  static std::map<std::string, Runner> r;
  return r;
}

std::string compare(const Tensor& got, const json& want, double rtol, double atol) {
  std::ostringstream err;
  if (!got.defined()) return "result is undefined";
  DType wd = dtype_from_name(want.at("dtype").get<std::string>());
  if (got.dtype() != wd)
    return "dtype " + std::string(dtype_name(got.dtype())) + " != expected " + std::string(dtype_name(wd));
  Shape ws = want.at("shape").get<std::vector<int64_t>>();
  if (got.shape() != ws) return "shape " + shape_str(got.shape()) + " != expected " + shape_str(ws);
  // complex: the (real, imaginary) pairs, as the golden data holds them
  std::vector<double> g = (is_complex(wd) ? view_as_real(got) : got).to_vector<double>();
  const json& data = want.at("data");
  if (g.size() != data.size()) return "element count differs";
  bool exact = !is_floating(wd) && !is_complex(wd);
  for (size_t i = 0; i < g.size(); ++i) {
    double w = num(data[i]);
    double v = g[i];
    bool ok;
    if (std::isnan(w)) ok = std::isnan(v);
    else if (std::isinf(w)) ok = v == w;
    else if (exact) ok = v == w;
    else ok = std::fabs(v - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      err << "element " << i << ": got " << v << ", expected " << w;
      return err.str();
    }
  }
  return "";
}

Shape ints(const json& a, const char* key, Shape fallback) {
  if (!a.contains(key) || a[key].is_null()) return fallback;
  if (a[key].is_number_integer()) return Shape{a[key].get<int64_t>()};
  return a[key].get<std::vector<int64_t>>();
}
std::optional<int64_t> opt_int(const json& a, const char* key) {
  if (!a.contains(key) || a[key].is_null()) return std::nullopt;
  return a[key].get<int64_t>();
}

std::string error_kind(const Error& e) {
  return dynamic_cast<const ShapeError*>(&e)            ? "ShapeError"
         : dynamic_cast<const DTypeError*>(&e)          ? "DTypeError"
         : dynamic_cast<const IndexError*>(&e)          ? "IndexError"
         : dynamic_cast<const ValueError*>(&e)          ? "ValueError"
         : dynamic_cast<const DeviceError*>(&e)         ? "DeviceError"
         : dynamic_cast<const NotImplementedError*>(&e) ? "NotImplementedError"
                                                        : "Error";
}

}  // namespace ember::test
