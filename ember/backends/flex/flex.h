#pragma once
// The flex backend: portable C++ kernels. Each family file registers its kernels here.
#include "ember/backends/backend.h"

namespace ember::flex {

void register_flex_creation(BackendImpl& b);
void register_flex_unary(BackendImpl& b);
void register_flex_views(BackendImpl& b);
void register_flex_binary(BackendImpl& b);
void register_flex_reduce(BackendImpl& b);
void register_flex_linalg(BackendImpl& b);
void register_flex_index(BackendImpl& b);
void register_flex_layout(BackendImpl& b);
void register_flex_nn(BackendImpl& b);
void register_flex_vision(BackendImpl& b);

/// Builds a flex-kernel backend reporting itself as `kind` (flex, and cpu until it is native).
std::unique_ptr<BackendImpl> make_flex_backend(Backend kind);

}  // namespace ember::flex
