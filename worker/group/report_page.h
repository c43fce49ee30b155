// The rendezvous pod's own /metrics series (common/group_contract.h names them), rendered from the
// authority's GroupReport. Pure text; the process that serves it is launch/rendezvous_pod.h.
#ifndef DDP_WORKER_GROUP_REPORT_PAGE_H_
#define DDP_WORKER_GROUP_REPORT_PAGE_H_

#include <string>

#include "worker/group/authority_loop.h"

namespace ddp::worker::group {

// The rendezvous page's own series (Prometheus text), without rank 0's.
std::string RenderGroupReport(const GroupReport& r, const std::string& job, int round);

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_REPORT_PAGE_H_
