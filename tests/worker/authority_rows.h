// Builders for the group authority's table tests (worker/group/authority.h): pods, a formed group
// and the actions read back as text. Shared by the resize and shrink-on-loss rows.
#ifndef DDP_TESTS_WORKER_AUTHORITY_ROWS_H_
#define DDP_TESTS_WORKER_AUTHORITY_ROWS_H_

#include <string>
#include <vector>

#include "worker/group/authority.h"

namespace ddp::worker::group::rows {

using Strings = std::vector<std::string>;

inline std::string Id(const std::string& name) { return name + "/u"; }

inline PodView Pod(const std::string& name, int home) {
  PodView p;
  p.identity = Id(name);
  p.home_node = home;
  p.silent_seconds = 0.5;
  return p;
}

// `held` worker pods w0.. holding their own node ranks of a group of `held` (room for 4);
// `idle` more pods (w<held>.. created for the next ranks) registered and idle.
inline GroupView Group(int held, int idle, int desired) {
  GroupView v;
  for (int n = 0; n < held + idle; ++n) {
    const std::string name = "w" + std::to_string(n);
    v.pods[name] = Pod(name, n);
  }
  v.node_holders.assign(4, "");
  v.ever_held.assign(4, false);
  for (int n = 0; n < held; ++n) {
    v.node_holders[static_cast<size_t>(n)] = Id("w" + std::to_string(n));
    v.ever_held[static_cast<size_t>(n)] = true;
  }
  v.nodes = held;
  v.desired_nodes = desired;
  v.world = held;
  v.formed = v.ever_formed = true;
  return v;
}

// "<node rank>=<identity>" per assignment ("" identity: freed), in order.
inline Strings Assigns(const Actions& a) {
  Strings out;
  for (const auto& [node, id] : a.assign) out.push_back(std::to_string(node) + "=" + id);
  return out;
}

}  // namespace ddp::worker::group::rows

#endif  // DDP_TESTS_WORKER_AUTHORITY_ROWS_H_
