// Checks on what a run trained on (`--sample-log` / DDP_SAMPLE_LOG) and on its loss curve, for
// the e2e tests of resizes: every expected value is derived from the dataset size, the global
// batch and the step count alone.
#ifndef DDP_TESTS_WORKER_SAMPLE_CHECK_H_
#define DDP_TESTS_WORKER_SAMPLE_CHECK_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/worker/process_util.h"

namespace ddp::testing {

// Every sample log line is "step S E:I E:I ...". Checks that each of the `steps` steps' samples,
// all ranks together, are one global batch of `global`, and that over the run every example of
// every epoch (`examples` of them) was trained on exactly once.
//
// `cut_steps`: how many steps a departure may touch. A pod that departs while the group shrinks can
// be cut off inside a step's gradient all-reduce after its part reached the others: they commit
// the step with its gradient, it never commits the step, so nobody logs its share. Such a share
// is missing; that it was trained on is the loss curve's to show (the caller's check against a
// fixed-size run). The other way round, the departing pod can finish the step's all-reduce while
// the others' is aborted: it commits the step and leaves, and the group trains that step again
// without it. That last record of a pod's log is an orphan (the group never adopted it) when the
// step's other records make a whole global batch without it; it is left out and counted here.
inline void ExpectEverySampleOnce(const std::vector<std::string>& logs, int steps, int global,
                                  int examples, int cut_steps = 0) {
  using Record = std::pair<int64_t, std::vector<std::pair<int64_t, int64_t>>>;  // step, samples
  std::vector<std::vector<Record>> records(logs.size());
  std::map<int64_t, int> per_step;
  for (size_t k = 0; k < logs.size(); ++k) {
    std::istringstream in(ReadAll(logs[k]));
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string word;
      Record r{-1, {}};
      words >> word >> r.first;
      ASSERT_EQ(word, "step") << logs[k] << ": " << line;
      while (words >> word) {
        const size_t colon = word.find(':');
        ASSERT_NE(colon, std::string::npos) << word;
        r.second.push_back({std::stoll(word.substr(0, colon)), std::stoll(word.substr(colon + 1))});
      }
      per_step[r.first] += static_cast<int>(r.second.size());
      records[k].push_back(std::move(r));
    }
  }
  int orphans = 0;
  for (auto& log : records) {
    if (log.empty()) continue;
    const Record& last = log.back();
    const int n = per_step[last.first], mine = static_cast<int>(last.second.size());
    if (n > global && n - mine == global) {
      per_step[last.first] -= mine;
      log.pop_back();
      ++orphans;
    }
  }
  std::map<std::pair<int64_t, int64_t>, int> seen;  // (epoch, example) -> times
  for (const auto& log : records) {
    for (const Record& r : log) {
      for (const auto& sample : r.second) ++seen[sample];
    }
  }
  ASSERT_EQ(static_cast<int>(per_step.size()), steps);
  int cut = orphans;
  int64_t missing = 0;
  for (const auto& [step, n] : per_step) {
    EXPECT_LE(n, global) << "step " << step;
    if (n < global) {
      ++cut;
      missing += global - n;
    }
  }
  EXPECT_LE(cut, cut_steps) << "steps with a share missing or an orphan commit";
  const int64_t total = static_cast<int64_t>(steps) * global, full = total / examples;
  for (const auto& [key, times] : seen) {
    EXPECT_EQ(times, 1) << "epoch " << key.first << " example " << key.second;
    EXPECT_LE(key.first, full);
    EXPECT_TRUE(key.second >= 0 && key.second < examples) << key.second;
  }
  int64_t absent = 0;  // examples of the run's epochs that no log names
  for (int64_t e = 0; e <= full; ++e) {
    int count = 0;
    for (int i = 0; i < examples; ++i) count += seen.count({e, i}) ? 1 : 0;
    const int64_t want = e < full ? examples : total % examples;
    EXPECT_LE(count, want) << "epoch " << e;
    absent += want - count;
  }
  EXPECT_EQ(absent, missing) << "every example not named is one of a cut step's shares";
}

// Rank 0's loss by step from its "] step N/M ... loss X" lines. A step whose agreement (the
// all-reduce of its loss after the optimizer step) was cut by a new generation is committed but
// has no line.
inline std::map<int64_t, double> LossByStep(const std::string& log) {
  std::map<int64_t, double> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const size_t s = line.find("] step "), l = line.find(" loss ");
    if (s == std::string::npos || l == std::string::npos) continue;
    out[std::stoll(line.substr(s + 7))] = std::stod(line.substr(l + 6));
  }
  return out;
}

// The largest |a[i] - b[i]| over the common length.
inline double MaxDiff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_WORKER_SAMPLE_CHECK_H_
