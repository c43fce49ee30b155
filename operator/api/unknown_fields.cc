// Unknown fields against a structural schema; see unknown_fields.h.
#include "operator/api/unknown_fields.h"

#include <algorithm>
#include <cctype>

#include "operator/api/crd_schema.h"
#include "operator/api/utf8.h"

namespace ddp::api {
namespace {

using nlohmann::json;

// Past this many unknown fields one more line says how many were left out: a hostile object
// with a million keys must not become a million-line message.
constexpr size_t kMaxReported = 20;
// Names are compared on their first kMaxCompared bytes only, so the edit distance stays cheap
// for any key an object can carry.
constexpr size_t kMaxCompared = 64;
constexpr size_t kMaxShownKey = 100;

std::string Lower(const std::string& s) {
  std::string out = s.substr(0, kMaxCompared);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// two adjacent characters ("prots" -> "ports") cost 1 each.
size_t EditDistance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

// A misspelling rather than another word: at most a quarter of the name edited (2 at least).
bool IsClose(const std::string& name, const std::string& known) {
  const std::string a = Lower(name), b = Lower(known);
  const size_t d = EditDistance(a, b);
  return d < std::max(a.size(), b.size()) && d <= std::max<size_t>(2, a.size() / 4);
}

std::string Child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool PreservesUnknown(const json& schema) {
  auto it = schema.find("x-kubernetes-preserve-unknown-fields");
  return it != schema.end() && it->is_boolean() && it->get<bool>();
}

void Walk(const json& value, const json& schema, const std::string& path,
          std::vector<UnknownField>* out) {
  if (!schema.is_object()) return;
  if (value.is_array()) {
    auto items = schema.find("items");
    if (items == schema.end()) return;
    for (size_t i = 0; i < value.size(); ++i) {
      Walk(value[i], *items, path + "[" + std::to_string(i) + "]", out);
    }
    return;
  }
  if (!value.is_object()) return;
  auto props = schema.find("properties");
  auto extra = schema.find("additionalProperties");
  const bool has_props = props != schema.end() && props->is_object();
  const bool has_extra = extra != schema.end() && extra->is_object();
  if (!has_props && !has_extra) return;  // any key (the root's metadata)
  std::vector<std::string> names;
  if (has_props) {
    for (const auto& [name, sub] : props->items()) names.push_back(name);
  }
  for (const auto& [key, sub] : value.items()) {
    if (has_props && props->contains(key)) {
      Walk(sub, (*props)[key], Child(path, key), out);
    } else if (has_extra) {
      Walk(sub, *extra, Child(path, key), out);
    } else if (!PreservesUnknown(schema)) {
      UnknownField f;
      f.path = Child(path, key);
      f.nearest = NearestName(key, names);
      f.close = !f.nearest.empty() && IsClose(key, f.nearest);
      out->push_back(std::move(f));
    }
  }
}

}  // namespace

std::string NearestName(const std::string& name, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = 0;
  const std::string a = Lower(name);
  for (const std::string& n : names) {
    const size_t d = EditDistance(a, Lower(n));
    if (best.empty() || d < best_d) {
      best = n;
      best_d = d;
    }
  }
  return best;
}

std::vector<UnknownField> FindUnknownFields(const json& value, const json& schema,
                                            const std::string& path) {
  std::vector<UnknownField> out;
  Walk(value, schema, path, &out);
  return out;
}

std::vector<std::string> UnknownFieldProblems(const json& object) {
  if (!object.is_object()) return {};
  json checked = object;
  checked.erase("status");
  std::vector<std::string> lines;
  const std::vector<UnknownField> found = FindUnknownFields(checked, DDPJobSchema());
  for (const UnknownField& f : found) {
    if (lines.size() == kMaxReported) {
      lines.push_back("... and " + std::to_string(found.size() - kMaxReported) +
                      " more unknown fields");
      break;
    }
    std::string line = "unknown field \"" + TruncateUtf8(f.path, kMaxShownKey) + "\"";
    if (f.close) {
      line += " (did you mean " + f.nearest + "?)";
    } else if (!f.nearest.empty()) {
      const size_t dot = f.path.rfind('.');
      const std::string parent = dot == std::string::npos ? "" : f.path.substr(0, dot);
      line += " (not a field of " + (parent.empty() ? std::string("a DDPJob") : parent) +
              "; the nearest is " + f.nearest + ")";
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace ddp::api
