// A child process for the JIT tests: asks the kernel cache for one tiny kernel (the tag picks
// which), waits for it, runs it, and writes what happened to a result file:
//   ok=1 ran=1 compiles=0 disk_hits=1 memory_hits=0 failures=0 persistent=1 request_us=180
// Usage: jit_probe RESULT_FILE TAG [--drop-dac] [--assume-noexec]
//   --drop-dac       drop the capabilities that let root ignore file permissions, so a chmod'ed
//                    directory is unwritable even when the tests run as root
//   --assume-noexec  treat the cache directory as mounted noexec
// The compiler and the cache directory come from the environment, as in any ember program.
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "ember/backends/cpu/jit/jit.h"
#include "jit/jit_test_util.h"

namespace {

void drop_dac_capabilities() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return;
  for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER}) {
    data[cap / 32].effective &= ~(1u << (cap % 32));
    data[cap / 32].permitted &= ~(1u << (cap % 32));
    data[cap / 32].inheritable &= ~(1u << (cap % 32));
  }
  syscall(SYS_capset, &hdr, data);  // single-threaded still: every later thread inherits this
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string result = argv[1];
  const int tag = std::atoi(argv[2]);
  bool noexec = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--drop-dac") == 0) drop_dac_capabilities();
    if (std::strcmp(argv[i], "--assume-noexec") == 0) noexec = true;
  }
  std::unique_ptr<ember::kl::KernelCache> own;
  if (noexec) {
    ember::kl::KernelCacheOptions o;
    o.assume_noexec = true;
    own = std::make_unique<ember::kl::KernelCache>(ember::cpu::jit::host_toolchain(), o);
  }
  ember::kl::KernelCache& cache = own ? *own : ember::cpu::jit::host_kernel_cache();

  auto t0 = std::chrono::steady_clock::now();
  auto h = cache.request("tiny-" + std::to_string(tag), ember::test::tiny_source(tag), {"axpb"});
  bool ready_at_once = h.ready();
  auto us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0);
  const ember::kl::KernelSet& set = h.get();
  bool ran = ember::test::tiny_kernel_works(set, tag);
  ember::kl::CacheStats s = cache.stats();
  std::FILE* f = std::fopen(result.c_str(), "w");
  if (!f) return 3;
  std::fprintf(f,
               "ok=%d ran=%d compiles=%lld disk_hits=%lld memory_hits=%lld failures=%lld "
               "persistent=%d ready_at_once=%d request_us=%.0f\n",
               int(set.ok), int(ran), (long long)s.compiles, (long long)s.disk_hits,
               (long long)s.memory_hits, (long long)s.failures, int(cache.persistent()),
               int(ready_at_once), us.count());
  std::fclose(f);
  return 0;
}
