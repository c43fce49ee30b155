// The group store's frames as its server reads them from anyone who reaches the port
// (worker/store/wire.h). Besides not crashing: a body that decodes re-encodes to the same bytes
// (nothing is read that the encoder would not write), and nothing decoded passes the bounds.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "worker/store/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ddp::store;
  Request r;
  if (DecodeRequest(data, size, &r).ok()) {
    for (const auto& k : r.keys) {
      if (k.size() > kMaxKeyBytes) std::abort();
    }
    if (r.keys.size() > kMaxKeysPerRequest || r.value.size() > kMaxValueBytes ||
        r.expected.size() > kMaxValueBytes || r.wait_ms > kMaxWaitMs) {
      std::abort();
    }
    const std::string again = EncodeRequest(r);
    if (again.size() != size + 4 || std::memcmp(again.data() + 4, data, size) != 0) std::abort();
  }
  Reply reply;
  if (DecodeReply(data, size, &reply).ok()) {
    const std::string again = EncodeReply(reply);
    if (again.size() != size + 4 || std::memcmp(again.data() + 4, data, size) != 0) std::abort();
  }
  if (size >= 4) {
    uint32_t len = 0;
    if (FrameLength(data, &len).ok() && (len == 0 || len > kMaxFrameBytes)) std::abort();
  }
  return 0;
}
