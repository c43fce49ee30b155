// yaml-cpp <-> nlohmann::json. yaml-cpp exceptions stop here and become a Status.
#include "operator/api/yaml_json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <regex>
#include <sstream>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "operator/api/utf8.h"

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

bool IsDigits(const std::string& s, size_t from, size_t to, bool (*digit)(char)) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i) {
    if (!digit(s[i])) return false;
  }
  return true;
}

bool Dec(char c) { return c >= '0' && c <= '9'; }
bool Hex(char c) { return Dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool Oct(char c) { return c >= '0' && c <= '7'; }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, scanned by hand: std::regex recurses per
// character and overflows the stack on a long scalar.
bool IsFloatText(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && Dec(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && Dec(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (!IsDigits(s, i, s.size(), Dec)) return false;
    i = s.size();
  }
  return i == s.size();
}

std::optional<nlohmann::json> NumberScalar(const std::string& s) {
  if (s.empty() || s.size() > 400) return std::nullopt;  // no number is written that long
  const size_t sign = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  errno = 0;
  if (IsDigits(s, sign, s.size(), Dec)) {
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return nlohmann::json(static_cast<int64_t>(v));
    return nlohmann::json(std::strtod(s.c_str(), nullptr));
  }
  if (s.size() <= 18 && s.rfind("0x", 0) == 0 && IsDigits(s, 2, s.size(), Hex)) {
    return nlohmann::json(std::strtoll(s.c_str() + 2, nullptr, 16));
  }
  if (s.size() <= 23 && s.rfind("0o", 0) == 0 && IsDigits(s, 2, s.size(), Oct)) {
    return nlohmann::json(std::strtoll(s.c_str() + 2, nullptr, 8));
  }
  if (IsFloatText(s)) return nlohmann::json(std::strtod(s.c_str(), nullptr));
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

// What one conversion may produce; aliases are expanded here, so a small file can describe a
// huge tree ("billion laughs"): the budget stops it.
struct Budget {
  size_t nodes = 0;
  size_t bytes = 0;
  Status error;
  bool Spend(size_t scalar_bytes) {
    if (!error.ok()) return false;
    ++nodes;
    bytes += scalar_bytes;
    if (nodes > kMaxYamlNodes || bytes > kMaxYamlBytes) {
      error = Status::InvalidArgument(
          "YAML: the document expands to more than " + std::to_string(kMaxYamlNodes) +
          " values or " + std::to_string(kMaxYamlBytes >> 20) +
          " MiB (aliases repeat what they point at)");
      return false;
    }
    return true;
  }
};

nlohmann::json ToJsonNode(const YAML::Node& node, int depth, Budget* budget) {
  if (depth > kMaxYamlDepth) {
    if (budget->error.ok()) {
      budget->error = Status::InvalidArgument(
          "YAML: line " + std::to_string(node.Mark().line + 1) + ": nested deeper than " +
          std::to_string(kMaxYamlDepth) + " levels");
    }
    return nullptr;
  }
  const size_t size = node.Type() == YAML::NodeType::Scalar ? node.Scalar().size() : 0;
  if (!budget->Spend(size)) return nullptr;
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ResolveScalar(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) {
        out.push_back(ToJsonNode(item, depth + 1, budget));
        if (!budget->error.ok()) return nullptr;
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar() && !kv.first.IsNull()) {
          budget->error = Status::InvalidArgument(
              "YAML: line " + std::to_string(kv.first.Mark().line + 1) +
              ": a mapping key must be a scalar");
          return nullptr;
        }
        const std::string key = kv.first.IsNull() ? "null" : kv.first.Scalar();
        if (!budget->Spend(key.size())) return nullptr;
        out[key] = ToJsonNode(kv.second, depth + 1, budget);
        if (!budget->error.ok()) return nullptr;
      }
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
  return s.size() <= 3 && std::regex_match(s, kYaml11Bool);
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

// True when every string and key of the tree is valid UTF-8.
bool IsValidUtf8Tree(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::string:
      return SanitizeUtf8(v.get_ref<const std::string&>()) == v.get_ref<const std::string&>();
    case nlohmann::json::value_t::array:
      for (const auto& item : v) {
        if (!IsValidUtf8Tree(item)) return false;
      }
      return true;
    case nlohmann::json::value_t::object:
      for (const auto& [key, item] : v.items()) {
        if (SanitizeUtf8(key) != key || !IsValidUtf8Tree(item)) return false;
      }
      return true;
    default:
      return true;
  }
}

// yaml-cpp 0.7 never returns from LoadAll when a top-level value is followed by a token no
// document may start with (`{a: b},s`, `"a",`): each document it reads is an empty one that
// consumes nothing, forever. This pass reads the same events without building nodes and stops at
// the first document that starts where the previous one did: no progress, a malformed stream.
class ProgressGuard : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    stalled = seen && mark.pos == last.pos;
    seen = true;
    last = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  bool seen = false;
  bool stalled = false;
  YAML::Mark last;
};

// InvalidArgument at the first document that reads nothing; throws what yaml-cpp throws.
Status CheckDocumentsProgress(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  ProgressGuard guard;
  while (parser.HandleNextDocument(guard)) {
    if (guard.stalled) {
      return Status::InvalidArgument("YAML: line " + std::to_string(guard.last.line + 1) +
                                     ", column " + std::to_string(guard.last.column + 1) +
                                     ": unexpected text after the document's value (a stray ',' "
                                     "after a flow collection or quoted string?)");
    }
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(const std::string& text) {
  if (text.size() > kMaxYamlBytes) {
    return Status::InvalidArgument("YAML: the text has " + std::to_string(text.size()) +
                                   " bytes, more than the limit of " +
                                   std::to_string(kMaxYamlBytes >> 20) + " MiB");
  }
  std::vector<nlohmann::json> docs;
  Budget budget;
  try {
    DDP_RETURN_IF_ERROR(CheckDocumentsProgress(text));
    for (const YAML::Node& node : YAML::LoadAll(text)) {
      if (node.IsNull() || !node.IsDefined()) continue;
      docs.push_back(ToJsonNode(node, 0, &budget));
      if (!budget.error.ok()) return budget.error;
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own guard (its message reads "bad file").
    return Status::InvalidArgument("YAML: line " + std::to_string(e.mark.line + 1) +
                                   ": nested deeper than " + std::to_string(kMaxYamlDepth) +
                                   " levels");
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("YAML: line " + std::to_string(e.mark.line + 1) + ", column " +
                                   std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const std::exception& e) {  // std::bad_alloc and friends: refused, not fatal
    return Status::InvalidArgument(std::string("YAML: cannot read the text: ") + e.what());
  }
  for (const nlohmann::json& doc : docs) {
    // JSON output (render -o json, every API request) throws on invalid UTF-8: refuse it here.
    if (!IsValidUtf8Tree(doc)) {
      return Status::InvalidArgument("YAML: the text is not valid UTF-8");
    }
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
