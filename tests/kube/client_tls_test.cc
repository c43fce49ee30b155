// The REST client over real TLS: custom CA (data and file), insecure mode, bearer token and
// client-certificate authentication, and a kubeconfig that carries all of it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "operator/kube/client_tls.h"
#include "operator/kube/kubeconfig.h"
#include "tests/kube/client_test_util.h"
#include "tests/kube/test_certs.h"

namespace ddp::controller {
namespace {

using json = nlohmann::json;

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new fake::TestPki(fake::MakeTestPki()); }
  static void TearDownTestSuite() { delete pki_; }

  void Serve(bool require_client_cert, const std::string& token) {
    fake::FakeApiServerOptions o;
    o.tls_cert_pem = pki_->server_cert;
    o.tls_key_pem = pki_->server_key;
    if (require_client_cert) o.client_ca_pem = pki_->ca_cert;
    o.bearer_token = token;
    server_ = std::make_unique<fake::FakeApiServer>(o);
    std::string error;
    ASSERT_TRUE(server_->Start(0, &error)) << error;
    ASSERT_EQ(server_->url().rfind("https://", 0), 0u);
  }
  ClientConfig Config() const {
    ClientConfig c;
    c.server = server_->url();
    c.qps = 0;
    c.max_retries = 0;
    c.request_timeout = std::chrono::seconds(5);
    return c;
  }
  static Status Probe(const ClientConfig& cfg) {
    auto c = NewRestClient(cfg);
    if (!c.ok()) return c.status();
    StatusOr<json> r = (*c)->Create(kPods, "ml", PodObject("p" + std::to_string(counter_++)));
    return r.status();
  }

  static fake::TestPki* pki_;
  static int counter_;
  std::unique_ptr<fake::FakeApiServer> server_;
};
fake::TestPki* TlsTest::pki_ = nullptr;
int TlsTest::counter_ = 0;

TEST_F(TlsTest, ConfiguredCaReplacesTheSystemTrustStore) {
  // What cpprestsdk does for each connection, then what our callback does.
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  ASSERT_NE(ctx, nullptr);
  SSL_CTX_set_default_verify_paths(ctx);
  int count = 0;
  std::shared_ptr<X509_STORE> store = NewCaStore(pki_->ca_cert + pki_->client_cert, &count);
  EXPECT_EQ(count, 2);
  UseCaStore(ctx, store);
  EXPECT_EQ(SSL_CTX_get_cert_store(ctx), store.get());
  EXPECT_EQ(sk_X509_OBJECT_num(X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx))), 2)
      << "only the configured certificates are trusted";
  SSL_CTX_free(ctx);  // the store outlives the context that shared it
  EXPECT_EQ(sk_X509_OBJECT_num(X509_STORE_get0_objects(store.get())), 2);
  NewCaStore("not a pem", &count);
  EXPECT_EQ(count, 0);
}

TEST_F(TlsTest, CustomCaAndBearerToken) {
  Serve(false, "s3cret");
  ClientConfig cfg = Config();
  cfg.ca_data = pki_->ca_cert;
  cfg.bearer_token = "s3cret";
  Status s = Probe(cfg);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(server_->LastAuthorization(), "Bearer s3cret");

  cfg.bearer_token = "wrong";
  EXPECT_EQ(Probe(cfg).code(), StatusCode::kUnauthenticated);
  cfg.bearer_token.clear();
  EXPECT_EQ(Probe(cfg).code(), StatusCode::kUnauthenticated);
}

TEST_F(TlsTest, UnknownCaIsRejectedUnlessInsecure) {
  Serve(false, "");
  ClientConfig cfg = Config();
  Status s = Probe(cfg);  // the system trust store does not know the test CA
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(server_->RequestCount(""), 0);
  cfg.insecure_skip_tls_verify = true;
  s = Probe(cfg);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(TlsTest, CaFileAndWatchOverTls) {
  Serve(false, "");
  char tmpl[] = "/tmp/kube_ca_XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(tmpl) << pki_->ca_cert;
  ClientConfig cfg = Config();
  cfg.ca_file = tmpl;
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->Create(kPods, "ml", PodObject("a")).ok());
  WatchOptions o;
  o.resource_version = "0";
  std::vector<std::string> names;
  Status s = (*c)->Watch(kPods, "ml", o, [&](const WatchEvent& e) {
    names.push_back(e.object["metadata"]["name"]);
    return false;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(names, std::vector<std::string>{"a"});
  unlink(tmpl);
}

TEST_F(TlsTest, ClientCertificateAuthentication) {
  Serve(true, "");
  ClientConfig cfg = Config();
  cfg.ca_data = pki_->ca_cert;
  EXPECT_EQ(Probe(cfg).code(), StatusCode::kUnavailable);  // no certificate: handshake fails
  cfg.client_cert_data = pki_->client_cert;
  cfg.client_key_data = pki_->client_key;
  Status s = Probe(cfg);
  EXPECT_TRUE(s.ok()) << s.ToString();
  cfg.client_key_data = pki_->server_key;  // a key that does not match the certificate
  EXPECT_EQ(NewRestClient(cfg).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TlsTest, KubeconfigWithEmbeddedCaClientCertAndToken) {
  Serve(true, "kc-token");
  std::string text = "current-context: test\n"
                     "clusters:\n- name: fake\n  cluster:\n    server: " + server_->url() +
                     "\n    certificate-authority-data: " + fake::Base64Encode(pki_->ca_cert) +
                     "\ncontexts:\n- name: test\n  context: {cluster: fake, user: op, namespace: ml}\n"
                     "users:\n- name: op\n  user:\n    token: kc-token\n"
                     "    client-certificate-data: " + fake::Base64Encode(pki_->client_cert) +
                     "\n    client-key-data: " + fake::Base64Encode(pki_->client_key) + "\n";
  StatusOr<ClientConfig> cfg = ParseKubeconfig(text, "");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->default_namespace, "ml");
  Status s = Probe(*cfg);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(server_->LastAuthorization(), "Bearer kc-token");
}

}  // namespace
}  // namespace ddp::controller
