// FakeStore's watch side: watcher queues, replay from a resourceVersion, selector transitions,
// bookmarks, and the ways streams end.
#include <algorithm>

#include "tests/kube/fake_store.h"

namespace ddp::fake {

using json = nlohmann::json;

void Watcher::Push(std::string line) {
  std::lock_guard<std::mutex> lock(mu);
  if (closed) return;
  lines.push_back(std::move(line));
  cv.notify_all();
}

void Watcher::Close(bool cut) {
  std::lock_guard<std::mutex> lock(mu);
  closed = true;
  abrupt = abrupt || cut;
  cv.notify_all();
}

void FakeStore::DeliverLocked(const Event& e, Watcher& w) {
  if (w.collection != e.collection || (!w.ns.empty() && w.ns != e.ns)) return;
  auto labels = [](const json& o) {
    return o.is_object() && o.contains("metadata") && o["metadata"].contains("labels")
               ? o["metadata"]["labels"] : json();
  };
  bool now = MatchesLabels(w.selector, labels(e.object));
  std::string type = e.type;
  if (type == "MODIFIED") {
    bool before = MatchesLabels(w.selector, labels(e.old_object));
    if (!before && !now) return;
    if (!before) type = "ADDED";
    if (!now) type = "DELETED";  // left the selection: the watcher forgets it
  } else if (!now) {
    return;
  }
  w.Push(json{{"type", type}, {"object", e.object}}.dump() + "\n");
}

size_t FakeStore::watch_count() {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_.size();
}

std::shared_ptr<Watcher> FakeStore::Watch(const TypeInfo& t, const std::string& ns,
                                          const std::string& label_selector,
                                          const std::string& resource_version, bool bookmarks,
                                          StoreResult* err) {
  auto w = std::make_shared<Watcher>();
  std::string error;
  if (!ParseLabelSelector(label_selector, &w->selector, &error)) {
    *err = StoreResult{400, StatusBody(400, "BadRequest", error)};
    return nullptr;
  }
  w->collection = t.collection;
  w->ns = t.namespaced ? ns : "";
  w->bookmarks = bookmarks;
  std::lock_guard<std::mutex> lock(mu_);
  types_[t.collection] = t;
  *err = StoreResult{200, json()};
  if (resource_version.empty() || resource_version == "0") {
    for (auto& [key, o] : objects_[t.collection]) {
      DeliverLocked(Event{rv_, t.collection, o["metadata"].value("namespace", ""), "ADDED", o,
                          json()},
                    *w);
    }
  } else {
    int64_t from = std::atoll(resource_version.c_str());
    if (from < min_watch_rv_) {
      json status = StatusBody(410, "Expired",
                               "too old resource version: " + resource_version + " (" +
                                   std::to_string(min_watch_rv_) + ")");
      w->Push(json{{"type", "ERROR"}, {"object", status}}.dump() + "\n");
      w->Close(false);
      return w;
    }
    for (const Event& e : history_) {
      if (e.rv > from) DeliverLocked(e, *w);
    }
  }
  watchers_.push_back(w);
  return w;
}

void FakeStore::Unwatch(const std::shared_ptr<Watcher>& w) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(std::remove(watchers_.begin(), watchers_.end(), w), watchers_.end());
}

void FakeStore::SendBookmarks() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : watchers_) {
    if (!w->bookmarks) continue;
    auto it = types_.find(w->collection);
    json obj = {{"kind", it != types_.end() ? it->second.kind : ""},
                {"apiVersion", it != types_.end() ? it->second.api_version : ""},
                {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
    w->Push(json{{"type", "BOOKMARK"}, {"object", obj}}.dump() + "\n");
  }
}

void FakeStore::DropWatches(bool cut) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : watchers_) w->Close(cut);
  watchers_.clear();
}

void FakeStore::ForgetHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  history_.clear();
  min_watch_rv_ = rv_;
}

}  // namespace ddp::fake
