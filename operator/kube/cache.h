// An in-memory copy of one resource type, keyed "namespace/name" and indexed by the owning job's
// key, filled by an Informer. Each cache stores only what the controller needs (a transform turns
// the API object into T), so memory grows with the operator's own objects, not with their size.
#ifndef DDP_OPERATOR_KUBE_CACHE_H_
#define DDP_OPERATOR_KUBE_CACHE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddp::controller {

// "namespace/name" of an API object ("name" for cluster-scoped ones).
std::string ObjectKey(const nlohmann::json& obj);
// metadata.resourceVersion, or "" when absent. Opaque: compare for equality only.
std::string ResourceVersionOf(const nlohmann::json& obj);
// metadata.generation (bumped by the API server on spec changes and on deletion), or 0.
int64_t GenerationOf(const nlohmann::json& obj);
// Whether `cached` is a later version of its object than `incoming`, ordered by resourceVersion
// (the API server's write order: a status write bumps it, generation stays). Kubernetes calls
// resourceVersion opaque; the API server's are decimal revisions, compared as numbers. When
// either is not a decimal number, falls back to generation (then: not newer on a tie).
bool CachedIsNewer(const nlohmann::json& cached, const nlohmann::json& incoming);
// The value of label `label_key` as a job key "namespace/<value>", or "" when absent or empty.
std::string JobKeyFromLabel(const nlohmann::json& obj, const std::string& label_key);

// What an informer feeds its cache. Implementations are thread-safe.
class InformerSink {
 public:
  virtual ~InformerSink() = default;
  // An object from a list page or an ADDED/MODIFIED watch event.
  virtual void Upsert(const nlohmann::json& obj) = 0;
  // A DELETED watch event (obj is the last state).
  virtual void Remove(const nlohmann::json& obj) = 0;
  // After a full re-list: drops every entry whose key is not in `listed` (deleted while the
  // watch was down). Returns how many were dropped.
  virtual size_t Prune(const std::unordered_set<std::string>& listed) = 0;
  // The periodic resync: re-delivers every cached object to whoever reacts to changes, from
  // memory (no request to the API server), so a handler that missed a change gets another look.
  virtual void Resync() {}
};

// Thread-safe cache of T, indexed by an index value (the job key).
// `transform` returns nullopt to skip an object (it does not belong to the cache).
// `on_change(index, old, now)` runs after every change, outside the lock; old/now are nullptr
// for an add/remove.
template <typename T>
class IndexedCache : public InformerSink {
 public:
  struct Entry {
    std::string index;
    T value;
  };
  using Transform = std::function<std::optional<Entry>(const nlohmann::json&)>;
  using OnChange = std::function<void(const std::string& index, const T* old, const T* now)>;

  IndexedCache(Transform transform, OnChange on_change)
      : transform_(std::move(transform)), on_change_(std::move(on_change)) {}

  void Upsert(const nlohmann::json& obj) override { UpsertUnless(obj, nullptr); }

  // Upsert for a writer other than the informer (the controller storing the object its write
  // returned): unless keep(current) is true, checked under the same lock as the store, so a
  // newer object the watch delivered meanwhile is not replaced by an older one. current is
  // nullptr when the key is not cached. A null `keep` always stores. Returns whether it stored.
  bool UpsertUnless(const nlohmann::json& obj, const std::function<bool(const T*)>& keep) {
    std::optional<Entry> e = transform_(obj);
    if (!e) {  // e.g. its label was removed: it left our view
      if (keep) return false;
      Remove(obj);
      return true;
    }
    std::string key = ObjectKey(obj);
    std::optional<Entry> old;
    {
      std::unique_lock<std::shared_mutex> l(mu_);
      auto it = items_.find(key);
      if (keep && keep(it == items_.end() ? nullptr : &it->second.value)) return false;
      if (it != items_.end()) {
        old = std::move(it->second);
        if (old->index != e->index) UnindexLocked(old->index, key);
        it->second = *e;
      } else {
        items_.emplace(key, *e);
      }
      index_[e->index].insert(key);
    }
    if (on_change_) {
      if (old && old->index != e->index) on_change_(old->index, &old->value, nullptr);
      on_change_(e->index, old && old->index == e->index ? &old->value : nullptr, &e->value);
    }
    return true;
  }

  void Remove(const nlohmann::json& obj) override { RemoveKey(ObjectKey(obj)); }

  // on_change(index, &value, &value) for every entry (old == now: nothing changed).
  void Resync() override {
    if (!on_change_) return;
    std::vector<Entry> all;
    {
      std::shared_lock<std::shared_mutex> l(mu_);
      all.reserve(items_.size());
      for (const auto& [key, e] : items_) all.push_back(e);
    }
    for (const Entry& e : all) on_change_(e.index, &e.value, &e.value);
  }

  size_t Prune(const std::unordered_set<std::string>& listed) override {
    std::vector<std::string> gone;
    {
      std::shared_lock<std::shared_mutex> l(mu_);
      for (const auto& [key, e] : items_) if (!listed.count(key)) gone.push_back(key);
    }
    for (const auto& key : gone) RemoveKey(key);
    return gone.size();
  }

  // Every value indexed under `index` (a copy: callers work without holding the lock).
  std::vector<T> ByIndex(const std::string& index) const {
    std::shared_lock<std::shared_mutex> l(mu_);
    std::vector<T> out;
    auto it = index_.find(index);
    if (it == index_.end()) return out;
    for (const auto& key : it->second) out.push_back(items_.at(key).value);
    return out;
  }
  std::optional<T> Get(const std::string& key) const {
    std::shared_lock<std::shared_mutex> l(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return std::nullopt;
    return it->second.value;
  }
  // Calls fn(key, value) for every entry under the lock. fn must not call back into the cache.
  void ForEach(const std::function<void(const std::string&, const T&)>& fn) const {
    std::shared_lock<std::shared_mutex> l(mu_);
    for (const auto& [key, e] : items_) fn(key, e.value);
  }
  // Calls fn(index, value) for every entry under the lock. fn must not call back into the cache.
  void ForEachWithIndex(const std::function<void(const std::string&, const T&)>& fn) const {
    std::shared_lock<std::shared_mutex> l(mu_);
    for (const auto& [key, e] : items_) fn(e.index, e.value);
  }
  size_t Size() const {
    std::shared_lock<std::shared_mutex> l(mu_);
    return items_.size();
  }

 private:
  void RemoveKey(const std::string& key) {
    std::optional<Entry> old;
    {
      std::unique_lock<std::shared_mutex> l(mu_);
      auto it = items_.find(key);
      if (it == items_.end()) return;
      old = std::move(it->second);
      items_.erase(it);
      UnindexLocked(old->index, key);
    }
    if (on_change_) on_change_(old->index, &old->value, nullptr);
  }
  void UnindexLocked(const std::string& index, const std::string& key) {
    auto it = index_.find(index);
    if (it == index_.end()) return;
    it->second.erase(key);
    if (it->second.empty()) index_.erase(it);
  }

  const Transform transform_;
  const OnChange on_change_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Entry> items_;
  std::unordered_map<std::string, std::set<std::string>> index_;
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_CACHE_H_
