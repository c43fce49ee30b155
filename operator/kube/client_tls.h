// OpenSSL helpers of the REST client: trust a PEM CA bundle and present a client certificate.
// They work on an SSL_CTX so the client's TLS context callback and config validation share them.
#ifndef DDP_OPERATOR_KUBE_CLIENT_TLS_H_
#define DDP_OPERATOR_KUBE_CLIENT_TLS_H_

#include <memory>
#include <string>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct x509_store_st X509_STORE;

namespace ddp::controller {

// A trust store holding exactly the certificates of a PEM bundle; *count gets how many parsed
// (0: the store is empty). Built once per client and shared by its connections. Leaves the
// OpenSSL error queue empty.
std::shared_ptr<X509_STORE> NewCaStore(const std::string& pem, int* count);

// Makes ctx trust exactly `store` (shared, reference-counted), replacing the system defaults that
// cpprestsdk loads into every new connection: with a cluster CA configured, only that CA is
// trusted, as client-go does, and no connection keeps its own copy of the system bundle.
void UseCaStore(SSL_CTX* ctx, const std::shared_ptr<X509_STORE>& store);

// Installs a client certificate and its key into ctx (null: only checks). Returns false when
// either does not parse or the key does not match the certificate. Leaves the error queue empty.
bool UseClientCert(SSL_CTX* ctx, const std::string& cert_pem, const std::string& key_pem);

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_CLIENT_TLS_H_
