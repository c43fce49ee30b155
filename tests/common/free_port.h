// A free TCP port for a test's server or rendezvous, started later. Header-only.
#ifndef DDP_TESTS_COMMON_FREE_PORT_H_
#define DDP_TESTS_COMMON_FREE_PORT_H_

#include "common/listen_port.h"

namespace ddp::testing {

// A port below the kernel's ephemeral range that was free a moment ago (common/listen_port.h):
// an outgoing connection or a bind(0) elsewhere cannot take it before the test's server binds
// it. Returns -1 when no port could be had.
inline int FreePort() {
  auto port = PickListenPort();
  return port.ok() ? *port : -1;
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_COMMON_FREE_PORT_H_
