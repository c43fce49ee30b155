// The peer of scrape_bench: the exposition parser as it was before pages were bounded (a linear
// scan of the families per line: quadratic in the number of metric names). Kept here only to
// be measured against; nothing else uses it.
#ifndef DDP_BENCH_SCRAPE_OLD_PARSER_H_
#define DDP_BENCH_SCRAPE_OLD_PARSER_H_

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "common/exposition.h"

namespace ddp::bench_old {

using metrics::ParsedFamily;
using metrics::Sample;

inline std::string Unescape(const std::string& s) {
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

inline bool IsNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

// Parses `name{a="b",...} value [ts]`. Returns false on malformed input.
inline bool ParseSampleLine(const std::string& line, Sample* out) {
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

inline bool BelongsTo(const std::string& sample, const ParsedFamily& f) {
  if (sample == f.name) return true;
  if (f.type != "histogram" && f.type != "summary") return false;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    if (sample == f.name + suffix) return true;
  }
  return false;
}

inline ParsedFamily& FamilyNamed(std::vector<ParsedFamily>* fams, const std::string& name) {
  for (auto& f : *fams) if (f.name == name) return f;
  fams->push_back(ParsedFamily{name, "", "untyped", {}});
  return fams->back();
}


inline StatusOr<std::vector<ParsedFamily>> ParseExposition(const std::string& text) {
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

}  // namespace ddp::bench_old

#endif  // DDP_BENCH_SCRAPE_OLD_PARSER_H_
