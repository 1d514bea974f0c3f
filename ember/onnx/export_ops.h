#pragma once
// The table of export's op mappings (export_ops.cpp), filled by export_{math,reduce,layout,nn}.cpp.
// Private to ember::onnx.
#include <array>
#include <string>
#include <vector>

#include "ember/onnx/export_emit.h"

namespace ember::onnx::detail {

using EmitTable = std::array<EmitFn, kNumOps>;
/// Unary, binary and ternary elementwise ops (export_math.cpp).
void add_emit_math(EmitTable& t);
/// Reductions, scans and matrix products (export_reduce.cpp).
void add_emit_reduce(EmitTable& t);
/// Views, joins, copies, indexing and creation (export_layout.cpp).
void add_emit_layout(EmitTable& t);
/// Convolution, pooling and normalisation (export_nn.cpp).
void add_emit_nn(EmitTable& t);

/// `x type c`: a binary node with a 0-d constant c of dtype d.
std::string with_const(Emitter& e, const char* type, const std::string& x, double c, DType d);
/// `d` in [-rank, rank) made non-negative.
inline int64_t norm_dim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }
inline std::vector<int64_t> vec(const Shape& s) { return {s.begin(), s.end()}; }

}  // namespace ember::onnx::detail
