// MeasureAllReduce: the total and exposed all-reduce time of a step from its buckets' in-flight
// intervals. Expected values are worked out by hand from each row's intervals; a randomised
// property check holds the invariant 0 <= exposed <= total that the metrics rely on.
#include "worker/ddp/allreduce_time.h"

#include <gtest/gtest.h>

#include <random>

namespace ddp::worker {
namespace {

struct Row {
  const char* name;
  std::vector<BucketInterval> buckets;  // {launch, seconds}
  double backward_end;
  double total, exposed;
};

TEST(AllReduceTimeTest, Table) {
  const std::vector<Row> rows = {
      {"no buckets", {}, 1.0, 0, 0},
      {"done before backward ended: all hidden", {{0.1, 0.2}, {0.4, 0.1}}, 1.0, 0.3, 0},
      {"launched after backward ended: all exposed", {{1.0, 0.5}}, 1.0, 0.5, 0.5},
      {"straddles the end: the part after it", {{0.5, 1.0}}, 1.0, 1.0, 0.5},
      // [0, 2] and [1, 3] overlap: their union is [0, 3]; after 2.5 only [2.5, 3].
      {"overlapping buckets count once", {{0, 2}, {1, 2}}, 2.5, 3.0, 0.5},
      // [0, 1] and [2, 3]: the gap [1, 2] is no all-reduce time, exposed or not.
      {"the gap between buckets is not counted", {{0, 1}, {2, 1}}, 0.5, 2.0, 1.5},
      // Launch order need not be sorted by end: [0, 4] contains [1, 2].
      {"a bucket inside another", {{0, 4}, {1, 1}}, 3.0, 4.0, 1.0},
      {"touching intervals join", {{0, 1}, {1, 1}}, 1.5, 2.0, 0.5},
      {"a zero or negative duration counts nothing", {{0.5, 0}, {0.7, -1}}, 0.0, 0, 0},
  };
  for (const Row& r : rows) {
    const AllReduceTime t = MeasureAllReduce(r.buckets, r.backward_end);
    EXPECT_DOUBLE_EQ(t.total, r.total) << r.name;
    EXPECT_DOUBLE_EQ(t.exposed, r.exposed) << r.name;
  }
}

// The invariant holds exactly (not within a tolerance) for any intervals: exposed is the same
// union clipped to a half-line, so every piece of it is a piece of the whole, or nothing.
TEST(AllReduceTimeTest, ExposedNeverExceedsTotal) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> at(0, 0.05), len(-0.001, 0.02);
  std::uniform_int_distribution<int> count(0, 12);
  double sum_total = 0, sum_exposed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<BucketInterval> buckets(count(rng));
    double launch = 0;
    for (BucketInterval& b : buckets) {
      launch += at(rng) / 4;  // launched in order, as the reducer does
      b = {launch, len(rng)};
    }
    const double backward_end = at(rng);
    const AllReduceTime t = MeasureAllReduce(buckets, backward_end);
    ASSERT_GE(t.exposed, 0.0) << "trial " << trial;
    ASSERT_LE(t.exposed, t.total) << "trial " << trial;
    // Counters add per-step values: the sums keep the order too.
    sum_total += t.total, sum_exposed += t.exposed;
    ASSERT_LE(sum_exposed, sum_total) << "trial " << trial;
  }
}

}  // namespace
}  // namespace ddp::worker
