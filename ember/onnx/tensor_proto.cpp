// TensorProto to ember tensors. A model file is hostile input: the dims are checked for
// overflow, and the bytes each storage form holds (raw_data, a typed field, an external file
// range) are checked against what the dims and dtype call for before anything is allocated.
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "ember/detail/file.h"
#include "ember/detail/text.h"
#include "ember/onnx/proto.h"
#include "ember/store/mapped.h"

namespace ember::onnx::detail {

using ::onnx::TensorProto;

std::string message(const std::string& name, const std::string& msg) {
  return "[onnx] " + name + ": " + msg;
}

std::optional<DType> dtype_of(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT: return kF32;
    case TensorProto::UINT8: return kU8;
    case TensorProto::INT8: return kI8;
    case TensorProto::INT16: return kI16;
    case TensorProto::INT32: return kI32;
    case TensorProto::INT64: return kI64;
    case TensorProto::BOOL: return kBool;
    case TensorProto::FLOAT16: return kF16;
    case TensorProto::DOUBLE: return kF64;
    case TensorProto::BFLOAT16: return kBF16;
    // ember has no unsigned 16/32/64-bit dtypes: they are held in the next wider signed one
    // (uint64 values must stay below 2^63; arithmetic that would wrap at the narrow width
    // does not).
    case TensorProto::UINT16: return kI32;
    case TensorProto::UINT32: return kI64;
    case TensorProto::UINT64: return kI64;
    default: return std::nullopt;
  }
}

std::string onnx_type_name(int32_t t) {
  if (TensorProto::DataType_IsValid(t))
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t));
  return "type " + std::to_string(t);
}

std::string dims_str(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? "," : "") + std::to_string(dims[k]);
  return s + "]";
}

namespace {

// Copies `n` typed-field values into a buffer of `dtype`, converting each (int32_data holds
// 8/16-bit integers, bools and the bit patterns of float16/bfloat16).
template <class Field>
std::vector<uint8_t> from_field(const Field& f, DType dtype) {
  const size_t n = size_t(f.size()), w = itemsize(dtype);
  std::vector<uint8_t> out(n * w);
  for (size_t k = 0; k < n; ++k) {
    uint8_t* p = out.data() + k * w;
    auto v = f.Get(int(k));
    switch (dtype) {
      case kF32: { float x = float(v); std::memcpy(p, &x, 4); break; }
      case kF64: { double x = double(v); std::memcpy(p, &x, 8); break; }
      case kI64: { int64_t x = int64_t(v); std::memcpy(p, &x, 8); break; }
      case kI32: { int32_t x = int32_t(v); std::memcpy(p, &x, 4); break; }
      case kI16: { int16_t x = int16_t(v); std::memcpy(p, &x, 2); break; }
      case kF16: case kBF16: { uint16_t x = uint16_t(v); std::memcpy(p, &x, 2); break; }
      case kI8: { int8_t x = int8_t(v); std::memcpy(p, &x, 1); break; }
      case kU8: { uint8_t x = uint8_t(v); std::memcpy(p, &x, 1); break; }
      case kBool: { uint8_t x = v != 0; std::memcpy(p, &x, 1); break; }
    }
  }
  return out;
}

// The external file a tensor names, inside the model's folder: absolute paths and ".." are
// refused, so a model cannot read files outside the folder it came in.
std::string external_path(const std::string& location, const DataDir& where,
                          const std::string& what) {
  if (where.dir.empty())
    throw ModelError(message(where.model, what + " has external data ('" +
                                             ember::detail::shorten(location) +
                                             "'), but a model loaded from bytes has no folder"));
  std::filesystem::path p(location);
  bool escapes = location.empty() || p.is_absolute();
  for (const auto& part : p)
    if (part == "..") escapes = true;
  if (escapes)
    throw ModelError(message(where.model, what + ": external data location '" +
                                             ember::detail::shorten(location) +
                                             "' must be a relative path inside the model's folder"));
  return (std::filesystem::path(where.dir) / p).string();
}

uint64_t parse_u64(const std::string& s, const std::string& key, const std::string& what,
                   const DataDir& where) {
  uint64_t v = 0;
  bool ok = !s.empty() && s.size() <= 20;
  for (char c : s) {
    if (c < '0' || c > '9' || v > (std::numeric_limits<uint64_t>::max() - 9) / 10) ok = false;
    if (ok) v = v * 10 + uint64_t(c - '0');
  }
  if (!ok)
    throw ModelError(message(where.model, what + ": external data " + key + " '" +
                                             ember::detail::shorten(s, 40) +
                                             "' is not a non-negative integer"));
  return v;
}

// The external file of `t` and the offset of its bytes there, checked to hold `nbytes`.
std::pair<ember::detail::ReadFile, uint64_t> locate_external(const TensorProto& t,
                                                             const DataDir& where,
                                                             const std::string& what,
                                                             uint64_t nbytes) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_u64(kv.value(), "offset", what, where);
    else if (kv.key() == "length") length = parse_u64(kv.value(), "length", what, where);
  }
  std::string path = external_path(location, where, what);
  std::string error;
  auto file = ember::detail::ReadFile::open(path, error);
  if (!file) throw IOError(message(where.model, what + ": external data " + path + ": " + error));
  if (length && *length != nbytes)
    throw ModelError(message(where.model, what + ": external data length " +
                                             std::to_string(*length) + " but its dims and dtype need " +
                                             std::to_string(nbytes) + " bytes"));
  if (offset > file.size() || nbytes > file.size() - offset)
    throw ModelError(message(where.model, what + ": external data " + path + " holds " +
                                             std::to_string(file.size()) + " bytes, too few for " +
                                             std::to_string(nbytes) + " at offset " +
                                             std::to_string(offset)));
  return {std::move(file), offset};
}

}  // namespace

Tensor tensor_from_proto(const TensorProto& t, const DataDir& where) {
  return tensor_from_proto(t, where, false);
}
void check_external_data(const TensorProto& t, const DataDir& where) {
  if (t.data_location() == TensorProto::EXTERNAL) tensor_from_proto(t, where, true);
}

Tensor tensor_from_proto(const TensorProto& t, const DataDir& where, bool check_only) {
  const std::string what = "tensor '" + ember::detail::shorten(t.name(), 80) + "'";
  auto bad = [&](const std::string& m) { return ModelError(message(where.model, what + ": " + m)); };
  std::optional<DType> dtype = dtype_of(t.data_type());
  if (!dtype)
    throw ModelError(message(where.model, what + " has data type " +
                                             onnx_type_name(t.data_type()) +
                                             ", which ember has no dtype for"));
  if (size_t(t.dims_size()) > kMaxDims)
    throw bad(std::to_string(t.dims_size()) + " dims, more than ember's " +
              std::to_string(kMaxDims));
  Shape shape;
  uint64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) throw bad("negative dim " + std::to_string(d));
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / uint64_t(d))
      throw bad("the dims overflow");
    numel *= uint64_t(d);
    shape.push_back(d);
  }
  // Bytes per stored element (an unsigned type is narrower in the file than in ember).
  const int32_t type = t.data_type();
  const bool widened = type == TensorProto::UINT16 || type == TensorProto::UINT32 ||
                       type == TensorProto::UINT64;
  const uint64_t w = type == TensorProto::UINT16   ? 2
                     : type == TensorProto::UINT32 ? 4
                                                   : itemsize(*dtype);
  if (numel > uint64_t(kMaxNumel)) throw bad("the dims " + dims_str(shape) + " hold too many elements");
  const uint64_t nbytes = numel * w;
  auto make = [&](const void* p) {
    if (!widened) return from_blob_copy(p, *dtype, shape, *dtype, Device::flex());
    std::vector<int64_t> v(static_cast<size_t>(numel));
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t k = 0; k < v.size(); ++k) {
      uint64_t x = 0;
      std::memcpy(&x, b + k * w, w);  // little-endian, as ONNX stores raw_data
      if (x > uint64_t(std::numeric_limits<int64_t>::max()))
        throw bad("a UINT64 value is 2^63 or more, beyond ember's int64");
      v[k] = int64_t(x);
    }
    return from_blob_copy(v.data(), kI64, shape, *dtype, Device::flex());
  };
  auto count_check = [&](int64_t n, const char* field) {
    if (uint64_t(n) != numel)
      throw bad(std::string(field) + " holds " + std::to_string(n) + " values, its dims " +
                dims_str(shape) + " need " + std::to_string(numel));
  };

  if (t.data_location() == TensorProto::EXTERNAL) {
    auto [file, offset] = locate_external(t, where, what, nbytes);
    if (check_only) return Tensor();
    // Aligned external bytes are mapped (private, copy-on-write; see docs/store.md): nothing
    // is read until the initializer is used. EMBER_MMAP=0 reads them.
    std::string error;
    if (!widened && *dtype != kBool && ember::detail::mmap_enabled(true) &&
        store::detail::mappable(offset, nbytes, *dtype))
      if (auto s = store::detail::mapped_storage(file, offset, nbytes, Device::flex(), error))
        return store::detail::tensor_over(std::move(s), *dtype, shape, contiguous_strides(shape),
                                          0, Device::flex());
    std::vector<uint8_t> bytes(nbytes);
    if (!file.read_exact(offset, bytes.data(), nbytes, error))
      throw IOError(message(where.model, what + ": external data: " + error));
    return make(bytes.data());
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      throw bad("raw_data holds " + std::to_string(t.raw_data().size()) + " bytes, its dims " +
                dims_str(shape) + " and dtype " + std::string(dtype_name(*dtype)) + " need " +
                std::to_string(nbytes));
    return make(t.raw_data().data());
  }
  std::vector<uint8_t> bytes;
  if (widened) {
    // uint16 values sit in int32_data, uint32 and uint64 ones in uint64_data.
    std::vector<uint64_t> v;
    if (type == TensorProto::UINT16) {
      count_check(t.int32_data_size(), "int32_data");
      for (int32_t x : t.int32_data()) v.push_back(uint16_t(x));
    } else {
      count_check(t.uint64_data_size(), "uint64_data");
      v.assign(t.uint64_data().begin(), t.uint64_data().end());
    }
    std::vector<uint8_t> packed(v.size() * w);
    for (size_t k = 0; k < v.size(); ++k) std::memcpy(packed.data() + k * w, &v[k], w);
    return make(packed.data());
  }
  switch (*dtype) {
    case kF32: count_check(t.float_data_size(), "float_data"); bytes = from_field(t.float_data(), *dtype); break;
    case kF64: count_check(t.double_data_size(), "double_data"); bytes = from_field(t.double_data(), *dtype); break;
    case kI64: count_check(t.int64_data_size(), "int64_data"); bytes = from_field(t.int64_data(), *dtype); break;
    default: count_check(t.int32_data_size(), "int32_data"); bytes = from_field(t.int32_data(), *dtype); break;
  }
  return make(bytes.data());
}

}  // namespace ember::onnx::detail
