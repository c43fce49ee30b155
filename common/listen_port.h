// A TCP port for a server another process starts later (local mode's pods, a test's ranks).
// Picked below the kernel's ephemeral range: a port the kernel hands out for bind(0) or as an
// outgoing connection's source port (every Gloo pair takes one) can be taken between the pick
// and the child's listen(), and on a busy machine it was ("listen on 0.0.0.0:P: Address already
// in use"). Below the range only another explicit pick can take it.
#ifndef DDP_COMMON_LISTEN_PORT_H_
#define DDP_COMMON_LISTEN_PORT_H_

#include <string>
#include <utility>

#include "common/status.h"

namespace ddp {

// Pure: the ports to pick from, given the ephemeral range "lo hi" as
// /proc/sys/net/ipv4/ip_local_port_range writes it: up to 16,384 ports just below `lo` and below
// Kubernetes' default NodePort range (30000-32767), never below 1024. {0, 0} when fewer than 256 would remain, or the text does not parse: then the
// caller falls back to the kernel's choice (bind to port 0).
std::pair<int, int> ListenPortRange(const std::string& ephemeral_range);

// A port that nothing on this host is bound to now, on any address (the check binds
// 0.0.0.0:P without SO_REUSEADDR, so a port in TIME_WAIT is skipped too), drawn at random from
// ListenPortRange(the running kernel's range). Another process may still take it before the
// caller's child binds it; only one making the same kind of pick can.
StatusOr<int> PickListenPort();

}  // namespace ddp

#endif  // DDP_COMMON_LISTEN_PORT_H_
