// Reading Prometheus text: parse an exposition into families, look up a sample, and merge the
// expositions of several processes (one per local rank) into one valid page with extra labels.
// Pure functions; no I/O.
#ifndef DDP_COMMON_EXPOSITION_H_
#define DDP_COMMON_EXPOSITION_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ddp::metrics {

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  std::string name;  // full sample name, e.g. x_seconds_bucket
  LabelPairs labels;
  double value = 0;
};

struct ParsedFamily {
  std::string name;  // family name, e.g. x_seconds
  std::string help;  // unescaped
  std::string type;  // counter|gauge|histogram|summary|untyped
  std::vector<Sample> samples;
};

// Bounds on one page, so a hostile page costs at most a known amount of time and memory.
// 0 means unbounded (a page this process rendered itself).
struct ParseLimits {
  size_t max_bytes = 0;   // the text's size
  size_t max_series = 0;  // samples, and families (a HELP/TYPE without samples is one too)
};

// Linear in the text's size (families are found through an index, not a scan). Returns
// InvalidArgument naming the line number for a line that is neither a comment, blank, nor
// `name{labels} value [timestamp]`; FailedPrecondition naming the limit for a page past one.
StatusOr<std::vector<ParsedFamily>> ParseExposition(const std::string& text,
                                                    const ParseLimits& limits = {});

// The value of the first sample called `name` whose labels include every pair of `match`.
std::optional<double> FindSample(const std::vector<ParsedFamily>& families,
                                 const std::string& name, const LabelPairs& match = {});

// One exposition from several: each source's samples get its extra labels (placed first);
// each family is written once (HELP/TYPE from its first source) with all sources' samples
// together, as promtool requires. Sources that fail to parse are skipped and named in
// `*errors` when given.
std::string MergeExpositions(const std::vector<std::pair<LabelPairs, std::string>>& sources,
                             std::vector<std::string>* errors = nullptr);

}  // namespace ddp::metrics

#endif  // DDP_COMMON_EXPOSITION_H_
