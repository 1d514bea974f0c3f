// Storages over a mapped file: each holds a reference to the mapping, dropped when the last
// tensor over it goes.
#include "ember/store/mapped.h"

#include <cstring>

#include "ember/backends/backend.h"
#include "ember/store/safetensors.h"

namespace ember::store::detail {

bool mappable(uint64_t offset, uint64_t nbytes, DType dtype) {
  return nbytes > 0 && offset % itemsize(dtype) == 0;
}

namespace {
using MapRef = std::shared_ptr<const ember::detail::FileMap>;
void free_map(void* ctx, const Storage&) { delete static_cast<MapRef*>(ctx); }

[[noreturn]] void throw_cut(const char* op, const std::string& files) {
  throw IOError(std::string("[") + op + "] " + files +
                " was cut to fewer bytes while tensors were mapped from it: their bytes past "
                "the new end cannot be read (they would read as zeros)");
}
}  // namespace

void check_storage(const Storage& s, const char* op) {
  if (ember::detail::map_faults() == 0) [[likely]] return;
  if (s.free_fn != free_map) return;
  const MapRef& map = *static_cast<const MapRef*>(s.free_ctx);
  if (map->damaged()) throw_cut(op, "the file '" + map->path() + "'");
}

void check_inputs(std::span<const Tensor> inputs, const char* op) {
  if (ember::detail::map_faults() == 0) [[likely]] return;
  for (const Tensor& t : inputs)
    if (t.defined() && t.impl()->storage) check_storage(*t.impl()->storage, op);
}

void check_damaged(const char* op) {
  std::vector<std::string> files = ember::detail::damaged_files();
  if (files.empty()) return;
  std::string list;
  for (const std::string& f : files) list += (list.empty() ? "'" : ", '") + f + "'";
  throw_cut(op, (files.size() == 1 ? "the file " : "the files ") + list);
}

std::shared_ptr<Storage> mapped_storage(const ember::detail::ReadFile& file, uint64_t offset,
                                        uint64_t nbytes, Device place, std::string& error,
                                        bool prefetch) {
  std::shared_ptr<const ember::detail::FileMap> map = file.map(offset, nbytes, error, prefetch);
  if (!map) return nullptr;
  auto s = std::make_shared<Storage>();
  s->data = map->data();
  s->nbytes = size_t(nbytes);
  s->place = place;
  s->free_ctx = new MapRef(std::move(map));
  s->free_fn = free_map;
  return s;
}

Tensor tensor_over(std::shared_ptr<Storage> storage, DType dtype, const Shape& shape,
                   const Shape& strides, int64_t offset, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = dtype;
  impl->device = device;
  impl->storage = std::move(storage);
  impl->refresh();
  return Tensor(std::move(impl));
}

std::optional<uint64_t> bad_bool_byte(const void* data, uint64_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (uint64_t i = 0; i < n; ++i)
    if (p[i] > 1) return i;
  return std::nullopt;
}

Device host_for(Device place) {
  BackendImpl* b = backend_for(place.backend());
  return b && b->is_host() ? place : Device::flex();
}

Tensor deliver(Tensor raw, std::optional<DType> dtype, Device want) {
  const Device place = want.without_layers();
  Tensor out = raw.device() == place ? raw : raw.to(place);
  if (dtype && *dtype != out.dtype()) out = out.to(*dtype);
  return out.device() == want ? out : ember::detail::retag(out, want);
}

}  // namespace ember::store::detail
