#include "operator/kube/client_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

namespace ddp::controller {

std::shared_ptr<X509_STORE> NewCaStore(const std::string& pem, int* count) {
  std::shared_ptr<X509_STORE> store(X509_STORE_new(), X509_STORE_free);
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  *count = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store.get(), cert) == 1) ++*count;
    X509_free(cert);
  }
  BIO_free(bio);
  ERR_clear_error();  // the loop ends on a "no start line" error
  return store;
}

void UseCaStore(SSL_CTX* ctx, const std::shared_ptr<X509_STORE>& store) {
  SSL_CTX_set1_cert_store(ctx, store.get());  // frees the store it replaces
}

bool UseClientCert(SSL_CTX* ctx, const std::string& cert_pem, const std::string& key_pem) {
  BIO* cb = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  bool ok = cert != nullptr && key != nullptr && X509_check_private_key(cert, key) == 1;
  if (ok && ctx != nullptr) {
    ok = SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
         SSL_CTX_check_private_key(ctx) == 1;
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  ERR_clear_error();
  return ok;
}

}  // namespace ddp::controller
