// The executor registry and the cpu executor: the host JIT's kernels on ember's thread pool.
#include "ember/fusion/executor.h"

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>

#include "ember/backends/cpu/jit/jit.h"
#include "ember/backends/cpu/jit/launch.h"

namespace ember::fusion {
namespace {

class CpuExecutor final : public Executor {
 public:
  const kl::Target& target(Device) override { return target_; }
  const kl::Renderer& renderer(Device) override { return *renderer_; }
  kl::KernelCache& cache(Device) override { return cpu::jit::host_kernel_cache(); }
  void launch(Device, const kl::Kernel&, kl::KernelFn fn, const kl::ArgPack& args, int64_t items,
              int64_t grain, const char*) override {
    if (!t_check) return (void)cpu::jit::launch(fn, args.data(), items, grain);
    const KernelCheck check = std::exchange(t_check, {});
    const cpu::jit::KernelStatus s = cpu::jit::launch(fn, args.data(), items, grain, &t_status);
    if (s.code != cpu::jit::kOk) check(s.code, s.detail);
  }
  void copy(Device, void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  const void* upload(Device, const void* host, size_t, Tensor&) override { return host; }
  void* status_word(Device, KernelCheck check) override {
    t_status = {};
    t_check = std::move(check);
    return &t_status;
  }

 private:
  // The launches of a thread run one at a time: the next one's word and check.
  static thread_local cpu::jit::KernelStatus t_status;
  static thread_local KernelCheck t_check;
  kl::Target target_ = kl::cpp_host_target();
  std::unique_ptr<kl::Renderer> renderer_ = kl::cpp_renderer(target_);
};

thread_local cpu::jit::KernelStatus CpuExecutor::t_status;
thread_local KernelCheck CpuExecutor::t_check;

constexpr size_t kBackends = 8;
std::array<std::atomic<Executor*>, kBackends>& registry() {
  static std::array<std::atomic<Executor*>, kBackends> r{};
  return r;
}

std::mutex g_observer_mu;
std::function<void(const kl::Kernel&)> g_observer;

}  // namespace

void observe_kernels(std::function<void(const kl::Kernel&)> fn) {
  std::lock_guard lock(g_observer_mu);
  g_observer = std::move(fn);
}

void notify_kernel(const kl::Kernel& k) {
  std::lock_guard lock(g_observer_mu);
  if (g_observer) g_observer(k);
}

Executor& executor_for(Device d) {
  static CpuExecutor* cpu = new CpuExecutor();  // never destroyed: flushes may run at exit
  const size_t b = size_t(d.backend());
  if (b < kBackends)
    if (Executor* e = registry()[b].load(std::memory_order_acquire)) return *e;
  return *cpu;
}

void register_executor(Backend b, Executor* e) {
  if (size_t(b) < kBackends) registry()[size_t(b)].store(e, std::memory_order_release);
}

}  // namespace ember::fusion
