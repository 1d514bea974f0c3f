#include "ember/data/loader.h"

#include "ember/ops/layout.h"

namespace ember::data {

std::pair<Tensor, Tensor> StackBatcher::operator()(
    const std::vector<std::pair<Tensor, Tensor>>& items) const {
  TensorList xs, ys;
  xs.reserve(items.size());
  ys.reserve(items.size());
  for (auto& [x, y] : items) xs.push_back(x), ys.push_back(y);
  return {stack(xs), stack(ys)};
}

Tensor StackBatcher::operator()(const std::vector<Tensor>& items) const { return stack(items); }

namespace detail {
void check_loader_options(const LoaderOptions& o) {
  auto bad = [](const std::string& m) { throw ValueError("[DataLoader] " + m); };
  if (o.batch_size < 1) bad("expected batch_size >= 1, found " + std::to_string(o.batch_size));
  if (o.workers < 0) bad("expected workers >= 0, found " + std::to_string(o.workers));
  if (o.prefetch < 1) bad("expected prefetch >= 1, found " + std::to_string(o.prefetch));
}

int64_t batch_count(int64_t n, int64_t batch_size, bool drop_last) {
  if (n < 0)
    throw ValueError("[DataLoader] expected a dataset of size >= 0, found " + std::to_string(n));
  return n / batch_size + (!drop_last && n % batch_size != 0);
}

void check_start_batch(int64_t start, int64_t batches) {
  if (start < 0 || start > batches)
    throw IndexError("[DataLoader] expected a start batch in [0, " + std::to_string(batches) +
                     "], found " + std::to_string(start));
}

std::vector<int64_t> epoch_order(int64_t n, const LoaderOptions& o, uint64_t epoch) {
  batch_count(n, o.batch_size, o.drop_last);  // refuses a negative size before allocating
  if (!o.shuffle) {
    std::vector<int64_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
    return p;
  }
  if (o.generator) {
    const auto [seed, counter] = o.generator->next();
    SplitMix64 mix{seed ^ (0xD1B54A32D192ED03ull * (counter + 1))};
    return permutation(n, mix.next());
  }
  // One generator draw mixes seed and epoch so neighbouring epochs get unrelated orders.
  SplitMix64 mix{o.seed ^ (0xD1B54A32D192ED03ull * (epoch + 1))};
  return permutation(n, mix.next());
}
}  // namespace detail

}  // namespace ember::data
