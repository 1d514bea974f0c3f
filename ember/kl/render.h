#pragma once
// Renderers turn kernels into source for one target: a target description, the legalisation
// passes every renderer shares, and the printer interface. The C++ renderer (kl/cpp/) and the CUDA
// renderer (kl/cuda/) ship; GLSL and WGSL renderers would implement the same interface.
#include <memory>
#include <span>
#include <string>

#include "ember/kl/ir.h"

namespace ember::kl {

/// What a device offers kernels.
struct Target {
  std::string name = "cpp";  // part of cache keys ("cpp-avx2", "cuda-sm90", ...)
  int vector_bytes = 32;     // preferred SIMD width; lanes per dtype follow from it
  int max_lanes = 64;
  int plane_size = 1;        // lanes of a warp/subgroup; 1 = no collectives (the C++ target)
  bool plane_ops = false;    // native plane reduce/broadcast/shuffle
  int64_t shared_bytes = 0;  // shared memory per workgroup (0: no limit, arrays on the stack)
  uint32_t native_dtypes = ~0u & ~(1u << int(DType::F16)) & ~(1u << int(DType::BF16));
  /// Whether the compiler may fuse a*b+c into an FMA inside an op (never across a Fence), as it
  /// does in ember's own kernels; the source says so itself, whatever the toolchain's flags.
  bool fp_contract = true;
  /// Vector lanes for dtype d: vector_bytes / itemsize, at least 1, at most max_lanes.
  int lanes(DType d) const;
  /// Whether arithmetic on d is native (else lower_half computes it in f32).
  bool native(DType d) const { return native_dtypes & (1u << int(d)); }
};

/// The host CPU as a C++ target, chosen at run time: 64-byte vectors with AVX-512F, 32 with
/// AVX2, else 16 (SSE2). Its name says which ("cpp-avx512", "cpp-avx2", "cpp-sse2"), with
/// "-nocontract" appended when ember's own kernels were built without FMA or with
/// -ffp-contract=off, as the `fuzz` preset builds them (then fp_contract is off, so fused and
/// eager results round alike).
Target cpp_host_target();

// --- legalisation passes (each returns a verified kernel) ---
/// Arithmetic, comparisons and conversions on dtypes the target lacks (f16/bf16 on a CPU) are
/// computed in f32: operands converted up, the op in f32, the result rounded back; loads,
/// stores, selects and moves keep the 16-bit form.
Kernel lower_half(const Kernel& k, const Target& t);
/// Plane collectives for targets without them: with a plane of one lane they are the identity;
/// with a plane of several lanes and no native ops they go through shared memory and barriers.
Kernel lower_collectives(const Kernel& k, const Target& t);
/// Every pass a renderer for `t` needs, in order.
Kernel legalize(const Kernel& k, const Target& t);

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual const Target& target() const = 0;
  /// Legalises `kernels` for target() and prints them into one source (one shared object or
  /// module per flush). Each kernel becomes an entry point named after it.
  virtual std::string render(std::span<const Kernel> kernels) const = 0;
  /// What selects the source besides the kernels' canonical hashes and names: the target's name
  /// and the renderer's revision (bumped whenever its output changes). Part of cache keys.
  virtual std::string cache_id() const = 0;
};

/// The C++ renderer: header-free source (builtins and GCC/Clang vector extensions only, no
/// #include) with entry points `extern "C" void NAME(const void* args, int64_t begin,
/// int64_t end)`; kernel names must be C identifiers. Compile with -O2 -fno-math-errno for an
/// ISA with FMA when ember's kernels have it (-march=x86-64-v3 on an AVX2 host), as
/// cpu::jit::HostToolchain does: the source sets FP contraction itself (a pragma, from
/// Target::fp_contract), so results match ember's eager kernels bit for bit where the IR says.
std::unique_ptr<Renderer> cpp_renderer(Target t = cpp_host_target());

/// An NVIDIA GPU of compute capability sm_major.sm_minor with `shared_bytes` of shared memory
/// per block: 16-byte vectors, planes of 32 lanes (warps) with native shuffles, f16/bf16
/// computed in f32 (lower_half). Its name is "cuda-sm<major><minor>".
Target cuda_target(int sm_major, int sm_minor, int64_t shared_bytes = 48 << 10);
/// The CUDA renderer: CUDA C for NVRTC (no #include) with entry points
///   extern "C" __global__ void NAME(const kl_args_NAME args, long long begin, long long end,
///                                   long long grain)
/// taking abi.h's argument pack by value (a struct of its 8-byte slots). A launch over items
/// [begin, end) runs cuda_grid_blocks() blocks of cuda_block_threads() threads; workgroup g
/// covers items [begin + g*grain, begin + (g+1)*grain) clipped to end. A kernel of workgroup
/// size 1 runs one workgroup per thread (128 a block); of workgroup size W > 1 (a multiple of
/// 32, at most 1024), one per block of W threads. See docs/kernels.md.
std::unique_ptr<Renderer> cuda_renderer(Target t);
/// Threads per block for kernel k on the CUDA target.
int64_t cuda_block_threads(const Kernel& k);
/// Blocks for a launch of k over `items` work items, `grain` per workgroup.
int64_t cuda_grid_blocks(const Kernel& k, int64_t items, int64_t grain);

}  // namespace ember::kl
