// Kubeconfig (YAML) parsing: contexts, clusters, users -> ClientConfig. Pure apart from reading
// the file itself; relative file paths in it resolve against the file's directory, as kubectl does.
#ifndef DDP_OPERATOR_KUBE_KUBECONFIG_H_
#define DDP_OPERATOR_KUBE_KUBECONFIG_H_

#include <string>

#include "common/status.h"
#include "operator/kube/config.h"

namespace ddp::controller {

// Parses kubeconfig text. `origin` is the file path (for messages and relative paths; "" = cwd).
// `context` overrides current-context when non-empty. *-data fields are base64 (decoded here).
// Errors: InvalidArgument "kubeconfig <origin>: ..." for malformed YAML, a missing or unknown
// context/cluster/user, a missing server, bad base64; unsupported auth (exec, auth-provider) is
// reported by name.
StatusOr<ClientConfig> ParseKubeconfig(const std::string& text, const std::string& origin,
                                       const std::string& context = "");
// Reads and parses a file. NotFound when it does not exist.
StatusOr<ClientConfig> LoadKubeconfigFile(const std::string& path, const std::string& context = "");

// Standard base64 (padding optional, whitespace ignored). Returns false on invalid input.
bool Base64Decode(const std::string& in, std::string* out);

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_KUBECONFIG_H_
