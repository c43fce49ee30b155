// The group store's own series on the rendezvous pod's page: requests served by kind, open
// connections, connections refused, keys and bytes held. What the store costs at scale is read
// here (bench/scale/ reads them too).
#ifndef DDP_WORKER_LAUNCH_STORE_PAGE_H_
#define DDP_WORKER_LAUNCH_STORE_PAGE_H_

#include <string>

#include "worker/store/server.h"

namespace ddp::worker {

inline constexpr char kStoreRequests[] = "ddp_group_store_requests_total";
inline constexpr char kStoreConnections[] = "ddp_group_store_connections";
inline constexpr char kStoreRefused[] = "ddp_group_store_refused_connections_total";
inline constexpr char kStoreKeys[] = "ddp_group_store_keys";
inline constexpr char kStoreBytes[] = "ddp_group_store_bytes";

// Prometheus text (0.0.4) of `server`'s counters, labelled with the job and round.
std::string RenderStorePage(store::StoreServer& server, const std::string& job, int round);

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_STORE_PAGE_H_
