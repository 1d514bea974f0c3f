// A child process for the fusion process tests: runs a few fused steps on Device::cpu() (an
// elementwise chain, a fused reduction, softmax, an in-place update), waiting for kernels, checks
// each result against Device::cpu().eager(), and writes what happened to a result file:
//   ok=1 fused_kernels=4 eager_ops=0 compiles=1 disk_hits=0 failures=0
// Usage: fusion_probe RESULT_FILE. The compiler and the cache directory come from the
// environment (EMBER_CXX, EMBER_CACHE_DIR), as in any ember program.
#include <cstdio>

#include "ember/backends/cpu/jit/jit.h"
#include "ember/ember.h"
#include "ember/fusion.h"

using namespace ember;

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  fusion::set_wait_for_kernels(true);
  manual_seed(5);
  Tensor xf = randn({257, 33});
  auto steps = [](const Tensor& x, Tensor p) {
    Tensor a = (x * 2 + 1).relu() * x;
    Tensor b = ((x - 0.5).abs() * 3).sum({1});
    Tensor c = softmax(x * 0.25, 1);
    p.mul_(0.9).add_(x, 0.1);
    return std::vector<Tensor>{a, b, c, p};
  };
  fusion::reset_stats();
  std::vector<Tensor> lazy = steps(xf.to(Device::cpu()), xf.to(Device::cpu()) * 1.0);
  synchronize(Device::cpu());
  const fusion::Stats s = fusion::stats();
  std::vector<Tensor> eager = steps(xf.to(Device::cpu().eager()), xf.to(Device::cpu().eager()));
  bool ok = true;
  for (size_t i = 0; i < lazy.size(); ++i)
    ok = ok && allclose(lazy[i].to(Device::flex()), eager[i].to(Device::flex()), 1e-5, 1e-5);
  const kl::CacheStats c = cpu::jit::host_kernel_cache().stats();
  std::FILE* f = std::fopen(argv[1], "w");
  if (!f) return 3;
  std::fprintf(f, "ok=%d fused_kernels=%lld eager_ops=%lld compiles=%lld disk_hits=%lld failures=%lld\n",
               int(ok), (long long)s.fused_kernels, (long long)s.eager_ops, (long long)c.compiles,
               (long long)c.disk_hits, (long long)c.failures);
  std::fclose(f);
  return ok ? 0 : 1;
}
