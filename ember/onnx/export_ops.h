#pragma once
// The table of export's op mappings (export_ops*.cpp). Private to ember::onnx.
#include <array>

#include "ember/onnx/export_emit.h"

namespace ember::onnx::detail {

using EmitTable = std::array<EmitFn, kNumOps>;
/// Elementwise, reduction, scan and matrix-product ops (export_ops.cpp).
void add_emit_math(EmitTable& t);
/// Layout, index, creation, convolution, pooling and normalisation ops (export_ops_nn.cpp).
void add_emit_nn(EmitTable& t);

}  // namespace ember::onnx::detail
