// Typed JSON field reads; see json_fields.h.
#include "operator/api/json_fields.h"

#include <cmath>
#include <limits>
#include <regex>

#include "operator/api/time_format.h"

namespace ddp::api::internal {
namespace {

const nlohmann::json* Field(const nlohmann::json& parent, const char* key) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string Join(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}

Status TypeError(const std::string& path, const char* key, const char* want,
                 const nlohmann::json& got) {
  return Status::InvalidArgument(Join(path, key) + ": expected " + want + ", got " +
                                 Describe(got));
}

// Accepts integers and integral floats (JSON from some clients writes 3.0).
bool AsInt64(const nlohmann::json& v, int64_t* out) {
  // An unsigned value past INT64_MAX would wrap to a negative one.
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return false;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
      *out = static_cast<int64_t>(d);
      return true;
    }
  }
  return false;
}

}  // namespace

std::string Describe(const nlohmann::json& value) {
  return TruncateUtf8(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 60);
}

const char* JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::array: return "a list";
    case nlohmann::json::value_t::object: return "an object";
    default: return "a value";
  }
}

bool IsResourceName(const std::string& s) {
  static const std::regex kRe(
      "([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?");
  return !s.empty() && s.size() <= 253 && std::regex_match(s, kRe);
}

bool IsQuantity(const std::string& s) {
  static const std::regex kRe(
      "([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?");
  return s.size() <= 64 && std::regex_match(s, kRe);
}

Status ReadInt(const nlohmann::json& parent, const char* key, const std::string& path, int* out) {
  const nlohmann::json* v = Field(parent, key);
  if (!v) return Status::OK();
  int64_t i = 0;
  if (!AsInt64(*v, &i)) return TypeError(path, key, "an integer", *v);
  if (i < std::numeric_limits<int>::min() || i > std::numeric_limits<int>::max()) {
    return Status::InvalidArgument(Join(path, key) + " (" + std::to_string(i) +
                                   ") is out of range");
  }
  *out = static_cast<int>(i);
  return Status::OK();
}

Status ReadInt64(const nlohmann::json& parent, const char* key, const std::string& path,
                 std::optional<int64_t>* out) {
  const nlohmann::json* v = Field(parent, key);
  if (!v) return Status::OK();
  int64_t i = 0;
  if (!AsInt64(*v, &i)) return TypeError(path, key, "an integer", *v);
  *out = i;
  return Status::OK();
}

Status ReadBool(const nlohmann::json& parent, const char* key, const std::string& path, bool* out) {
  const nlohmann::json* v = Field(parent, key);
  if (!v) return Status::OK();
  if (!v->is_boolean()) return TypeError(path, key, "true or false", *v);
  *out = v->get<bool>();
  return Status::OK();
}

Status ReadString(const nlohmann::json& parent, const char* key, const std::string& path,
                  std::string* out) {
  const nlohmann::json* v = Field(parent, key);
  if (!v) return Status::OK();
  if (!v->is_string()) return TypeError(path, key, "a string", *v);
  *out = v->get<std::string>();
  return Status::OK();
}

Status ReadTime(const nlohmann::json& parent, const char* key, const std::string& path,
                std::optional<TimePoint>* out) {
  std::string text;
  DDP_RETURN_IF_ERROR(ReadString(parent, key, path, &text));
  if (text.empty()) return Status::OK();
  StatusOr<TimePoint> t = ParseTime(text);
  if (!t.ok()) return t.status().WithContext(Join(path, key));
  *out = *t;
  return Status::OK();
}

Status ReadStringMap(const nlohmann::json& parent, const char* key, const std::string& path,
                     std::map<std::string, std::string>* out) {
  const nlohmann::json* v = Field(parent, key);
  if (!v) return Status::OK();
  if (!v->is_object()) return TypeError(path, key, "a map of strings", *v);
  for (const auto& [k, val] : v->items()) {
    if (!val.is_string()) {
      return Status::InvalidArgument(Join(path, key) + "." + k + ": expected a string, got " +
                                     Describe(val));
    }
    (*out)[k] = val.get<std::string>();
  }
  return Status::OK();
}

Status ReadStringList(const nlohmann::json& parent, const char* key, const std::string& path,
                      std::vector<std::string>* out) {
  const nlohmann::json* v = Field(parent, key);
  if (!v) return Status::OK();
  if (!v->is_array()) return TypeError(path, key, "a list of strings", *v);
  out->clear();
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      return Status::InvalidArgument(Join(path, key) + "[" + std::to_string(i) +
                                     "]: expected a string, got " + Describe((*v)[i]));
    }
    out->push_back((*v)[i].get<std::string>());
  }
  return Status::OK();
}

Status ReadObject(const nlohmann::json& parent, const char* key, const std::string& path,
                  const nlohmann::json** out) {
  *out = Field(parent, key);
  if (*out && !(*out)->is_object()) return TypeError(path, key, "an object", **out);
  return Status::OK();
}

}  // namespace ddp::api::internal
