// AssignBuckets (reverse order) and AssignBucketsInOrder (the rebuild): first-bucket cap, cap,
// dtype groups. Expected buckets are derived by hand from the sizes in each row.
#include "worker/ddp/buckets.h"

#include <gtest/gtest.h>

#include <set>

namespace ddp::worker {
namespace {

ParamSpec F(int64_t numel) { return {numel, 4, "float"}; }
ParamSpec D(int64_t numel) { return {numel, 8, "double"}; }
BucketSpec B(std::vector<size_t> params, std::vector<int64_t> offsets, int64_t numel, size_t bytes) {
  return {std::move(params), std::move(offsets), numel, bytes};
}

std::string Describe(const std::vector<BucketSpec>& bs) {
  std::string s;
  for (const auto& b : bs) {
    s += "{";
    for (size_t p : b.params) s += std::to_string(p) + " ";
    s += "bytes=" + std::to_string(b.bytes) + "} ";
  }
  return s;
}

struct Row {
  const char* name;
  std::vector<ParamSpec> params;
  size_t cap;
  size_t first_cap;
  std::vector<BucketSpec> want;
};

TEST(AssignBucketsTest, Table) {
  const std::vector<Row> rows = {
      {"empty", {}, 1000, 500, {}},
      // reverse: p3 40B + p2 1200B >= 500 closes bucket 0; p1 200B + p0 400B < 1000 stays open.
      {"first cap then cap", {F(100), F(50), F(300), F(10)}, 1000, 500,
       {B({3, 2}, {0, 10}, 310, 1240), B({1, 0}, {0, 50}, 150, 600)}},
      // the parameter that crosses the cap still joins the bucket, which then closes
      {"oversized param", {F(10), F(1000), F(10)}, 100, 100,
       {B({2, 1}, {0, 10}, 1010, 4040), B({0}, {0}, 10, 40)}},
      {"dtype change closes", {F(1), D(1), F(1)}, 1 << 20, 1 << 20,
       {B({2}, {0}, 1, 4), B({1}, {0}, 1, 8), B({0}, {0}, 1, 4)}},
      {"zero caps: one param each", {F(1), F(2)}, 0, 0, {B({1}, {0}, 2, 8), B({0}, {0}, 1, 4)}},
      // defaults: 2 MiB each; the first exceeds the 1 MiB first cap, the rest share 25 MiB
      {"defaults", {F(1 << 19), F(1 << 19), F(1 << 19)}, kDefaultBucketCapBytes,
       kDefaultFirstBucketCapBytes,
       {B({2}, {0}, 1 << 19, 2 << 20), B({1, 0}, {0, 1 << 19}, 1 << 20, 4 << 20)}},
  };
  for (const Row& row : rows) {
    auto got = AssignBuckets(row.params, row.cap, row.first_cap);
    EXPECT_EQ(got, row.want) << row.name << ": got " << Describe(got) << " want "
                             << Describe(row.want);
  }
}

TEST(AssignBucketsTest, EveryParamExactlyOnceWithContiguousOffsets) {
  std::vector<ParamSpec> params;
  for (int i = 0; i < 57; ++i) params.push_back(i % 7 == 3 ? D(i * 13 + 1) : F(i * 31 + 5));
  auto buckets = AssignBuckets(params, 2000, 300);
  std::set<size_t> seen;
  size_t last = params.size();
  for (const auto& b : buckets) {
    int64_t offset = 0;
    size_t bytes = 0;
    for (size_t k = 0; k < b.params.size(); ++k) {
      const size_t p = b.params[k];
      EXPECT_LT(p, last) << "not in reverse order";
      last = p;
      EXPECT_TRUE(seen.insert(p).second) << "param " << p << " twice";
      EXPECT_EQ(b.offsets[k], offset);
      EXPECT_EQ(params[p].group, params[b.params[0]].group) << "mixed dtypes in one bucket";
      offset += params[p].numel;
      bytes += static_cast<size_t>(params[p].numel) * params[p].element_size;
    }
    EXPECT_EQ(b.numel, offset);
    EXPECT_EQ(b.bytes, bytes);
  }
  EXPECT_EQ(seen.size(), params.size());
}

// The rebuild after the first step: the same caps walked in arrival order. Sizes as in "first
// cap then cap": p0 400 B, p1 200 B, p2 1200 B, p3 40 B.
TEST(AssignBucketsInOrderTest, FollowsTheGivenOrder) {
  const std::vector<ParamSpec> params = {F(100), F(50), F(300), F(10)};
  // p1 200 B < 500; + p3 40 B < 500; + p2 1200 B closes bucket 0; p0 400 B < 1000 stays open.
  EXPECT_EQ(AssignBucketsInOrder(params, {1, 3, 2, 0}, 1000, 500),
            (std::vector<BucketSpec>{B({1, 3, 2}, {0, 50, 60}, 360, 1440),
                                     B({0}, {0}, 100, 400)}));
  // The reverse order is AssignBuckets itself.
  EXPECT_EQ(AssignBucketsInOrder(params, {3, 2, 1, 0}, 1000, 500),
            AssignBuckets(params, 1000, 500));
  // A dtype change still closes a bucket, in any order.
  EXPECT_EQ(AssignBucketsInOrder({F(1), D(1), F(1)}, {0, 2, 1}, 1 << 20, 1 << 20),
            (std::vector<BucketSpec>{B({0, 2}, {0, 1}, 2, 8), B({1}, {0}, 1, 8)}));
}

TEST(CompleteArrivalOrderTest, UnusedParametersFollowInReverseAndBadOrdersAreErrors) {
  auto all = CompleteArrivalOrder({1, 3, 2, 0}, 4);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<size_t>{1, 3, 2, 0}));
  auto partial = CompleteArrivalOrder({2}, 5);  // 0, 1, 3, 4 got no gradient
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(*partial, (std::vector<size_t>{2, 4, 3, 1, 0}));
  auto none = CompleteArrivalOrder({}, 3);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, (std::vector<size_t>{2, 1, 0}));
  auto twice = CompleteArrivalOrder({1, 1}, 3);
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("parameter 1 listed twice"), std::string::npos);
  auto outside = CompleteArrivalOrder({0, 7}, 3);
  EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(outside.status().message().find("parameter 7 out of range (3 parameters)"),
            std::string::npos);
}

}  // namespace
}  // namespace ddp::worker
