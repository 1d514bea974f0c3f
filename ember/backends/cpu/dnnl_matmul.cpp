// oneDNN kernels for mm, bmm, matmul and linear, and the matmul/linear entry points of
// dnnl_ops.h. Operands keep their strides: a transposed view is a column-major oneDNN operand and
// a broadcast batch dim a size-1 dim; only a matrix with no unit stride is copied. Batch dims on
// the left operand alone fold into its rows where the strides allow (one large GEMM). f32 only
// (f16/bf16 reach this path through flex's cast to f32); anything else runs flex's kernel.
#include <atomic>
#include <cstring>

#include "ember/backends/cpu/cpu.h"
#include "ember/backends/cpu/dnnl_runtime.h"
#include "ember/error.h"

namespace ember::cpu {
namespace {

using namespace onednn;
constexpr int kMaxNd = DNNL_MAX_NDIMS;

// One operand as oneDNN sees it: dims right-aligned to the problem's rank, strides in elements.
struct Operand {
  int nd = 0;
  int64_t dims[kMaxNd]{}, strides[kMaxNd]{};
  const void* data = nullptr;
  std::span<const int64_t> d() const { return {dims, size_t(nd)}; }
  std::span<const int64_t> s() const { return {strides, size_t(nd)}; }
  dnnl_memory_desc_t md() const { return plain_md(d(), s(), dnnl_f32); }
};

// `t` viewed at rank nd (nd >= t.dim()): missing dims, and dims that broadcast (size 1 or stride
// 0, unless `keep_matrix` and it is one of the last two) become size-1 dims.
Operand operand(const Tensor& t, int nd, bool keep_matrix) {
  Operand o;
  o.nd = nd;
  o.data = t.raw_data();
  const int off = nd - int(t.dim());
  for (int i = 0; i < nd; ++i) {
    o.dims[i] = 1;
    if (i < off) continue;
    const int64_t sz = t.size(i - off), st = t.stride(i - off);
    const bool matrix = keep_matrix && i >= nd - 2;
    if (sz != 1 && (st != 0 || matrix)) o.dims[i] = sz, o.strides[i] = st;
  }
  return o;
}

// True when oneDNN's GEMM reads the operand's matrix in place: row- or column-major, the leading
// dim covering the other extent.
bool gemm_layout(const Operand& o) {
  int64_t s[kMaxNd];
  std::copy(o.strides, o.strides + o.nd, s);
  canonical_strides(o.d(), std::span<int64_t>(s, size_t(o.nd)));
  const int64_t r = o.dims[o.nd - 2], c = o.dims[o.nd - 1], sr = s[o.nd - 2], sc = s[o.nd - 1];
  for (int i = 0; i < o.nd; ++i)
    if (s[i] < 0 || (o.dims[i] > 1 && s[i] == 0)) return false;
  return (sc == 1 && sr >= c) || (sr == 1 && sc >= r);
}

// Dims [lo, hi) of `o` merged into one when their strides allow a single stride (size-1 dims
// are skipped); false when they do not.
bool merge_dims(Operand& o, int lo, int hi) {
  int64_t size = 1, stride = 0;
  bool any = false;
  for (int i = hi - 1; i >= lo; --i) {
    if (o.dims[i] == 1) continue;
    if (!any)
      stride = o.strides[i], any = true;
    else if (o.strides[i] != stride * size)
      return false;
    size *= o.dims[i];
  }
  o.dims[lo] = size;
  o.strides[lo] = any ? stride : 1;
  for (int i = hi; i < o.nd; ++i)
    o.dims[lo + 1 + i - hi] = o.dims[i], o.strides[lo + 1 + i - hi] = o.strides[i];
  o.nd -= hi - lo - 1;
  return true;
}

// dst[batch..., M, N] = epilogue(src[batch..., M, K] @ wei[batch..., K, N]); dst is contiguous.
struct Problem {
  Operand src, wei, dst, bias, res;
  bool has_bias = false, has_res = false;
  Epilogue ep;
  // Bias as oneDNN's bias argument (it must be [1, ..., N]; with binary post-ops or an output
  // scale oneDNN's GEMM takes it only as a post-op).
  bool native_bias() const {
    if (!has_bias || has_res || ep.scale != 1.f) return false;
    for (int i = 0; i < bias.nd - 1; ++i)
      if (bias.dims[i] != 1) return false;
    return true;
  }
};

// Folds the batch dims into the rows when only src has them (x @ W): one GEMM instead of many.
void fold_rows(Problem& p) {
  const int nd = p.dst.nd;
  if (nd <= 2) return;
  for (int i = 0; i < nd - 2; ++i)
    if (p.wei.dims[i] != 1) return;
  Problem q = p;
  if (!merge_dims(q.src, 0, nd - 1) || !merge_dims(q.dst, 0, nd - 1)) return;
  // An epilogue tensor folds when it is full or broadcast along all of the merged dims.
  auto folds = [&](Operand& o) {
    return merge_dims(o, 0, nd - 1) && (o.dims[0] == 1 || o.dims[0] == q.dst.dims[0]);
  };
  if (q.has_res && !folds(q.res)) return;
  if (q.has_bias && !folds(q.bias)) return;
  q.wei.nd = 2;  // its batch dims are all 1: keep [K, N]
  for (int i = 0; i < 2; ++i)
    q.wei.dims[i] = p.wei.dims[nd - 2 + i], q.wei.strides[i] = p.wei.strides[nd - 2 + i];
  p = q;
}

struct MatmulEntry : Entry {
  Primitive prim;
  dnnl_memory_desc_t src, wei, dst, bias, res;
  int bias_po = -1, res_po = -1;  // post-op index of the bias / residual add, if any
  bool native_bias = false;
  size_t scratch = 0;
};

EntryPtr build(const Problem& p) {
  auto e = std::make_shared<MatmulEntry>();
  e->src = p.src.md(), e->wei = p.wei.md(), e->dst = p.dst.md();
  e->native_bias = p.native_bias();
  if (p.has_bias) e->bias = p.bias.md();
  if (p.has_res) e->res = p.res.md();
  dnnl_matmul_desc_t d;
  if (dnnl_matmul_desc_init(&d, &e->src, &e->wei, e->native_bias ? &e->bias : nullptr, &e->dst) !=
      dnnl_success)
    return e;
  Attr attr = new_attr();
  PostOps po;
  check(dnnl_post_ops_create(po.out()), "matmul", "post-ops");
  if (p.ep.scale != 1.f)
    check(dnnl_primitive_attr_set_output_scales(attr.get(), 1, 0, &p.ep.scale), "matmul", "scale");
  int n = 0;
  if (p.has_bias && !e->native_bias) {
    check(dnnl_post_ops_append_binary(po.get(), dnnl_binary_add, &e->bias), "matmul", "bias");
    e->bias_po = n++;
  }
  auto residual = [&] {
    check(dnnl_post_ops_append_binary(po.get(), dnnl_binary_add, &e->res), "matmul", "residual");
    e->res_po = n++;
  };
  if (p.has_res && p.ep.residual_first) residual();
  if (p.ep.act != Activation::None) append_activation(po.get(), p.ep), ++n;
  if (p.has_res && !p.ep.residual_first) residual();
  check(dnnl_primitive_attr_set_post_ops(attr.get(), po.get()), "matmul", "post-ops");
  PrimitiveDesc pd;
  if (dnnl_primitive_desc_create(pd.out(), &d, attr.get(), engine(), nullptr) != dnnl_success)
    return e;
  e->ok = make_primitive(pd, e->prim);
  e->scratch = scratch_size(pd);
  return e;
}

Key key_of(const Problem& p) {
  Key k;
  k.add(1);  // matmul
  for (const Operand* o : {&p.src, &p.wei, &p.dst}) k.add(o->d()), k.add(o->s());
  k.add(p.has_bias);
  if (p.has_bias) k.add(p.bias.d()), k.add(p.bias.s());
  if (p.has_res) k.add(p.res.d()), k.add(p.res.s());
  k.add_epilogue(p.ep);
  return k;
}

const MatmulEntry* entry_for(const Problem& p, EntryPtr& hold) {
  hold = lookup(key_of(p), [&] { return build(p); });
  return hold && hold->ok ? static_cast<const MatmulEntry*>(hold.get()) : nullptr;
}

void run(const MatmulEntry& e, const Problem& p) {
  Arg args[6];
  int n = 0;
  args[n++] = {DNNL_ARG_SRC, &e.src, p.src.data};
  args[n++] = {DNNL_ARG_WEIGHTS, &e.wei, p.wei.data};
  args[n++] = {DNNL_ARG_DST, &e.dst, p.dst.data};
  if (e.native_bias) args[n++] = {DNNL_ARG_BIAS, &e.bias, p.bias.data};
  if (e.bias_po >= 0)
    args[n++] = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(e.bias_po) | DNNL_ARG_SRC_1, &e.bias, p.bias.data};
  if (e.res_po >= 0)
    args[n++] = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(e.res_po) | DNNL_ARG_SRC_1, &e.res, p.res.data};
  execute(e.prim, std::span<const Arg>(args, size_t(n)), e.scratch);
}

// What a call looks like before the problem is built: operands with torch.matmul's 1-D rules
// applied, and the output shape.
struct Call {
  Tensor a, b;  // rank >= 2 (a 1-D operand gets its unit dim)
  bool a_vec = false, b_vec = false;
  bool b_is_wt = false;  // b is linear's weight: the product uses its transpose
  Tensor bias;
  Shape out;  // the op's output shape
};

bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() > to.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t a = s[s.size() - 1 - i], b = to[to.size() - 1 - i];
    if (a != 1 && a != b) return false;
  }
  return true;
}

// The static checks: dtypes, ranks, sizes, the epilogue's tensors.
bool servable(const Call& c, const Epilogue& ep) {
  if (c.a.dtype() != DType::F32 || c.b.dtype() != DType::F32) return false;
  for (const Tensor* t : {&c.bias, &ep.residual})
    if (t->defined() && (t->dtype() != DType::F32 || !broadcasts_to(t->shape(), c.out)))
      return false;
  const int64_t nd = std::max(c.a.dim(), c.b.dim());
  if (nd > kMaxNd) return false;
  for (int64_t s : c.out)
    if (s == 0) return false;  // empty outputs and K = 0 are flex's (nothing to gain)
  return c.a.size(-1) != 0;
}

// The problem's geometry and inputs. A matrix oneDNN cannot read in place is copied into `keep`
// when `keep` is given, else only its copy's geometry is described (for queries).
Problem problem(const Call& c, const Epilogue& ep, Tensor* keep) {
  const int nd = int(std::max(c.a.dim(), c.b.dim()));
  Problem p;
  p.ep = ep;
  auto matrix = [&](const Tensor& t, Tensor* copy) {
    Operand o = operand(t, nd, true);
    if (gemm_layout(o)) return o;
    if (copy) {
      note_operand_copy();
      return operand(*copy = t.contiguous(), nd, true);
    }
    const Shape cs = contiguous_strides(t.shape());
    return operand(ember::detail::make_view(t, t.shape(), cs, t.offset()), nd, true);
  };
  p.src = matrix(c.a, keep ? &keep[0] : nullptr);
  p.wei = matrix(c.b_is_wt ? c.b.transpose(-1, -2) : c.b, keep ? &keep[1] : nullptr);
  // The output and the epilogue's tensors in the problem's shape (a 1-D operand's unit dim
  // put back); the output is contiguous.
  Shape full = c.out;
  if (c.b_vec) full.push_back(1);
  if (c.a_vec) full.insert(full.size() - 1, 1);
  p.dst.nd = nd;
  for (int64_t i = nd - 1, st = 1; i >= 0; --i) {
    const int64_t j = i - (nd - int64_t(full.size()));
    p.dst.dims[i] = j >= 0 ? full[size_t(j)] : 1;
    p.dst.strides[i] = st;
    st *= p.dst.dims[i];
  }
  auto epilogue_tensor = [&](const Tensor& t) {
    Tensor e = t.expand(c.out);
    if (c.b_vec) e = e.unsqueeze(-1);
    if (c.a_vec) e = e.unsqueeze(-2);
    return operand(e, nd, false);
  };
  if (c.bias.defined()) p.has_bias = true, p.bias = epilogue_tensor(c.bias);
  if (ep.residual.defined()) p.has_res = true, p.res = epilogue_tensor(ep.residual);
  fold_rows(p);
  return p;
}

Call matmul_call(const Tensor& a, const Tensor& b, Shape out) {
  Call c;
  c.a_vec = a.dim() == 1, c.b_vec = b.dim() == 1;
  c.a = c.a_vec ? a.unsqueeze(0) : a;
  c.b = c.b_vec ? b.unsqueeze(1) : b;
  c.out = std::move(out);
  return c;
}

Call linear_call(const Tensor& x, const Tensor& w, const Tensor& bias, Shape out) {
  Call c;
  c.a_vec = x.dim() == 1, c.b_vec = w.dim() == 1;
  c.a = c.a_vec ? x.unsqueeze(0) : x;
  c.b = c.b_vec ? w.unsqueeze(0) : w;  // [out, in]: the product takes its transpose
  c.b_is_wt = true;
  c.bias = bias;
  c.out = std::move(out);
  return c;
}

// One piece of a call for one thread: dims [start, start + len) of `dim` of the operands that
// have it (broadcast operands keep theirs).
void narrow(Operand& o, int dim, int64_t start, int64_t len) {
  if (dim < 0 || o.dims[dim] == 1) return;
  // An absent operand (no bias, no residual) has no data to offset (null + offset is UB).
  if (o.data)
    o.data = static_cast<const char*>(o.data) + start * o.strides[dim] * int64_t(sizeof(float));
  o.dims[dim] = len;
}

// How a call splits over the threads: along the batch (dim 0), the rows or the columns of the
// output, in pieces of `per` (the last may be shorter); count 1 runs it whole.
struct Split {
  int axis = -1;  // 0 batch, 1 rows, 2 columns
  int64_t per = 0, count = 1, size = 0;
};

Split split_of(const Problem& p, int64_t threads) {
  const int nd = p.dst.nd;
  const int64_t m = p.dst.dims[nd - 2], n = p.dst.dims[nd - 1], k = p.src.dims[nd - 1];
  double flops = 2.0 * double(m) * double(n) * double(k);
  for (int i = 0; i < nd - 2; ++i) flops *= double(p.dst.dims[i]);
  Split s;
  // Below ~2 MFLOP (tens of microseconds) handing pieces to the pool costs more than it saves.
  if (threads <= 1 || flops < double(1 << 21)) return s;
  auto pieces = [&](int axis, int64_t size, int64_t align) {
    s.axis = axis, s.size = size;
    s.per = (size + threads - 1) / threads;
    s.per = (s.per + align - 1) / align * align;
    s.count = (size + s.per - 1) / s.per;
  };
  if (nd > 2 && p.dst.dims[0] >= threads)
    pieces(0, p.dst.dims[0], 1);
  else if (m >= n && m >= 16)
    pieces(1, m, 8);
  else if (n >= 32)
    pieces(2, n, 16);
  else if (m >= 16)
    pieces(1, m, 8);
  return s;
}

Problem piece(const Problem& p, const Split& s, int64_t i) {
  if (s.count <= 1) return p;
  Problem q = p;
  const int nd = p.dst.nd;
  const int64_t start = i * s.per, len = std::min(s.per, s.size - start);
  const int row = nd - 2, col = nd - 1;
  const int src_dim = s.axis == 0 ? 0 : s.axis == 1 ? row : -1;
  const int wei_dim = s.axis == 0 ? 0 : s.axis == 2 ? col : -1;
  const int out_dim = s.axis == 0 ? 0 : s.axis == 1 ? row : col;
  narrow(q.src, src_dim, start, len);
  narrow(q.wei, wei_dim, start, len);
  narrow(q.dst, out_dim, start, len);
  if (q.has_bias) narrow(q.bias, out_dim, start, len);
  if (q.has_res) narrow(q.res, out_dim, start, len);
  return q;
}

// Runs the call into `placed` (or a fresh output), or returns an undefined tensor when oneDNN
// cannot serve it.
// The pieces run on ember's pool, each a single-threaded oneDNN call (at most two shapes, so at
// most two primitives).
Tensor try_run(const Call& c, const Epilogue& ep, Device device, const Tensor& placed,
               const char* op) {
  if (!servable(c, ep)) return {};
  Tensor keep[2];
  Problem p = problem(c, ep, keep);
  const Split s = split_of(p, workers());
  EntryPtr hold[2];
  const MatmulEntry* e[2] = {entry_for(piece(p, s, 0), hold[0]), nullptr};
  if (!e[0]) return {};
  const bool ragged = s.count > 1 && s.size % s.per != 0;
  e[1] = ragged ? entry_for(piece(p, s, s.count - 1), hold[1]) : e[0];
  if (!e[1]) return {};
  Tensor out = output_tensor(placed, c.out, device, op);
  p.dst.data = out.raw_data();
  for_each_piece(s.count, [&](int64_t i) { run(*e[i == s.count - 1 ? 1 : 0], piece(p, s, i)); });
  note_served();
  return out;
}

bool can_run(const Call& c, const Epilogue& ep) {
  if (!servable(c, ep)) return false;
  const Problem p = problem(c, ep, nullptr);
  const Split s = split_of(p, workers());
  EntryPtr hold;
  return entry_for(piece(p, s, 0), hold) && entry_for(piece(p, s, s.count - 1), hold);
}

// The op's output shape from its inference (which also validates the call).
Shape out_shape(OpId op, std::span<const Tensor> in) {
  MetaList meta;
  op_def(op).infer(op, Attrs{}, in, meta);
  return meta.m[0].shape;
}

}  // namespace

namespace {

// A weight gradient of a small step, a^T @ g with a short inner dim (an RNN's per-step
// h^T @ dgates: [128, 32] @ [32, 512]): flex's packed GEMM runs it 15-40% faster than oneDNN
// on AVX2 (72-80 against 56-63 GFLOP/s at one thread); oneDNN loses on the transposed left
// operand; larger outputs stay with oneDNN, which wins there. set_skinny_rows(0) turns this
// off too (tests that pin oneDNN's paths).
bool small_transposed_product(const OpCall& c) {
  if (skinny_rows() <= 0) return false;
  const Tensor& a = c.inputs[0];
  if (a.dim() != 2 || c.inputs[1].dim() != 2 || a.size(0) <= 1 || a.stride(0) != 1) return false;
  const Shape& out = c.meta.m[0].shape;
  return a.size(1) <= 128 && numel_of(out) <= (int64_t(1) << 18);
}

TensorList k_matmul(const OpCall& c) {
  // Products of a few rows (small-batch inference): flex's unpacked skinny kernels beat oneDNN's.
  if (skinny_product(c.meta.m[0].shape) || small_transposed_product(c)) return flex_kernel(c.op)(c);
  Tensor r = try_run(matmul_call(c.inputs[0], c.inputs[1], c.meta.m[0].shape), {}, c.device,
                     placed_output(c), op_name(c.op));
  if (r.defined()) return {r};
  return flex_kernel(c.op)(c);
}

TensorList k_linear(const OpCall& c) {
  if (skinny_product(c.meta.m[0].shape)) return flex_kernel(c.op)(c);
  const Call call = linear_call(c.inputs[0], c.inputs[1], c.inputs[2], c.meta.m[0].shape);
  Tensor r = try_run(call, {}, c.device, placed_output(c), "linear");
  if (r.defined()) return {r};
  return flex_kernel(c.op)(c);
}

}  // namespace

bool can_matmul(const Tensor& a, const Tensor& b, const Epilogue& ep) {
  const Tensor in[2] = {a, b};
  return can_run(matmul_call(a, b, out_shape(OpId::matmul, in)), ep);
}

Tensor matmul(const Tensor& a, const Tensor& b, const Epilogue& ep, const Tensor& out) {
  const Tensor in[2] = {a, b};
  Tensor r = try_run(matmul_call(a, b, out_shape(OpId::matmul, in)), ep, a.device(), out, "matmul");
  if (!r.defined()) throw Error("[matmul] oneDNN cannot serve this call (ask can_matmul first)");
  return r;
}

bool can_linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Epilogue& ep) {
  const Tensor in[3] = {x, w, bias};
  return can_run(linear_call(x, w, bias, out_shape(OpId::linear, in)), ep);
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Epilogue& ep,
              const Tensor& out) {
  const Tensor in[3] = {x, w, bias};
  Tensor r =
      try_run(linear_call(x, w, bias, out_shape(OpId::linear, in)), ep, x.device(), out, "linear");
  if (!r.defined()) throw Error("[linear] oneDNN cannot serve this call (ask can_linear first)");
  return r;
}

void register_dnnl_matmul(BackendImpl& b) {
  for (OpId op : {OpId::mm, OpId::bmm, OpId::matmul}) override_kernel(b, op, k_matmul);
  override_kernel(b, OpId::linear, k_linear);
}

}  // namespace ember::cpu
