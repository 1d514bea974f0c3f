// The host-side argument packer.
#include "ember/kl/abi.h"

#include <bit>
#include <cstring>
#include <string>

#include "ember/error.h"
#include "ember/half.h"

namespace ember::kl {

uint64_t scalar_slot(DType d, Scalar v) {
  const int64_t bits = v.is_floating() ? const_bits(d, v.to_double()) : const_bits_int(d, v.to_int());
  uint64_t slot = 0;
  switch (d) {
    case DType::F32: {
      float f = float(std::bit_cast<double>(bits));
      std::memcpy(&slot, &f, 4);
      break;
    }
    case DType::F64: slot = uint64_t(bits); break;
    case DType::F16: slot = Half(float(std::bit_cast<double>(bits))).bits; break;
    case DType::BF16: slot = BFloat16(float(std::bit_cast<double>(bits))).bits; break;
    default: {  // integers and bool: the low itemsize bytes of the wrapped value
      const size_t n = itemsize(d);
      std::memcpy(&slot, &bits, n);  // little-endian hosts
      break;
    }
  }
  return slot;
}

ArgPack::ArgPack(const Kernel& k)
    : slots_(k.buffers.size() + k.scalars.size() + k.indices.size(), 0),
      nb_(int(k.buffers.size())),
      ni_(int(k.indices.size())) {
  for (const ScalarParam& s : k.scalars) scalar_types_.push_back(s.dtype);
}

ArgPack& ArgPack::buffer(int i, const void* p) {
  if (i < 0 || i >= nb_) ember::detail::throw_index("kl", "no buffer parameter " + std::to_string(i));
  slots_[size_t(i)] = reinterpret_cast<uintptr_t>(p);
  return *this;
}

ArgPack& ArgPack::scalar(int i, Scalar v) {
  if (i < 0 || i >= num_scalars()) ember::detail::throw_index("kl", "no scalar parameter " + std::to_string(i));
  slots_[size_t(nb_ + i)] = scalar_slot(scalar_types_[size_t(i)], v);
  return *this;
}

ArgPack& ArgPack::index(int i, int64_t v) {
  if (i < 0 || i >= ni_) ember::detail::throw_index("kl", "no index parameter " + std::to_string(i));
  slots_[size_t(nb_ + num_scalars() + i)] = uint64_t(v);
  return *this;
}

}  // namespace ember::kl
