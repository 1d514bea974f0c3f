// PyTorch-style printing: `t.str()` and `std::cout << t` give tensor([[1., 2.], [3., 4.]]) with
// torch's number formatting (integer mode, fixed 4 decimals, or scientific), summarised above
// 1000 elements.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember {
namespace {

constexpr int64_t kThreshold = 1000, kEdge = 3;

struct Formatter {
  enum Mode { Int, Bool, FloatInt, Fixed, Sci, Cell } mode = Fixed;
  size_t width = 1;
  std::vector<std::string> cells;  // Cell mode: the text of each element (complex tensors)

  std::string fmt(double v) const {
    char buf[64];
    switch (mode) {
      case Int: std::snprintf(buf, sizeof buf, "%lld", (long long)v); break;
      case Bool: return v != 0 ? "True" : "False";
      case FloatInt:
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        std::snprintf(buf, sizeof buf, "%.0f.", v);
        break;
      case Fixed:
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        std::snprintf(buf, sizeof buf, "%.4f", v);
        break;
      case Sci:
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        std::snprintf(buf, sizeof buf, "%.4e", v);
        break;
      case Cell: return "";  // cells are formatted by complex_cells
    }
    return buf;
  }
  std::string pad(double v) const {
    std::string s = fmt(v);
    return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
  }
};

// Row-major indices of the elements that are printed (all, or the summarised edges).
void shown(const Shape& s, bool summarise, std::vector<int64_t>& out, size_t d = 0, int64_t base = 0) {
  if (d == s.size()) {
    out.push_back(base);
    return;
  }
  int64_t stride = 1;
  for (size_t k = d + 1; k < s.size(); ++k) stride *= s[k];
  for (int64_t i = 0; i < s[d]; ++i) {
    if (summarise && s[d] > 2 * kEdge && i == kEdge) i = s[d] - kEdge;
    shown(s, summarise, out, d + 1, base + i * stride);
  }
}

void emit(std::string& os, const std::vector<double>& v, const Shape& s, const Formatter& f,
          bool summarise, size_t d, int64_t base, size_t indent) {
  if (d == s.size()) {
    if (f.mode == Formatter::Cell) os += f.cells[size_t(base)];
    else os += f.pad(v[size_t(base)]);
    return;
  }
  int64_t stride = 1;
  for (size_t k = d + 1; k < s.size(); ++k) stride *= s[k];
  os += '[';
  for (int64_t i = 0; i < s[d]; ++i) {
    if (i > 0) {
      os += ',';
      if (d + 1 == s.size()) os += ' ';
      else os.append(s.size() - d - 1, '\n').append(indent + d + 1, ' ');
    }
    if (summarise && s[d] > 2 * kEdge && i == kEdge) {
      os += "...";
      os += ',';
      if (d + 1 == s.size()) os += ' ';
      else os.append(s.size() - d - 1, '\n').append(indent + d + 1, ' ');
      i = s[d] - kEdge;
    }
    emit(os, v, s, f, summarise, d + 1, base + i * stride, indent);
  }
  os += ']';
}

// torch's _Formatter: integer mode, fixed 4 decimals or scientific, chosen from the shown values.
Formatter make_formatter(const std::vector<double>& v, const std::vector<int64_t>& idx, DType dt) {
  Formatter f;
  if (dt == DType::Bool) f.mode = Formatter::Bool;
  else if (!is_floating(dt)) f.mode = Formatter::Int;
  else {
    bool all_int = true;
    double max_abs = 0, min_abs = INFINITY;
    bool any_finite = false;
    for (int64_t i : idx) {
      double x = v[size_t(i)];
      if (!std::isfinite(x)) continue;
      any_finite = true;
      if (x != std::nearbyint(x)) all_int = false;
      max_abs = std::max(max_abs, std::fabs(x));
      if (x != 0) min_abs = std::min(min_abs, std::fabs(x));
    }
    if (!any_finite) f.mode = Formatter::FloatInt;
    else if (all_int)  // torch: integer values too go scientific over a 1000x range
      f.mode = (min_abs != INFINITY && max_abs / min_abs > 1000) || max_abs > 1e8
                   ? Formatter::Sci
                   : Formatter::FloatInt;
    else if ((min_abs != INFINITY && max_abs / min_abs > 1000) || max_abs > 1e8 ||
             (min_abs != INFINITY && min_abs < 1e-4))
      f.mode = Formatter::Sci;
    else f.mode = Formatter::Fixed;
  }
  // torch sizes float columns by the finite non-zero values only (tensor([nan, 1.]) pads
  // nothing); integer columns by every value.
  for (int64_t i : idx) {
    const double x = v[size_t(i)];
    if (is_floating(dt) && (!std::isfinite(x) || x == 0)) continue;
    f.width = std::max(f.width, f.fmt(x).size());
  }
  return f;
}

// A complex element as torch prints it: the real part padded, the imaginary part with its sign
// and a "j" (1.+2.j, 0.5000-1.2500j); each part has a formatter of its own.
std::vector<std::string> complex_cells(const Tensor& t, const std::vector<int64_t>& idx) {
  const DType part = complex_part_dtype(t.dtype());
  std::vector<double> re = real(t).to_vector<double>(), im = imag(t).to_vector<double>();
  Formatter fr = make_formatter(re, idx, part), fi = make_formatter(im, idx, part);
  std::vector<std::string> cells(re.size());
  for (int64_t i : idx) {
    std::string b = fi.fmt(im[size_t(i)]);
    if (b[0] != '-' && b[0] != '+') b = "+" + b;
    cells[size_t(i)] = fr.pad(re[size_t(i)]) + b + "j";
  }
  return cells;
}

}  // namespace

// Built in a string, not a stream: the WebAssembly module prints tensors (ember_tensor_str)
// without linking iostreams and locales.
std::string Tensor::str() const {
  const Tensor& t = *this;
  if (!t.defined()) return "tensor(undefined)";
  const Shape& s = t.shape();
  DType dt = t.dtype();
  bool summarise = t.numel() > kThreshold;
  std::vector<int64_t> idx;
  if (t.numel()) shown(s, summarise, idx);
  std::vector<double> v;
  Formatter f;
  if (::ember::is_complex(dt)) {
    f.mode = Formatter::Cell;
    f.cells = complex_cells(t, idx);
  } else {
    v = t.numel() ? t.to_vector<double>() : std::vector<double>{};
    f = make_formatter(v, idx, dt);
  }

  std::string os = "tensor(";
  const size_t indent = os.size();
  if (s.empty()) os += f.mode == Formatter::Cell ? f.cells[0] : f.fmt(v[0]);
  else if (t.numel() == 0) os += "[]";
  else emit(os, v, s, f, summarise, 0, 0, indent);
  if (t.numel() == 0 && s.size() != 1) {
    os += ", size=(";
    for (size_t i = 0; i < s.size(); ++i) (os += i ? ", " : "") += std::to_string(s[i]);
    os += s.size() == 1 ? ",)" : ")";
  }
  // c64 is the default complex dtype, shown like f32 only where there are values to show it
  // (torch prints tensor([], dtype=complex64)).
  if ((dt != DType::F32 && dt != DType::I64 && dt != DType::Bool && dt != DType::C64) ||
      (dt == DType::C64 && t.numel() == 0))
    (os += ", dtype=") += dtype_name(dt);
  if (t.device().backend() != Backend::Flex) ((os += ", device='") += t.device().str()) += '\'';
  return os += ')';
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ember
