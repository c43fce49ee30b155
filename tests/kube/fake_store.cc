#include "tests/kube/fake_store.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>

namespace ddp::fake {
namespace {

using json = nlohmann::json;

std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

std::string NowRfc3339(std::chrono::system_clock::time_point t = std::chrono::system_clock::now()) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// DNS-1123 subdomain, the rule for most object names.
bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return std::isalnum(static_cast<unsigned char>(name.front())) &&
         std::isalnum(static_cast<unsigned char>(name.back()));
}

std::string RvString(const json& obj) {
  const json& md = obj.contains("metadata") ? obj["metadata"] : json();
  return md.is_object() && md.contains("resourceVersion") && md["resourceVersion"].is_string()
             ? md["resourceVersion"].get<std::string>()
             : "";
}

StoreResult Error(int code, const std::string& reason, const std::string& message) {
  return StoreResult{code, StatusBody(code, reason, message)};
}

StoreResult NotFound(const TypeInfo& t, const std::string& name) {
  return Error(404, "NotFound", t.plural + " \"" + name + "\" not found");
}

StoreResult ConflictError(const TypeInfo& t, const std::string& name, const std::string& why) {
  return Error(409, "Conflict",
               "Operation cannot be fulfilled on " + t.plural + " \"" + name + "\": " + why);
}

}  // namespace

json StatusBody(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason}, {"code", code}};
}

FakeStore::FakeStore(Options options) : options_(options) {}

int64_t FakeStore::resource_version() {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

void FakeStore::EmitLocked(const std::string& type, const std::string& collection,
                           const std::string& ns, const json& obj, const json& old_obj) {
  Event e{rv_, collection, ns, type, obj, old_obj};
  for (auto& w : watchers_) DeliverLocked(e, *w);
  history_.push_back(std::move(e));
  while (history_.size() > options_.history_limit) {
    min_watch_rv_ = history_.front().rv;
    history_.pop_front();
  }
}

StoreResult FakeStore::Create(const TypeInfo& t, const std::string& ns, json obj) {
  std::lock_guard<std::mutex> lock(mu_);
  types_[t.collection] = t;
  if (!obj.is_object()) return Error(400, "BadRequest", "the body is not a JSON object");
  json& md = obj["metadata"];
  if (!md.is_object()) md = json::object();
  std::string name = md.value("name", "");
  if (name.empty() && md.contains("generateName")) {
    static std::mt19937 rng(12345);
    const char* alphabet = "bcdfghjklmnpqrstvwxz2456789";
    name = md["generateName"].get<std::string>();
    for (int i = 0; i < 5; ++i) name.push_back(alphabet[rng() % 27]);
  }
  if (!ValidName(name)) {
    return Error(422, "Invalid",
                 t.kind + " \"" + name + "\" is invalid: metadata.name: Invalid value: \"" + name +
                     "\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                     "characters, '-' or '.'");
  }
  if (t.namespaced && ns.empty()) return Error(400, "BadRequest", "the namespace is required");
  if (t.namespaced && md.contains("namespace") && md["namespace"] != ns) {
    return Error(400, "BadRequest", "the namespace of the object does not match the request");
  }
  auto& coll = objects_[t.collection];
  if (coll.count(Key(ns, name))) {
    return Error(409, "AlreadyExists", t.plural + " \"" + name + "\" already exists");
  }
  md["name"] = name;
  if (t.namespaced) md["namespace"] = ns;
  md["uid"] = "uid-" + std::to_string(++uid_counter_);
  md["creationTimestamp"] = NowRfc3339();
  md["generation"] = 1;
  md.erase("deletionTimestamp");
  md["resourceVersion"] = std::to_string(NextRvLocked());
  obj["kind"] = t.kind;
  obj["apiVersion"] = t.api_version;
  if (t.status_subresource) obj.erase("status");
  if (t.plural == "pods" && t.api_version == "v1") obj["status"] = {{"phase", "Pending"}};
  coll[Key(ns, name)] = obj;
  EmitLocked("ADDED", t.collection, ns, obj, json());
  return StoreResult{201, obj};
}

StoreResult FakeStore::Get(const TypeInfo& t, const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& coll = objects_[t.collection];
  auto it = coll.find(Key(ns, name));
  if (it == coll.end()) return NotFound(t, name);
  return StoreResult{200, it->second};
}

StoreResult FakeStore::List(const TypeInfo& t, const std::string& ns,
                            const std::string& label_selector, int64_t limit,
                            const std::string& continue_token) {
  std::vector<LabelRequirement> sel;
  std::string err;
  if (!ParseLabelSelector(label_selector, &sel, &err)) return Error(400, "BadRequest", err);
  std::lock_guard<std::mutex> lock(mu_);
  std::string after;
  if (!continue_token.empty()) {
    size_t colon = continue_token.find(':');
    int64_t token_rv = std::atoll(continue_token.substr(0, colon).c_str());
    if (colon == std::string::npos) return Error(400, "BadRequest", "invalid continue token");
    if (token_rv < min_watch_rv_) {
      return Error(410, "Expired",
                   "The provided continue parameter is too old to display a consistent list "
                   "result. You can start a new list without the continue parameter.");
    }
    after = continue_token.substr(colon + 1);
  }
  json items = json::array();
  std::string next;
  auto& coll = objects_[t.collection];
  for (auto it = after.empty() ? coll.begin() : coll.upper_bound(after); it != coll.end(); ++it) {
    const json& o = it->second;
    if (t.namespaced && !ns.empty() && o["metadata"].value("namespace", "") != ns) continue;
    json labels = o["metadata"].contains("labels") ? o["metadata"]["labels"] : json();
    if (!MatchesLabels(sel, labels)) continue;
    if (limit > 0 && static_cast<int64_t>(items.size()) == limit) {
      next = std::to_string(rv_) + ":" + items.back()["metadata"].value("namespace", "") + "/" +
             items.back()["metadata"].value("name", "");
      break;
    }
    items.push_back(o);
  }
  json md = {{"resourceVersion", std::to_string(rv_)}};
  if (!next.empty()) md["continue"] = next;
  return StoreResult{200, json{{"kind", t.kind + "List"}, {"apiVersion", t.api_version},
                               {"metadata", md}, {"items", items}}};
}

// Writes `updated` over the stored object, following the rules of the main resource or of the
// status subresource. expected_rv: "" skips the optimistic-concurrency check.
StoreResult FakeStore::StoreWriteLocked(const TypeInfo& t, const std::string& ns,
                                        const std::string& name, json updated,
                                        const std::string& expected_rv, bool status_only) {
  auto& coll = objects_[t.collection];
  auto it = coll.find(Key(ns, name));
  if (it == coll.end()) return NotFound(t, name);
  json& cur = it->second;
  if (!expected_rv.empty() && expected_rv != RvString(cur)) {
    return ConflictError(t, name,
                         "the object has been modified; please apply your changes to the latest "
                         "version and try again");
  }
  if (!updated.is_object()) return Error(400, "BadRequest", "the body is not a JSON object");
  json next;
  if (status_only) {
    next = cur;
    if (updated.contains("status")) next["status"] = updated["status"]; else next.erase("status");
  } else {
    next = updated;
    if (t.status_subresource) {
      if (cur.contains("status")) next["status"] = cur["status"]; else next.erase("status");
    }
    // Server-owned metadata survives whatever the client sent.
    json& md = next["metadata"];
    if (!md.is_object()) md = json::object();
    for (const char* k : {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation"}) {
      if (cur["metadata"].contains(k)) md[k] = cur["metadata"][k]; else md.erase(k);
    }
    next["kind"] = t.kind;
    next["apiVersion"] = t.api_version;
  }
  if (next == cur) return StoreResult{200, cur};  // no-op writes do not bump the RV
  int64_t gen = cur["metadata"].value("generation", 1);
  if (SpecChanged(cur, next)) ++gen;
  next["metadata"]["generation"] = gen;
  next["metadata"]["resourceVersion"] = std::to_string(NextRvLocked());
  json old = cur;
  cur = next;
  EmitLocked("MODIFIED", t.collection, ns, cur, old);
  // An object waiting only for its finalizers goes once they are gone.
  const json& md = cur["metadata"];
  if (md.contains("deletionTimestamp") &&
      (!md.contains("finalizers") || md["finalizers"].empty()) &&
      !graces_.count({t.collection, Key(ns, name)})) {
    json result = cur;
    RemoveLocked(t.collection, ns, name, "Background");
    return StoreResult{200, result};
  }
  return StoreResult{200, cur};
}

StoreResult FakeStore::Update(const TypeInfo& t, const std::string& ns, const std::string& name,
                              json obj, bool status_only) {
  std::lock_guard<std::mutex> lock(mu_);
  types_[t.collection] = t;
  if (obj.is_object() && obj.contains("metadata") && obj["metadata"].contains("name") &&
      obj["metadata"]["name"] != name) {
    return Error(400, "BadRequest", "the name of the object does not match the name in the URL");
  }
  std::string rv = RvString(obj);
  return StoreWriteLocked(t, ns, name, std::move(obj), rv, status_only);
}

StoreResult FakeStore::Patch(const TypeInfo& t, const std::string& ns, const std::string& name,
                             const json& patch, bool status_only) {
  std::lock_guard<std::mutex> lock(mu_);
  types_[t.collection] = t;
  auto& coll = objects_[t.collection];
  auto it = coll.find(Key(ns, name));
  if (it == coll.end()) return NotFound(t, name);
  if (!patch.is_object()) return Error(400, "BadRequest", "the merge patch is not a JSON object");
  // A resourceVersion inside the patch is a precondition, as in Kubernetes.
  std::string rv = RvString(patch);
  json merged = MergePatch(it->second, patch);
  return StoreWriteLocked(t, ns, name, std::move(merged), rv, status_only);
}

StoreResult FakeStore::Delete(const TypeInfo& t, const std::string& ns, const std::string& name,
                              const json& opts) {
  std::lock_guard<std::mutex> lock(mu_);
  types_[t.collection] = t;
  auto& coll = objects_[t.collection];
  auto it = coll.find(Key(ns, name));
  if (it == coll.end()) return NotFound(t, name);
  json& cur = it->second;
  const json& md = cur["metadata"];
  if (opts.is_object() && opts.contains("preconditions") && opts["preconditions"].is_object()) {
    const json& pre = opts["preconditions"];
    if (pre.contains("uid") && pre["uid"].is_string() && pre["uid"] != md["uid"]) {
      return ConflictError(t, name,
                           "Precondition failed: UID in precondition: " +
                               pre["uid"].get<std::string>() + ", UID in object meta: " +
                               md["uid"].get<std::string>());
    }
    if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string() &&
        pre["resourceVersion"] != md["resourceVersion"]) {
      return ConflictError(t, name,
                           "Precondition failed: ResourceVersion in precondition: " +
                               pre["resourceVersion"].get<std::string>() +
                               ", ResourceVersion in object meta: " +
                               md["resourceVersion"].get<std::string>());
    }
  }
  std::string propagation =
      opts.is_object() ? opts.value("propagationPolicy", "Background") : "Background";
  bool explicit_grace = opts.is_object() && opts.contains("gracePeriodSeconds") &&
                        opts["gracePeriodSeconds"].is_number();
  std::chrono::milliseconds grace =
      explicit_grace ? std::chrono::milliseconds(opts["gracePeriodSeconds"].get<int64_t>() * 1000)
                     : options_.pod_grace;
  bool is_pod = t.plural == "pods" && t.api_version == "v1";
  bool has_finalizers = md.contains("finalizers") && !md["finalizers"].empty();
  bool graceful = is_pod && grace.count() > 0;
  if (graceful || has_finalizers) {
    auto gkey = std::make_pair(t.collection, Key(ns, name));
    if (md.contains("deletionTimestamp")) {
      if (!(is_pod && explicit_grace && grace.count() == 0)) return StoreResult{200, cur};
      graces_.erase(gkey);  // a forced delete ends the grace now
    } else {
      json old = cur;
      auto when = std::chrono::system_clock::now() + grace;
      cur["metadata"]["deletionTimestamp"] =
          NowRfc3339(std::chrono::time_point_cast<std::chrono::system_clock::duration>(when));
      cur["metadata"]["deletionGracePeriodSeconds"] = (grace.count() + 999) / 1000;
      cur["metadata"]["resourceVersion"] = std::to_string(NextRvLocked());
      if (graceful) graces_[gkey] = std::chrono::steady_clock::now() + grace;
      EmitLocked("MODIFIED", t.collection, ns, cur, old);
      return StoreResult{200, cur};
    }
    if (has_finalizers) return StoreResult{200, cur};
  }
  return RemoveLocked(t.collection, ns, name, propagation);
}

StoreResult FakeStore::RemoveLocked(const std::string& collection, const std::string& ns,
                                    const std::string& name, const std::string& propagation) {
  auto& coll = objects_[collection];
  auto it = coll.find(Key(ns, name));
  if (it == coll.end()) return Error(404, "NotFound", "\"" + name + "\" not found");
  json obj = std::move(it->second);
  coll.erase(it);
  graces_.erase({collection, Key(ns, name)});
  obj["metadata"]["resourceVersion"] = std::to_string(NextRvLocked());
  EmitLocked("DELETED", collection, ns, obj, json());
  if (propagation == "Orphan") return StoreResult{200, obj};
  // Background garbage collection: dependents go after the owner. Foreground is treated the
  // same (the owner does not wait for its dependents here).
  std::string uid = obj["metadata"].value("uid", "");
  std::vector<std::pair<std::string, std::string>> dependents;  // collection, name
  for (auto& [c, objs] : objects_) {
    for (auto& [key, o] : objs) {
      if (o["metadata"].value("namespace", "") != ns || !o["metadata"].contains("ownerReferences")) {
        continue;
      }
      for (const json& ref : o["metadata"]["ownerReferences"]) {
        if (ref.is_object() && ref.value("uid", "") == uid) {
          dependents.emplace_back(c, o["metadata"].value("name", ""));
          break;
        }
      }
    }
  }
  for (auto& [c, n] : dependents) {
    auto tit = types_.find(c);
    TypeInfo t = tit != types_.end() ? tit->second : TypeInfo{c, "", "", "", true, false};
    bool is_pod = t.plural == "pods" && t.api_version == "v1";
    json& dep = objects_[c][Key(ns, n)];
    if (is_pod && options_.pod_grace.count() > 0) {
      if (dep["metadata"].contains("deletionTimestamp")) continue;
      json old = dep;
      dep["metadata"]["deletionTimestamp"] = NowRfc3339();
      dep["metadata"]["deletionGracePeriodSeconds"] = (options_.pod_grace.count() + 999) / 1000;
      dep["metadata"]["resourceVersion"] = std::to_string(NextRvLocked());
      graces_[{c, Key(ns, n)}] = std::chrono::steady_clock::now() + options_.pod_grace;
      EmitLocked("MODIFIED", c, ns, dep, old);
    } else {
      RemoveLocked(c, ns, n, "Background");
    }
  }
  return StoreResult{200, obj};
}

StoreResult FakeStore::Mutate(const std::string& collection, const std::string& ns,
                              const std::string& name, const std::function<void(json&)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& coll = objects_[collection];
  auto it = coll.find(Key(ns, name));
  if (it == coll.end()) return Error(404, "NotFound", collection + " " + Key(ns, name) + " not found");
  json old = it->second;
  fn(it->second);
  json& cur = it->second;
  int64_t gen = old["metadata"].value("generation", 1);
  if (SpecChanged(old, cur)) ++gen;
  cur["metadata"]["generation"] = gen;
  cur["metadata"]["resourceVersion"] = std::to_string(NextRvLocked());
  EmitLocked("MODIFIED", collection, ns, cur, old);
  return StoreResult{200, cur};
}

StoreResult FakeStore::Remove(const std::string& collection, const std::string& ns,
                              const std::string& name, const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!uid.empty()) {
    auto& coll = objects_[collection];
    auto it = coll.find(Key(ns, name));
    if (it != coll.end() && it->second["metadata"].value("uid", "") != uid) {
      return Error(409, "Conflict", "\"" + name + "\" is another incarnation than " + uid);
    }
  }
  return RemoveLocked(collection, ns, name, "Background");
}

bool FakeStore::KubeletConfirmsLocked(const json& pod) {
  const json& spec = pod.contains("spec") ? pod["spec"] : json();
  if (!spec.is_object() || !spec.contains("nodeName") || !spec["nodeName"].is_string()) {
    return true;  // unbound: no kubelet involved
  }
  auto& nodes = objects_["/api/v1/nodes"];
  auto it = nodes.find(Key("", spec["nodeName"].get<std::string>()));
  if (it == nodes.end()) return false;
  const json& status = it->second.contains("status") ? it->second["status"] : json();
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array()) {
    return false;
  }
  for (const json& c : status["conditions"]) {
    if (c.is_object() && c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

int FakeStore::ReapExpired() {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, std::string>> due;
  for (auto& [key, when] : graces_) {
    if (when > now) continue;
    // A grace entry always names the object now under that name: removal drops the entry.
    auto& coll = objects_[key.first];
    auto it = coll.find(key.second);
    if (it != coll.end() && KubeletConfirmsLocked(it->second)) due.push_back(key);
  }
  for (auto& [collection, key] : due) {
    size_t slash = key.find('/');
    RemoveLocked(collection, key.substr(0, slash), key.substr(slash + 1), "Background");
  }
  return static_cast<int>(due.size());
}

std::vector<json> FakeStore::Objects(const std::string& collection, const std::string& ns) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> out;
  for (auto& [key, o] : objects_[collection]) {
    if (ns.empty() || o["metadata"].value("namespace", "") == ns) out.push_back(o);
  }
  return out;
}

}  // namespace ddp::fake
