#pragma once
// Shape: a small vector of int64 dims (inline up to 6, heap beyond) used for sizes and strides.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace ember {

class IntVec {
 public:
  static constexpr size_t kInline = 6;
  IntVec() = default;
  IntVec(std::initializer_list<int64_t> v) { assign(v.begin(), v.size()); }
  IntVec(std::span<const int64_t> v) { assign(v.data(), v.size()); }  // NOLINT: implicit
  IntVec(const std::vector<int64_t>& v) { assign(v.data(), v.size()); }  // NOLINT
  explicit IntVec(size_t n, int64_t fill = 0) {
    resize(n);
    std::fill(begin(), end(), fill);
  }
  IntVec(const IntVec& o) { assign(o.data(), o.size_); }
  IntVec(IntVec&& o) noexcept { move_from(o); }
  IntVec& operator=(const IntVec& o) {
    if (this != &o) assign(o.data(), o.size_);
    return *this;
  }
  IntVec& operator=(IntVec&& o) noexcept {
    if (this != &o) {
      release();
      move_from(o);
    }
    return *this;
  }
  ~IntVec() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_ : inline_; }
  const int64_t* data() const { return heap_ ? heap_ : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t back() const { return data()[size_ - 1]; }
  int64_t front() const { return data()[0]; }
  operator std::span<const int64_t>() const { return {data(), size_}; }  // NOLINT
  std::vector<int64_t> vec() const { return {begin(), end()}; }

  void resize(size_t n, int64_t fill = 0) {
    if (n > capacity()) grow(n);
    for (size_t i = size_; i < n; ++i) data()[i] = fill;
    size_ = n;
  }
  void push_back(int64_t v) {
    if (size_ == capacity()) grow(size_ * 2 + 1);
    data()[size_++] = v;
  }
  void insert(size_t pos, int64_t v) {
    push_back(0);
    int64_t* d = data();
    std::memmove(d + pos + 1, d + pos, (size_ - 1 - pos) * sizeof(int64_t));
    d[pos] = v;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    std::memmove(d + pos, d + pos + 1, (size_ - 1 - pos) * sizeof(int64_t));
    --size_;
  }
  void clear() { size_ = 0; }

  friend bool operator==(const IntVec& a, const IntVec& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  size_t capacity() const { return heap_ ? cap_ : kInline; }
  void assign(const int64_t* p, size_t n) {
    if (n > capacity()) grow(n);
    if (n) std::memmove(data(), p, n * sizeof(int64_t));
    size_ = n;
  }
  void grow(size_t n) {
    auto* h = new int64_t[n];
    if (size_) std::memcpy(h, data(), size_ * sizeof(int64_t));
    delete[] heap_;
    heap_ = h;
    cap_ = n;
  }
  void release() {
    delete[] heap_;
    heap_ = nullptr;
    size_ = 0;
  }
  void move_from(IntVec& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      o.heap_ = nullptr;
    } else if (size_) {
      std::memcpy(inline_, o.inline_, size_ * sizeof(int64_t));
    }
    o.size_ = 0;
  }
  int64_t inline_[kInline];
  int64_t* heap_ = nullptr;
  size_t cap_ = 0;
  size_t size_ = 0;
};

/// A tensor's sizes, one entry per dim.
using Shape = IntVec;
/// The most dims a tensor may have (PyTorch allows 25 on CPU; ember's loops are built for 16).
inline constexpr size_t kMaxDims = 16;

/// The most elements a tensor may hold, and the largest product of its sizes counted as at
/// least 1 each (what row-major strides reach): 2^56, so sizes, strides, offsets and byte counts
/// (at most 8 bytes an element) never overflow int64.
inline constexpr int64_t kMaxNumel = int64_t(1) << 56;

/// Number of elements a shape holds (1 for a 0-d shape); the shape must have passed
/// check_shape (or belong to a tensor, which did).
inline int64_t numel_of(std::span<const int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
/// Checks a shape a tensor is to have: at most kMaxDims dims (else ShapeError), no negative size
/// and no product of sizes (each counted as at least 1) beyond kMaxNumel (else ValueError), each
/// naming `op`. With `unknown_ok`, a size of -1 (a size the data decides) counts as 1.
void check_shape(std::span<const int64_t> shape, const char* op, bool unknown_ok = false);
/// a * b and a + b for sizes, or a ValueError naming `op` and `what` when the result leaves
/// int64 (shape arithmetic on user-given values must not overflow).
int64_t checked_mul(int64_t a, int64_t b, const char* op, const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* op, const char* what);
/// Row-major strides for a shape that passed check_shape.
Shape contiguous_strides(std::span<const int64_t> shape);
/// "[2, 3, 4]"
std::string shape_str(std::span<const int64_t> s);
std::ostream& operator<<(std::ostream& os, const IntVec& s);
/// Wraps a possibly negative dim into [0, ndim); throws ShapeError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
/// Broadcasts two shapes (numpy rules); throws ShapeError naming `op`.
Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b, const char* op);

}  // namespace ember
