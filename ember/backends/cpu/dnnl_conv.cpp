// oneDNN kernels for conv1d/2d/3d and conv_transpose1d/2d, and the conv entry points of
// dnnl_ops.h. oneDNN's direct convolutions want blocked layouts (nChw8c on AVX2, nChw16c on
// AVX-512), so the input is reordered in (from its own strides: a non-contiguous input costs no
// extra copy), the weights likewise, and the result reordered out into a contiguous tensor. The
// batch runs in chunks small enough that a chunk's blocked copies stay in cache, so the reorders
// cost little next to the convolution. An input or a placed output in the dense channels-last
// layout (NHWC strides under the NCHW shape) is given to the primitive as it is: oneDNN's direct
// kernels read and write that layout, and the fusion layer keeps the values that pass from one
// convolution to the next in it (fusion/plan.cpp), so those need no reorder at all. f32 only;
// anything else runs flex's kernel.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ember/backends/cpu/cpu.h"
#include "ember/backends/cpu/dnnl_runtime.h"
#include "ember/error.h"
#include "ember/ops/conv.h"
#include "ember/tensor_impl.h"

namespace ember::cpu {
namespace {

using namespace onednn;
using Geo = ops::ConvGeometry;

bool transposed_op(OpId op) { return op == OpId::conv_transpose1d || op == OpId::conv_transpose2d; }

// EMBER_DNNL_PLAIN_1X1=0 runs 1x1 convolutions on blocked layouts too (see pointwise()).
bool plain_layers() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_DNNL_PLAIN_1X1");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

// EMBER_DNNL_WINOGRAD=0 runs frozen weights' 3x3 convolutions directly too (see winograd()).
bool winograd_on() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_DNNL_WINOGRAD");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

// One convolution of `n` images as the primitive sees it (the key, and what build() needs).
struct Problem {
  bool transposed = false;
  int nsp = 2;
  int64_t n = 1;  // images in one chunk
  Geo g;
  int64_t pad_r[3]{};  // oneDNN's trailing padding (may be negative)
  int64_t x_strides[5]{}, w_dims[6]{}, w_strides[6]{}, res_strides[5]{}, out_strides[5]{};
  int w_nd = 4;
  bool has_bias = false, has_res = false;
  bool plain = false;  // src and dst in their own (NCHW) layouts: see pointwise()
  bool last = true;    // a channels-last src or dst is the primitive's own (else: any layout)
  bool wino = false;   // Winograd's algorithm: see winograd()
  Epilogue ep;
  int nd() const { return nsp + 2; }
  std::span<const int64_t> sp(const Geo::Dims& d) const {
    return {d.data() + (3 - nsp), size_t(nsp)};
  }
  void dims(int64_t* d, bool out) const {  // [n, C, spatial...]
    d[0] = n;
    d[1] = out ? g.c_out : g.c_in;
    for (int i = 0; i < nsp; ++i) d[2 + i] = (out ? g.out : g.in)[size_t(3 - nsp + i)];
  }
};

struct ConvEntry : Entry {
  Primitive conv, src_in, wei_in, dst_out, res_in;  // reorders are null when not needed
  // src_in as two halves of the rows, for two threads to share (one image, 2-d only).
  Primitive src_half[2];
  dnnl_memory_desc_t x_half[2], src_half_md[2];
  dnnl_memory_desc_t x, src, w, wei, bias, dst, out, res;
  size_t scratch = 0;
  size_t res_bytes = 0;  // a residual in the destination's own layout: copied, not reordered
};

dnnl_memory_desc_t md_of(const int64_t* d, const int64_t* s, int nd) {
  return plain_md({d, size_t(nd)}, {s, size_t(nd)}, dnnl_f32);
}

// Replaces `md` by the dense descriptor of `dims` in the layout `tag` when it describes the same
// layout.
bool same_as_tag(dnnl_memory_desc_t& md, const int64_t* dims, int nd, dnnl_format_tag_t tag) {
  dnnl_dims_t d{};
  for (int i = 0; i < nd; ++i) d[i] = dims[i];
  dnnl_memory_desc_t t;
  check(dnnl_memory_desc_init_by_tag(&t, nd, d, dnnl_f32, tag), "conv", "memory descriptor");
  if (!dnnl_memory_desc_equal(&t, &md)) return false;
  md = t;
  return true;
}

// The same, for the dense row-major layout (ncw, nchw, ncdhw).
bool plain_tag(dnnl_memory_desc_t& md, const int64_t* dims, int nd) {
  return same_as_tag(md, dims, nd, nd == 3 ? dnnl_abc : nd == 4 ? dnnl_abcd : dnnl_abcde);
}

// The same, for the dense channels-last layout (nwc, nhwc, ndhwc).
bool last_tag(dnnl_memory_desc_t& md, const int64_t* dims, int nd) {
  return same_as_tag(md, dims, nd, nd == 3 ? dnnl_acb : nd == 4 ? dnnl_acdb : dnnl_acdeb);
}

EntryPtr build(const Problem& p) {
  auto e = std::make_shared<ConvEntry>();
  const int nd = p.nd();
  int64_t xd[5], od[5];
  p.dims(xd, false);
  p.dims(od, true);
  e->x = md_of(xd, p.x_strides, nd);
  e->out = md_of(od, p.out_strides, nd);
  e->w = md_of(p.w_dims, p.w_strides, p.w_nd);
  if (p.has_res) e->res = md_of(od, p.res_strides, nd);
  // The plain layouts by their tag (ncw, nchw, ncdhw): oneDNN's GEMM convolution matches the
  // tag exactly, and the canonical strides of a batch of one differ from its.
  const bool plain = p.plain && !p.has_res && plain_tag(e->x, xd, nd) && plain_tag(e->out, od, nd);
  // A channels-last operand is the primitive's layout, so that it needs no reorder.
  const bool x_last = !plain && !p.wino && p.last && last_tag(e->x, xd, nd);
  const bool out_last = !plain && !p.wino && p.last && last_tag(e->out, od, nd);
  dnnl_memory_desc_t src = plain || x_last ? e->x : any_md({xd, size_t(nd)}, dnnl_f32);
  dnnl_memory_desc_t dst = plain || out_last ? e->out : any_md({od, size_t(nd)}, dnnl_f32);
  dnnl_memory_desc_t wei = any_md({p.w_dims, size_t(p.w_nd)}, dnnl_f32);
  const int64_t c_bias = p.g.c_out, unit = 1;
  if (p.has_bias) e->bias = plain_md({&c_bias, 1}, {&unit, 1}, dnnl_f32);
  dnnl_dims_t stride{}, dil{}, pl{}, pr{};
  for (int i = 0; i < p.nsp; ++i) {
    const size_t j = size_t(3 - p.nsp + i);
    stride[i] = p.g.stride[j], dil[i] = p.g.dilation[j] - 1, pl[i] = p.g.pad[j];
    pr[i] = p.pad_r[j];
  }
  const dnnl_memory_desc_t* bias = p.has_bias ? &e->bias : nullptr;
  dnnl_convolution_desc_t d;  // the deconvolution descriptor is the same type
  const dnnl_status_t st = p.transposed
                               ? dnnl_dilated_deconvolution_forward_desc_init(
                                     &d, dnnl_forward_inference, dnnl_deconvolution_direct, &src,
                                     &wei, bias, &dst, stride, dil, pl, pr)
                               : dnnl_dilated_convolution_forward_desc_init(
                                     &d, dnnl_forward_inference,
                                     p.wino ? dnnl_convolution_winograd : dnnl_convolution_direct,
                                     &src, &wei, bias, &dst, stride, dil, pl, pr);
  if (st != dnnl_success && (x_last || out_last || p.wino)) {
    Problem q = p;  // directly, on the layouts oneDNN picks, reordered
    q.last = p.wino;
    q.wino = false;
    return build(q);
  }
  if (st != dnnl_success) return e;
  Attr attr = new_attr();
  PostOps po;
  check(dnnl_post_ops_create(po.out()), "conv", "post-ops");
  // The residual is summed into the destination (prefilled with it): oneDNN's direct kernels
  // take a sum only as the first post-op, so an activation comes after it.
  if (p.has_res) check(dnnl_post_ops_append_sum(po.get(), 1.f), "conv", "residual");
  append_activation(po.get(), p.ep);
  check(dnnl_primitive_attr_set_post_ops(attr.get(), po.get()), "conv", "post-ops");
  PrimitiveDesc pd;
  if (dnnl_primitive_desc_create(pd.out(), &d, attr.get(), engine(), nullptr) != dnnl_success ||
      is_reference(pd)) {
    if (!plain && !x_last && !out_last && !p.wino) return e;
    Problem q = p;  // no implementation on these layouts: the ones oneDNN picks, reordered
    q.plain = false;
    q.last = p.wino;  // no Winograd kernel: the direct ones, channels-last
    q.wino = false;
    return build(q);
  }
  e->src = query_md(pd, dnnl_query_src_md);
  e->wei = query_md(pd, dnnl_query_weights_md);
  e->dst = query_md(pd, dnnl_query_dst_md);
  if (!make_primitive(pd, e->conv)) return e;
  e->scratch = scratch_size(pd);
  e->src_in = make_reorder(e->x, e->src);
  if (e->src_in && p.nsp == 2 && p.n == 1 && xd[2] >= 2) {
    for (int k = 0; k < 2; ++k) {
      const int64_t h0 = k * (xd[2] / 2), h1 = k ? xd[2] : xd[2] / 2;
      const dnnl_dims_t dims = {1, xd[1], h1 - h0, xd[3]}, off = {0, 0, h0, 0};
      if (dnnl_memory_desc_init_submemory(&e->x_half[k], &e->x, dims, off) != dnnl_success ||
          dnnl_memory_desc_init_submemory(&e->src_half_md[k], &e->src, dims, off) != dnnl_success) {
        e->src_half[0].reset();
        break;
      }
      e->src_half[k] = make_reorder(e->x_half[k], e->src_half_md[k], /*even_if_equal=*/true);
    }
  }
  e->wei_in = make_reorder(e->w, e->wei);
  e->dst_out = make_reorder(e->dst, e->out);
  // oneDNN's reorder between equal layouts is a generic loop (a few GB/s), slower than a copy.
  if (p.has_res && dnnl_memory_desc_equal(&e->res, &e->dst))
    e->res_bytes = dnnl_memory_desc_get_size(&e->dst);
  else if (p.has_res)
    e->res_in = make_reorder(e->res, e->dst, /*even_if_equal=*/true);
  e->ok = true;
  return e;
}

Key key_of(const Problem& p) {
  Key k;
  k.add(p.transposed ? 3 : 2);
  k.add(p.nsp);
  k.add(p.n), k.add(p.g.c_in), k.add(p.g.c_out), k.add(p.g.groups);
  for (const Geo::Dims* d : {&p.g.in, &p.g.out, &p.g.kernel, &p.g.stride, &p.g.pad, &p.g.dilation})
    k.add(p.sp(*d));
  for (int i = 0; i < 3; ++i) k.add(p.pad_r[i]);
  k.add({p.x_strides, size_t(p.nd())});
  k.add({p.w_strides, size_t(p.w_nd)});
  k.add(p.has_bias);
  k.add({p.out_strides, size_t(p.nd())});
  k.add(p.plain);
  k.add(p.wino);
  if (p.has_res) k.add({p.res_strides, size_t(p.nd())});
  k.add_epilogue(p.ep);
  return k;
}

// Images per chunk: a chunk's input and output, blocked, fit in about `kChunkBytes`.
int64_t chunk_images(const Geo& g) {
  constexpr int64_t kChunkBytes = int64_t(4) << 20;
  const int64_t per_image = 4 * (g.c_in * g.in_numel() + g.c_out * g.out_numel());
  return std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(per_image, 1), 1, g.n);
}

// A 1x1 convolution with unit strides and no padding over images whose spatial dims are packed
// is a product, w[O, I] @ x[n][I, HW]: oneDNN's GEMM convolution runs it on the plain layouts,
// without the blocked copies of input and output around its direct kernels, which cost more
// than the product at batch 1 (MobileNetV2: half of oneDNN's time). Not with an activation:
// the GEMM convolution applies one in a slow loop of its own (5-10 GFLOP/s against its 70-120
// without, measured on MobileNetV2's expansions), so those keep the blocked kernels.
bool pointwise(OpId op, const Geo& g, const Tensor& x) {
  if (transposed_op(op) || g.groups != 1 || !plain_layers()) return false;
  for (int s = 3 - g.nsp; s < 3; ++s) {
    const size_t j = size_t(s);
    if (g.kernel[j] != 1 || g.stride[j] != 1 || g.pad[j] != 0) return false;
  }
  int64_t packed = 1;
  for (int64_t i = x.dim() - 1; i >= 2; --i) {
    if (x.size(i) != 1 && x.stride(i) != packed) return false;
    packed *= x.size(i);
  }
  return true;
}

// Winograd's F(2x2, 3x3) takes a 3x3 convolution in 2.25x fewer multiplications: oneDNN's
// kernel for it (AVX-512, blocked layouts, 16-channel multiples) ran ResNet-18's 3x3 layers at
// 56x56 and 28x28 1.4-1.6x faster than its direct ones (0.9 against 1.5 ms at one thread), and
// no faster at 14x14 or 7x7 (too few tiles), where the direct kernels keep channels-last and
// need no reorders. Its sums round differently (about 1e-6 relative), so it serves only frozen
// weights: a loaded model's inference, never a module being trained.
bool winograd(OpId op, const Geo& g, const Tensor& w) {
  if (transposed_op(op) || g.nsp != 2 || g.groups != 1 || g.c_in % 16 || g.c_out % 16) return false;
  if (g.out[1] * g.out[2] < 28 * 28) return false;
  for (size_t j = 1; j < 3; ++j)
    if (g.kernel[j] != 3 || g.stride[j] != 1 || g.dilation[j] != 1) return false;
  const auto& st = w.impl()->storage;
  return st && st->frozen && winograd_on();
}

// The call's problem for chunks of `n` images (`residual`, `x` and the output's strides `os`
// already batched).
Problem problem(OpId op, const Geo& g, const Tensor& x, const Tensor& w, bool bias,
                const Epilogue& ep, const Tensor& residual, const int64_t* os, bool wino,
                int64_t n) {
  Problem p;
  p.transposed = transposed_op(op);
  p.nsp = g.nsp;
  p.n = n;
  p.g = g;
  p.has_bias = bias;
  p.ep = ep;
  p.plain = ep.act == Activation::None && pointwise(op, g, x);
  p.wino = wino;
  for (int s = 3 - g.nsp; s < 3; ++s) {
    const size_t j = size_t(s);
    const int64_t span = (g.kernel[j] - 1) * g.dilation[j] + 1;
    p.pad_r[j] = p.transposed ? (g.in[j] - 1) * g.stride[j] - g.pad[j] + span - g.out[j]
                              : (g.out[j] - 1) * g.stride[j] + span - g.in[j] - g.pad[j];
  }
  for (int i = 0; i < p.nd(); ++i) p.x_strides[i] = x.stride(i), p.out_strides[i] = os[i];
  // Weights: conv [O, I/G, k...], conv_transpose [I, O/G, k...]; oneDNN wants [G, O/G, I/G, k...]
  // (groups) or [O, I, k...].
  const int64_t G = g.groups, s0 = w.stride(0), s1 = w.stride(1);
  const int64_t og = g.c_out / G, ig = g.c_in / G;
  int at = 0;
  if (G > 1) {
    p.w_dims[at] = G;
    p.w_strides[at++] = p.transposed ? ig * s0 : og * s0;
  }
  p.w_dims[at] = og, p.w_strides[at++] = p.transposed ? s1 : s0;
  p.w_dims[at] = ig, p.w_strides[at++] = p.transposed ? s0 : s1;
  for (int i = 2; i < w.dim(); ++i) p.w_dims[at] = w.size(i), p.w_strides[at++] = w.stride(i);
  p.w_nd = at;
  if (residual.defined()) {
    p.has_res = true;
    for (int i = 0; i < p.nd(); ++i) p.res_strides[i] = residual.stride(i);
  }
  return p;
}

const ConvEntry* entry_for(const Problem& p, EntryPtr& hold) {
  hold = lookup(key_of(p), [&] { return build(p); });
  return hold && hold->ok ? static_cast<const ConvEntry*>(hold.get()) : nullptr;
}

// Strides oneDNN's descriptors take: positive where the dim has more than one element.
bool plain_strides(const Tensor& t) {
  for (int64_t i = 0; i < t.dim(); ++i)
    if (t.size(i) > 1 && t.stride(i) <= 0) return false;
  return true;
}

bool servable(const Geo& g, const Tensor& x, const Tensor& w, const Tensor& bias,
              const Epilogue& ep, const Shape& out) {
  if (x.dtype() != DType::F32 || ep.scale != 1.f || g.n == 0) return false;
  for (const Tensor* t : {&x, &w, &bias, &ep.residual})
    if (t->defined() && !plain_strides(*t)) return false;
  if (ep.residual.defined() && (ep.residual.dtype() != DType::F32 || ep.residual.shape() != out))
    return false;
  // A sum post-op must come first in oneDNN's direct kernels: act-then-add is not one primitive.
  if (ep.residual.defined() && ep.act != Activation::None && !ep.residual_first) return false;
  return true;
}

struct Prepared {
  Geo g;
  Shape out;
  Tensor x, res;      // batched
  int64_t os[5]{};    // the output's strides, batched: placed, else contiguous
  bool rows = false;  // a batch of one may split by rows (input and output channels-last)
  bool wino = false;  // Winograd's algorithm, where oneDNN has it (winograd())
};

// A placed output the convolution writes as it is: contiguous, or channels-last.
bool placeable(const Tensor& placed, const Shape& shape) {
  return placed.shape() == shape && placed.dtype() == DType::F32 &&
         (placed.is_contiguous() || ops::channels_last(placed));
}

Prepared prepare(OpId op, const Attrs& attrs, const Tensor& x, const Tensor& w, const Tensor& bias,
                 const Epilogue& ep, const Tensor& placed) {
  const Tensor in[3] = {x, w, bias};
  Prepared r;
  r.g = ops::conv_geometry(op, attrs, in);
  r.out = ops::conv_output_shape(op, r.g);
  r.x = r.g.batched ? x : x.unsqueeze(0);
  if (ep.residual.defined()) r.res = r.g.batched ? ep.residual : ep.residual.unsqueeze(0);
  const bool last_out = placed.defined() && placeable(placed, r.out) && !placed.is_contiguous();
  const Tensor ob = !last_out ? Tensor() : r.g.batched ? placed : placed.unsqueeze(0);
  const int nd = r.g.nsp + 2;
  for (int64_t i = nd - 1, st = 1; i >= 0; --i) {
    const int64_t size = i == 0 ? r.g.n : i == 1 ? r.g.c_out : r.g.out[size_t(i + 1 - r.g.nsp)];
    r.os[i] = last_out ? ob.stride(i) : st;
    st *= size;
  }
  r.rows = last_out && !transposed_op(op) && ops::channels_last(r.x);
  // Only into a channels-last output: into NCHW memory over two threads, the Winograd path gave
  // wrong values (ConvLayout.FrozenWeightsThroughWinograd, 2 threads, NCHW; not yet understood).
  r.wino = last_out && winograd(op, r.g, w);
  return r;
}

// Element (image, channel, first-spatial-dim row) of a batched tensor whose first element is at
// `base`.
template <class C>
C* at(C* base, const Tensor& t, int64_t image, int64_t channel = 0, int64_t row = 0) {
  return base +
         (image * t.stride(0) + channel * t.stride(1) + row * t.stride(2)) * int64_t(sizeof(float));
}

// The geometry of output rows [r0, r1) of the first spatial dim (the input rows they read,
// with the padding that falls inside the piece); `in0` is the first input row. False when a
// piece would read no input row.
bool row_piece(Geo& g, int64_t r0, int64_t r1, int64_t& in0) {
  const size_t j = size_t(3 - g.nsp);
  const int64_t span = (g.kernel[j] - 1) * g.dilation[j] + 1;
  const int64_t s = r0 * g.stride[j] - g.pad[j], e = (r1 - 1) * g.stride[j] - g.pad[j] + span;
  in0 = std::max<int64_t>(s, 0);
  const int64_t in1 = std::min(e, g.in[j]);
  if (in1 <= in0) return false;
  g.out[j] = r1 - r0, g.in[j] = in1 - in0, g.pad[j] = in0 - s;
  return true;
}

// What every piece of one call shares. A piece is a range of images, of output channels and of
// output rows, run on one thread in chunks of `nb` images, each chunk a single-threaded oneDNN
// call.
struct Job {
  OpId op;
  const Prepared* pr;
  const Tensor *w, *bias;  // bias contiguous (or undefined)
  const Epilogue* ep;
  Tensor outb;  // the output, batched
  Device device;
  int64_t nb = 1;
  const ConvEntry* shared = nullptr;  // full-channel chunks: weights reordered once, up front
  const void* shared_wei = nullptr;
  const void* shared_src = nullptr;  // one image split by channels: its input, reordered once
  // The operands' first elements, read on the calling thread: inside a fused queue's run an
  // operand's storage may still be marked pending, and a pool thread asking for it would wait
  // on the queue that this call is part of.
  const char *x = nullptr, *wd = nullptr, *bd = nullptr, *res = nullptr;
  char* out = nullptr;
};

// Scratch for one blocked copy (ember's caching allocator keeps it between calls).
void* room(Tensor& buf, const dnnl_memory_desc_t& md, Device device) {
  const int64_t n = int64_t(dnnl_memory_desc_get_size(&md) / sizeof(float)) + 1;
  if (!buf.defined() || buf.numel() < n) buf = ember::detail::empty_tensor({n}, DType::F32, device);
  return buf.raw_data();
}

// Images [n0, n1), output channels [o0, o1), output rows [r0, r1) of the first spatial dim (all
// of them when r1 is 0); false when oneDNN refused a chunk's primitive.
bool run_piece(const Job& j, int64_t n0, int64_t n1, int64_t o0, int64_t o1, int64_t r0 = 0,
               int64_t r1 = 0) {
  Geo g = j.pr->g;
  int64_t in0 = 0;
  if (r1 > 0 && !row_piece(g, r0, r1, in0)) return false;
  const bool transposed = transposed_op(j.op);
  const bool sliced = o1 - o0 != g.c_out;
  // A slice of a grouped convolution is whole groups (plan_of): their input channels too.
  const int64_t og = g.c_out / g.groups, ig = g.c_in / g.groups, i0 = o0 / og * ig;
  if (sliced && g.groups > 1) g.groups = (o1 - o0) / og, g.c_in = g.groups * ig;
  g.c_out = o1 - o0;
  const char* w = j.wd + o0 * j.w->stride(transposed ? 1 : 0) * int64_t(sizeof(float));
  const char* bias = j.bd ? j.bd + o0 * 4 : nullptr;
  Tensor wbuf, sbuf, dbuf;
  std::shared_ptr<const void> packed;   // frozen weights: the cache's copy (else in wbuf)
  const ConvEntry* wei_held = nullptr;  // the entry whose layout the weights are held in
  for (int64_t n = n0; n < n1; n += j.nb) {
    const int64_t len = std::min(j.nb, n1 - n);
    EntryPtr hold;
    const ConvEntry* c = entry_for(problem(j.op, g, j.pr->x, *j.w, bias != nullptr, *j.ep,
                                           j.pr->res, j.pr->os, j.pr->wino, len),
                                   hold);
    if (!c) return false;
    const void* wp = w;
    if (c->wei_in) {
      if (!sliced && j.shared && dnnl_memory_desc_equal(&c->wei, &j.shared->wei)) {
        wp = j.shared_wei;
      } else {
        if (!wei_held || !dnnl_memory_desc_equal(&wei_held->wei, &c->wei)) {
          packed = packed_weights(*j.w, w, c->w, c->wei, c->wei_in);
          if (!packed)
            execute(c->wei_in, {{DNNL_ARG_FROM, &c->w, w},
                                {DNNL_ARG_TO, &c->wei, room(wbuf, c->wei, j.device)}});
          wei_held = c;
        }
        wp = packed ? packed.get() : wbuf.raw_data();
      }
    }
    const void* src = at(j.x, j.pr->x, n, g.groups == j.pr->g.groups ? 0 : i0, in0);
    if (c->src_in && j.shared_src && dnnl_memory_desc_equal(&c->src, &j.shared->src)) {
      src = j.shared_src;
    } else if (c->src_in) {
      void* to = room(sbuf, c->src, j.device);
      execute(c->src_in, {{DNNL_ARG_FROM, &c->x, src}, {DNNL_ARG_TO, &c->src, to}});
      note_activation_reorder();
      src = to;
    }
    void* out = at(j.out, j.outb, n, o0, r0);
    void* dst = c->dst_out ? room(dbuf, c->dst, j.device) : out;
    if (c->res_bytes)
      std::memcpy(dst, at(j.res, j.pr->res, n, o0, r0), c->res_bytes);
    else if (c->res_in)
      execute(c->res_in, {{DNNL_ARG_FROM, &c->res, at(j.res, j.pr->res, n, o0, r0)},
                          {DNNL_ARG_TO, &c->dst, dst}});
    if (bias)
      execute(c->conv,
              {{DNNL_ARG_SRC, &c->src, src},
               {DNNL_ARG_WEIGHTS, &c->wei, wp},
               {DNNL_ARG_BIAS, &c->bias, bias},
               {DNNL_ARG_DST, &c->dst, dst}},
              c->scratch);
    else
      execute(c->conv,
              {{DNNL_ARG_SRC, &c->src, src},
               {DNNL_ARG_WEIGHTS, &c->wei, wp},
               {DNNL_ARG_DST, &c->dst, dst}},
              c->scratch);
    if (c->dst_out) {
      execute(c->dst_out, {{DNNL_ARG_FROM, &c->dst, dst}, {DNNL_ARG_TO, &c->out, out}});
      note_activation_reorder();
    }
  }
  return true;
}

// How a call splits over ember's pool: by images, or, for fewer images than threads, by output
// rows or by output channels (in multiples of 16, oneDNN's widest channel block; whole groups of
// a grouped convolution, such as a depthwise one); chunks of nb images each. Rows only into a
// channels-last output: a band of its rows is itself dense channels-last (so the primitive
// writes it in place, and, from a channels-last input, reads its input rows in place), where a
// band of its channels is not.
struct Plan {
  int64_t images = 1, channels = 1, rows = 1, per_c = 0, per_r = 0, nb = 1;
  Geo first;  // the geometry of the first piece (its channels and rows)
};

Plan plan_of(OpId op, const Geo& g, bool rows_ok) {
  Plan p;
  const int64_t threads = workers();
  const double flops = 2.0 * double(g.n) * double(g.c_out) * double(g.c_in / g.groups) *
                       double(g.kernel_numel()) *
                       double(transposed_op(op) ? g.in_numel() : g.out_numel());
  const int64_t oh = g.out[size_t(3 - g.nsp)];
  // Below ~2 MFLOP (tens of microseconds) handing pieces to the pool costs more than it saves.
  if (threads > 1 && flops >= double(1 << 21)) {
    const bool by_channels =
        g.c_out >= 32 && (g.groups == 1 || (!transposed_op(op) && g.groups % 16 == 0));
    // Rows when they share out evenly (ResNet's 7 rows on two threads would be 4 and 3).
    const bool even_rows = oh % threads == 0 || oh >= 8 * threads;
    if (g.n >= 2)
      p.images = std::min<int64_t>(threads, g.n);
    else if (rows_ok && oh >= threads && (even_rows || !by_channels))
      p.rows = threads;
    else if (by_channels)
      p.channels = threads;
  }
  // A multiple of 16 output channels, and of whole groups: 16 groups' worth when grouped.
  const int64_t step = g.groups == 1 ? 16 : 16 * (g.c_out / g.groups);
  p.per_c = p.channels == 1 ? g.c_out
                            : ((g.c_out + p.channels - 1) / p.channels + step - 1) / step * step;
  p.channels = (g.c_out + p.per_c - 1) / p.per_c;
  p.per_r = (oh + p.rows - 1) / p.rows;
  p.rows = (oh + p.per_r - 1) / p.per_r;
  p.nb = std::min(chunk_images(g), (g.n + p.images - 1) / p.images);
  p.first = g;
  p.first.c_out = std::min(p.per_c, g.c_out);
  if (g.groups > 1 && p.channels > 1) {
    p.first.groups = p.first.c_out / (g.c_out / g.groups);
    p.first.c_in = p.first.groups * (g.c_in / g.groups);
  }
  int64_t in0 = 0;
  if (p.rows > 1 && !row_piece(p.first, 0, p.per_r, in0)) {  // a piece would read no input
    p.rows = 1, p.per_r = oh;
    p.first = g;
  }
  return p;
}

// Runs the convolution into `placed` (or a fresh output); undefined when oneDNN cannot. The work
// splits over ember's pool by images, or, for fewer images than threads, by output rows or
// channels.
// A placed output that is neither contiguous nor channels-last is the caller's error, unless
// `quiet` (then: undefined).
Tensor try_run(OpId op, const Attrs& attrs, const Tensor& x_in, const Tensor& w, const Tensor& bias,
               const Epilogue& ep, Device device, const Tensor& placed, bool quiet = false) {
  const Prepared pr = prepare(op, attrs, x_in, w, bias, ep, placed);
  const Geo& g = pr.g;
  if (!servable(g, x_in, w, bias, ep, pr.out)) return {};
  if (quiet && placed.defined() && !placeable(placed, pr.out)) return {};
  const Plan plan = plan_of(op, g, pr.rows);
  Job j{op, &pr, &w, nullptr, &ep, Tensor(), device};
  j.nb = plan.nb;
  // The first chunk's primitive, made before any output exists: it says whether oneDNN serves
  // the call, and for full-channel pieces its weights are reordered once for all threads.
  EntryPtr hold;
  const ConvEntry* first = entry_for(
      problem(op, plan.first, pr.x, w, bias.defined(), ep, pr.res, pr.os, pr.wino, j.nb), hold);
  if (!first) return {};
  const Tensor b = bias.defined() ? bias.contiguous() : bias;
  j.bias = &b;
  Tensor out = placed.defined() && placeable(placed, pr.out)
                   ? placed
                   : output_tensor(placed, pr.out, device, op_name(op));
  j.outb = g.batched ? out : out.unsqueeze(0);
  j.x = static_cast<const char*>(pr.x.raw_data());
  j.wd = static_cast<const char*>(w.raw_data());
  j.bd = b.defined() ? static_cast<const char*>(b.raw_data()) : nullptr;
  j.res = pr.res.defined() ? static_cast<const char*>(pr.res.raw_data()) : nullptr;
  j.out = static_cast<char*>(j.outb.raw_data());
  Tensor wbuf;
  std::shared_ptr<const void> packed;
  if (plan.channels == 1 && first->wei_in) {
    packed = packed_weights(w, j.wd, first->w, first->wei, first->wei_in);
    if (!packed)
      execute(first->wei_in, {{DNNL_ARG_FROM, &first->w, j.wd},
                              {DNNL_ARG_TO, &first->wei, room(wbuf, first->wei, device)}});
    j.shared = first, j.shared_wei = packed ? packed.get() : wbuf.raw_data();
  }
  // One image split by output channels: every piece reads all of it, so its blocked copy is made
  // once, by two threads (half the rows each), rather than by each piece whole.
  Tensor sbuf;
  if (plan.channels > 1 && g.groups == 1 && g.n == 1 && first->src_half[0] && first->src_half[1]) {
    void* to = room(sbuf, first->src, device);
    const void* from = j.x;
    for_each_piece(2, [&](int64_t k) {
      execute(first->src_half[k], {{DNNL_ARG_FROM, &first->x_half[k], from},
                                   {DNNL_ARG_TO, &first->src_half_md[k], to}});
    });
    note_activation_reorder();
    j.shared = first, j.shared_src = to;
  }
  std::atomic<bool> ok{true};
  const int64_t oh = g.out[size_t(3 - g.nsp)];
  for_each_piece(plan.images * plan.channels * plan.rows, [&](int64_t i) {
    const int64_t ri = i % plan.rows, ci = i / plan.rows % plan.channels;
    const int64_t ni = i / (plan.rows * plan.channels);
    const int64_t n0 = g.n * ni / plan.images, n1 = g.n * (ni + 1) / plan.images;
    const int64_t o0 = ci * plan.per_c, o1 = std::min(g.c_out, o0 + plan.per_c);
    const int64_t r0 = ri * plan.per_r, r1 = plan.rows == 1 ? 0 : std::min(oh, r0 + plan.per_r);
    if (!run_piece(j, n0, n1, o0, o1, r0, r1)) ok = false;
  });
  if (!ok) return {};
  note_served();
  return out;
}

TensorList k_conv(const OpCall& c) {
  const Tensor placed = placed_output(c);
  Tensor r = try_run(c.op, c.attrs, c.inputs[0], c.inputs[1], c.inputs[2], {}, c.device, placed);
  if (r.defined()) return {r};
  if (!placed.defined() || placed.is_contiguous()) return flex_kernel(c.op)(c);
  // flex's kernels place only contiguous outputs: its own one is copied into the channels-last
  // one (run_on_backend copies a result that is not the placed output).
  OpCall own = c;
  own.out = {};
  return flex_kernel(c.op)(own);
}

}  // namespace

bool can_conv(OpId op, const Attrs& attrs, const Tensor& x, const Tensor& w, const Tensor& bias,
              const Epilogue& ep, const Tensor& out) {
  const Prepared pr = prepare(op, attrs, x, w, bias, ep, out);
  if (!servable(pr.g, x, w, bias, ep, pr.out)) return false;
  if (out.defined() && !placeable(out, pr.out)) return false;
  const Plan plan = plan_of(op, pr.g, pr.rows);
  EntryPtr hold;
  return entry_for(
      problem(op, plan.first, pr.x, w, bias.defined(), ep, pr.res, pr.os, pr.wino, plan.nb), hold);
}

Tensor conv(OpId op, const Attrs& attrs, const Tensor& x, const Tensor& w, const Tensor& bias,
            const Epilogue& ep, const Tensor& out) {
  Tensor r = try_run(op, attrs, x, w, bias, ep, x.device(), out);
  if (!r.defined())
    throw Error(std::string("[") + op_name(op) +
                "] oneDNN cannot serve this call (ask can_conv first)");
  return r;
}

Tensor try_conv(OpId op, const Attrs& attrs, const Tensor& x, const Tensor& w, const Tensor& bias,
                const Epilogue& ep, const Tensor& out) {
  return try_run(op, attrs, x, w, bias, ep, x.device(), out, /*quiet=*/true);
}

void register_dnnl_conv(BackendImpl& b) {
  for (OpId op :
       {OpId::conv1d, OpId::conv2d, OpId::conv3d, OpId::conv_transpose1d, OpId::conv_transpose2d})
    override_kernel(b, op, k_conv);
}

}  // namespace ember::cpu
