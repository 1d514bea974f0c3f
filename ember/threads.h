#pragma once
// The number of threads the host backends (flex, cpu and oneDNN's calls from it) compute with.
// The default is the machine's core count, or EMBER_NUM_THREADS when set at start-up.

namespace ember {

/// Threads used by host ops (the calling thread counts as one).
int num_threads();
/// Sets the thread count (at least 1; 1 runs everything on the calling thread), like
/// torch::set_num_threads.
void set_num_threads(int n);

}  // namespace ember
