// Kubeconfig parsing, in-cluster config and the search order, with temporary files.
#include "operator/kube/kubeconfig.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <map>

#include "operator/kube/config.h"

namespace ddp::controller {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kubeconfig_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Two clusters, users and contexts; current-context picks the second.
const char kTwoContexts[] = R"(
apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev-cluster
  cluster:
    server: http://127.0.0.1:8001
- name: prod-cluster
  cluster:
    server: https://prod.example:6443/
    certificate-authority: ca.crt
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user}
- name: prod
  context: {cluster: prod-cluster, user: prod-user, namespace: ml}
users:
- name: dev-user
  user:
    token: dev-token
- name: prod-user
  user:
    tokenFile: secrets/token
)";

TEST(Kubeconfig, CurrentContextSelectsClusterUserAndNamespace) {
  StatusOr<ClientConfig> c = ParseKubeconfig(kTwoContexts, "/etc/kube/config");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://prod.example:6443");  // trailing slash dropped
  EXPECT_EQ(c->ca_file, "/etc/kube/ca.crt");          // relative to the kubeconfig's directory
  EXPECT_EQ(c->token_file, "/etc/kube/secrets/token");
  EXPECT_EQ(c->bearer_token, "");
  EXPECT_EQ(c->default_namespace, "ml");
}

TEST(Kubeconfig, ExplicitContextWins) {
  StatusOr<ClientConfig> c = ParseKubeconfig(kTwoContexts, "/etc/kube/config", "dev");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "http://127.0.0.1:8001");
  EXPECT_EQ(c->bearer_token, "dev-token");
  EXPECT_EQ(c->default_namespace, "default");
}

TEST(Kubeconfig, DataFieldsAreBase64Decoded) {
  // "aGVsbG8=" is base64 of "hello", "d29ybGQ=" of "world", "a2V5" of "key".
  const char text[] = R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://h:1", certificate-authority-data: aGVsbG8=,
            insecure-skip-tls-verify: true}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {client-certificate-data: d29ybGQ=, client-key-data: a2V5}}]
)";
  StatusOr<ClientConfig> c = ParseKubeconfig(text, "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_data, "hello");
  EXPECT_EQ(c->client_cert_data, "world");
  EXPECT_EQ(c->client_key_data, "key");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
}

TEST(Kubeconfig, ErrorsNameTheProblem) {
  const std::map<std::string, std::string> cases = {
      {"current-context: nope\ncontexts: []\n", "context \"nope\" not found"},
      {"contexts: []\n", "no current-context"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n",
       "cluster \"k\" of context \"c\" not found"},
      {"current-context: c\nclusters: [{name: k, cluster: {}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "has no server"},
      {"current-context: c\nclusters: [{name: k, cluster: {server: 'https://h'}}]\n"
       "contexts: [{name: c, context: {cluster: k, user: u}}]\n",
       "user \"u\" of context \"c\" not found"},
      {"current-context: c\nclusters: [{name: k, cluster: {server: 'https://h'}}]\n"
       "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
       "users: [{name: u, user: {exec: {command: aws}}}]\n",
       "exec credential plugins are not supported"},
      {"current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', "
       "certificate-authority-data: '!!!'}}]\ncontexts: [{name: c, context: {cluster: k}}]\n",
       "certificate-authority-data is not base64"},
      {"current-context: c\nclusters: [{name: k, cluster: {server: 'https://h'}}]\n"
       "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
       "users: [{name: u, user: {client-certificate-data: aGVsbG8=}}]\n",
       "needs both the certificate and the key"},
      {"[unclosed", "not valid YAML"},
  };
  for (const auto& [text, want] : cases) {
    StatusOr<ClientConfig> c = ParseKubeconfig(text, "/k/config");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("kubeconfig /k/config"), std::string::npos);
  }
}

TEST(Kubeconfig, Base64) {
  std::string out;
  EXPECT_TRUE(Base64Decode("aGVsbG8gd29ybGQ=", &out));
  EXPECT_EQ(out, "hello world");
  EXPECT_TRUE(Base64Decode("aGVs\nbG8=", &out));
  EXPECT_EQ(out, "hello");
  EXPECT_FALSE(Base64Decode("aGVs*G8=", &out));
}

TEST(InCluster, ReadsEnvAndServiceAccountDir) {
  TempDir dir;
  dir.Write("token", "tok\n");
  dir.Write("ca.crt", "PEM");
  dir.Write("namespace", "ml\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const std::string& k) { return env.count(k) ? env[k] : ""; };
  StatusOr<ClientConfig> c = InClusterConfig(getenv, dir.path());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, dir.path() + "/token");  // the file, so rotation is seen
  EXPECT_EQ(c->ca_file, dir.path() + "/ca.crt");
  EXPECT_EQ(c->default_namespace, "ml");

  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  c = InClusterConfig(getenv, dir.path());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
}

TEST(InCluster, MissingTokenOrEnvIsNotFound) {
  TempDir dir;
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "h"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const std::string& k) { return env.count(k) ? env[k] : ""; };
  StatusOr<ClientConfig> c = InClusterConfig(getenv, dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/token does not exist"), std::string::npos);
  env.clear();
  c = InClusterConfig(getenv, dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST(LoadClientConfig, SearchOrder) {
  TempDir dir;
  auto kc = [&](const std::string& name, const std::string& server) {
    return dir.Write(name, "current-context: c\nclusters: [{name: k, cluster: {server: '" + server +
                               "'}}]\ncontexts: [{name: c, context: {cluster: k}}]\n");
  };
  std::string flag = kc("flag", "https://flag");
  std::string envfile = kc("env", "https://env");
  mkdir((dir.path() + "/home").c_str(), 0755);
  mkdir((dir.path() + "/home/.kube").c_str(), 0755);
  kc("home/.kube/config", "https://home");
  dir.Write("token", "t");
  std::map<std::string, std::string> env = {
      {"KUBECONFIG", dir.path() + "/missing:" + envfile}, {"HOME", dir.path() + "/home"},
      {"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  ConfigSources src;
  src.getenv = [&](const std::string& k) { return env.count(k) ? env[k] : ""; };
  src.service_account_dir = dir.path();
  src.kubeconfig_flag = flag;
  EXPECT_EQ(LoadClientConfig(src)->server, "https://flag");
  src.kubeconfig_flag.clear();
  EXPECT_EQ(LoadClientConfig(src)->server, "https://env");  // first existing KUBECONFIG entry
  env.erase("KUBECONFIG");
  EXPECT_EQ(LoadClientConfig(src)->server, "https://10.0.0.1:443");
  env.erase("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(LoadClientConfig(src)->server, "https://home");
  env["HOME"] = dir.path() + "/nowhere";
  StatusOr<ClientConfig> none = LoadClientConfig(src);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("--kubeconfig"), std::string::npos);
}

}  // namespace
}  // namespace ddp::controller
