// The test API server's pure rules: label selectors, merge patch, the generation rule.
#include "tests/kube/fake_objects.h"

#include <gtest/gtest.h>

namespace ddp::fake {
namespace {

using json = nlohmann::json;

struct SelectorCase {
  std::string selector;
  json labels;
  bool want;
};

TEST(FakeObjects, LabelSelectorTable) {
  const json labels = {{"app", "ddp"}, {"tier", "worker"}, {"round", "2"}};
  const std::vector<SelectorCase> cases = {
      {"", labels, true},
      {"app=ddp", labels, true},
      {"app==ddp", labels, true},
      {"app=other", labels, false},
      {"app!=other", labels, true},
      {"missing!=x", labels, true},  // != is satisfied by an absent key
      {"round in (1,2)", labels, true},
      {"round in (3, 4)", labels, false},
      {"round notin (1,2)", labels, false},
      {"missing notin (1)", labels, true},
      {"tier", labels, true},
      {"!tier", labels, false},
      {"!missing", labels, true},
      {"app=ddp,tier=worker,round in (2)", labels, true},
      {"app=ddp,tier=ps", labels, false},
      {"app=ddp", json(), false},
  };
  for (const auto& c : cases) {
    std::vector<LabelRequirement> sel;
    std::string err;
    ASSERT_TRUE(ParseLabelSelector(c.selector, &sel, &err)) << c.selector << ": " << err;
    EXPECT_EQ(MatchesLabels(sel, c.labels), c.want) << c.selector;
  }
}

TEST(FakeObjects, MalformedSelectorsAreRejected) {
  for (const std::string bad : {"a in (x", "a foo (x)", "a=b,,c=d", "bad key=1"}) {
    std::vector<LabelRequirement> sel;
    std::string err;
    EXPECT_FALSE(ParseLabelSelector(bad, &sel, &err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
  }
}

TEST(FakeObjects, MergePatchFollowsRfc7386) {
  // The examples of RFC 7386 section 3.
  json target = json::parse(R"({"a":"b","c":{"d":"e","f":"g"}})");
  json patch = json::parse(R"({"a":"z","c":{"f":null}})");
  EXPECT_EQ(MergePatch(target, patch), json::parse(R"({"a":"z","c":{"d":"e"}})"));
  EXPECT_EQ(MergePatch(json::parse(R"({"a":["b"]})"), json::parse(R"({"a":"c"})")),
            json::parse(R"({"a":"c"})"));
  EXPECT_EQ(MergePatch(json::parse(R"({"a":"foo"})"), json::parse("null")), json());
  EXPECT_EQ(MergePatch(json::parse(R"({"e":null})"), json::parse(R"({"a":1})")),
            json::parse(R"({"e":null,"a":1})"));
  EXPECT_EQ(MergePatch(json::parse(R"([1,2])"), json::parse(R"({"a":{"bb":{"ccc":null}}})")),
            json::parse(R"({"a":{"bb":{}}})"));
}

TEST(FakeObjects, SpecChangedIgnoresMetadataAndStatus) {
  json a = {{"metadata", {{"labels", {{"x", "1"}}}}}, {"spec", {{"replicas", 2}}}, {"status", {}}};
  json b = a;
  b["metadata"]["labels"]["x"] = "2";
  b["status"]["phase"] = "Running";
  EXPECT_FALSE(SpecChanged(a, b));
  b["spec"]["replicas"] = 3;
  EXPECT_TRUE(SpecChanged(a, b));
}

}  // namespace
}  // namespace ddp::fake
