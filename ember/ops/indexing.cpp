// Tensor::index and Tensor::index_put_: torch::indexing's sugar over ember's views and gathers.
// Integers, slices, None and Ellipsis give a view; bool masks and integer tensors then index it
// with PyTorch's advanced-indexing rules: the index tensors broadcast together, and their shape
// replaces the indexed dims where those dims are adjacent, else it comes first.
#include <numeric>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/error.h"
#include "ember/tensor_impl.h"

namespace ember {
namespace {

// The view left after the basic indices, and the advanced ones by the view's dim they index.
struct Indexed {
  Tensor view;
  std::vector<std::pair<int64_t, Tensor>> advanced;  // ascending dims, int64 indices
};

int64_t dims_consumed(const TensorIndex& i) {
  switch (i.kind()) {
    case TensorIndex::Kind::Int:
    case TensorIndex::Kind::Slice:
      return 1;
    case TensorIndex::Kind::Tensor: {
      const DType t = i.tensor().dtype();
      return t == DType::Bool || t == DType::U8 ? i.tensor().dim() : 1;
    }
    default:
      return 0;
  }
}

Indexed apply_basic(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op) {
  if (!x.defined()) detail::throw_value(op, "the tensor is undefined");
  int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    consumed += dims_consumed(i);
    ellipses += i.kind() == TensorIndex::Kind::Ellipsis;
  }
  if (ellipses > 1) detail::throw_index(op, "an index can only have a single ellipsis ('...')");
  if (consumed > x.dim())
    detail::throw_index(op, "too many indices for a tensor of dimension " +
                                std::to_string(x.dim()) + ": " + std::to_string(consumed) +
                                " dims indexed");
  Indexed r{x, {}};
  int64_t d = 0;  // the view's dim the next index applies to
  for (size_t k = 0; k < indices.size(); ++k) {
    const TensorIndex& i = indices[k];
    switch (i.kind()) {
      case TensorIndex::Kind::Int:
        r.view = r.view.select(d, i.integer());
        break;
      case TensorIndex::Kind::Slice: {
        const Slice& s = i.slice();
        if (s.step <= 0)
          detail::throw_value(op, "slice step must be positive, found " + std::to_string(s.step));
        r.view = r.view.slice(d++, s.start, s.stop, s.step);
        break;
      }
      case TensorIndex::Kind::None:
        r.view = r.view.unsqueeze(d++);
        break;
      case TensorIndex::Kind::Ellipsis:
        d += x.dim() - consumed;
        break;
      case TensorIndex::Kind::Bool: {
        // x[True] adds a dim of size 1, x[False] one of size 0, as in PyTorch.
        r.view = r.view.unsqueeze(d);
        r.advanced.emplace_back(
            d++, i.integer() ? zeros({1}, {kI64, x.device()}) : zeros({0}, {kI64, x.device()}));
        break;
      }
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = i.tensor();
        if (!t.defined()) {  // an undefined tensor means ":"
          ++d;
          break;
        }
        const DType dt = t.dtype();
        if (dt == DType::Bool || dt == DType::U8) {
          for (int64_t j = 0; j < t.dim(); ++j)
            if (t.size(j) != r.view.size(d + j))
              detail::throw_index(
                  op, "the shape of the mask " + shape_str(t.shape()) + " at index " +
                          std::to_string(j) + " does not match the shape of the indexed tensor " +
                          shape_str(r.view.shape()) + " at index " + std::to_string(d + j));
          // A k-dim mask is k index tensors: the coordinates of its true elements (a sync).
          const Tensor nz = nonzero(t.to(kBool));
          if (t.dim() == 0) {  // a 0-d mask works like the bool scalar above
            r.view = r.view.unsqueeze(d);
            r.advanced.emplace_back(d++, nz.numel() == 0 ? zeros({0}, {kI64, x.device()})
                                                         : zeros({1}, {kI64, x.device()}));
          }
          for (int64_t j = 0; j < t.dim(); ++j) r.advanced.emplace_back(d++, nz.select(1, j));
        } else if (dt == DType::I64 || dt == DType::I32 || dt == DType::I16 || dt == DType::I8) {
          r.advanced.emplace_back(d++, t.to(kI64));
        } else {
          detail::throw_index(op,
                              "tensors used as indices must be long, int, byte or bool "
                              "tensors, found " +
                                  std::string(dtype_name(dt)));
        }
        break;
      }
    }
  }
  return r;
}

// Index tensors wrapped into [0, size) and checked (at the device's next sync when it is lazy).
Tensor checked_index(const Tensor& idx, int64_t size, int64_t dim, const char* op) {
  detail::deferred_check((idx >= -size) & (idx < size), op,
                         "index out of range for dimension " + std::to_string(dim) + " with size " +
                             std::to_string(size));
  return where(idx < 0, idx + size, idx);
}

// True when the advanced dims are consecutive (their result dims then stay in place).
bool adjacent(const std::vector<std::pair<int64_t, Tensor>>& adv) {
  for (size_t k = 1; k < adv.size(); ++k)
    if (adv[k].first != adv[k - 1].first + 1) return false;
  return true;
}

Tensor gather_advanced(const Indexed& r, const char* op) {
  const Tensor& v = r.view;
  TensorList idx;
  for (const auto& [d, t] : r.advanced) idx.push_back(t);
  Shape bshape = idx[0].shape();
  for (size_t k = 1; k < idx.size(); ++k) bshape = broadcast_shapes(bshape, idx[k].shape(), op);
  // Advanced dims first, flattened into one; the linear index picks rows of it.
  Shape order, rest;
  std::vector<bool> is_adv(size_t(v.dim()), false);
  for (const auto& [d, t] : r.advanced) {
    order.push_back(d);
    is_adv[size_t(d)] = true;
  }
  for (int64_t d = 0; d < v.dim(); ++d)
    if (!is_adv[size_t(d)]) {
      order.push_back(d);
      rest.push_back(v.size(d));
    }
  int64_t rows = 1;
  Tensor linear;
  for (size_t k = r.advanced.size(); k-- > 0;) {
    const int64_t d = r.advanced[k].first, size = v.size(d);
    Tensor term = checked_index(idx[k], size, d, op) * rows;
    linear = linear.defined() ? linear + term : term;
    rows *= size;
  }
  Shape flat_shape{rows};
  for (int64_t s : rest) flat_shape.push_back(s);
  const Tensor flat = v.permute(order).reshape(flat_shape);
  linear = linear.expand(bshape).reshape({numel_of(bshape)});
  Shape out_shape = bshape;
  for (int64_t s : rest) out_shape.push_back(s);
  Tensor out = index_select(flat, 0, linear).reshape(out_shape);
  const int64_t first = r.advanced[0].first;
  if (adjacent(r.advanced) && first > 0) {
    Shape src, dst;
    for (int64_t k = 0; k < int64_t(bshape.size()); ++k) {
      src.push_back(k);
      dst.push_back(first + k);
    }
    out = movedim(out, src, dst);
  }
  return out;
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  Indexed r = apply_basic(*this, indices, "index");
  return r.advanced.empty() ? r.view : gather_advanced(r, "index");
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& v) {
  Indexed r = apply_basic(*this, indices, "index_put_");
  const Tensor value = v.dtype() == dtype() ? v : v.to(dtype());
  if (r.advanced.empty()) {
    r.view.copy_(value.expand(r.view.shape()));
    return *this;
  }
  TensorList list(size_t(r.advanced.back().first + 1));
  for (const auto& [d, t] : r.advanced)
    list[size_t(d)] = checked_index(t, r.view.size(d), d, "index_put_");
  r.view.copy_(ember::index_put(r.view, list, value));
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, Scalar v) {
  return index_put_(indices, scalar_tensor(v, dtype(), device()));
}

}  // namespace ember
