// scaled_dot_product_attention on CUDA through the fused kernels of attention_kernel.cu. The op's
// decomposition asks here first (ember/ops/attention_route.h): f16/bf16 q, k and v of one batch
// shape (at most 4 dims), head size E == Ev <= 128 (a multiple of 8), no dropout, and no mask or
// one (bool, or additive float that wants no gradient) broadcasting to [.., L, S]. Such a call
// runs as two user ops: the forward (out and each row's log-sum-exp) and, through its VJP, the
// backward (dq, dk, dv), so autodiff records one node instead of the decomposition's six. Every
// other call runs the decomposition as before. EMBER_CUDA_FUSED_ATTENTION=0 turns the route off.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include "ember/backends/cuda/attention_kernel.h"
#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/fallback.h"
#include "ember/backends/flex/loops.h"
#include "ember/error.h"
#include "ember/kl/user_op.h"
#include "ember/kl/user_op_impl.h"
#include "ember/ops/attention_route.h"
#include "ember/ops/binary.h"

namespace ember::cuda {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// The two user ops' ids, set once before either can be called.
int g_forward = -1, g_backward = -1;

// A tensor of the call as [B, H, T, E]: its strides (the last dim packed), on a packed copy when
// its own layout does not suit the kernel (16-byte aligned rows).
struct View {
  Tensor t;
  int64_t sb = 0, sh = 0, sl = 0;
};
View view4(const Tensor& x, Device dev) {
  auto suits = [](const Tensor& t) {
    if (t.stride(-1) != 1 && t.size(-1) > 1) return false;
    for (int64_t i = 0; i + 1 < t.dim(); ++i)
      if (t.size(i) > 1 && t.stride(i) % 8) return false;
    return reinterpret_cast<uintptr_t>(device_ptr(t)) % 16 == 0;
  };
  View v;
  v.t = x;
  if (!suits(x)) {
    v.t = detail::empty_tensor(x.shape(), x.dtype(), dev);
    copy_into(v.t, x, kOp);
  }
  const int64_t nd = v.t.dim();
  auto st = [&](int64_t d) { return d < 0 || v.t.size(d) == 1 ? int64_t(0) : v.t.stride(d); };
  v.sb = st(nd - 4), v.sh = st(nd - 3), v.sl = st(nd - 2);
  return v;
}
int extent(const Tensor& x, int64_t d) { return d < 0 ? 1 : int(x.size(d)); }

Tensor packed_like(const Tensor& out, Device dev) {
  return out.is_contiguous() ? out : detail::empty_tensor(out.shape(), out.dtype(), dev);
}
void settle(const Tensor& out, const Tensor& written) {
  if (out.impl() != written.impl()) copy_into(out, written, kOp);
}

// The kernel's view of a call's q, k, v (and mask at input 3 when `mask`).
AttentionArgs args_of(const OpCall& c, bool mask, Device dev, View (&qkv)[3], Tensor& m) {
  const std::span<const double> p = kl::detail::user_op_params(c.attrs);
  for (int i = 0; i < 3; ++i) qkv[i] = view4(c.inputs[size_t(i)], dev);
  const Tensor& q = qkv[0].t;
  const int64_t nd = q.dim();
  AttentionArgs a;
  a.q = device_ptr(q), a.k = device_ptr(qkv[1].t), a.v = device_ptr(qkv[2].t);
  a.q_sb = qkv[0].sb, a.q_sh = qkv[0].sh, a.q_sl = qkv[0].sl;
  a.k_sb = qkv[1].sb, a.k_sh = qkv[1].sh, a.k_sl = qkv[1].sl;
  a.v_sb = qkv[2].sb, a.v_sh = qkv[2].sh, a.v_sl = qkv[2].sl;
  a.B = extent(q, nd - 4), a.H = extent(q, nd - 3), a.L = int(q.size(-2));
  a.S = int(qkv[1].t.size(-2)), a.E = int(q.size(-1));
  a.scale = float(p[0]);
  a.causal = p[1] != 0;
  a.bf16 = q.dtype() == DType::BF16;
  if (mask) {
    m = c.inputs[3];
    const int64_t md = m.dim();
    auto st = [&](int i) {  // dim i of [B, H, L, S], right-aligned with the mask's
      const int64_t d = md - 4 + i;
      return d < 0 || m.size(d) == 1 ? int64_t(0) : m.stride(d);
    };
    a.mask = static_cast<const float*>(device_ptr(m));
    a.m_sb = st(0), a.m_sh = st(1), a.m_sl = st(2), a.m_ss = st(3);
  }
  return a;
}

TensorList run_forward(const OpCall& c) {
  const Device dev = c.device.without_layers();
  View qkv[3];
  Tensor m;
  const AttentionArgs a = args_of(c, c.inputs.size() > 3, dev, qkv, m);
  Tensor out = flex::new_output(c, 0), lse = flex::new_output(c, 1);
  Tensor ow = packed_like(out, dev), lw = packed_like(lse, dev);
  set_device(dev.index());
  check(launch_attention_forward(a, device_ptr(ow), static_cast<float*>(device_ptr(lw)),
                                 stream_handle(nullptr, dev.index())),
        kOp, "fused attention forward");
  after_launch(kOp, dev.index());
  settle(out, ow);
  settle(lse, lw);
  return {out, lse};
}

// Inputs: q, k, v, out, lse, dout [, mask].
TensorList run_backward(const OpCall& c) {
  const Device dev = c.device.without_layers();
  View qkv[3];
  Tensor m;
  std::vector<Tensor> fwd = {c.inputs[0], c.inputs[1], c.inputs[2]};
  if (c.inputs.size() > 6) fwd.push_back(c.inputs[6]);
  OpCall fc{c.op, c.attrs, fwd, c.meta, c.device, c.stream};
  const AttentionArgs a = args_of(fc, fwd.size() > 3, dev, qkv, m);
  auto pack = [&](const Tensor& t) {
    if (t.is_contiguous() && reinterpret_cast<uintptr_t>(device_ptr(t)) % 16 == 0) return t;
    Tensor p = detail::empty_tensor(t.shape(), t.dtype(), dev);
    copy_into(p, t, kOp);
    return p;
  };
  const Tensor o = pack(c.inputs[3]), lse = pack(c.inputs[4]), dout = pack(c.inputs[5]);
  Tensor dq = flex::new_output(c, 0), dk = flex::new_output(c, 1), dv = flex::new_output(c, 2);
  Tensor qw = packed_like(dq, dev), kw = packed_like(dk, dev), vw = packed_like(dv, dev);
  const Tensor scratch = detail::empty_tensor(
      {int64_t(attention_backward_scratch(a) / sizeof(float))}, DType::F32, dev);
  AttentionGrads g;
  g.o = device_ptr(o), g.lse = static_cast<const float*>(device_ptr(lse));
  g.dout = device_ptr(dout);
  g.dq = device_ptr(qw), g.dk = device_ptr(kw), g.dv = device_ptr(vw);
  g.scratch = static_cast<float*>(device_ptr(scratch));
  set_device(dev.index());
  check(launch_attention_backward(a, g, stream_handle(nullptr, dev.index())), kOp,
        "fused attention backward");
  after_launch(kOp, dev.index());
  settle(dq, qw);
  settle(dk, kw);
  settle(dv, vw);
  return {dq, dk, dv};
}

// OpId::user_op on cuda: the two ops above, and every other user op as before (the host fallback
// or its decomposition).
std::mutex g_user_mu;
std::vector<std::pair<int, Kernel>> g_user_kernels;  // set once per op, before its first call

TensorList k_user_op(const OpCall& c) {
  const int id = int(c.attrs.i[0]);
  if (id >= 0 && id == g_forward) return run_forward(c);
  if (id >= 0 && id == g_backward) return run_backward(c);
  Kernel own = nullptr;
  {
    std::lock_guard lock(g_user_mu);
    for (const auto& [uid, k] : g_user_kernels)
      if (uid == id) own = k;
  }
  if (own) return own(c);
  if (ember::detail::host_fallback_applies(c)) return ember::detail::run_host_fallback(c);
  return op_def(c.op).decompose(c.attrs, c.inputs);
}

kl::UserKernel cuda_only(const kl::UserCall& c) {
  ember::detail::throw_not_implemented(std::string(c.name).c_str(), "runs on cuda tensors only");
}

void register_user_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    kl::UserOpDef f;
    f.name = "cuda.attention_forward";
    f.params = {"scale", "causal"};
    f.infer = [](std::span<const Tensor> in, std::span<const double>) {
      Shape o, l;  // [.., L, Ev] and [.., L]
      for (int64_t i = 0; i + 1 < in[0].dim(); ++i) o.push_back(in[0].size(i)), l.push_back(in[0].size(i));
      o.push_back(in[2].size(-1));
      return std::vector<TensorMeta>{{o, in[0].dtype()}, {l, DType::F32}};
    };
    f.kernel = cuda_only;
    f.vjp = [](const VjpCtx& c, std::span<const double> p) {
      TensorList d(c.inputs.size());
      if (!c.grad(0).defined()) return d;
      std::vector<Tensor> in = {c.input(0), c.input(1), c.input(2),
                                c.output(0), c.output(1), c.grad(0)};
      if (c.inputs.size() > 3) in.push_back(c.input(3));
      TensorList g = UserOp(g_backward).call(in, p);
      for (size_t i = 0; i < 3; ++i) d[i] = g[i];
      return d;
    };
    kl::UserOpDef b;
    b.name = "cuda.attention_backward";
    b.params = {"scale", "causal"};
    b.infer = [](std::span<const Tensor> in, std::span<const double>) {
      return std::vector<TensorMeta>{
          {in[0].shape(), in[0].dtype()}, {in[1].shape(), in[1].dtype()},
          {in[2].shape(), in[2].dtype()}};
    };
    b.kernel = cuda_only;
    g_backward = kl::register_op(std::move(b)).id();
    g_forward = kl::register_op(std::move(f)).id();
  });
}

bool route_off() {
  static const bool off = [] {
    const char* e = std::getenv("EMBER_CUDA_FUSED_ATTENTION");
    return e && std::strcmp(e, "0") == 0;
  }();
  return off;
}

Tensor fused_attention(const Attrs& a, std::span<const Tensor> in) {
  const Tensor &q = in[0], &k = in[1], &v = in[2], &mask = in[3];
  const DType dt = q.dtype();
  if (route_off() || a.f[0] > 0 || (dt != DType::F16 && dt != DType::BF16) ||
      k.dtype() != dt || v.dtype() != dt)
    return {};
  const int64_t nd = q.dim(), E = q.size(-1);
  if (nd > 4 || k.dim() != nd || v.dim() != nd || v.size(-1) != E || E % 8 || E > 128 || E == 0)
    return {};
  int64_t bh = 1;
  for (int64_t i = 0; i + 2 < nd; ++i) {
    if (k.size(i) != q.size(i) || v.size(i) != q.size(i)) return {};
    bh *= q.size(i);
  }
  const int64_t kMax = std::numeric_limits<int32_t>::max();
  if (bh == 0 || bh > 65535 || q.size(-2) == 0 || k.size(-2) == 0 || q.size(-2) > kMax ||
      k.size(-2) > kMax)
    return {};
  Tensor m;
  if (mask.defined()) {
    if (mask.dim() > 4 || mask.requires_grad()) return {};
    m = mask.dtype() == DType::Bool
            ? where(mask, mask.to(DType::F32) * 0.0, -std::numeric_limits<double>::infinity())
            : mask.to(DType::F32);
  }
  register_user_ops();
  const double scale = a.b[1] ? a.f[1] : 1.0 / std::sqrt(double(E));
  const double causal = a.b[0] ? 1.0 : 0.0;
  const UserOp op(g_forward);
  TensorList outs = m.defined() ? op.call({q, k, v, m}, {scale, causal})
                                : op.call({q, k, v}, {scale, causal});
  return outs[0];
}

}  // namespace

void set_user_kernel(int id, Kernel k) {
  std::lock_guard lock(g_user_mu);
  g_user_kernels.emplace_back(id, k);
}

void register_attention_kernels(BackendImpl& b) {
  b.set_kernel(OpId::user_op, k_user_op, kAllDTypes);
  detail::set_fused_attention(Backend::Cuda, fused_attention);
}

}  // namespace ember::cuda
