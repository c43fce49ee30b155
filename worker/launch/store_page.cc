// The store's series (see store_page.h), written by prometheus-cpp through common/prometheus.h:
// a registry per page, filled from the server's counters.
#include "worker/launch/store_page.h"

#include "common/prometheus.h"
#include "worker/store/wire.h"

namespace ddp::worker {

std::string RenderStorePage(store::StoreServer& server, const std::string& job, int round) {
  const store::StoreStats st = server.state().Stats();
  const std::string round_text = std::to_string(round);
  metrics::Registry reg;
  auto& requests = reg.AddCounter(
      kStoreRequests,
      "Requests the group's store served, by kind and by who asked: the pods over the network, "
      "or the rendezvous pod's own authority in process.",
      {"job", "round", "op", "from"});
  for (int op = 1; op < store::kOpCount; ++op) {
    const auto i = static_cast<size_t>(op);
    const std::string kind = store::OpName(static_cast<store::Op>(op));
    requests.Labels({job, round_text, kind, "network"}).Inc(static_cast<double>(st.requests[i]));
    requests.Labels({job, round_text, kind, "process"}).Inc(static_cast<double>(st.in_process[i]));
  }
  reg.AddGauge(kStoreConnections, "Connections open to the group's store.", {"job", "round"})
      .Labels({job, round_text})
      .Set(static_cast<double>(server.open_connections()));
  reg.AddCounter(kStoreRefused, "Connections the store closed unheard (bounds, bad greetings).",
                 {"job", "round"})
      .Labels({job, round_text})
      .Inc(static_cast<double>(server.refused()));
  reg.AddGauge(kStoreKeys, "Keys the group's store holds.", {"job", "round"})
      .Labels({job, round_text})
      .Set(static_cast<double>(st.keys));
  reg.AddGauge(kStoreBytes, "Bytes of keys and values the group's store holds.", {"job", "round"})
      .Labels({job, round_text})
      .Set(static_cast<double>(st.bytes));
  return reg.Render();
}

}  // namespace ddp::worker
