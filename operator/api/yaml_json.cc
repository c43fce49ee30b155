// yaml-cpp <-> nlohmann::json. yaml-cpp exceptions stop here and become a Status.
#include "operator/api/yaml_json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>

#include <yaml-cpp/yaml.h>

namespace ddp::api {
namespace {

// YAML 1.2 core schema, which is what users expect from Kubernetes manifests.
bool IsNullScalar(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> BoolScalar(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

std::optional<nlohmann::json> NumberScalar(const std::string& s) {
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kHex("0x[0-9a-fA-F]+");
  static const std::regex kOct("0o[0-7]+");
  static const std::regex kFloat(
      "[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  errno = 0;
  if (std::regex_match(s, kInt)) {
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return nlohmann::json(static_cast<int64_t>(v));
    return nlohmann::json(std::strtod(s.c_str(), nullptr));
  }
  if (std::regex_match(s, kHex)) return nlohmann::json(std::strtoll(s.c_str() + 2, nullptr, 16));
  if (std::regex_match(s, kOct)) return nlohmann::json(std::strtoll(s.c_str() + 2, nullptr, 8));
  if (std::regex_match(s, kFloat)) return nlohmann::json(std::strtod(s.c_str(), nullptr));
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf") {
    return nlohmann::json(std::numeric_limits<double>::infinity());
  }
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") {
    return nlohmann::json(-std::numeric_limits<double>::infinity());
  }
  return std::nullopt;
}

nlohmann::json ResolveScalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  const std::string& tag = node.Tag();
  // "!" marks a quoted (non-plain) scalar; explicit string tags also stay strings.
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return s;
  if (IsNullScalar(s)) return nullptr;
  if (auto b = BoolScalar(s)) return *b;
  if (auto n = NumberScalar(s)) return *n;
  return s;
}

nlohmann::json ToJsonNode(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ResolveScalar(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(ToJsonNode(item));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = ToJsonNode(kv.second);
      return out;
    }
  }
  return nullptr;
}

// True when a plain (unquoted) scalar `s` would read back as something other than this string.
bool NeedsQuotes(const std::string& s) {
  if (IsNullScalar(s) || BoolScalar(s) || NumberScalar(s)) return true;
  // YAML 1.1 readers (many Kubernetes tools) take these as booleans.
  static const std::regex kYaml11Bool("y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF");
  return std::regex_match(s, kYaml11Bool);
}

void Emit(YAML::Emitter& out, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      out << YAML::Null;
      break;
    case nlohmann::json::value_t::boolean:
      out << (v.get<bool>() ? "true" : "false");
      break;
    case nlohmann::json::value_t::number_integer:
      out << v.get<int64_t>();
      break;
    case nlohmann::json::value_t::number_unsigned:
      out << v.get<uint64_t>();
      break;
    case nlohmann::json::value_t::number_float:
      out << v.dump();
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (s.find('\n') != std::string::npos) {
        out << YAML::Literal << s;
      } else if (NeedsQuotes(s)) {
        out << YAML::DoubleQuoted << s;
      } else {
        out << s;  // yaml-cpp quotes what its own syntax needs (": ", "#", leading "-", ...)
      }
      break;
    }
    case nlohmann::json::value_t::array:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        break;
      }
      out << YAML::BeginSeq;
      for (const auto& item : v) Emit(out, item);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::object:
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        break;
      }
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.items()) {
        out << YAML::Key;
        if (NeedsQuotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        Emit(out, value);
      }
      out << YAML::EndMap;
      break;
    default:
      out << YAML::Null;
  }
}

}  // namespace

StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(const std::string& text) {
  std::vector<nlohmann::json> docs;
  try {
    for (const YAML::Node& node : YAML::LoadAll(text)) {
      if (node.IsNull() || !node.IsDefined()) continue;
      docs.push_back(ToJsonNode(node));
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("YAML: line " + std::to_string(e.mark.line + 1) + ", column " +
                                   std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  return docs;
}

std::string JsonToYaml(const nlohmann::json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace ddp::api
