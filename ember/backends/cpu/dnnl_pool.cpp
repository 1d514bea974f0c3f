// oneDNN kernels for max_pool1d/2d and avg_pool1d/2d. oneDNN pools plain NCHW data with a slow
// generic loop and blocked data (nChw8c) with its JIT kernels, so the input is reordered in and
// the result out, a chunk of images at a time (the blocked copies stay in cache). Calls that
// oneDNN computes differently from torch run flex's kernel: max pooling that returns indices
// (oneDNN's workspace is not torch's flat index), max pooling over data with a NaN or an
// infinity (oneDNN neither propagates NaN nor returns -inf for an all -inf window; the blocked
// copy is scanned, so checking costs no extra pass over memory), and average pooling with
// count_include_pad whose ceil_mode windows hang past the padding (torch shrinks their divisor).
#include <algorithm>
#include <atomic>
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

// x * 0 is 0 for finite x and NaN for NaN and infinities; sixteen partial sums vectorise.
bool all_finite(const float* p, int64_t n) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += p[i + j] * 0.f;
  float s = 0.f;
  for (; i < n; ++i) s += p[i] * 0.f;
  for (float a : acc) s += a;
  return s == 0.f;
}

// Runs the call into its placed output (or a fresh one); undefined when oneDNN cannot serve it.
Tensor try_run(const OpCall& c) {
  const Tensor& x_in = c.inputs[0];
  const bool is_max = c.op == OpId::max_pool1d || c.op == OpId::max_pool2d;
  const int nsp = c.op == OpId::max_pool1d || c.op == OpId::avg_pool1d ? 1 : 2;
  if (x_in.dtype() != DType::F32 || (is_max && c.attrs.b[1])) return {};
  const ops::PoolParams k = ops::pool_params(op_name(c.op), c.attrs, nsp, is_max);
  // flex's 2x2 stride-2 max pooling beats oneDNN's, whose max kernel runs at a sixth of its
  // average kernel's speed (32x64x112x112: flex 25-32 ms, oneDNN 95 ms with its reorders).
  if (is_max && nsp == 2 && k.kh == 2 && k.kw == 2 && k.sh == 2 && k.sw == 2 && k.ph == 0 &&
      k.pw == 0 && k.dh == 1 && k.dw == 1)
    return {};
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
  // Pieces for ember's pool: ranges of images, or of channels (multiples of 16, oneDNN's widest
  // channel block) when there are fewer images than threads; each runs in chunks of nb images.
  const int64_t threads = workers(), c_all = p.c;
  int64_t images = 1, channels = 1;
  if (threads > 1 && x.numel() >= (int64_t(1) << 16)) {
    if (n >= 2)
      images = std::min(threads, n);
    else if (c_all >= 32)
      channels = threads;
  }
  const int64_t per_c = channels == 1 ? c_all : ((c_all + channels - 1) / channels + 15) / 16 * 16;
  channels = (c_all + per_c - 1) / per_c;
  const int64_t per_image = 4 * per_c * (p.in[0] * p.in[1] + p.out[0] * p.out[1]);
  const int64_t nb = std::clamp<int64_t>((int64_t(2) << 20) / std::max<int64_t>(per_image, 1), 1,
                                         (n + images - 1) / images);
  // The first chunk's primitive, before any output exists: whether oneDNN serves the call.
  p.n = nb, p.c = per_c;
  EntryPtr hold;
  const PoolEntry* first = entry_for(p, hold);
  // Max pooling checks the blocked copy for non-finite values, so it needs one.
  if (!first || (is_max && !first->src_in)) return {};
  Tensor out = output_tensor(placed_output(c), os, c.device, op_name(c.op));
  Tensor outb = x_in.dim() == nsp + 2 ? out : out.unsqueeze(0);
  std::atomic<bool> ok{true};
  for_each_piece(images * channels, [&](int64_t i) {
    const int64_t ni = i / channels, ci = i % channels;
    const int64_t n0 = n * ni / images, n1 = n * (ni + 1) / images;
    const int64_t c0 = ci * per_c, c1 = std::min(c_all, c0 + per_c);
    Tensor sbuf, dbuf;
    auto room = [&](Tensor& buf, const dnnl_memory_desc_t& md) {
      const int64_t len = int64_t(dnnl_memory_desc_get_size(&md) / 4) + 1;
      if (!buf.defined() || buf.numel() < len)
        buf = ember::detail::empty_tensor({len}, DType::F32, c.device);
      return buf.raw_data();
    };
    for (int64_t m = n0; m < n1 && ok; m += nb) {
      Problem q = p;
      q.n = std::min(nb, n1 - m), q.c = c1 - c0;
      EntryPtr h;
      const PoolEntry* pe = entry_for(q, h);
      if (!pe || (is_max && !pe->src_in)) {
        ok = false;
        return;
      }
      const void* src =
          static_cast<const char*>(x.raw_data()) + (m * x.stride(0) + c0 * x.stride(1)) * 4;
      void* to =
          static_cast<char*>(outb.raw_data()) + (m * outb.stride(0) + c0 * outb.stride(1)) * 4;
      if (pe->src_in) {
        void* blocked = room(sbuf, pe->src);
        execute(pe->src_in, {{DNNL_ARG_FROM, &pe->x, src}, {DNNL_ARG_TO, &pe->src, blocked}});
        src = blocked;
        if (is_max && !all_finite(static_cast<const float*>(src),
                                  int64_t(dnnl_memory_desc_get_size(&pe->src) / 4))) {
          ok = false;
          return;
        }
      }
      void* dst = pe->dst_out ? room(dbuf, pe->dst) : to;
      execute(pe->pool, {{DNNL_ARG_SRC, &pe->src, src}, {DNNL_ARG_DST, &pe->dst, dst}});
      if (pe->dst_out)
        execute(pe->dst_out, {{DNNL_ARG_FROM, &pe->dst, dst}, {DNNL_ARG_TO, &pe->out, to}});
    }
  });
  if (!ok) return {};
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
    override_kernel(b, op, k_pool);
}

}  // namespace ember::cpu
