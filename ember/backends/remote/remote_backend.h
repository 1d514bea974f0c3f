#pragma once
// The remote backend's registration (private): ember::detail::init calls it when the build has
// the remote backend (EMBER_REMOTE).
#include <memory>

#include "ember/backends/backend.h"
#include "ember/remote.h"

namespace ember::remote {

std::unique_ptr<BackendImpl> make_remote_backend();
namespace detail {
/// Device::remote's half of connecting: the index of the connection to `url` (a fresh one, or
/// the live one opened before with the same options), with the options remote::connect passed
/// on this thread, else the environment's (EMBER_REMOTE_TOKEN, EMBER_REMOTE_CA,
/// EMBER_REMOTE_TIMEOUT). Throws DeviceError.
int open(const std::string& url);
/// Tells connection `index` its device (Device's constructor is Device::remote's).
void opened(int index, Device d);
}  // namespace detail

}  // namespace ember::remote
