// Run under `mpirun -np 2` by tests/distributed/run_probe.cmake: one rank misbehaves and the
// other must fail in time with an error naming the collective.
//   hang      rank 1 sleeps instead of joining the all_reduce (rank 0 times out)
//   exit      rank 1 dies (_exit) instead of joining it
//   mismatch  the ranks all_reduce tensors of different shapes (EMBER_DIST_DEBUG=1 catches it)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ember/ember.h>
#include <ember/distributed.h>
#include <thread>

int main(int argc, char** argv) {
  using namespace ember;
  if (argc != 2) return 2;
  const std::string mode = argv[1];
  auto& w = distributed::init();
  Tensor t = ones({w.rank() == 1 && mode == "mismatch" ? 4 : 3}, {.device = Device::flex()});
  if (w.rank() == 1 && mode == "hang") std::this_thread::sleep_for(std::chrono::seconds(60));
  if (w.rank() == 1 && mode == "exit") _exit(1);
  try {
    w.all_reduce(t).wait();
  } catch (const distributed::DistributedError& e) {
    std::printf("rank %d caught: %s\n", w.rank(), e.what());
    std::fflush(stdout);
    return 3;
  }
  std::printf("rank %d: no error\n", w.rank());
  return 0;
}
