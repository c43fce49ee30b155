// Pod object -> the process local mode starts for it.
#include "operator/local/pod_process.h"

#include "operator/plan/builders.h"
#include "common/group_contract.h"
#include "operator/plan/env.h"

namespace ddp::controller::local {
namespace {

using Json = nlohmann::json;

const std::string* Lookup(const std::vector<std::pair<std::string, std::string>>& env,
                          const std::string& name) {
  for (auto it = env.rbegin(); it != env.rend(); ++it) {  // a later duplicate wins, as in k8s
    if (it->first == name) return &it->second;
  }
  return nullptr;
}

// metadata.labels['key'] -> the label's value.
bool ResolveFieldRef(const Json& pod, const std::string& path, std::string* out) {
  const Json& meta = pod.value("metadata", Json::object());
  if (path == "metadata.name") {
    *out = meta.value("name", "");
    return true;
  }
  if (path == "metadata.uid") {
    *out = meta.value("uid", "");
    return true;
  }
  if (path == "metadata.namespace") {
    *out = meta.value("namespace", "");
    return true;
  }
  if (path == "status.podIP" || path == "status.hostIP") {
    *out = "127.0.0.1";
    return true;
  }
  if (path == "spec.nodeName") {
    *out = "localhost";
    return true;
  }
  for (const char* field : {"labels", "annotations"}) {
    std::string prefix = std::string("metadata.") + field + "['";
    if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() + 2 &&
        path.compare(path.size() - 2, 2, "']") == 0) {
      std::string key = path.substr(prefix.size(), path.size() - prefix.size() - 2);
      const Json& map = meta.value(field, Json::object());
      *out = map.contains(key) && map[key].is_string() ? map[key].get<std::string>() : "";
      return true;
    }
  }
  return false;
}

}  // namespace

std::string ExpandVars(const std::string& text,
                       const std::vector<std::pair<std::string, std::string>>& env) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    if (text[i + 1] == '$') {  // $$ -> $
      out += '$';
      ++i;
      continue;
    }
    size_t close = text[i + 1] == '(' ? text.find(')', i + 2) : std::string::npos;
    if (close == std::string::npos) {
      out += text[i];
      continue;
    }
    std::string name = text.substr(i + 2, close - i - 2);
    const std::string* value = Lookup(env, name);
    out += value ? *value : text.substr(i, close - i + 1);
    i = close;
  }
  return out;
}

StatusOr<ProcessSpec> ProcessSpecFromPod(const Json& pod, const HostOverrides& host) {
  const std::string pod_name = pod.value("metadata", Json::object()).value("name", "?");
  const Json& spec = pod.value("spec", Json::object());
  int idx = plan::WorkerContainerIndex(spec);
  if (idx < 0) {
    return Status::InvalidArgument("pod " + pod_name + ": spec.template.spec.containers is empty");
  }
  const Json& c = spec["containers"][idx];
  const std::string where = "spec.template.spec.containers[" + std::to_string(idx) + "]";
  ProcessSpec out;
  if (spec.contains("terminationGracePeriodSeconds") &&
      spec["terminationGracePeriodSeconds"].is_number_integer()) {
    out.grace_seconds = spec["terminationGracePeriodSeconds"].get<int>();
  }
  for (const Json& e : c.value("env", Json::array())) {
    std::string name = e.value("name", "");
    if (name.empty()) continue;
    if (e.contains("value") && e["value"].is_string()) {
      // $(VAR) in env values refers to variables defined earlier in the list.
      out.env.emplace_back(name, ExpandVars(e["value"].get<std::string>(), out.env));
      continue;
    }
    std::string resolved;
    const Json& from = e.value("valueFrom", Json::object());
    std::string path = from.value("fieldRef", Json::object()).value("fieldPath", "");
    if (!path.empty() && ResolveFieldRef(pod, path, &resolved)) {
      out.env.emplace_back(name, resolved);
    } else if (e.contains("valueFrom")) {
      out.warnings.push_back(where + ".env " + name + ": valueFrom " + from.dump() +
                             " cannot be resolved in local mode; not set");
    } else {
      out.env.emplace_back(name, "");
    }
  }
  for (auto& [name, value] : out.env) {
    if (name == api::kEnvMasterAddr || name == api::kEnvPetMasterAddr ||
        name == group::kEnvStoreAddr) {
      value = host.master_addr;
    } else if ((name == api::kEnvMasterPort || name == api::kEnvPetMasterPort) &&
               host.master_port > 0) {
      value = std::to_string(host.master_port);
    } else if (name == api::kEnvMetricsPort && host.metrics_port > 0) {
      value = std::to_string(host.metrics_port);
    }
  }
  std::vector<std::string> words;
  for (const char* key : {"command", "args"}) {
    for (const Json& w : c.value(key, Json::array())) {
      if (!w.is_string()) {
        return Status::InvalidArgument(where + "." + key + ": expected strings, got " + w.dump());
      }
      words.push_back(ExpandVars(w.get<std::string>(), out.env));
    }
  }
  if (!c.contains("command") || c["command"].empty()) {
    return Status::InvalidArgument(
        where + ".command is not set: local mode runs the command itself and cannot read an "
        "image's entrypoint. HINT: command: [ddp-worker]");
  }
  out.argv = std::move(words);
  return out;
}

}  // namespace ddp::controller::local
