#pragma once
// The protobuf side of loading: ONNX's generated classes to ember values. Only the loader's
// files include this (and through it ONNX's headers). Private to ember::onnx.
#include <onnx/onnx_pb.h>

#include <optional>
#include <span>
#include <string>

#include "ember/onnx/graph.h"

namespace ember::onnx::detail {

/// Where a tensor's external data may be read from: the model's folder ("" when the model came
/// from bytes, which refuses external data).
struct DataDir {
  std::string dir;
  std::string model;  // the model's name, for messages
};

/// The ONNX type's name ("FLOAT", "UINT32", ...).
std::string onnx_type_name(int32_t onnx_type);

/// A host tensor from `t`: raw_data, the typed fields or external data, each checked against
/// the size its dims and dtype call for before anything is allocated. Throws ModelError/IOError
/// whose message starts with "[onnx] <model>: tensor '<name>'".
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const DataDir& where);
Tensor tensor_from_proto(const ::onnx::TensorProto& t, const DataDir& where, bool check_only);
/// Checks an external tensor's location and byte range (nothing for other tensors), reading
/// nothing: run before ONNX's checker, whose messages say less.
void check_external_data(const ::onnx::TensorProto& t, const DataDir& where);

/// "[2,3]"
std::string dims_str(std::span<const int64_t> dims);
/// "[onnx] <name>: <msg>", the message of every loading error.
std::string message(const std::string& name, const std::string& msg);

}  // namespace ember::onnx::detail
