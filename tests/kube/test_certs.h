// A throwaway PKI for TLS tests, generated in-process with OpenSSL: a CA, a server certificate
// for 127.0.0.1/localhost and a client certificate, all signed by the CA. PEM strings.
#ifndef DDP_TESTS_KUBE_TEST_CERTS_H_
#define DDP_TESTS_KUBE_TEST_CERTS_H_

#include <string>

namespace ddp::fake {

struct TestPki {
  std::string ca_cert, ca_key;
  std::string server_cert, server_key;
  std::string client_cert, client_key;
};

// Fresh keys (EC P-256) on each call; certificates valid from an hour ago for a day.
TestPki MakeTestPki();

// Standard base64 (for kubeconfig *-data fields).
std::string Base64Encode(const std::string& data);

}  // namespace ddp::fake

#endif  // DDP_TESTS_KUBE_TEST_CERTS_H_
