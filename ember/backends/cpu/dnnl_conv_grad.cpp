// oneDNN kernels for conv_input_grad and conv_weight_grad, the two gradients of a convolution.
// The input's is the transposed convolution of the cotangent (oneDNN's deconvolution, through
// the conv kernels' try_conv); the weight's is oneDNN's backward-weights convolution, run over
// ranges of images on ember's pool with the partial sums added. Without them both ran their
// decompositions (ember/ops/conv_grad.cpp): pad, flip and a convolution for the input, an unfold
// of the input and a batched product for the weight (the Fashion-MNIST CNN's backward: a third
// of a training step). Calls these kernels do not take (f64, groups, 3-d weights, asymmetric
// padding) run the decompositions still.
#include <algorithm>
#include <atomic>
#include <vector>

#include "ember/backends/cpu/cpu.h"
#include "ember/backends/cpu/dnnl_runtime.h"
#include "ember/ops/conv.h"
#include "ember/tensor_impl.h"

namespace ember::cpu {
namespace {

using namespace onednn;
using Geo = ops::ConvGeometry;

TensorList decomposed(const OpCall& c) { return op_def(c.op).decompose(c.attrs, c.inputs); }

bool positive_strides(const Tensor& t) {
  for (int64_t i = 0; i < t.dim(); ++i)
    if (t.size(i) > 1 && t.stride(i) <= 0) return false;
  return true;
}

// --- the input's gradient ---

// conv_transpose(gy, w) with the convolution's stride, padding, dilation and groups is x's
// gradient; its output_padding gives back the input rows past the last window.
TensorList k_input_grad(const OpCall& c) {
  const Geo g = ops::conv_grad_geometry(c.op, c.attrs, c.inputs);
  if (g.nsp > 2 || c.inputs[0].dtype() != DType::F32) return decomposed(c);
  Attrs a = ops::conv_attrs(ops::used_dims(g.stride, g.nsp), ops::used_dims(g.pad, g.nsp),
                            ops::used_dims(g.dilation, g.nsp), g.groups);
  for (int i = 0; i < g.nsp; ++i) {
    const size_t j = ops::dim_slot(g.nsp, i);
    const int64_t full =
        (g.out[j] - 1) * g.stride[j] - 2 * g.pad[j] + g.dilation[j] * (g.kernel[j] - 1) + 1;
    const int64_t extra = g.in[j] - full;
    if (extra < 0 || extra >= std::max(g.stride[j], g.dilation[j])) return decomposed(c);
    a.ints.push_back(extra);
  }
  Tensor r = try_conv(ops::conv_transpose_op(g.nsp), a, c.inputs[0], c.inputs[1], Tensor(), {},
                      placed_output(c));
  if (r.defined()) return {r};
  return decomposed(c);
}

// --- the weight's gradient ---

// One backward-weights call over `n` images (2-d, one group).
struct Problem {
  int64_t n = 1;
  Geo g;
  int64_t pad_r[2]{};
  int64_t x_strides[4]{}, gy_strides[4]{};
};

struct WeightEntry : Entry {
  Primitive bwd, src_in, ddst_in, dwei_out;  // reorders are null when not needed
  dnnl_memory_desc_t x, src, gy, ddst, w, dwei;
  size_t scratch = 0;
};

Key key_of(const Problem& p) {
  Key k;
  k.add(5);  // convolution backward weights
  k.add(p.n), k.add(p.g.c_in), k.add(p.g.c_out);
  for (const Geo::Dims* d : {&p.g.in, &p.g.out, &p.g.kernel, &p.g.stride, &p.g.pad, &p.g.dilation})
    k.add({d->data() + 1, 2});
  k.add({p.pad_r, 2});
  k.add({p.x_strides, 4});
  k.add({p.gy_strides, 4});
  return k;
}

EntryPtr build(const Problem& p) {
  auto e = std::make_shared<WeightEntry>();
  const Geo& g = p.g;
  const int64_t xd[4] = {p.n, g.c_in, g.in[1], g.in[2]}, od[4] = {p.n, g.c_out, g.out[1], g.out[2]};
  const int64_t wd[4] = {g.c_out, g.c_in, g.kernel[1], g.kernel[2]};
  const int64_t ws[4] = {g.c_in * g.kernel[1] * g.kernel[2], g.kernel[1] * g.kernel[2], g.kernel[2], 1};
  e->x = plain_md({xd, 4}, {p.x_strides, 4}, dnnl_f32);
  e->gy = plain_md({od, 4}, {p.gy_strides, 4}, dnnl_f32);
  e->w = plain_md({wd, 4}, {ws, 4}, dnnl_f32);
  dnnl_memory_desc_t src = any_md({xd, 4}, dnnl_f32), ddst = any_md({od, 4}, dnnl_f32),
                     dwei = any_md({wd, 4}, dnnl_f32);
  dnnl_dims_t stride{}, dil{}, pl{}, pr{};
  for (int i = 0; i < 2; ++i) {
    stride[i] = g.stride[size_t(1 + i)], dil[i] = g.dilation[size_t(1 + i)] - 1;
    pl[i] = g.pad[size_t(1 + i)], pr[i] = p.pad_r[i];
  }
  // oneDNN makes a backward primitive from the forward one it differentiates (its hint).
  dnnl_convolution_desc_t fd, bd;
  if (dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training,
                                                 dnnl_convolution_direct, &src, &dwei, nullptr,
                                                 &ddst, stride, dil, pl, pr) != dnnl_success ||
      dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &src,
                                                          &dwei, nullptr, &ddst, stride, dil, pl,
                                                          pr) != dnnl_success)
    return e;
  Attr attr = new_attr();
  PrimitiveDesc hint, pd;
  if (dnnl_primitive_desc_create(hint.out(), &fd, attr.get(), engine(), nullptr) != dnnl_success)
    return e;
  if (dnnl_primitive_desc_create(pd.out(), &bd, attr.get(), engine(), hint.get()) !=
          dnnl_success ||
      is_reference(pd))
    return e;
  e->src = query_md(pd, dnnl_query_src_md);
  e->ddst = query_md(pd, dnnl_query_diff_dst_md);
  e->dwei = query_md(pd, dnnl_query_diff_weights_md);
  if (!make_primitive(pd, e->bwd)) return e;
  e->scratch = scratch_size(pd);
  e->src_in = make_reorder(e->x, e->src);
  e->ddst_in = make_reorder(e->gy, e->ddst);
  e->dwei_out = make_reorder(e->dwei, e->w);
  e->ok = true;
  return e;
}

const WeightEntry* entry_for(const Problem& p, EntryPtr& hold) {
  hold = lookup(key_of(p), [&] { return build(p); });
  return hold && hold->ok ? static_cast<const WeightEntry*>(hold.get()) : nullptr;
}

void* room(Tensor& buf, const dnnl_memory_desc_t& md, Device device) {
  const int64_t n = int64_t(dnnl_memory_desc_get_size(&md) / sizeof(float)) + 1;
  if (!buf.defined() || buf.numel() < n) buf = ember::detail::empty_tensor({n}, DType::F32, device);
  return buf.raw_data();
}

// Images [n0, n1) into `to` (the weight's plain layout).
bool run_piece(const Problem& base, const char* x, const char* gy, const Tensor& xt,
               const Tensor& gyt, int64_t n0, int64_t n1, float* to, Device device) {
  Problem p = base;
  p.n = n1 - n0;
  EntryPtr hold;
  const WeightEntry* e = entry_for(p, hold);
  if (!e) return false;
  const void* src = x + n0 * xt.stride(0) * int64_t(sizeof(float));
  const void* ddst = gy + n0 * gyt.stride(0) * int64_t(sizeof(float));
  Tensor sbuf, dbuf, wbuf;
  if (e->src_in) {
    void* b = room(sbuf, e->src, device);
    execute(e->src_in, {{DNNL_ARG_FROM, &e->x, src}, {DNNL_ARG_TO, &e->src, b}});
    src = b;
  }
  if (e->ddst_in) {
    void* b = room(dbuf, e->ddst, device);
    execute(e->ddst_in, {{DNNL_ARG_FROM, &e->gy, ddst}, {DNNL_ARG_TO, &e->ddst, b}});
    ddst = b;
  }
  void* dw = e->dwei_out ? room(wbuf, e->dwei, device) : to;
  execute(e->bwd,
          {{DNNL_ARG_SRC, &e->src, src},
           {DNNL_ARG_DIFF_DST, &e->ddst, ddst},
           {DNNL_ARG_DIFF_WEIGHTS, &e->dwei, dw}},
          e->scratch);
  if (e->dwei_out)
    execute(e->dwei_out, {{DNNL_ARG_FROM, &e->dwei, dw}, {DNNL_ARG_TO, &e->w, to}});
  return true;
}

// dw = sum over images of the correlation of x with gy: each thread takes a range of images
// into a partial sum of its own (the first into the output), and the partial sums are added.
TensorList k_weight_grad(const OpCall& c) {
  const Tensor &x = c.inputs[0], &gy = c.inputs[1];
  const Geo g = ops::conv_grad_geometry(c.op, c.attrs, c.inputs);
  if (g.nsp != 2 || g.groups != 1 || g.n == 0 || x.dtype() != DType::F32 ||
      !positive_strides(x) || !positive_strides(gy))
    return decomposed(c);
  Problem p;
  p.g = g;
  for (int i = 0; i < 2; ++i) {
    const size_t j = size_t(1 + i);
    const int64_t span = (g.kernel[j] - 1) * g.dilation[j] + 1;
    p.pad_r[i] = (g.out[j] - 1) * g.stride[j] + span - g.in[j] - g.pad[j];
  }
  for (int i = 0; i < 4; ++i) p.x_strides[i] = x.stride(i), p.gy_strides[i] = gy.stride(i);
  const double flops = 2.0 * double(g.n) * double(g.c_out) * double(g.c_in) *
                       double(g.kernel_numel()) * double(g.out_numel());
  // Below ~4 MFLOP a second partial sum and its addition cost more than the thread saves.
  const int64_t pieces = flops >= double(1 << 22) ? std::min<int64_t>(workers(), g.n) : 1;
  // The first piece's primitive, before any output exists: whether oneDNN serves the call.
  {
    Problem first = p;
    first.n = g.n / pieces;
    EntryPtr hold;
    if (!entry_for(first, hold)) return decomposed(c);
  }
  const Shape& ws = c.meta.m[0].shape;
  // A placed output that is not dense f32 gets a fresh one (run_on_backend copies it over).
  Tensor placed = placed_output(c);
  if (placed.defined() &&
      (!placed.is_contiguous() || placed.dtype() != DType::F32 || placed.shape() != ws))
    placed = Tensor();
  Tensor out = output_tensor(placed, ws, c.device, op_name(c.op));
  const int64_t len = numel_of(ws);
  std::vector<Tensor> parts(static_cast<size_t>(pieces));
  std::vector<float*> to(static_cast<size_t>(pieces));
  to[0] = static_cast<float*>(out.raw_data());
  for (int64_t i = 1; i < pieces; ++i) {
    parts[size_t(i)] = ember::detail::empty_tensor({len}, DType::F32, c.device);
    to[size_t(i)] = static_cast<float*>(parts[size_t(i)].raw_data());
  }
  // Operand pointers read on this thread (a pool thread must not wait on a pending queue).
  const char* xd = static_cast<const char*>(x.raw_data());
  const char* gd = static_cast<const char*>(gy.raw_data());
  std::atomic<bool> ok{true};
  for_each_piece(pieces, [&](int64_t i) {
    const int64_t n0 = g.n * i / pieces, n1 = g.n * (i + 1) / pieces;
    if (!run_piece(p, xd, gd, x, gy, n0, n1, to[size_t(i)], c.device)) ok = false;
  });
  if (!ok) return decomposed(c);
  for (int64_t i = 1; i < pieces; ++i)
    for (int64_t k = 0; k < len; ++k) to[0][k] += to[size_t(i)][k];
  note_served();
  return {out};
}

}  // namespace

void register_dnnl_conv_grad(BackendImpl& b) {
  b.set_kernel(OpId::conv_input_grad, k_input_grad, mask_of(DType::F32));
  b.set_kernel(OpId::conv_weight_grad, k_weight_grad, mask_of(DType::F32));
}

}  // namespace ember::cpu
