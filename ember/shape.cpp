#include "ember/shape.h"

#include <limits>
#include <ostream>

#include "ember/error.h"

namespace ember {

void check_shape(std::span<const int64_t> shape, const char* op, bool unknown_ok) {
  if (shape.size() > kMaxDims)
    detail::throw_shape(op, "at most " + std::to_string(kMaxDims) + " dims are supported, found " +
                                std::to_string(shape.size()) + " in " + shape_str(shape));
  int64_t extent = 1;
  for (int64_t d : shape) {
    if (d < 0 && !(unknown_ok && d == -1))
      detail::throw_value(op, "expected non-negative sizes, found " + shape_str(shape));
    if (__builtin_mul_overflow(extent, std::max<int64_t>(d, 1), &extent) || extent > kMaxNumel)
      detail::throw_value(op, "shape " + shape_str(shape) + " is too large: its sizes multiply " +
                                  "past 2^56 (the most elements a tensor may hold)");
  }
}

int64_t checked_mul(int64_t a, int64_t b, const char* op, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    detail::throw_value(op, std::string(what) + " overflows: " + std::to_string(a) + " * " +
                                std::to_string(b) + " does not fit in int64");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* op, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    detail::throw_value(op, std::string(what) + " overflows: " + std::to_string(a) + " + " +
                                std::to_string(b) + " does not fit in int64");
  return r;
}

Shape contiguous_strides(std::span<const int64_t> shape) {
  // Callers may ask before they check the shape (a view's target, say), and a shape beyond the
  // limits can describe more elements than int64 counts: a stride that would overflow saturates
  // at INT64_MAX rather than wrapping, and the outermost size is never multiplied in at all.
  Shape st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    if (i > 0 && __builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s))
      s = std::numeric_limits<int64_t>::max();
  }
  return st;
}

std::string shape_str(std::span<const int64_t> s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

std::ostream& operator<<(std::ostream& os, const IntVec& s) { return os << shape_str(s); }

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts dim 0 and -1, like torch
  if (dim < -n || dim >= n)
    detail::throw_index(op, "dim " + std::to_string(dim) + " out of range for a tensor of " +
                                std::to_string(ndim) + " dims (expected [" + std::to_string(-n) +
                                ", " + std::to_string(n - 1) + "])");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      detail::throw_shape(op, "shapes " + shape_str(a) + " and " + shape_str(b) +
                                  " do not broadcast: dim " + std::to_string(i) + " is " +
                                  std::to_string(da) + " vs " + std::to_string(db));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ember
