#pragma once
// The mode enums ops carry in Attrs::mode. The public API takes PyTorch's strings; the front
// end parses them here (throwing a ValueError that names the op and lists the choices), so
// kernels, rules and hashes see small integers, never strings.
#include <cstdint>
#include <string_view>

namespace ember::ops {

/// div: rounding_mode "" (true division), "floor" or "trunc".
enum class RoundingMode : uint8_t { True, Floor, Trunc };
/// Losses: reduction "mean", "sum", "none" (and "batchmean" for kl_div).
enum class Reduction : uint8_t { Mean, Sum, None, BatchMean };
/// pad: "constant", "reflect", "replicate", "circular".
enum class PadMode : uint8_t { Constant, Reflect, Replicate, Circular };
/// interpolate: "nearest", "linear", "bilinear", "bicubic".
enum class InterpMode : uint8_t { Nearest, Linear, Bilinear, Bicubic };
/// gelu: approximate "none" or "tanh".
enum class GeluApprox : uint8_t { None, Tanh };
/// scatter_reduce: reduce "sum", "prod", "mean", "amax", "amin".
enum class ScatterReduce : uint8_t { Sum, Prod, Mean, Amax, Amin };
/// conv: padding given as numbers, or the string "same" / "valid".
enum class ConvPadding : uint8_t { Explicit, Same, Valid };
/// meshgrid: indexing "ij" or "xy".
enum class MeshIndexing : uint8_t { IJ, XY };

RoundingMode parse_rounding_mode(const char* op, std::string_view s);
/// `batchmean` is accepted only where the op allows it.
Reduction parse_reduction(const char* op, std::string_view s, bool allow_batchmean = false);
PadMode parse_pad_mode(const char* op, std::string_view s);
InterpMode parse_interp_mode(const char* op, std::string_view s);
GeluApprox parse_gelu_approx(const char* op, std::string_view s);
ScatterReduce parse_scatter_reduce(const char* op, std::string_view s);
ConvPadding parse_conv_padding(const char* op, std::string_view s);
MeshIndexing parse_mesh_indexing(const char* op, std::string_view s);

/// PyTorch's spelling of a mode (for messages and printing).
const char* mode_name(RoundingMode m);
const char* mode_name(Reduction m);
const char* mode_name(PadMode m);
const char* mode_name(InterpMode m);
const char* mode_name(GeluApprox m);
const char* mode_name(ScatterReduce m);

/// Attrs::mode as enum `E`, checked against the enum's range (a hand-built Attrs may hold
/// anything): throws ValueError naming `op`.
template <class E> E mode_of(const char* op, uint8_t raw, E last);
void throw_bad_mode(const char* op, unsigned raw);
template <class E> E mode_of(const char* op, uint8_t raw, E last) {
  if (raw > uint8_t(last)) throw_bad_mode(op, raw);
  return E(raw);
}

}  // namespace ember::ops
