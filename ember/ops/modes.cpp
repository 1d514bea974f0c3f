#include "ember/ops/modes.h"

#include <string>

#include "ember/error.h"

namespace ember::ops {
namespace {

// The index of `s` in `names`, or throws "<what> must be <choices>; found '<s>'".
template <size_t N>
uint8_t pick(const char* op, std::string_view s, const char* const (&names)[N], const char* what,
             const char* choices) {
  for (size_t i = 0; i < N; ++i)
    if (s == names[i]) return uint8_t(i);
  detail::throw_value(op, std::string(what) + " must be " + choices + ", found '" +
                              std::string(s) + "'");
}

constexpr const char* kRounding[] = {"", "floor", "trunc"};
constexpr const char* kReduction[] = {"mean", "sum", "none", "batchmean"};
constexpr const char* kPad[] = {"constant", "reflect", "replicate", "circular"};
constexpr const char* kInterp[] = {"nearest", "linear", "bilinear", "bicubic"};
constexpr const char* kGelu[] = {"none", "tanh"};
constexpr const char* kScatter[] = {"sum", "prod", "mean", "amax", "amin"};
constexpr const char* kConvPad[] = {"", "same", "valid"};
constexpr const char* kMesh[] = {"ij", "xy"};

}  // namespace

RoundingMode parse_rounding_mode(const char* op, std::string_view s) {
  return RoundingMode(pick(op, s, kRounding, "rounding_mode", "'', 'floor' or 'trunc'"));
}
Reduction parse_reduction(const char* op, std::string_view s, bool allow_batchmean) {
  if (allow_batchmean)
    return Reduction(pick(op, s, kReduction, "reduction", "'mean', 'sum', 'batchmean' or 'none'"));
  constexpr const char* names[] = {"mean", "sum", "none"};
  return Reduction(pick(op, s, names, "reduction", "'mean', 'sum' or 'none'"));
}
PadMode parse_pad_mode(const char* op, std::string_view s) {
  return PadMode(pick(op, s, kPad, "mode", "constant, reflect, replicate or circular"));
}
InterpMode parse_interp_mode(const char* op, std::string_view s) {
  return InterpMode(pick(op, s, kInterp, "mode", "'nearest', 'linear', 'bilinear' or 'bicubic'"));
}
GeluApprox parse_gelu_approx(const char* op, std::string_view s) {
  return GeluApprox(pick(op, s, kGelu, "approximate", "'none' or 'tanh'"));
}
ScatterReduce parse_scatter_reduce(const char* op, std::string_view s) {
  return ScatterReduce(pick(op, s, kScatter, "reduce", "one of sum, prod, mean, amax, amin"));
}
ConvPadding parse_conv_padding(const char* op, std::string_view s) {
  return ConvPadding(pick(op, s, kConvPad, "padding mode", "'', 'same' or 'valid'"));
}
MeshIndexing parse_mesh_indexing(const char* op, std::string_view s) {
  return MeshIndexing(pick(op, s, kMesh, "indexing", "'ij' or 'xy'"));
}

const char* mode_name(RoundingMode m) { return kRounding[size_t(m)]; }
const char* mode_name(Reduction m) { return kReduction[size_t(m)]; }
const char* mode_name(PadMode m) { return kPad[size_t(m)]; }
const char* mode_name(InterpMode m) { return kInterp[size_t(m)]; }
const char* mode_name(GeluApprox m) { return kGelu[size_t(m)]; }
const char* mode_name(ScatterReduce m) { return kScatter[size_t(m)]; }

void throw_bad_mode(const char* op, unsigned raw) {
  detail::throw_value(op, "attribute mode " + std::to_string(raw) + " is out of range");
}

}  // namespace ember::ops
