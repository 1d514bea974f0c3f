#include "ember/threads.h"

#include "ember/backends/flex/thread_pool.h"

namespace ember {
int num_threads() { return flex::num_threads(); }
void set_num_threads(int n) { flex::set_num_threads(n); }
}  // namespace ember
