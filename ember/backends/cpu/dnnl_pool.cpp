// oneDNN kernels for max_pool1d/2d and avg_pool1d/2d. oneDNN pools plain NCHW data with a slow
// generic loop and blocked data (nChw8c) with its JIT kernels, so the input is reordered in and
// the result out, a chunk of images at a time (the blocked copies stay in cache). Calls that
// oneDNN computes differently from torch run flex's kernel: max pooling that returns indices
// (oneDNN's workspace is not torch's flat index), max pooling over data with a NaN or an
// infinity (oneDNN neither propagates NaN nor returns -inf for an all -inf window; the blocked
// copy is scanned, so checking costs no extra pass over memory), and average pooling with
// count_include_pad whose ceil_mode windows hang past the padding (torch shrinks their divisor).
#include <algorithm>
#include <cmath>

#include "ember/backends/cpu/cpu.h"
#include "ember/backends/cpu/dnnl_runtime.h"
#include "ember/error.h"
#include "ember/ops/nn_common.h"

namespace ember::cpu {
namespace {

using namespace onednn;

struct Problem {
  int nsp = 2;
  int64_t n = 1, c = 1, in[2]{1, 1}, out[2]{1, 1};
  int64_t k[2]{1, 1}, s[2]{1, 1}, pl[2]{}, pr[2]{}, d[2]{1, 1};
  int64_t x_strides[4]{};
  dnnl_alg_kind_t alg = dnnl_pooling_max;
  int nd() const { return nsp + 2; }
};

struct PoolEntry : Entry {
  Primitive pool, src_in, dst_out;
  dnnl_memory_desc_t x, src, dst, out;
};

EntryPtr build(const Problem& p) {
  auto e = std::make_shared<PoolEntry>();
  const int nd = p.nd();
  int64_t xd[4] = {p.n, p.c}, od[4] = {p.n, p.c}, os[4];
  for (int i = 0; i < p.nsp; ++i) xd[2 + i] = p.in[2 - p.nsp + i], od[2 + i] = p.out[2 - p.nsp + i];
  for (int64_t i = nd - 1, st = 1; i >= 0; --i) os[i] = st, st *= od[i];
  e->x = plain_md({xd, size_t(nd)}, {p.x_strides, size_t(nd)}, dnnl_f32);
  e->out = plain_md({od, size_t(nd)}, {os, size_t(nd)}, dnnl_f32);
  // The JIT kernels run on channel blocks of 8 (AVX2) or 16 (AVX-512).
  const bool wide = dnnl_get_effective_cpu_isa() >= dnnl_cpu_isa_avx512_core;
  const dnnl_format_tag_t tag =
      nd == 3 ? (wide ? dnnl_nCw16c : dnnl_nCw8c) : (wide ? dnnl_nChw16c : dnnl_nChw8c);
  dnnl_dims_t xdd{}, odd{};
  for (int i = 0; i < nd; ++i) xdd[i] = xd[i], odd[i] = od[i];
  check(dnnl_memory_desc_init_by_tag(&e->src, nd, xdd, dnnl_f32, tag), "pool", "descriptor");
  check(dnnl_memory_desc_init_by_tag(&e->dst, nd, odd, dnnl_f32, tag), "pool", "descriptor");
  dnnl_dims_t k{}, s{}, d{}, pl{}, pr{};
  for (int i = 0; i < p.nsp; ++i) {
    const int j = 2 - p.nsp + i;
    k[i] = p.k[j], s[i] = p.s[j], d[i] = p.d[j] - 1, pl[i] = p.pl[j], pr[i] = p.pr[j];
  }
  dnnl_pooling_v2_desc_t desc;
  if (dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, p.alg, &e->src, &e->dst, s,
                                        k, d, pl, pr) != dnnl_success)
    return e;
  PrimitiveDesc pd;
  if (dnnl_primitive_desc_create(pd.out(), &desc, nullptr, engine(), nullptr) != dnnl_success)
    return e;
  if (!make_primitive(pd, e->pool)) return e;
  e->src_in = make_reorder(e->x, e->src);
  e->dst_out = make_reorder(e->dst, e->out);
  e->ok = true;
  return e;
}

Key key_of(const Problem& p) {
  Key k;
  k.add(4);  // pooling
  k.add(align_threads());
  k.add(int64_t(p.alg)), k.add(p.nsp), k.add(p.n), k.add(p.c);
  for (int i = 0; i < 2; ++i) {
    k.add(p.in[i]), k.add(p.out[i]), k.add(p.k[i]), k.add(p.s[i]);
    k.add(p.pl[i]), k.add(p.pr[i]), k.add(p.d[i]);
  }
  k.add({p.x_strides, size_t(p.nd())});
  return k;
}

const PoolEntry* entry_for(const Problem& p, EntryPtr& hold) {
  hold = lookup(key_of(p), [&] { return build(p); });
  return hold && hold->ok ? static_cast<const PoolEntry*>(hold.get()) : nullptr;
}

bool all_finite(const float* p, int64_t n) {
  constexpr int64_t kBlock = 4096;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    bool bad = false;
    for (int64_t i = b; i < e; ++i) bad |= !(p[i] - p[i] == 0.f);  // NaN and +-inf
    if (bad) return false;
  }
  return true;
}

// Runs the call chunk by chunk; false (output untouched) when oneDNN cannot serve it.
Tensor try_run(const OpCall& c) {
  const Tensor& x_in = c.inputs[0];
  const bool is_max = c.op == OpId::max_pool1d || c.op == OpId::max_pool2d;
  const int nsp = c.op == OpId::max_pool1d || c.op == OpId::avg_pool1d ? 1 : 2;
  if (x_in.dtype() != DType::F32 || (is_max && c.attrs.b[1])) return {};
  const ops::PoolParams k = ops::pool_params(op_name(c.op), c.attrs, nsp, is_max);
  const Tensor x = x_in.dim() == nsp + 2 ? x_in : x_in.unsqueeze(0);
  const Shape& os = c.meta.m[0].shape;
  Problem p;
  p.nsp = nsp;
  p.c = x.size(1);
  const int64_t n = x.size(0);
  if (n == 0) return {};
  p.in[0] = nsp == 2 ? x.size(2) : 1, p.in[1] = x.size(-1);
  p.out[0] = nsp == 2 ? os[os.size() - 2] : 1, p.out[1] = os.back();
  p.k[0] = k.kh, p.k[1] = k.kw, p.s[0] = k.sh, p.s[1] = k.sw;
  p.pl[0] = k.ph, p.pl[1] = k.pw, p.d[0] = k.dh, p.d[1] = k.dw;
  const bool include_pad = !is_max && c.attrs.b[1];
  for (int i = 0; i < 2; ++i) {
    // The trailing padding that gives torch's output size (ceil_mode adds windows).
    p.pr[i] = (p.out[i] - 1) * p.s[i] + (p.k[i] - 1) * p.d[i] + 1 - p.in[i] - p.pl[i];
    if (include_pad && p.pr[i] > p.pl[i]) return {};
  }
  for (int i = 0; i < x.dim(); ++i) {
    if (x.size(i) > 1 && x.stride(i) <= 0) return {};
    p.x_strides[i] = x.stride(i);
  }
  p.alg = is_max        ? dnnl_pooling_max
          : include_pad ? dnnl_pooling_avg_include_padding
                        : dnnl_pooling_avg_exclude_padding;
  const int64_t per_image = 4 * p.c * (p.in[0] * p.in[1] + p.out[0] * p.out[1]);
  const int64_t nb =
      std::clamp<int64_t>((int64_t(4) << 20) / std::max<int64_t>(per_image, 1), 1, n);
  EntryPtr hold, hold_tail;
  p.n = nb;
  const PoolEntry* e = entry_for(p, hold);
  if (!e) return {};
  const PoolEntry* tail = e;
  if (n % nb) {
    p.n = n % nb;
    if (!(tail = entry_for(p, hold_tail))) return {};
  }
  // Max pooling checks the blocked copy for non-finite values, so it needs one.
  if (is_max && (!e->src_in || !tail->src_in)) return {};
  Tensor out = ember::detail::empty_tensor(os, DType::F32, c.device);
  Tensor outb = x_in.dim() == nsp + 2 ? out : out.unsqueeze(0);
  auto buffer = [&](const dnnl_memory_desc_t& md) {
    return ember::detail::empty_tensor({int64_t(dnnl_memory_desc_get_size(&md) / 4) + 1},
                                       DType::F32, c.device);
  };
  Tensor sbuf = e->src_in ? buffer(e->src) : Tensor();
  Tensor dbuf = e->dst_out ? buffer(e->dst) : Tensor();
  const char* xp = static_cast<const char*>(x.raw_data());
  char* op = static_cast<char*>(outb.raw_data());
  for (int64_t n0 = 0; n0 < n; n0 += nb) {
    const PoolEntry& pe = n0 + nb <= n ? *e : *tail;
    const void* src = xp + n0 * x.stride(0) * 4;
    if (pe.src_in) {
      execute(pe.src_in, {{DNNL_ARG_FROM, &pe.x, src}, {DNNL_ARG_TO, &pe.src, sbuf.raw_data()}});
      src = sbuf.raw_data();
      if (is_max && !all_finite(static_cast<const float*>(src),
                                int64_t(dnnl_memory_desc_get_size(&pe.src) / 4)))
        return {};
    }
    void* dst = pe.dst_out ? dbuf.raw_data() : op + n0 * outb.stride(0) * 4;
    execute(pe.pool, {{DNNL_ARG_SRC, &pe.src, src}, {DNNL_ARG_DST, &pe.dst, dst}});
    if (pe.dst_out)
      execute(pe.dst_out, {{DNNL_ARG_FROM, &pe.dst, dst},
                           {DNNL_ARG_TO, &pe.out, op + n0 * outb.stride(0) * 4}});
  }
  note_served();
  return out;
}

TensorList k_pool(const OpCall& c) {
  Tensor r = try_run(c);
  if (r.defined()) return {r};
  return flex_kernel(c.op)(c);
}

}  // namespace

void register_dnnl_pool(BackendImpl& b) {
  for (OpId op : {OpId::max_pool1d, OpId::max_pool2d, OpId::avg_pool1d, OpId::avg_pool2d})
    b.set_kernel(op, k_pool, kFloatDTypes);
}

}  // namespace ember::cpu
