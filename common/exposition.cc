#include "common/exposition.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/prometheus.h"

namespace ddp::metrics {
namespace {

std::string Unescape(const std::string& s) {
  std::string out;
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

// Parses `name{a="b",...} value [ts]`. Returns false on malformed input.
bool ParseSampleLine(const std::string& line, Sample* out) {
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
  if (i == 0) return false;
  out->name = line.substr(0, i);
  out->labels.clear();
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      size_t k = i;
      while (i < line.size() && IsNameChar(line[i], i == k)) ++i;
      if (i == k || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return false;
      std::string key = line.substr(k, i - k);
      i += 2;
      std::string raw;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\' && i + 1 < line.size()) raw += line[i++];
        raw += line[i++];
      }
      if (i >= line.size()) return false;
      ++i;  // closing quote
      out->labels.emplace_back(key, Unescape(raw));
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return false;
    ++i;  // '}'
  }
  std::istringstream rest(line.substr(i));
  std::string value;
  if (!(rest >> value)) return false;
  if (value == "+Inf") out->value = HUGE_VAL;
  else if (value == "-Inf") out->value = -HUGE_VAL;
  else if (value == "NaN") out->value = std::nan("");
  else {
    char* end = nullptr;
    out->value = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0') return false;
  }
  return true;
}

bool BelongsTo(const std::string& sample, const ParsedFamily& f) {
  if (sample == f.name) return true;
  if (f.type != "histogram" && f.type != "summary") return false;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    if (sample == f.name + suffix) return true;
  }
  return false;
}

ParsedFamily& FamilyNamed(std::vector<ParsedFamily>* fams, const std::string& name) {
  for (auto& f : *fams) if (f.name == name) return f;
  fams->push_back(ParsedFamily{name, "", "untyped", {}});
  return fams->back();
}

}  // namespace

StatusOr<std::vector<ParsedFamily>> ParseExposition(const std::string& text) {
  std::vector<ParsedFamily> fams;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  ParsedFamily* current = nullptr;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line.substr(1));
      std::string kind, name;
      words >> kind >> name;
      if (kind != "HELP" && kind != "TYPE") continue;  // a plain comment
      current = &FamilyNamed(&fams, name);
      std::string rest;
      std::getline(words >> std::ws, rest);
      if (kind == "HELP") current->help = Unescape(rest);
      else current->type = rest;
      continue;
    }
    Sample s;
    if (!ParseSampleLine(line, &s)) {
      return Status::InvalidArgument("metrics line " + std::to_string(line_no) +
                                     " is not a sample: " + line);
    }
    if (!current || !BelongsTo(s.name, *current)) current = &FamilyNamed(&fams, s.name);
    current->samples.push_back(std::move(s));
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
  for (size_t i = 0; i < sources.size(); ++i) {
    auto parsed = ParseExposition(sources[i].second);
    if (!parsed.ok()) {
      if (errors) errors->push_back("source " + std::to_string(i) + ": " + parsed.status().message());
      continue;
    }
    for (auto& f : *parsed) {
      ParsedFamily& into = FamilyNamed(&merged, f.name);
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
