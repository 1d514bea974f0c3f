# The WebAssembly build (preset `wasm`, Debian's emscripten): flex, nn, optim, the safetensors
# reader and writer and the C ABI, linked into web/ember.js's modules. No oneDNN, LAPACK, CUDA,
# remote backend, fusion/JIT, zlib, minizip, RE2 or SQLite: nothing here needs a native library.
# Exceptions stay on (WebAssembly's own, below): ember's errors reach JavaScript as messages
# through the C ABI's statuses. Two builds of the same sources:
#   ember-st  single-threaded, runs on any page;
#   ember-mt  -pthread (SharedArrayBuffer; used when the page is cross-origin isolated).
# EMBER_WASM_SIMD (default ON) adds -msimd128: flex's loops and GEMM take their 128-bit paths.
option(EMBER_WASM_SIMD "WebAssembly SIMD (-msimd128)" ON)
option(EMBER_WASM_THREADS "Also build the pthreads variant (ember-mt)" ON)
set(EMBER_WASM_OUT ${PROJECT_BINARY_DIR}/web CACHE PATH "Where the .js/.wasm pairs go")
# The link's optimisation level (binaryen's passes over the whole module; the objects keep
# CMAKE_CXX_FLAGS_RELEASE's -O3): -Oz makes the module 6% smaller than -O3.
set(EMBER_WASM_LINK_OPT -Oz CACHE STRING "Link-time optimisation level of the wasm modules")
# The dtypes flex's kernels are compiled for (ember/backends/flex/loops.h, EMBER_FLEX_DTYPES):
# a browser model needs f32, plus int64 for labels and indices, bool for masks and u8 for
# images. Each dtype added costs about 150 KB of .wasm; a kernel called with one left out throws
# ember's DTypeError naming the op, the dtype and this list (casts to and from any dtype stay).
set(EMBER_WASM_DTYPES "bool;u8;i64;f32" CACHE STRING
    "dtypes of flex's kernels in the wasm build: a subset of bool;u8;i8;i16;i32;i64;f16;bf16;f32;f64")
# The inference module's: a page hands images over as Float32Array (a uint8 tensor can still be
# made and cast).
set(EMBER_WASM_INFER_DTYPES "bool;i64;f32" CACHE STRING
    "dtypes of flex's kernels in ember-infer (a subset like EMBER_WASM_DTYPES)")
function(ember_dtype_mask list out)
  set(bits bool u8 i8 i16 i32 i64 f16 bf16 f32 f64)
  set(mask 0)
  foreach(d ${list})
    list(FIND bits ${d} i)
    if(i LESS 0)
      message(FATAL_ERROR "wasm dtypes: unknown dtype '${d}' (expected one of ${bits})")
    endif()
    math(EXPR mask "${mask} | (1 << ${i})")
  endforeach()
  set(${out} ${mask} PARENT_SCOPE)
endfunction()
ember_dtype_mask("${EMBER_WASM_DTYPES}" _dtype_mask)
ember_dtype_mask("${EMBER_WASM_INFER_DTYPES}" _infer_dtype_mask)

set(_dirs ember ember/detail ember/ops ember/autodiff ember/backends ember/backends/flex ember/nn
          ember/optim)
set(EMBER_WASM_SOURCES)
foreach(d ${_dirs})
  file(GLOB _s CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${d}/*.cpp)
  list(APPEND EMBER_WASM_SOURCES ${_s})
endforeach()
list(APPEND EMBER_WASM_SOURCES ${PROJECT_SOURCE_DIR}/ember/amp/layer.cpp)  # autocast's guard
# The store's safetensors files only (PyTorch files need minizip, load_into RE2).
foreach(f safetensors_file save format atomic_file mapped)
  list(APPEND EMBER_WASM_SOURCES ${PROJECT_SOURCE_DIR}/ember/store/${f}.cpp)
endforeach()
# Lean: what inference and small-model training use. Left out (EMBER_FLEX_ONLY guards their
# registration, so calling one is a clear error naming the op and the device): FFTs, complex
# numbers, vision ops (NMS, RoI align, morphology, components), matrix decompositions,
# quantisation, CUDA graphs, and the recurrent and transformer modules.
list(FILTER EMBER_WASM_SOURCES EXCLUDE REGEX
     "/ember/(fft|fft_nd|fft_stft)\\.cpp$")
list(FILTER EMBER_WASM_SOURCES EXCLUDE REGEX
     "/ember/backends/flex/(fft|fft_plan|fft_ops|eig|vision[a-z_]*|quant|linalg_decomp)\\.cpp$")
list(FILTER EMBER_WASM_SOURCES EXCLUDE REGEX
     "/ember/nn/(rnn|transformer|transformer_stack|attention|positional|blocks)\\.cpp$")
list(FILTER EMBER_WASM_SOURCES EXCLUDE REGEX
     "/ember/optim/(lr_scheduler|lr_scheduler_compose|rmsprop_adagrad_lion|clip)\\.cpp$")
set_property(SOURCE ${PROJECT_SOURCE_DIR}/ember/init.cpp ${PROJECT_SOURCE_DIR}/ember/device.cpp
             ${PROJECT_SOURCE_DIR}/ember/backends/flex/backend.cpp
             ${PROJECT_SOURCE_DIR}/ember/backends/flex/linalg.cpp
             APPEND PROPERTY COMPILE_DEFINITIONS EMBER_FLEX_ONLY=1)
# std::bit_cast for the files that use it (emscripten 3.1.6's libc++ lacks it).
set_property(SOURCE ${PROJECT_SOURCE_DIR}/ember/backends/flex/norm.cpp
             ${PROJECT_SOURCE_DIR}/ember/backends/flex/softmax.cpp
             ${PROJECT_SOURCE_DIR}/ember/backends/flex/pool.cpp
             APPEND PROPERTY COMPILE_OPTIONS -include ${PROJECT_SOURCE_DIR}/cmake/wasm_compat.h)
# nlohmann/json (header-only, Debian's nlohmann-json3-dev) for the safetensors header, without
# putting the host's /usr/include on emscripten's search path.
find_path(EMBER_NLOHMANN_DIR nlohmann/json.hpp PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH REQUIRED)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/wasm-include)
file(CREATE_LINK ${EMBER_NLOHMANN_DIR}/nlohmann ${PROJECT_BINARY_DIR}/wasm-include/nlohmann SYMBOLIC)
set_property(SOURCE ${PROJECT_SOURCE_DIR}/ember/store/safetensors_file.cpp
             ${PROJECT_SOURCE_DIR}/ember/store/save.cpp
             APPEND PROPERTY INCLUDE_DIRECTORIES ${PROJECT_BINARY_DIR}/wasm-include)
file(GLOB EMBER_WASM_C_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ember/c/*.cpp)
set_property(SOURCE ${PROJECT_SOURCE_DIR}/ember/c/c_api.cpp APPEND PROPERTY COMPILE_DEFINITIONS
             EMBER_VERSION_STRING="${PROJECT_VERSION}")
# Size: the kernels (flex, the hot loops) keep -O3; the rest (dispatch, shape inference, VJP
# rules, nn, store, the C ABI) is compiled for size: a model's time is spent in the kernels, and
# this halves the rest's code (docs/web.md, "Size and speed").
set(EMBER_WASM_CODE_OPT -Os CACHE STRING "Optimisation level of the wasm build's non-kernel code")
set(_size_sources ${EMBER_WASM_SOURCES} ${EMBER_WASM_C_SOURCES})
list(FILTER _size_sources EXCLUDE REGEX "/ember/backends/flex/")
set_property(SOURCE ${_size_sources} APPEND PROPERTY COMPILE_OPTIONS ${EMBER_WASM_CODE_OPT})
# flex's kernels: the ones a model's inference time is spent in (EMBER_WASM_HOT_KERNELS: the
# GEMM, convolution and pooling files) keep -O3; the rest (elementwise maps, reductions, sort,
# index, scan, interpolation, ...) get EMBER_WASM_KERNEL_OPT.
set(EMBER_WASM_KERNEL_OPT -Os CACHE STRING "Optimisation level of flex's kernels outside the hot list")
set(EMBER_WASM_HOT_KERNELS "gemm;gemm_kernel;conv;pool" CACHE STRING
    "flex source files (ember/backends/flex/NAME.cpp) compiled at -O3 in the wasm build")
set(_kernel_sources ${EMBER_WASM_SOURCES})
list(FILTER _kernel_sources INCLUDE REGEX "/ember/backends/flex/")
foreach(h ${EMBER_WASM_HOT_KERNELS})
  list(FILTER _kernel_sources EXCLUDE REGEX "/ember/backends/flex/${h}\\.cpp$")
endforeach()
set_property(SOURCE ${_kernel_sources} APPEND PROPERTY COMPILE_OPTIONS ${EMBER_WASM_KERNEL_OPT})
# The elementwise maps (EMBER_WASM_MAP_KERNELS) also inline their functors and kl's scalar
# functions (emcc's -Os passes -fno-inline-functions, which leaves a call per element).
set(EMBER_WASM_MAP_KERNELS "unary" CACHE STRING
    "flex source files compiled with -finline-functions on top of EMBER_WASM_KERNEL_OPT")
foreach(h ${EMBER_WASM_MAP_KERNELS})
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/ember/backends/flex/${h}.cpp APPEND PROPERTY
               COMPILE_OPTIONS -finline-functions)
endforeach()

# Exceptions: WebAssembly's own (-fwasm-exceptions: throw and catch inside the module, no
# JavaScript trampoline around every call that may throw; Chrome 95, Firefox 100, Safari 15.2,
# node 17 and later) for the single-threaded module; emscripten's JavaScript-based ones for the
# pthreads module, where Debian's emscripten 3.1.6 with -fwasm-exceptions catches ember's errors
# only as "unknown exception" (a catch by type never matches), and for both with
# EMBER_WASM_NATIVE_EH=OFF.
option(EMBER_WASM_NATIVE_EH "WebAssembly exception handling (-fwasm-exceptions) for ember-st" ON)
set(_js_eh -fexceptions)
set(_js_eh_link -fexceptions -sDISABLE_EXCEPTION_CATCHING=0)
set(_cflags -fno-math-errno -fno-trapping-math -Wno-unused-parameter)
if(EMBER_WASM_SIMD)
  list(APPEND _cflags -msimd128)
endif()
# Exported to JavaScript: the C ABI (EMSCRIPTEN_KEEPALIVE on every entry point) plus malloc/free.
set(_link -sALLOW_MEMORY_GROWTH=1
          -sMODULARIZE=1 -sEXPORT_NAME=createEmberModule -sENVIRONMENT=web,worker,node
          -sEXPORTED_FUNCTIONS=_malloc,_free
          -sEXPORTED_RUNTIME_METHODS=UTF8ToString,stringToUTF8,lengthBytesUTF8,ENV
          -sTOTAL_STACK=1048576 -sFILESYSTEM=0 -sWASM_BIGINT=1 --no-entry)

set(_variants st)
if(EMBER_WASM_THREADS)
  list(APPEND _variants mt)
endif()
# ember-infer: the inference module, single-threaded like ember-st but without training: no VJP
# rules (backward refuses every op by name), no optimizers, no safetensors writer. The C ABI's
# training and saving calls return EMBER_ERR_NOT_IMPLEMENTED there.
option(EMBER_WASM_INFER "Also build the inference-only module (ember-infer)" ON)
if(EMBER_WASM_INFER)
  list(APPEND _variants infer)
endif()
set(EMBER_WASM_INFER_SOURCES ${EMBER_WASM_SOURCES})
list(FILTER EMBER_WASM_INFER_SOURCES EXCLUDE REGEX
     "/ember/(autodiff/rules_[a-z_]*|optim/[a-z_]*|store/(save|atomic_file))\\.cpp$")
foreach(v ${_variants})
  # What the inference module changes: its sources, its dtypes and EMBER_NO_TRAINING (for the
  # library and the C ABI's objects alike).
  if(v STREQUAL "infer")
    set(_sources ${EMBER_WASM_INFER_SOURCES})
    set(_defs EMBER_FLEX_DTYPES=${_infer_dtype_mask} EMBER_NO_TRAINING=1)
    set(_cdefs EMBER_NO_TRAINING=1)
  else()
    set(_sources ${EMBER_WASM_SOURCES})
    set(_defs EMBER_FLEX_DTYPES=${_dtype_mask})
    set(_cdefs)
  endif()
  add_library(ember_wasm_${v} STATIC ${_sources})
  target_include_directories(ember_wasm_${v} PUBLIC ${PROJECT_SOURCE_DIR})
  if(NOT v STREQUAL "mt" AND EMBER_WASM_NATIVE_EH)
    set(_eh -fwasm-exceptions)
    set(_eh_link -fwasm-exceptions)
  else()
    set(_eh ${_js_eh})
    set(_eh_link ${_js_eh_link})
  endif()
  target_compile_options(ember_wasm_${v} PRIVATE ${_eh} ${_cflags})
  target_compile_definitions(ember_wasm_${v} PRIVATE ${_defs})
  set(_l ${_eh_link} ${_link})
  if(v STREQUAL "mt")
    target_compile_options(ember_wasm_${v} PRIVATE -pthread)
    # A pool made at start-up, so no op waits for a worker to spawn (threads.cpp sizes itself
    # from navigator.hardwareConcurrency, capped by the pool).
    list(APPEND _l -pthread -sPTHREAD_POOL_SIZE=4 -sPTHREAD_POOL_SIZE_STRICT=0)
  endif()
  # The C ABI's objects are the executable's own, so all of them (every EMSCRIPTEN_KEEPALIVE
  # entry point) are linked; the library's objects come in only as far as they are used.
  add_executable(ember_${v} ${EMBER_WASM_C_SOURCES})
  target_link_libraries(ember_${v} PRIVATE ember_wasm_${v})
  target_compile_options(ember_${v} PRIVATE ${_eh} ${_cflags} $<$<STREQUAL:${v},mt>:-pthread>)
  target_compile_definitions(ember_${v} PRIVATE ${_cdefs})
  target_link_options(ember_${v} PRIVATE ${_l} "$<$<CONFIG:Release>:${EMBER_WASM_LINK_OPT}>")
  set_target_properties(ember_${v} PROPERTIES OUTPUT_NAME ember-${v} SUFFIX .js
    RUNTIME_OUTPUT_DIRECTORY ${EMBER_WASM_OUT})
endforeach()
