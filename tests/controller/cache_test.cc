// IndexedCache: keys, the job index, change notifications and pruning after a re-list.
#include "operator/kube/cache.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

using nlohmann::json;

// The cache takes the label key as a plain value; any key works, this is the operator's.
constexpr char kJobLabel[] = "ddp.dev/job-name";

json Pod(const std::string& ns, const std::string& name, const std::string& job,
         const std::string& phase = "Pending") {
  json p = {{"metadata", {{"name", name}, {"namespace", ns}}}, {"status", {{"phase", phase}}}};
  if (!job.empty()) p["metadata"]["labels"] = {{kJobLabel, job}};
  return p;
}

struct Change {
  std::string index, old_phase, new_phase;  // "" = absent
  bool operator==(const Change& o) const {
    return index == o.index && old_phase == o.old_phase && new_phase == o.new_phase;
  }
};

class CacheTest : public ::testing::Test {
 protected:
  IndexedCache<std::string> cache_{
      [](const json& obj) -> std::optional<IndexedCache<std::string>::Entry> {
        std::string job = JobKeyFromLabel(obj, kJobLabel);
        if (job.empty()) return std::nullopt;
        return IndexedCache<std::string>::Entry{job, obj["status"]["phase"].get<std::string>()};
      },
      [this](const std::string& index, const std::string* old, const std::string* now) {
        changes_.push_back({index, old ? *old : "", now ? *now : ""});
      }};
  std::vector<Change> changes_;
};

TEST(ObjectKeyTest, NamespacedAndClusterScoped) {
  EXPECT_EQ(ObjectKey(Pod("ml", "a", "")), "ml/a");
  EXPECT_EQ(ObjectKey(json{{"metadata", {{"name", "n"}}}}), "n");
  EXPECT_EQ(ObjectKey(json::object()), "");
}

TEST(JobKeyFromLabelTest, UsesTheObjectsNamespace) {
  EXPECT_EQ(JobKeyFromLabel(Pod("ml", "x-worker-0", "x"), kJobLabel), "ml/x");
  EXPECT_EQ(JobKeyFromLabel(Pod("ml", "x-worker-0", ""), kJobLabel), "");
  json bad = Pod("ml", "p", "");
  bad["metadata"]["labels"] = {{kJobLabel, 3}};
  EXPECT_EQ(JobKeyFromLabel(bad, kJobLabel), "");
}

TEST_F(CacheTest, IndexesByJobAndNotifiesAddUpdateRemove) {
  cache_.Upsert(Pod("ml", "a-worker-0", "a"));
  cache_.Upsert(Pod("ml", "a-worker-1", "a"));
  cache_.Upsert(Pod("ml", "b-worker-0", "b"));
  cache_.Upsert(Pod("other", "a-worker-0", "a"));  // same job name, other namespace
  EXPECT_EQ(cache_.ByIndex("ml/a").size(), 2u);
  EXPECT_EQ(cache_.ByIndex("ml/b").size(), 1u);
  EXPECT_EQ(cache_.ByIndex("other/a").size(), 1u);
  EXPECT_TRUE(cache_.ByIndex("ml/zzz").empty());

  changes_.clear();
  cache_.Upsert(Pod("ml", "a-worker-0", "a", "Running"));
  cache_.Remove(Pod("ml", "a-worker-1", "a"));
  cache_.Remove(Pod("ml", "never-seen", "a"));  // no change, no notification
  EXPECT_EQ(changes_, (std::vector<Change>{{"ml/a", "Pending", "Running"}, {"ml/a", "Pending", ""}}));
  EXPECT_EQ(cache_.Get("ml/a-worker-0"), "Running");
  EXPECT_EQ(cache_.ByIndex("ml/a"), std::vector<std::string>{"Running"});
}

TEST_F(CacheTest, UpsertUnlessKeepsWhatTheWatchDeliveredMeanwhile) {
  // The controller stores its write's result only while the cache still holds the object it
  // planned from (here: phase Pending); absent or moved on, the cache's copy stays.
  auto unless_moved_on = [](const std::string* cur) { return cur == nullptr || *cur != "Pending"; };
  EXPECT_FALSE(cache_.UpsertUnless(Pod("ml", "a-worker-0", "a", "Running"), unless_moved_on));
  EXPECT_EQ(cache_.Get("ml/a-worker-0"), std::nullopt) << "a deleted object is not brought back";
  EXPECT_TRUE(changes_.empty());

  cache_.Upsert(Pod("ml", "a-worker-0", "a"));  // Pending
  changes_.clear();
  EXPECT_TRUE(cache_.UpsertUnless(Pod("ml", "a-worker-0", "a", "Running"), unless_moved_on));
  EXPECT_EQ(cache_.Get("ml/a-worker-0"), "Running");
  EXPECT_EQ(changes_, (std::vector<Change>{{"ml/a", "Pending", "Running"}}));

  changes_.clear();  // now Running: the "watch" moved on, an older write result must not win
  EXPECT_FALSE(cache_.UpsertUnless(Pod("ml", "a-worker-0", "a", "Succeeded"), unless_moved_on));
  EXPECT_EQ(cache_.Get("ml/a-worker-0"), "Running");
  EXPECT_TRUE(changes_.empty());
  EXPECT_TRUE(cache_.UpsertUnless(Pod("ml", "a-worker-0", "a", "Failed"), nullptr));
  EXPECT_EQ(cache_.Get("ml/a-worker-0"), "Failed");
}

json Versioned(const std::string& rv, int64_t generation) {
  return json{{"metadata", {{"name", "j"}, {"namespace", "ml"}, {"resourceVersion", rv},
                            {"generation", generation}}}};
}

// A status write's result and a watch event of the same generation: the later write wins, as
// the API server's resourceVersion orders them (numerically: "12" is after "9").
TEST(CachedIsNewerTest, OrdersByResourceVersionNotGeneration) {
  EXPECT_TRUE(CachedIsNewer(Versioned("15", 3), Versioned("12", 3)));
  EXPECT_FALSE(CachedIsNewer(Versioned("12", 3), Versioned("15", 3)));
  EXPECT_TRUE(CachedIsNewer(Versioned("12", 3), Versioned("9", 3)));
  EXPECT_FALSE(CachedIsNewer(Versioned("12", 3), Versioned("12", 3)));
  // A newer resourceVersion wins over a higher generation written earlier (cannot happen with
  // one object's history reordered, but the order is the server's, not the spec's).
  EXPECT_TRUE(CachedIsNewer(Versioned("20", 3), Versioned("18", 4)));
  // Not decimal: generation decides.
  EXPECT_TRUE(CachedIsNewer(Versioned("a", 4), Versioned("b", 3)));
  EXPECT_FALSE(CachedIsNewer(Versioned("a", 3), Versioned("b", 3)));
}

TEST(GenerationOfTest, ReadsMetadataOrZero) {
  EXPECT_EQ(GenerationOf(json{{"metadata", {{"generation", 7}}}}), 7);
  EXPECT_EQ(GenerationOf(json{{"metadata", {{"generation", "7"}}}}), 0);
  EXPECT_EQ(GenerationOf(json::object()), 0);
}

TEST(ResourceVersionOfTest, ReadsMetadataOrEmpty) {
  EXPECT_EQ(ResourceVersionOf(json{{"metadata", {{"resourceVersion", "42"}}}}), "42");
  EXPECT_EQ(ResourceVersionOf(json{{"metadata", {{"resourceVersion", 42}}}}), "");
  EXPECT_EQ(ResourceVersionOf(json{{"metadata", json::object()}}), "");
  EXPECT_EQ(ResourceVersionOf(json::object()), "");
}

TEST_F(CacheTest, ObjectThatLosesItsLabelLeavesTheCache) {
  cache_.Upsert(Pod("ml", "a-worker-0", "a"));
  changes_.clear();
  cache_.Upsert(Pod("ml", "a-worker-0", ""));
  EXPECT_EQ(cache_.Size(), 0u);
  EXPECT_EQ(changes_, (std::vector<Change>{{"ml/a", "Pending", ""}}));
}

TEST_F(CacheTest, RelabelMovesBetweenIndexesAndNotifiesBoth) {
  cache_.Upsert(Pod("ml", "p", "a"));
  changes_.clear();
  cache_.Upsert(Pod("ml", "p", "b"));
  EXPECT_TRUE(cache_.ByIndex("ml/a").empty());
  EXPECT_EQ(cache_.ByIndex("ml/b").size(), 1u);
  EXPECT_EQ(changes_, (std::vector<Change>{{"ml/a", "Pending", ""}, {"ml/b", "", "Pending"}}));
}

TEST_F(CacheTest, PruneDropsWhatTheRelistDidNotReturn) {
  cache_.Upsert(Pod("ml", "a-worker-0", "a"));
  cache_.Upsert(Pod("ml", "a-worker-1", "a"));
  changes_.clear();
  EXPECT_EQ(cache_.Prune({"ml/a-worker-0"}), 1u);
  EXPECT_EQ(cache_.Size(), 1u);
  EXPECT_EQ(changes_, (std::vector<Change>{{"ml/a", "Pending", ""}}));
  EXPECT_EQ(cache_.Prune({"ml/a-worker-0"}), 0u);
}

}  // namespace
}  // namespace ddp::controller
