// Fuzzes the remote protocol's decoder and a server session fed untrusted frames: any bytes must
// either run or end in an ember::Error (a ProtocolError closes the session), never a crash, and
// a session's views stay inside their storages whatever sizes, strides and offsets a client
// sends. An input that begins with the byte 0xEE gets a valid Hello in its place, so it reaches
// the session's uploads, downloads, frees and calls (the seeds stay valid when ops are added and
// the Hello's op-table hash changes).
#include <cstdint>
#include <span>

#include "ember/backends/remote/protocol.h"
#include "ember/backends/remote/session.h"
#include "ember/ember.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::span<const uint8_t> frame(data, size);
  fuzz::run([&] {
    remote::Decoder d(frame);
    remote::Message m;
    while (d.next(m)) {
    }
  });
  std::vector<uint8_t> greeted;
  if (size && data[0] == 0xEE) {
    remote::Encoder(greeted).hello();
    greeted.insert(greeted.end(), data + 1, data + size);
  }
  const std::span<const uint8_t> session_frame = greeted.empty() ? frame : std::span<const uint8_t>(greeted);
  fuzz::run([&] {
    ember::detail::init();
    remote::Limits limits;
    limits.max_tensor_bytes = 1 << 20;
    limits.max_session_bytes = 4 << 20;
    remote::Session s(Device::flex(), limits, nullptr);
    auto drop = [](void*, std::vector<uint8_t>& f, std::span<const uint8_t>) { f.clear(); };
    s.on_frame(session_frame, drop, nullptr);
  });
  return 0;
}
