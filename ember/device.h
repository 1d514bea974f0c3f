#pragma once
// Device: a small value naming a backend (flex, cpu, cuda:N, remote) plus its stack of layers.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>

namespace ember {

class Layer;
enum class DType : uint8_t;

/// The backends ember knows about; which are built is a build option.
enum class Backend : uint8_t { Flex, Cpu, Cuda, Remote };
inline constexpr int kNumBackends = 4;
const char* backend_name(Backend b);

/// libtorch's device types: kCPU is host memory (the flex and cpu backends), kCUDA a GPU.
enum class DeviceType : uint8_t { Cpu, Cuda, Remote };
inline constexpr DeviceType kCPU = DeviceType::Cpu;
inline constexpr DeviceType kCUDA = DeviceType::Cuda;

class Device {
 public:
  /// The portable C++ backend: no dependency beyond the standard library.
  static Device flex();
  /// The native CPU backend: flex's kernels, with oneDNN's matrix products, convolutions and
  /// pooling where the build has oneDNN (EMBER_DNNL).
  static Device cpu();
  /// CUDA device `index`; throws DeviceError when CUDA was not built or the GPU is absent.
  static Device cuda(int index = 0);
  /// A remote ember server (docs/remote.md): "wss://host:port", or "ws://" on loopback only;
  /// the token, CA and timeout come from EMBER_REMOTE_TOKEN, EMBER_REMOTE_CA and
  /// EMBER_REMOTE_TIMEOUT (remote::connect takes them as arguments).
  static Device remote(const std::string& url);

  /// libtorch's Device(kCUDA, 0) and Device(kCPU) (implicit, as there: t.to(kCPU) works).
  /// kCPU gives default_device() when that is a host device (flex or cpu, with its layers), and
  /// Device::flex() otherwise, so Device(kCPU) is where tensors made without a device live;
  /// kCUDA gives Device::cuda(index). Throws ValueError for kCPU with an index other than 0 or -1
  /// and for DeviceType::Remote (which needs a URL: Device::remote).
  Device(DeviceType type, int index = 0);  // NOLINT: implicit, like libtorch's

  Backend backend() const { return backend_; }
  /// kCPU for flex and cpu, kCUDA, or DeviceType::Remote.
  DeviceType type() const {
    return backend_ == Backend::Cuda     ? DeviceType::Cuda
           : backend_ == Backend::Remote ? DeviceType::Remote
                                         : DeviceType::Cpu;
  }
  /// Whether data sits in host memory (flex or cpu): libtorch's is_cpu().
  bool is_cpu() const { return type() == DeviceType::Cpu; }
  bool is_cuda() const { return backend_ == Backend::Cuda; }
  int index() const { return index_; }
  /// A copy of this device whose ops also pass through `layer`: innermost (next to the backend)
  /// by default, or outermost (seen first).
  Device with_layer(std::shared_ptr<Layer> layer, bool outermost = false) const;
  /// A copy with `old` replaced by `with` (unchanged when `old` is not in the stack).
  Device replace_layer(const Layer* old, std::shared_ptr<Layer> with) const;
  /// This device with the autodiff layer: ops on tensors that require grad record history.
  Device autodiff() const;
  /// Autodiff that keeps only compute-heavy outputs (matmul, conv) and recomputes the
  /// memory-bound ones in backward, trading time for memory.
  Device gradient_checkpointing() const;
  /// Whether ops on this device pass through the autodiff layer.
  bool has_autodiff() const;
  /// This device with mixed precision (ember/amp.h): the ops of PyTorch's autocast lists
  /// (matmul, linear, conv, attention) run in `compute` (kBF16 or kF16), numerically sensitive
  /// ones (softmax, norms, losses, sums) in f32, and parameters stay f32. Replaces an earlier
  /// mixed precision; throws ValueError for another dtype.
  Device mixed_precision(DType compute) const;
  /// This device without the layers that defer work (fusion): each op runs when it is called.
  Device eager() const;
  /// Whether a layer of this device defers work (ops are queued, fused and run at a sync point).
  bool is_lazy() const;
  /// This device with the layers of `o` it lacks added (those of `o` outermost, deferring
  /// layers innermost): an op whose inputs sit on forms of one device runs through all of them.
  Device with_layers_of(Device o) const;
  /// The same backend with no layers.
  Device without_layers() const;
  /// The layers an op passes through, outermost first.
  std::span<Layer* const> layers() const;
  bool has_layers() const { return stack_ != 0; }

  /// Same backend and index (layers may differ): data can be shared without a copy.
  bool same_place(Device o) const { return backend_ == o.backend_ && index_ == o.index_; }
  friend bool operator==(Device a, Device b) {
    return a.backend_ == b.backend_ && a.index_ == b.index_ && a.stack_ == b.stack_;
  }
  /// "flex", "cpu", "cuda:0", with "+layer" suffixes.
  std::string str() const;

  Device() = default;  // flex

 private:
  Device(Backend b, int16_t i, uint16_t s) : backend_(b), index_(i), stack_(s) {}
  Backend backend_ = Backend::Flex;
  int16_t index_ = 0;
  uint16_t stack_ = 0;  // interned layer stack; 0 = none
};
std::ostream& operator<<(std::ostream& os, Device d);

/// How many devices of backend `b` this process can use (0 when it was not built, or for CUDA
/// when no GPU is present).
int device_count(Backend b);

/// Waits until all work queued on `d` has run: lazy queues are flushed and asynchronous kernels
/// finish. Errors that kernels reported since the last sync (an index out of range found while a
/// fused kernel ran) are thrown here, naming the op.
void synchronize(Device d);
/// Runs the work a lazy device has queued (its fused kernels are launched) without waiting for
/// an asynchronous device to finish it; a no-op on eager devices. Errors of data-dependent
/// checks surface at the next synchronize().
void flush(Device d);

/// The device creation ops use when none is given (flex unless set).
Device default_device();
void set_default_device(Device d);

/// Sets the default device for the current scope and restores the old one on exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device d) : old_(default_device()) { set_default_device(d); }
  ~DeviceGuard() { set_default_device(old_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  Device old_;
};

}  // namespace ember
