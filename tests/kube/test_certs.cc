#include "tests/kube/test_certs.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>
#include <vector>

namespace ddp::fake {
namespace {

std::string ToPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string ToPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error(std::string("bad extension ") + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// issuer == nullptr: self-signed.
X509* MakeCert(const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, long serial,
               const std::vector<std::pair<int, const char*>>& exts) {
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_set_issuer_name(x, X509_get_subject_name(issuer != nullptr ? issuer : x));
  for (const auto& [nid, value] : exts) AddExt(x, issuer != nullptr ? issuer : x, nid, value);
  X509_sign(x, issuer_key != nullptr ? issuer_key : key, EVP_sha256());
  return x;
}

}  // namespace

TestPki MakeTestPki() {
  TestPki pki;
  EVP_PKEY* ca_key = EVP_EC_gen("P-256");
  EVP_PKEY* server_key = EVP_EC_gen("P-256");
  EVP_PKEY* client_key = EVP_EC_gen("P-256");
  X509* ca = MakeCert("ddp-test-ca", ca_key, nullptr, nullptr, 1,
                      {{NID_basic_constraints, "critical,CA:TRUE"},
                       {NID_key_usage, "critical,keyCertSign,cRLSign"},
                       {NID_subject_key_identifier, "hash"}});
  X509* server = MakeCert("127.0.0.1", server_key, ca, ca_key, 2,
                          {{NID_basic_constraints, "CA:FALSE"},
                           {NID_ext_key_usage, "serverAuth"},
                           {NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"}});
  X509* client = MakeCert("system:serviceaccount:ddp-system:ddp-operator", client_key, ca, ca_key,
                          3, {{NID_basic_constraints, "CA:FALSE"}, {NID_ext_key_usage, "clientAuth"}});
  pki.ca_cert = ToPem(ca);
  pki.ca_key = ToPem(ca_key);
  pki.server_cert = ToPem(server);
  pki.server_key = ToPem(server_key);
  pki.client_cert = ToPem(client);
  pki.client_key = ToPem(client_key);
  X509_free(ca);
  X509_free(server);
  X509_free(client);
  EVP_PKEY_free(ca_key);
  EVP_PKEY_free(server_key);
  EVP_PKEY_free(client_key);
  return pki;
}

std::string Base64Encode(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                          reinterpret_cast<const unsigned char*>(data.data()),
                          static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace ddp::fake
