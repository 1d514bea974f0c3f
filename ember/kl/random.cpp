#include "ember/kl/random.h"

namespace ember::kl {
namespace {

// The low 32 bits of an I64 (its value as a u32 word).
Expr word(const Expr& x) { return x & Expr(int64_t(0xFFFFFFFF)); }

}  // namespace

std::array<Expr, 4> philox4x32(const Expr& seed, const Expr& offset, const Expr& index) {
  // As detail::philox_at: counter (index lo, index hi, offset lo, offset hi), key (seed lo, hi).
  // Shr is arithmetic: the mask after it keeps the bits a logical shift would give.
  const int lanes = index.lanes();
  auto wide = [&](const Expr& x) { return lanes > 1 ? broadcast(x, lanes) : x; };
  std::array<Expr, 4> c{word(index), word(index >> Expr(32)), wide(word(offset)),
                        wide(word(offset >> Expr(32)))};
  Expr k0 = word(seed), k1 = word(seed >> Expr(32));
  const Expr m0(int64_t(0xD2511F53)), m1(int64_t(0xCD9E8D57));
  for (int r = 0; r < 10; ++r) {
    const Expr p0 = c[0] * m0, p1 = c[2] * m1;  // < 2^64: the unsigned product's bits
    c = {word((p1 >> Expr(32)) ^ c[1] ^ wide(k0)), word(p1),
         word((p0 >> Expr(32)) ^ c[3] ^ wide(k1)), word(p0)};
    k0 = word(k0 + Expr(int64_t(0x9E3779B9)));
    k1 = word(k1 + Expr(int64_t(0xBB67AE85)));
  }
  return c;
}

Expr bernoulli_keep(const Expr& seed, const Expr& offset, const Expr& index, const Expr& p) {
  const std::array<Expr, 4> r = philox4x32(seed, offset, index);
  // detail::u01d: u = b * 2^-53 for b the top 53 of the 64 bits r0:r1. u < p holds exactly when
  // b < p * 2^53 (scaling by a power of two is exact), i.e. b < ceil(p * 2^53) for an integer b:
  // an integer compare (int64 -> double has no vector form on AVX2).
  const Expr bits = (r[0] << Expr(21)) | (r[1] >> Expr(11));
  const Expr limit = cast(ceil(p * Expr(9007199254740992.0)), DType::I64);
  return bits < limit;
}

}  // namespace ember::kl
