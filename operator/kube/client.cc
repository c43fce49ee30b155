#include "operator/kube/client.h"

namespace ddp::controller {

const char* WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded: return "ADDED";
    case WatchEventType::kModified: return "MODIFIED";
    case WatchEventType::kDeleted: return "DELETED";
    case WatchEventType::kBookmark: return "BOOKMARK";
    case WatchEventType::kError: return "ERROR";
  }
  return "UNKNOWN";
}

StatusOr<nlohmann::json> ListAll(KubeClient& client, const Resource& r, const std::string& ns,
                                 ListOptions opts) {
  nlohmann::json all;
  for (int page = 0;; ++page) {
    StatusOr<nlohmann::json> list = client.List(r, ns, opts);
    if (!list.ok()) return list.status();
    nlohmann::json& body = *list;
    if (page == 0) {
      all = body;
      all["items"] = nlohmann::json::array();
    }
    if (body.contains("items") && body["items"].is_array()) {
      for (auto& item : body["items"]) all["items"].push_back(std::move(item));
    }
    std::string next = body.contains("metadata") ? body["metadata"].value("continue", "") : "";
    if (next.empty()) break;
    opts.continue_token = next;
  }
  if (all.contains("metadata")) all["metadata"].erase("continue");
  return all;
}

}  // namespace ddp::controller
