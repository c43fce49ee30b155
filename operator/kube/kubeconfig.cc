#include "operator/kube/kubeconfig.h"

#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include <yaml-cpp/yaml.h>

namespace ddp::controller {
namespace {

std::string Dir(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// kubectl resolves relative paths in a kubeconfig against the file's directory.
std::string Resolve(const std::string& origin, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return Dir(origin) + path;
}

std::string Str(const YAML::Node& node, const char* key) {
  YAML::Node v = node[key];
  return v && v.IsScalar() ? v.as<std::string>() : "";
}

// Finds the entry named `name` in a list like clusters: [{name: x, cluster: {...}}].
// (A default-constructed YAML::Node counts as defined, hence the explicit found flag.)
bool FindNamed(const YAML::Node& list, const std::string& name, const char* inner,
               YAML::Node* out) {
  if (!list || !list.IsSequence()) return false;
  for (const YAML::Node& entry : list) {
    if (entry.IsMap() && Str(entry, "name") == name) {
      *out = entry[inner];
      return true;
    }
  }
  return false;
}

}  // namespace

bool Base64Decode(const std::string& in, std::string* out) {
  out->clear();
  int val = 0, bits = -8;
  size_t pad = 0;
  for (char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad > 0) return false;  // data after padding
    int d;
    if (c >= 'A' && c <= 'Z') d = c - 'A';
    else if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
    else if (c >= '0' && c <= '9') d = c - '0' + 52;
    else if (c == '+' || c == '-') d = 62;
    else if (c == '/' || c == '_') d = 63;
    else return false;
    val = (val << 6) | d;
    bits += 6;
    if (bits >= 0) {
      out->push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return pad <= 2;
}

StatusOr<ClientConfig> ParseKubeconfig(const std::string& text, const std::string& origin,
                                       const std::string& context) {
  const std::string where = "kubeconfig " + (origin.empty() ? std::string("<inline>") : origin);
  auto bad = [&](const std::string& what) { return Status::InvalidArgument(where + ": " + what); };
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return bad(std::string("not valid YAML: ") + e.what());
  }
  if (!root.IsMap()) return bad("not a kubeconfig (expected a mapping with contexts, clusters, users)");
  try {
    std::string ctx_name = context.empty() ? Str(root, "current-context") : context;
    if (ctx_name.empty()) return bad("no current-context set and no context given");
    YAML::Node ctx, cluster, user;
    if (!FindNamed(root["contexts"], ctx_name, "context", &ctx)) return bad("context \"" + ctx_name + "\" not found in contexts");
    std::string cluster_name = Str(ctx, "cluster");
    if (!FindNamed(root["clusters"], cluster_name, "cluster", &cluster)) {
      return bad("cluster \"" + cluster_name + "\" of context \"" + ctx_name + "\" not found");
    }
    ClientConfig cfg;
    cfg.server = Str(cluster, "server");
    if (cfg.server.empty()) return bad("cluster \"" + cluster_name + "\" has no server");
    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    if (!Str(cluster, "certificate-authority-data").empty() &&
        !Base64Decode(Str(cluster, "certificate-authority-data"), &cfg.ca_data)) {
      return bad("cluster \"" + cluster_name + "\": certificate-authority-data is not base64");
    }
    cfg.ca_file = Resolve(origin, Str(cluster, "certificate-authority"));
    cfg.insecure_skip_tls_verify = Str(cluster, "insecure-skip-tls-verify") == "true";
    cfg.default_namespace = Str(ctx, "namespace");
    if (cfg.default_namespace.empty()) cfg.default_namespace = "default";

    std::string user_name = Str(ctx, "user");
    if (user_name.empty()) return cfg;  // anonymous
    if (!FindNamed(root["users"], user_name, "user", &user)) return bad("user \"" + user_name + "\" of context \"" + ctx_name + "\" not found");
    if (user.IsMap()) {
      if (user["exec"]) return bad("user \"" + user_name + "\": exec credential plugins are not supported; use a token or a client certificate");
      if (user["auth-provider"]) return bad("user \"" + user_name + "\": auth-provider is not supported; use a token or a client certificate");
      cfg.bearer_token = Str(user, "token");
      cfg.token_file = Resolve(origin, Str(user, "tokenFile"));
      const std::pair<const char*, std::string*> data_fields[] = {
          {"client-certificate-data", &cfg.client_cert_data},
          {"client-key-data", &cfg.client_key_data}};
      for (const auto& [key, dst] : data_fields) {
        if (!Str(user, key).empty() && !Base64Decode(Str(user, key), dst)) {
          return bad("user \"" + user_name + "\": " + key + " is not base64");
        }
      }
      cfg.client_cert_file = Resolve(origin, Str(user, "client-certificate"));
      cfg.client_key_file = Resolve(origin, Str(user, "client-key"));
      bool has_cert = !cfg.client_cert_data.empty() || !cfg.client_cert_file.empty();
      bool has_key = !cfg.client_key_data.empty() || !cfg.client_key_file.empty();
      if (has_cert != has_key) {
        return bad("user \"" + user_name + "\": a client certificate needs both the certificate and the key");
      }
    }
    return cfg;
  } catch (const YAML::Exception& e) {
    return bad(std::string("malformed: ") + e.what());
  }
}

StatusOr<ClientConfig> LoadKubeconfigFile(const std::string& path, const std::string& context) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("kubeconfig " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseKubeconfig(ss.str(), path, context);
}

}  // namespace ddp::controller
