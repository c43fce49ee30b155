// The store's keys and values keep c10d's Store semantics (what Gloo, NCCL's bootstrap and the
// group protocol were written against), and its bounds.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "worker/store/state.h"

namespace ddp::store {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

Bytes B(const std::string& s) { return {s.begin(), s.end()}; }
std::string S(const Bytes& b) { return {b.begin(), b.end()}; }

TEST(StoreStateTest, AddCountsFromZeroAndKeepsTheCounterAsDecimalText) {
  StoreState st;
  EXPECT_EQ(*st.Add("n", 3), 3);
  EXPECT_EQ(*st.Add("n", -5), -2);
  EXPECT_EQ(*st.Add("n", 0), -2);
  EXPECT_EQ(S(*st.Get("n")), "-2");  // c10d's counters are read back with get() as text
  ASSERT_TRUE(st.Set("m", B("41")).ok());
  EXPECT_EQ(*st.Add("m", 1), 42);
  ASSERT_TRUE(st.Set("text", B("forty")).ok());
  const auto bad = st.Add("text", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not hold a number"), std::string::npos);
  EXPECT_EQ(S(*st.Get("text")), "forty");  // untouched
  ASSERT_TRUE(st.Set("max", B("9223372036854775807")).ok());
  EXPECT_EQ(*st.Add("max", 1), INT64_MIN);  // wraps as int64 arithmetic, no UB
}

// c10d's compareSet, case by case (HashStore and TCPStore agree on these).
TEST(StoreStateTest, CompareSetFollowsC10d) {
  struct Row {
    const char* what;
    bool present;
    std::string held, expected, desired;
    std::string returned;
    bool present_after;
    std::string held_after;
  };
  const std::vector<Row> rows = {
      {"absent, empty expected: created", false, "", "", "new", "new", true, "new"},
      {"absent, expected given: left absent, expected returned", false, "", "old", "new", "old",
       false, ""},
      {"present and equal: replaced", true, "old", "old", "new", "new", true, "new"},
      {"present and different: kept, current returned", true, "cur", "old", "new", "cur", true,
       "cur"},
      {"present empty, expected empty: replaced", true, "", "", "x", "x", true, "x"},
  };
  for (const Row& r : rows) {
    StoreState st;
    if (r.present) {
      ASSERT_TRUE(st.Set("k", B(r.held)).ok());
    }
    auto got = st.CompareSet("k", B(r.expected), B(r.desired));
    ASSERT_TRUE(got.ok()) << r.what;
    EXPECT_EQ(S(*got), r.returned) << r.what;
    EXPECT_EQ(st.Check({"k"}), r.present_after) << r.what;
    if (r.present_after) {
      EXPECT_EQ(S(*st.Get("k")), r.held_after) << r.what;
    }
  }
}

TEST(StoreStateTest, CheckDeleteAndNumKeys) {
  StoreState st;
  EXPECT_TRUE(st.Check({}));
  ASSERT_TRUE(st.Set("a", B("1")).ok());
  ASSERT_TRUE(st.Set("b", B("")).ok());  // an empty value is a value
  EXPECT_TRUE(st.Check({"a", "b"}));
  EXPECT_FALSE(st.Check({"a", "c"}));
  EXPECT_EQ(st.NumKeys(), 2);
  EXPECT_TRUE(st.Delete("a"));
  EXPECT_FALSE(st.Delete("a"));
  EXPECT_EQ(st.NumKeys(), 1);
  EXPECT_FALSE(st.Get("a").has_value());
}

TEST(StoreStateTest, AWaitEndsWhenTheLastKeyAppearsOrAtItsDeadline) {
  StoreState st;
  const auto start = Clock::now();
  EXPECT_FALSE(st.Wait({"never"}, start + milliseconds(150)));
  EXPECT_GE(Clock::now() - start, milliseconds(150));
  std::atomic<bool> done{false};
  std::thread waiter([&] { done = st.Wait({"x", "y"}, Clock::now() + std::chrono::seconds(20)); });
  ASSERT_TRUE(st.Set("x", B("1")).ok());
  EXPECT_FALSE(done.load());  // one of two keys
  ASSERT_TRUE(st.Add("y", 1).ok());
  waiter.join();
  EXPECT_TRUE(done.load());
}

// The server looks at the requests parked on a key again whenever it changes: the hook hears of
// every write, creation and deletion, and of nothing that changes nothing.
TEST(StoreStateTest, TheHookHearsOfEveryChangeAndOfNoRead) {
  StoreState st;
  std::vector<std::string> changed;
  st.OnChange([&](const std::string& k) { changed.push_back(k); });
  ASSERT_TRUE(st.Set("a", B("1")).ok());
  ASSERT_TRUE(st.Set("a", B("2")).ok());
  ASSERT_TRUE(st.Add("n", 1).ok());
  ASSERT_TRUE(st.Add("n", 0).ok());  // a read of a counter
  ASSERT_TRUE(st.CompareSet("c", {}, B("v")).ok());
  ASSERT_TRUE(st.CompareSet("c", B("other"), B("w")).ok());  // no match: nothing written
  ASSERT_TRUE(st.CompareSet("absent", B("x"), B("y")).ok());  // stays absent
  EXPECT_TRUE(st.Delete("a"));
  EXPECT_FALSE(st.Delete("a"));  // nothing to delete
  (void)st.Get("c");
  EXPECT_EQ(changed, (std::vector<std::string>{"a", "a", "n", "c", "a"}));
}

// A watch: any of its conditions holding ends it, with every watched key's value.
TEST(StoreStateTest, AWatchEndsWhenAnyConditionHoldsOrAtItsDeadline) {
  StoreState st;
  ASSERT_TRUE(st.Set("gen", B("3")).ok());
  auto changed = [](const std::string& k, const std::string& known) {
    Condition c;
    c.key = k;
    c.operand = B(known);
    return c;
  };
  Condition at_least;
  at_least.key = "arrivals";
  at_least.kind = Condition::kAtLeast;
  at_least.operand = B("2");
  const std::vector<Condition> conds = {changed("gen", "3"), changed("stop", ""), at_least};
  std::vector<std::optional<Bytes>> values;
  EXPECT_FALSE(st.Evaluate(conds, &values));
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(S(*values[0]), "3");
  EXPECT_FALSE(values[1].has_value());
  const auto start = Clock::now();
  EXPECT_FALSE(st.Watch(conds, start + milliseconds(150), &values));
  EXPECT_GE(Clock::now() - start, milliseconds(150));
  ASSERT_TRUE(st.Add("arrivals", 1).ok());
  EXPECT_FALSE(st.Evaluate(conds, &values));  // 1 < 2
  std::thread writer([&] { ASSERT_TRUE(st.Add("arrivals", 1).ok()); });
  EXPECT_TRUE(st.Watch(conds, Clock::now() + std::chrono::seconds(20), &values));
  writer.join();
  EXPECT_EQ(S(*values[2]), "2");
  ASSERT_TRUE(st.Set("stop", B("1")).ok());
  EXPECT_TRUE(st.Evaluate({changed("stop", "")}, &values));
  EXPECT_TRUE(st.Evaluate({changed("absent", "was here")}, &values)) << "gone counts as changed";
}

TEST(StoreStateTest, AWritePastTheBoundIsRefusedAndLosesNothingHeld) {
  StoreState st(100);
  ASSERT_TRUE(st.Set("k", Bytes(50, 'x')).ok());   // 51 bytes
  const Status full = st.Set("j", Bytes(60, 'y'));  // 111 > 100
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.message().find("the store is full"), std::string::npos);
  EXPECT_EQ(st.Get("k")->size(), 50u);
  EXPECT_FALSE(st.Check({"j"}));
  ASSERT_TRUE(st.Set("k", Bytes(90, 'z')).ok());  // replacing counts the difference only
  EXPECT_TRUE(st.Delete("k"));
  EXPECT_TRUE(st.Set("j", Bytes(60, 'y')).ok());  // room again
  const StoreStats stats = st.Stats();
  EXPECT_EQ(stats.refused, 1);
  EXPECT_EQ(stats.keys, 1);
  EXPECT_EQ(stats.bytes, 61);
}

}  // namespace
}  // namespace ddp::store
