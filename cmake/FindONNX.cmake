# Finds Debian's libonnx-dev (ONNX's generated protobuf classes, checker and shape inference) and
# the protobuf runtime it was built against. Debian's own ONNXConfig.cmake names files that the
# package does not ship (libonnxifi.so under lib/) and needs protobuf's imported target first,
# so the headers and libraries are found here by hand.
# Defines ONNX_FOUND and the imported target ONNX::onnx.
find_package(Protobuf QUIET)
find_path(ONNX_INCLUDE_DIR onnx/onnx_pb.h)
find_library(ONNX_LIBRARY onnx)
find_library(ONNX_PROTO_LIBRARY onnx_proto)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ONNX
  REQUIRED_VARS ONNX_INCLUDE_DIR ONNX_LIBRARY ONNX_PROTO_LIBRARY Protobuf_FOUND)
if(ONNX_FOUND AND NOT TARGET ONNX::onnx)
  add_library(ONNX::onnx INTERFACE IMPORTED)
  # The Debian build is ONNX_ML with the namespace `onnx` (its headers need both defined).
  set_target_properties(ONNX::onnx PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${ONNX_INCLUDE_DIR};${Protobuf_INCLUDE_DIRS}"
    INTERFACE_COMPILE_DEFINITIONS "ONNX_NAMESPACE=onnx;ONNX_ML=1"
    INTERFACE_LINK_LIBRARIES "${ONNX_LIBRARY};${ONNX_PROTO_LIBRARY};${Protobuf_LIBRARIES}")
endif()
mark_as_advanced(ONNX_INCLUDE_DIR ONNX_LIBRARY ONNX_PROTO_LIBRARY)
