// The store's series (see store_page.h).
#include "worker/launch/store_page.h"

#include <sstream>

#include "worker/store/wire.h"

namespace ddp::worker {

std::string RenderStorePage(store::StoreServer& server, const std::string& job, int round) {
  const store::StoreStats st = server.state().Stats();
  std::string quoted;
  for (char c : job) {
    if (c == '"' || c == '\\') quoted.push_back('\\');
    quoted.push_back(c == '\n' ? ' ' : c);
  }
  const std::string common = "job=\"" + quoted + "\",round=\"" + std::to_string(round) + "\"";
  std::ostringstream o;
  o << "# HELP " << kStoreRequests
    << " Requests the group's store served, by kind and by who asked: the pods over the network,"
       " or the rendezvous pod's own authority in process.\n# TYPE "
    << kStoreRequests << " counter\n";
  for (int op = 1; op < store::kOpCount; ++op) {
    const auto i = static_cast<size_t>(op);
    const std::string kind = store::OpName(static_cast<store::Op>(op));
    o << kStoreRequests << "{" << common << ",op=\"" << kind << "\",from=\"network\"} "
      << st.requests[i] << "\n";
    o << kStoreRequests << "{" << common << ",op=\"" << kind << "\",from=\"process\"} "
      << st.in_process[i] << "\n";
  }
  auto one = [&](const char* name, const char* type, const char* help, int64_t v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
      << name << "{" << common << "} " << v << "\n";
  };
  one(kStoreConnections, "gauge", "Connections open to the group's store.", server.open_connections());
  one(kStoreRefused, "counter", "Connections the store closed unheard (bounds, bad greetings).",
      server.refused());
  one(kStoreKeys, "gauge", "Keys the group's store holds.", st.keys);
  one(kStoreBytes, "gauge", "Bytes of keys and values the group's store holds.", st.bytes);
  return o.str();
}

}  // namespace ddp::worker
