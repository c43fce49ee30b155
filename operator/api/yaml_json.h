// YAML text <-> nlohmann::json. YAML scalars become proper JSON types the way Kubernetes reads
// them: plain 12 -> integer, 1.5 -> number, true/false -> bool, null/~/empty -> null, anything
// quoted stays a string. Emitting is block style with strings quoted when they would re-read as
// another type, so JsonToYaml(x) parses back to x.
#ifndef DDP_OPERATOR_API_YAML_JSON_H_
#define DDP_OPERATOR_API_YAML_JSON_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ddp::api {

// Limits of ParseYamlDocuments: a manifest is a few KB to a few hundred KB (the CRD).
inline constexpr size_t kMaxYamlBytes = 16 << 20;  // the text, and the scalars after expansion
inline constexpr size_t kMaxYamlNodes = 1 << 20;   // values and keys after alias expansion
inline constexpr int kMaxYamlDepth = 200;          // nesting (yaml-cpp itself stops near 500)

// Every document in the stream, in order; documents that are entirely empty are skipped.
// Returns InvalidArgument with line:column on a YAML syntax error, and a clear error (never a
// crash or gigabytes of memory) for a document past the limits above or not valid UTF-8.
StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(const std::string& text);

// One YAML document (no leading "---").
std::string JsonToYaml(const nlohmann::json& value);

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_YAML_JSON_H_
