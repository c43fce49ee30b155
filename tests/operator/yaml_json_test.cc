// YAML <-> JSON: scalar typing as Kubernetes reads manifests, and emitting that reads back.
#include <gtest/gtest.h>

#include "operator/api/yaml_json.h"

namespace ddp::api {
namespace {

using nlohmann::json;

TEST(ParseYamlDocuments, PlainScalarsGetJsonTypesQuotedOnesStayStrings) {
  auto docs = ParseYamlDocuments(
      "i: 12\nneg: -3\nf: 1.5\nb: true\nB: False\nn: null\nt: ~\nempty:\n"
      "qi: \"12\"\nqb: 'true'\nqn: \"null\"\ns: hello world\nver: 1.0.3\nhex: 0x1F\n");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  const json& d = (*docs)[0];
  EXPECT_EQ(d["i"], json(12));
  EXPECT_TRUE(d["i"].is_number_integer());
  EXPECT_EQ(d["neg"], json(-3));
  EXPECT_EQ(d["f"], json(1.5));
  EXPECT_EQ(d["b"], json(true));
  EXPECT_EQ(d["B"], json(false));
  EXPECT_TRUE(d["n"].is_null());
  EXPECT_TRUE(d["t"].is_null());
  EXPECT_TRUE(d["empty"].is_null());
  EXPECT_EQ(d["qi"], json("12"));
  EXPECT_EQ(d["qb"], json("true"));
  EXPECT_EQ(d["qn"], json("null"));
  EXPECT_EQ(d["s"], json("hello world"));
  EXPECT_EQ(d["ver"], json("1.0.3"));
  EXPECT_EQ(d["hex"], json(31));
}

TEST(ParseYamlDocuments, SkipsEmptyDocumentsAndKeepsOrder) {
  auto docs = ParseYamlDocuments("---\na: 1\n---\n---\nb: [1, two]\n...\n");
  ASSERT_TRUE(docs.ok());
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0], json({{"a", 1}}));
  EXPECT_EQ((*docs)[1], json::parse(R"({"b": [1, "two"]})"));
}

TEST(ParseYamlDocuments, SyntaxErrorNamesTheLine) {
  auto docs = ParseYamlDocuments("a: 1\nb: [1, 2\nc: 3\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(docs.status().message().find("line "), std::string::npos) << docs.status().message();
}

TEST(JsonToYaml, RoundTripsTrickyValues) {
  const json v = json::parse(R"({
    "s": "plain", "looks_int": "42", "looks_bool": "true", "yes": "yes", "empty": "",
    "colon": "a: b", "hash": "# not a comment", "multi": "line1\nline2\n", "n": null,
    "i": 7, "f": 2.5, "b": false, "list": [], "map": {}, "nested": [{"k": ["x", 1]}],
    "0123": "leading zero key"})");
  auto back = ParseYamlDocuments(JsonToYaml(v));
  ASSERT_TRUE(back.ok()) << JsonToYaml(v);
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0], v) << JsonToYaml(v);
}

}  // namespace
}  // namespace ddp::api
