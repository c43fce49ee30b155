#include "operator/kube/config.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "operator/kube/kubeconfig.h"

namespace ddp::controller {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

StatusOr<ClientConfig> InClusterConfig(const std::function<std::string(const std::string&)>& getenv,
                                       const std::string& sa_dir) {
  std::string host = getenv("KUBERNETES_SERVICE_HOST");
  std::string port = getenv("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return Status::NotFound("in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not running in a pod)");
  }
  ClientConfig cfg;
  bool ipv6 = host.find(':') != std::string::npos;
  cfg.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  cfg.token_file = sa_dir + "/token";
  if (!Exists(cfg.token_file)) {
    return Status::NotFound("in-cluster config: " + cfg.token_file + " does not exist (is automountServiceAccountToken false?)");
  }
  if (Exists(sa_dir + "/ca.crt")) cfg.ca_file = sa_dir + "/ca.crt";
  std::ifstream ns_in(sa_dir + "/namespace");
  std::stringstream ns;
  ns << ns_in.rdbuf();
  cfg.default_namespace = Trim(ns.str());
  if (cfg.default_namespace.empty()) cfg.default_namespace = "default";
  return cfg;
}

StatusOr<ClientConfig> LoadClientConfig(const ConfigSources& sources) {
  auto getenv = sources.getenv ? sources.getenv : [](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return std::string(v == nullptr ? "" : v);
  };
  if (!sources.kubeconfig_flag.empty()) return LoadKubeconfigFile(sources.kubeconfig_flag);
  std::string env = getenv("KUBECONFIG");
  if (!env.empty()) {
    std::stringstream list(env);
    std::string path;
    while (std::getline(list, path, ':')) {
      if (Exists(path)) return LoadKubeconfigFile(path);
    }
    return Status::NotFound("KUBECONFIG=" + env + ": none of its files exists");
  }
  if (!getenv("KUBERNETES_SERVICE_HOST").empty()) {
    return InClusterConfig(getenv, sources.service_account_dir);
  }
  std::string home = getenv("HOME");
  if (!home.empty() && Exists(home + "/.kube/config")) return LoadKubeconfigFile(home + "/.kube/config");
  return Status::NotFound(
      "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, run in a pod, or create "
      "~/.kube/config");
}

StatusOr<ClientConfig> LoadClientConfig(const std::string& kubeconfig_flag) {
  ConfigSources sources;
  sources.kubeconfig_flag = kubeconfig_flag;
  return LoadClientConfig(sources);
}

}  // namespace ddp::controller
