// Typed reads of optional JSON fields with errors that name the field's path and the bad value.
// Internal to operator/api. An absent or null field leaves *out unchanged and returns OK.
#ifndef DDP_OPERATOR_API_JSON_FIELDS_H_
#define DDP_OPERATOR_API_JSON_FIELDS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"
#include "operator/api/utf8.h"

namespace ddp::api::internal {

// `path` is the full dotted path of the parent ("spec.elastic"); errors read
// "spec.elastic.minReplicas: expected an integer, got \"two\"".
Status ReadInt(const nlohmann::json& parent, const char* key, const std::string& path, int* out);
Status ReadInt64(const nlohmann::json& parent, const char* key, const std::string& path,
                 std::optional<int64_t>* out);
Status ReadBool(const nlohmann::json& parent, const char* key, const std::string& path, bool* out);
Status ReadString(const nlohmann::json& parent, const char* key, const std::string& path,
                  std::string* out);
Status ReadTime(const nlohmann::json& parent, const char* key, const std::string& path,
                std::optional<TimePoint>* out);
Status ReadStringMap(const nlohmann::json& parent, const char* key, const std::string& path,
                     std::map<std::string, std::string>* out);
Status ReadStringList(const nlohmann::json& parent, const char* key, const std::string& path,
                      std::vector<std::string>* out);
// Sets *out to the object at key, or nullptr when absent/null; error when not an object.
Status ReadObject(const nlohmann::json& parent, const char* key, const std::string& path,
                  const nlohmann::json** out);

// A short rendering of a JSON value for messages: strings quoted, long values cut on a character
// boundary. Never throws (invalid UTF-8 is shown as U+FFFD).
std::string Describe(const nlohmann::json& value);
// "null", "a boolean", "an integer", "a number", "a string", "a list", "an object".
const char* JsonTypeName(const nlohmann::json& value);

// A ResourceList key ("cpu", "nvidia.com/gpu") and a non-negative quantity ("8", "500m",
// "64Gi", "1e3"), the forms the API server accepts.
bool IsResourceName(const std::string& s);
bool IsQuantity(const std::string& s);

}  // namespace ddp::api::internal

#endif  // DDP_OPERATOR_API_JSON_FIELDS_H_
