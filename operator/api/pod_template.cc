// spec.template into types; see pod_template.h. Every read checks the JSON type first, so no
// nlohmann accessor here can throw on user data.
#include "operator/api/pod_template.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include "operator/api/json_fields.h"

namespace ddp::api {
namespace {

using nlohmann::json;
using internal::Describe;
using internal::JsonTypeName;

constexpr char kRoot[] = "spec.template";

// Collects the messages of one template; paths are built as the reader descends.
class Reader {
 public:
  explicit Reader(std::vector<std::string>* out) : out_(out) {}

  void Error(const std::string& path, const std::string& what) { out_->push_back(path + what); }

  // The field at key, or nullptr when absent or null (Kubernetes reads null as absent).
  static const json* Field(const json& parent, const char* key) {
    if (!parent.is_object()) return nullptr;
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // Records "path: want W, got T V" and returns false unless `ok`.
  bool Want(bool ok, const std::string& path, const char* want, const json& got) {
    if (!ok) {
      std::string msg = std::string(": want ") + want + ", got " + JsonTypeName(got);
      if (!got.is_null()) msg += " " + Describe(got);
      Error(path, msg);
    }
    return ok;
  }

  const json* Object(const json& parent, const char* key, const std::string& path) {
    const json* v = Field(parent, key);
    if (v && !Want(v->is_object(), path + "." + key, "an object", *v)) return nullptr;
    return v;
  }

  const json* List(const json& parent, const char* key, const std::string& path) {
    const json* v = Field(parent, key);
    if (v && !Want(v->is_array(), path + "." + key, "a list", *v)) return nullptr;
    return v;
  }

  // Calls f(item, item_path) for each element that is an object.
  template <typename F>
  void Objects(const json& parent, const char* key, const std::string& path, F f) {
    const json* list = List(parent, key, path);
    if (!list) return;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string p = path + "." + key + "[" + std::to_string(i) + "]";
      if (Want((*list)[i].is_object(), p, "an object", (*list)[i])) f((*list)[i], p);
    }
  }

  bool String(const json& parent, const char* key, const std::string& path, std::string* out) {
    const json* v = Field(parent, key);
    if (!v || !Want(v->is_string(), path + "." + key, "a string", *v)) return false;
    if (out) *out = v->get_ref<const std::string&>();
    return true;
  }

  // A string that must be one of `allowed` when set.
  void Enum(const json& parent, const char* key, const std::string& path,
            std::initializer_list<const char*> allowed) {
    std::string s;
    if (!String(parent, key, path, &s)) return;
    std::string names;
    for (const char* a : allowed) {
      if (s == a) return;
      names += std::string(names.empty() ? "" : ", ") + a;
    }
    Error(path + "." + key, " (" + Describe(json(s)) + ") must be one of " + names);
  }

  void Bool(const json& parent, const char* key, const std::string& path) {
    const json* v = Field(parent, key);
    if (v) Want(v->is_boolean(), path + "." + key, "true or false", *v);
  }

  // An integer in [lo, hi] (integral floats such as 9000.0 count, as the API server reads them).
  std::optional<int64_t> Int(const json& parent, const char* key, const std::string& path,
                             int64_t lo, int64_t hi) {
    const json* v = Field(parent, key);
    if (!v) return std::nullopt;
    const std::string p = path + "." + key;
    int64_t i = 0;
    const bool too_big = v->is_number_unsigned() && !AsInt(*v, &i);
    if (too_big || !Want(AsInt(*v, &i), p, "an integer", *v)) {
      if (too_big) {
        Error(p, " (" + v->dump() + ") must be in " + std::to_string(lo) + ".." +
                     std::to_string(hi));
      }
      return std::nullopt;
    }
    if (i < lo || i > hi) {
      Error(p, " (" + std::to_string(i) + ") must be in " + std::to_string(lo) + ".." +
                   std::to_string(hi));
      return std::nullopt;
    }
    return i;
  }

  void StringList(const json& parent, const char* key, const std::string& path,
                  std::vector<std::string>* out) {
    const json* list = List(parent, key, path);
    if (!list) return;
    for (size_t i = 0; i < list->size(); ++i) {
      const json& w = (*list)[i];
      if (Want(w.is_string(), path + "." + key + "[" + std::to_string(i) + "]", "a string", w)) {
        out->push_back(w.get_ref<const std::string&>());
      }
    }
  }

  void StringMap(const json& parent, const char* key, const std::string& path,
                 std::map<std::string, std::string>* out) {
    const json* m = Object(parent, key, path);
    if (!m) return;
    for (const auto& [k, v] : m->items()) {
      if (Want(v.is_string(), path + "." + key + "[" + Describe(json(k)) + "]", "a string", v)) {
        (*out)[k] = v.get_ref<const std::string&>();
      }
    }
  }

  // A ResourceList: resource name -> quantity (a string such as "64Gi", or a number).
  void Quantities(const json& parent, const char* key, const std::string& path,
                  std::map<std::string, std::string>* out) {
    const json* m = Object(parent, key, path);
    if (!m) return;
    for (const auto& [k, v] : m->items()) {
      const std::string p = path + "." + key + "[" + Describe(json(k)) + "]";
      if (!internal::IsResourceName(k)) {
        Error(p, ": not a resource name");
      } else if (v.is_string() && internal::IsQuantity(v.get_ref<const std::string&>())) {
        (*out)[k] = v.get_ref<const std::string&>();
      } else if (v.is_number() && v.get<double>() >= 0 && v.get<double>() < 1e18) {
        (*out)[k] = v.dump();
      } else {
        Want(false, p, "a quantity such as \"8\", \"500m\" or \"64Gi\"", v);
      }
    }
  }

 private:
  static bool AsInt(const json& v, int64_t* out) {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return false;
      }
      *out = static_cast<int64_t>(v.get<uint64_t>());
      return true;
    }
    if (v.is_number_integer()) {
      *out = v.get<int64_t>();
      return true;
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
        *out = static_cast<int64_t>(d);
        return true;
      }
    }
    return false;
  }

  std::vector<std::string>* out_;
};

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

bool IsDns1123Label(const std::string& s) {
  static const std::regex kRe("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s, kRe);
}

// A port name (IANA_SVC_NAME): at most 15 lowercase letters, digits and '-', one letter at least.
bool IsPortName(const std::string& s) {
  static const std::regex kRe("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 15 && std::regex_match(s, kRe) &&
         s.find("--") == std::string::npos && s.find_first_of("abcdefghijklmnopqrstuvwxyz") !=
                                                   std::string::npos;
}

// A required, non-empty string; "is required" when absent, null or "".
bool RequiredName(Reader& r, const json& obj, const char* key, const std::string& path,
                  std::string* out) {
  if (Reader::Field(obj, key) == nullptr) {
    r.Error(path + "." + key, " is required");
    return false;
  }
  if (!r.String(obj, key, path, out)) return false;
  if (out->empty()) {
    r.Error(path + "." + key, " is required");
    return false;
  }
  return true;
}

void ReadPorts(Reader& r, const json& c, const std::string& path, Container* out) {
  std::set<std::string> names;
  r.Objects(c, "ports", path, [&](const json& p, const std::string& pp) {
    ContainerPort port;
    if (Reader::Field(p, "containerPort") == nullptr) {
      r.Error(pp + ".containerPort", " is required");
    } else if (auto n = r.Int(p, "containerPort", pp, 1, 65535)) {
      port.container_port = static_cast<int>(*n);
    }
    r.Int(p, "hostPort", pp, 0, 65535);
    r.String(p, "hostIP", pp, nullptr);
    r.Enum(p, "protocol", pp, {"TCP", "UDP", "SCTP"});
    r.String(p, "protocol", pp, &port.protocol);
    if (r.String(p, "name", pp, &port.name)) {
      if (!IsPortName(port.name)) {
        r.Error(pp + ".name", " (" + Describe(json(port.name)) +
                                  ") must be a port name: at most 15 lowercase letters, digits or "
                                  "'-', with a letter");
      } else if (!names.insert(port.name).second) {
        r.Error(pp + ".name", " (" + Describe(json(port.name)) + ") is used twice");
      }
    }
    out->ports.push_back(port);
  });
}

void ReadEnv(Reader& r, const json& c, const std::string& path, Container* out) {
  r.Objects(c, "env", path, [&](const json& e, const std::string& ep) {
    EnvVar v;
    RequiredName(r, e, "name", ep, &v.name);
    std::string value;
    if (r.String(e, "value", ep, &value)) v.value = value;
    v.value_from = r.Object(e, "valueFrom", ep) != nullptr;
    if (v.value && v.value_from) r.Error(ep, ": value and valueFrom are exclusive");
    out->env.push_back(std::move(v));
  });
  r.Objects(c, "envFrom", path, [](const json&, const std::string&) {});
}

Container ReadContainer(Reader& r, const json& c, const std::string& path) {
  Container out;
  if (RequiredName(r, c, "name", path, &out.name) && !IsDns1123Label(out.name)) {
    r.Error(path + ".name", " (" + Describe(json(out.name)) +
                                ") must be a DNS-1123 label: at most 63 lowercase letters, "
                                "digits or '-'");
  }
  r.String(c, "image", path, &out.image);
  r.Enum(c, "imagePullPolicy", path, {"Always", "IfNotPresent", "Never"});
  r.StringList(c, "command", path, &out.command);
  r.StringList(c, "args", path, &out.args);
  for (const char* key : {"workingDir", "terminationMessagePolicy"}) r.String(c, key, path, nullptr);
  if (r.String(c, "terminationMessagePath", path, &out.termination_message_path)) {
    const std::string& t = out.termination_message_path;
    const bool control = std::any_of(t.begin(), t.end(), [](char ch) {
      return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
    });
    if (t.empty() || t[0] != '/' || t.size() > kMaxPathBytes || control) {
      r.Error(path + ".terminationMessagePath",
              " (" + Describe(json(t)) + ") must be an absolute path of at most " +
                  std::to_string(kMaxPathBytes) + " bytes without control characters");
    }
  }
  for (const char* key : {"stdin", "stdinOnce", "tty"}) r.Bool(c, key, path);
  ReadEnv(r, c, path, &out);
  ReadPorts(r, c, path, &out);
  if (const json* res = r.Object(c, "resources", path)) {
    r.Quantities(*res, "limits", path + ".resources", &out.limits);
    r.Quantities(*res, "requests", path + ".resources", &out.requests);
    r.Objects(*res, "claims", path + ".resources", [](const json&, const std::string&) {});
  }
  r.Objects(c, "volumeMounts", path, [&](const json& m, const std::string& mp) {
    std::string s;
    RequiredName(r, m, "name", mp, &s);
    RequiredName(r, m, "mountPath", mp, &s);
    r.String(m, "subPath", mp, nullptr);
    r.Bool(m, "readOnly", mp);
  });
  for (const char* key :
       {"securityContext", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"}) {
    r.Object(c, key, path);
  }
  return out;
}

void ReadContainers(Reader& r, const json& spec, const std::string& path, const char* key,
                    std::vector<Container>* out, std::set<std::string>* names) {
  r.Objects(spec, key, path, [&](const json& c, const std::string& cp) {
    out->push_back(ReadContainer(r, c, cp));
    const std::string& n = out->back().name;
    if (!n.empty() && !names->insert(n).second) {
      r.Error(cp + ".name", " (" + Describe(json(n)) + ") is used by another container");
    }
  });
}

void ReadSpec(Reader& r, const json& spec, const std::string& path, PodTemplate* out) {
  std::set<std::string> names;
  const json* containers = r.List(spec, "containers", path);
  if (containers == nullptr || containers->empty()) {
    if (containers != nullptr || Reader::Field(spec, "containers") == nullptr) {
      r.Error(path + ".containers", ": at least one container is required");
    }
  } else {
    ReadContainers(r, spec, path, "containers", &out->containers, &names);
  }
  ReadContainers(r, spec, path, "initContainers", &out->init_containers, &names);
  r.Objects(spec, "ephemeralContainers", path, [](const json&, const std::string&) {});
  std::set<std::string> volumes;
  r.Objects(spec, "volumes", path, [&](const json& v, const std::string& vp) {
    std::string name;
    if (!RequiredName(r, v, "name", vp, &name)) return;
    if (!volumes.insert(name).second) {
      r.Error(vp + ".name", " (" + Describe(json(name)) + ") is used by another volume");
    }
    out->volume_names.push_back(name);
  });
  r.StringMap(spec, "nodeSelector", path, &out->node_selector);
  for (const char* key : {"tolerations", "imagePullSecrets", "topologySpreadConstraints",
                          "hostAliases", "readinessGates", "schedulingGates"}) {
    r.Objects(spec, key, path, [](const json&, const std::string&) {});
  }
  for (const char* key : {"affinity", "securityContext", "dnsConfig", "os"}) {
    r.Object(spec, key, path);
  }
  for (const char* key : {"serviceAccountName", "serviceAccount", "priorityClassName",
                          "schedulerName", "runtimeClassName", "dnsPolicy", "nodeName",
                          "hostname", "subdomain", "restartPolicy", "preemptionPolicy"}) {
    r.String(spec, key, path, nullptr);
  }
  for (const char* key : {"hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace",
                          "automountServiceAccountToken", "enableServiceLinks",
                          "setHostnameAsFQDN", "hostUsers"}) {
    r.Bool(spec, key, path);
  }
  out->termination_grace_period_seconds =
      r.Int(spec, "terminationGracePeriodSeconds", path, 0, kInt32Max);
  r.Int(spec, "activeDeadlineSeconds", path, 1, std::numeric_limits<int64_t>::max());
  r.Int(spec, "priority", path, std::numeric_limits<int32_t>::min(), kInt32Max);
  std::map<std::string, std::string> overhead;
  r.Quantities(spec, "overhead", path, &overhead);
}

}  // namespace

int PodTemplate::WorkerIndex() const {
  if (containers.empty()) return -1;
  for (size_t i = 0; i < containers.size(); ++i) {
    if (containers[i].name == "worker") return static_cast<int>(i);
  }
  return 0;
}

PodTemplate ParsePodTemplate(const nlohmann::json& tmpl, std::vector<std::string>* errs) {
  PodTemplate out;
  std::vector<std::string> found;
  Reader r(&found);
  if (!tmpl.is_object()) {
    r.Want(false, kRoot, "an object", tmpl);
  } else {
    const std::string meta_path = std::string(kRoot) + ".metadata";
    if (const json* meta = r.Object(tmpl, "metadata", kRoot)) {
      r.StringMap(*meta, "labels", meta_path, &out.labels);
      r.StringMap(*meta, "annotations", meta_path, &out.annotations);
      for (const char* key : {"name", "generateName", "namespace"}) {
        r.String(*meta, key, meta_path, nullptr);
      }
    }
    const std::string spec_path = std::string(kRoot) + ".spec";
    const json* spec = r.Object(tmpl, "spec", kRoot);
    if (spec) {
      ReadSpec(r, *spec, spec_path, &out);
    } else if (Reader::Field(tmpl, "spec") == nullptr) {
      r.Error(spec_path + ".containers", ": at least one container is required");
    }
  }
  for (size_t i = 0; i < found.size() && i < kMaxTemplateProblems; ++i) errs->push_back(found[i]);
  if (found.size() > kMaxTemplateProblems) {
    errs->push_back(std::string(kRoot) + ": " +
                    std::to_string(found.size() - kMaxTemplateProblems) +
                    " more problems not shown");
  }
  return out;
}

}  // namespace ddp::api
