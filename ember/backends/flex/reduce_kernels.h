#pragma once
// The flex reduction family's files, tied together (private): reduce.cpp registers the rest.
#include "ember/backends/backend.h"

namespace ember::flex {

/// max/min with a dim ((values, indices)) and argmax/argmin (reduce_index.cpp).
TensorList k_index_reduce(const OpCall& c);
/// var, std, logsumexp, norm (reduce_stats.cpp).
void register_flex_reduce_stats(BackendImpl& b);
/// cumsum, cumprod, cummax, cummin (scan.cpp).
void register_flex_scan(BackendImpl& b);
/// sort, argsort, topk, kthvalue, median (sort.cpp).
void register_flex_sort(BackendImpl& b);

}  // namespace ember::flex
