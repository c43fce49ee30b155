// OpenSSL helpers of the REST client: trust a PEM CA bundle and present a client certificate.
// They work on an SSL_CTX so the client's TLS context callback and config validation share them.
#ifndef DDP_OPERATOR_KUBE_CLIENT_TLS_H_
#define DDP_OPERATOR_KUBE_CLIENT_TLS_H_

#include <string>

typedef struct ssl_ctx_st SSL_CTX;

namespace ddp::controller {

// Adds every certificate of a PEM bundle to ctx's trust store and returns how many it parsed.
// ctx may be null: then it only counts (to validate a bundle before any connection exists).
// Thread-safe for distinct contexts. Leaves the OpenSSL error queue empty.
int AddCaBundle(SSL_CTX* ctx, const std::string& pem);

// Installs a client certificate and its key into ctx (null: only checks). Returns false when
// either does not parse or the key does not match the certificate. Leaves the error queue empty.
bool UseClientCert(SSL_CTX* ctx, const std::string& cert_pem, const std::string& key_pem);

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_CLIENT_TLS_H_
