#include "common/exposition.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "common/prometheus.h"

namespace ddp::metrics {
namespace {

std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char n = s[++i];
      out += n == 'n' ? '\n' : n;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool IsNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// The next whitespace-separated word of `s` from *i on; empty at the end.
std::string_view NextWord(std::string_view s, size_t* i) {
  while (*i < s.size() && IsSpace(s[*i])) ++*i;
  const size_t start = *i;
  while (*i < s.size() && !IsSpace(s[*i])) ++*i;
  return s.substr(start, *i - start);
}

bool ParseValue(std::string_view text, double* out) {
  if (text == "+Inf" || text == "Inf") *out = HUGE_VAL;
  else if (text == "-Inf") *out = -HUGE_VAL;
  else if (text == "NaN") *out = std::nan("");
  else {
    // strtod needs a terminated string; a value is short, so a copy costs nothing that counts.
    const std::string value(text);
    char* end = nullptr;
    *out = std::strtod(value.c_str(), &end);
    return end != value.c_str() && *end == '\0';
  }
  return true;
}

// Parses `name{a="b",...} value [ts]`. Returns false on malformed input.
bool ParseSampleLine(std::string_view line, Sample* out) {
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
  if (i == 0) return false;
  out->name.assign(line.substr(0, i));
  out->labels.clear();
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      size_t k = i;
      while (i < line.size() && IsNameChar(line[i], i == k)) ++i;
      if (i == k || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return false;
      std::string_view key = line.substr(k, i - k);
      i += 2;
      const size_t raw_start = i;
      while (i < line.size() && line[i] != '"') i += line[i] == '\\' && i + 1 < line.size() ? 2 : 1;
      if (i >= line.size()) return false;
      out->labels.emplace_back(std::string(key), Unescape(line.substr(raw_start, i - raw_start)));
      ++i;  // closing quote
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return false;
    ++i;  // '}'
  }
  std::string_view value = NextWord(line, &i);
  if (value.empty() || !ParseValue(value, &out->value)) return false;
  return true;  // a timestamp, if any, is ignored
}

bool BelongsTo(std::string_view sample, const ParsedFamily& f) {
  if (sample == f.name) return true;
  if (f.type != "histogram" && f.type != "summary") return false;
  if (sample.size() <= f.name.size() || sample.compare(0, f.name.size(), f.name) != 0) {
    return false;
  }
  const std::string_view suffix = sample.substr(f.name.size());
  return suffix == "_bucket" || suffix == "_sum" || suffix == "_count";
}

// Families in order of first appearance, found by name in O(1).
class FamilyIndex {
 public:
  explicit FamilyIndex(std::vector<ParsedFamily>* fams) : fams_(fams) {}
  // The family `name`, appended (untyped) when new; its index in *fams.
  size_t Named(std::string_view name) {
    auto [it, added] = by_name_.try_emplace(std::string(name), fams_->size());
    if (added) fams_->push_back(ParsedFamily{std::string(name), "", "untyped", {}});
    return it->second;
  }

 private:
  std::vector<ParsedFamily>* fams_;
  std::unordered_map<std::string, size_t> by_name_;
};

Status TooLarge(const std::string& what, size_t limit) {
  return Status::FailedPrecondition("metrics page has more than " + std::to_string(limit) + " " +
                                    what);
}

}  // namespace

StatusOr<std::vector<ParsedFamily>> ParseExposition(const std::string& text,
                                                    const ParseLimits& limits) {
  if (limits.max_bytes && text.size() > limits.max_bytes) return TooLarge("bytes", limits.max_bytes);
  std::vector<ParsedFamily> fams;
  FamilyIndex index(&fams);
  const std::string_view all(text);
  size_t pos = 0, series = 0;
  int line_no = 0;
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t current = kNone;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string_view::npos) nl = all.size();
    std::string_view line = all.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line[0] == '#') {
      size_t i = 1;
      const std::string_view kind = NextWord(line, &i);
      const std::string_view name = NextWord(line, &i);
      if (kind != "HELP" && kind != "TYPE") continue;  // a plain comment
      current = index.Named(name);
      if (limits.max_series && fams.size() > limits.max_series) {
        return TooLarge("series", limits.max_series);
      }
      while (i < line.size() && IsSpace(line[i])) ++i;
      const std::string_view rest = line.substr(i);
      if (kind == "HELP") fams[current].help = Unescape(rest);
      else fams[current].type.assign(rest);
      continue;
    }
    Sample s;
    if (!ParseSampleLine(line, &s)) {
      return Status::InvalidArgument("metrics line " + std::to_string(line_no) +
                                     " is not a sample: " + std::string(line.substr(0, 200)));
    }
    if (limits.max_series && ++series > limits.max_series) {
      return TooLarge("series", limits.max_series);
    }
    if (current == kNone || !BelongsTo(s.name, fams[current])) {
      current = index.Named(s.name);
      if (limits.max_series && fams.size() > limits.max_series) {
        return TooLarge("series", limits.max_series);
      }
    }
    fams[current].samples.push_back(std::move(s));
  }
  return fams;
}

std::optional<double> FindSample(const std::vector<ParsedFamily>& families,
                                 const std::string& name, const LabelPairs& match) {
  for (const auto& f : families) {
    for (const auto& s : f.samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& m : match) {
        bool found = false;
        for (const auto& l : s.labels) found = found || l == m;
        all = all && found;
      }
      if (all) return s.value;
    }
  }
  return std::nullopt;
}

std::string MergeExpositions(const std::vector<std::pair<LabelPairs, std::string>>& sources,
                             std::vector<std::string>* errors) {
  std::vector<ParsedFamily> merged;
  FamilyIndex index(&merged);
  for (size_t i = 0; i < sources.size(); ++i) {
    auto parsed = ParseExposition(sources[i].second);
    if (!parsed.ok()) {
      if (errors) errors->push_back("source " + std::to_string(i) + ": " + parsed.status().message());
      continue;
    }
    for (auto& f : *parsed) {
      ParsedFamily& into = merged[index.Named(f.name)];
      if (into.help.empty()) into.help = f.help;
      if (into.type == "untyped") into.type = f.type;
      for (auto& s : f.samples) {
        LabelPairs labels = sources[i].first;
        labels.insert(labels.end(), s.labels.begin(), s.labels.end());
        s.labels = std::move(labels);
        into.samples.push_back(std::move(s));
      }
    }
  }
  std::ostringstream os;
  for (const auto& f : merged) {
    if (!f.help.empty()) {
      std::string help;
      for (char c : f.help) help += c == '\n' ? std::string("\\n") : c == '\\' ? "\\\\" : std::string(1, c);
      os << "# HELP " << f.name << ' ' << help << '\n';
    }
    os << "# TYPE " << f.name << ' ' << f.type << '\n';
    for (const auto& s : f.samples) {
      os << s.name;
      for (size_t k = 0; k < s.labels.size(); ++k) {
        os << (k == 0 ? "{" : ",") << s.labels[k].first << "=\""
           << EscapeLabelValue(s.labels[k].second) << '"';
      }
      if (!s.labels.empty()) os << '}';
      os << ' ' << FormatValue(s.value) << '\n';
    }
  }
  return os.str();
}

}  // namespace ddp::metrics
