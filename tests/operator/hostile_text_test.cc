// Hostile text: YAML that would overflow the stack or expand without bound, and UTF-8 cut inside
// a character. Each gets a clear error or a clean string, never a crash or a throwing write.
#include <gtest/gtest.h>

#include "operator/api/json_fields.h"
#include "operator/api/serialize.h"
#include "operator/api/utf8.h"
#include "operator/api/validate.h"
#include "operator/api/yaml_json.h"

namespace ddp::api {
namespace {

using nlohmann::json;

std::string ErrorOf(const std::string& yaml) {
  auto docs = ParseYamlDocuments(yaml);
  return docs.ok() ? "" : docs.status().message();
}

TEST(HostileYaml, LongPlainScalarsAreStringsOrNumbersWithoutRecursion) {
  // A 30 KB plain scalar overflowed std::regex's recursion; 1 MB of digits must also be fine.
  for (char c : {'a', '1'}) {
    const std::string s(1 << 20, c);
    auto docs = ParseYamlDocuments("v: " + s + "\n");
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    if (c == 'a') {
      EXPECT_EQ((*docs)[0]["v"], json(s));
    } else {
      EXPECT_TRUE((*docs)[0]["v"].is_string()) << "over 400 digits is no number";
    }
  }
  // Round trip through the emitter, which asks the same questions.
  EXPECT_EQ((*ParseYamlDocuments(JsonToYaml(json{{"v", std::string(100000, '9')}})))[0]["v"],
            json(std::string(100000, '9')));
}

TEST(HostileYaml, NumbersStillReadAsKubernetesReadsThem) {
  auto d = (*ParseYamlDocuments("a: -12\nb: +3.5e2\nc: .5\nd: 0o17\ne: 1e\nf: 1.2.3\ng: 5.\n"))[0];
  EXPECT_EQ(d["a"], json(-12));
  EXPECT_EQ(d["b"], json(350.0));
  EXPECT_EQ(d["c"], json(0.5));
  EXPECT_EQ(d["d"], json(15));
  EXPECT_EQ(d["e"], json("1e"));
  EXPECT_EQ(d["f"], json("1.2.3"));
  EXPECT_EQ(d["g"], json(5.0));
}

TEST(HostileYaml, DeepNestingIsRefusedWithTheLimit) {
  const std::string want = "nested deeper than " + std::to_string(kMaxYamlDepth) + " levels";
  // Flow and block nesting, past our limit and past yaml-cpp's own guard.
  for (int depth : {kMaxYamlDepth + 5, 100000}) {
    const std::string flow = std::string(depth, '[') + std::string(depth, ']');
    EXPECT_NE(ErrorOf(flow).find(want), std::string::npos) << depth << ": " << ErrorOf(flow);
  }
  std::string block;
  for (int i = 0; i < kMaxYamlDepth + 5; ++i) block += std::string(i, ' ') + "a:\n";
  EXPECT_NE(ErrorOf(block).find(want), std::string::npos) << ErrorOf(block);
  // At the limit it still reads.
  const std::string ok = std::string(kMaxYamlDepth, '[') + std::string(kMaxYamlDepth, ']');
  EXPECT_EQ(ErrorOf(ok), "");
}

TEST(HostileYaml, AliasExpansionIsBounded) {
  // "Billion laughs": 9 levels of 9 aliases each is 9^9 (387 million) strings from 500 bytes.
  std::string yaml = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string p = "*l" + std::to_string(i - 1);
    yaml += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + p;
    for (int k = 1; k < 9; ++k) yaml += ", " + p;
    yaml += "]\n";
  }
  EXPECT_NE(ErrorOf(yaml).find("expands to more than"), std::string::npos) << ErrorOf(yaml);
  // An alias of a big scalar repeated: bounded in bytes too (64 x 1 MiB > 16 MiB).
  std::string big = "a: &a " + std::string(1 << 20, 'x') + "\nb: [";
  for (int i = 0; i < 64; ++i) big += std::string(i ? ", " : "") + "*a";
  EXPECT_NE(ErrorOf(big + "]\n").find("expands to more than"), std::string::npos);
  // A few aliases, as manifests use them, are fine.
  auto docs = ParseYamlDocuments("x: &e {name: A, value: '1'}\nenv: [*e, *e]\n");
  ASSERT_TRUE(docs.ok());
  EXPECT_EQ((*docs)[0]["env"][1]["name"], "A");
}

TEST(HostileYaml, HugeTextAndInvalidUtf8AreRefused) {
  EXPECT_NE(ErrorOf(std::string(kMaxYamlBytes + 1, ' ')).find("more than the limit"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("name: \"\xC3\"\n"), "YAML: the text is not valid UTF-8");
  EXPECT_EQ(ErrorOf("\xFF: x\n"), "YAML: the text is not valid UTF-8");
  EXPECT_EQ(ErrorOf("name: \"\xC3\xA9\"\n"), "");
}

// yaml-cpp 0.7 alone never returns on these (a top-level value followed by a stray token): a
// clear error naming where the stray text is, at once. The test's own timeout is the hang check.
TEST(HostileYaml, AStrayTokenAfterTheTopLevelValueIsAnErrorNotAHang) {
  for (const std::string text : {"{a: b},s", "{a: b},", "[a], b", "\"a\",s", "{a: b}\n,s",
                                 "kind: X\n---\n[1, 2] ,\n"}) {
    const std::string error = ErrorOf(text);
    EXPECT_NE(error.find("unexpected text after the document's value"), std::string::npos)
        << text << " -> " << error;
  }
  EXPECT_NE(ErrorOf("kind: X\n---\n[1, 2] ,\n").find("line 3"), std::string::npos);
  // Valid streams, empty documents included, still read as before.
  auto docs = ParseYamlDocuments("---\n---\na: 1\n---\n[1, 2]\n...\n---\n\"s\"\n");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0], json({{"a", 1}}));
  EXPECT_EQ((*docs)[1], json({1, 2}));
  EXPECT_EQ((*docs)[2], json("s"));
  EXPECT_EQ(ErrorOf("a,s\n"), "");  // a plain scalar may hold a comma
}

TEST(Utf8, SanitizeReplacesEveryInvalidSequence) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(SanitizeUtf8("plain"), "plain");
  EXPECT_EQ(SanitizeUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_EQ(SanitizeUtf8("a\xC3"), "a" + fffd);              // cut 2-byte sequence
  EXPECT_EQ(SanitizeUtf8("\xE2\x82z"), fffd + fffd + "z");   // cut 3-byte sequence
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), fffd + fffd);          // overlong '/'
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), fffd + fffd + fffd);  // a surrogate
  EXPECT_EQ(SanitizeUtf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // past U+10FFFF
  EXPECT_EQ(SanitizeUtf8("\x80"), fffd);
}

TEST(Utf8, TruncateCutsOnACharacterBoundary) {
  const std::string e = "\xC3\xA9";  // 2 bytes
  const std::string s = e + e + e + e + e;  // 10 bytes
  EXPECT_EQ(TruncateUtf8(s, 10), s);
  // 8 bytes: room for 5 before "...", which would split the third character: two fit.
  EXPECT_EQ(TruncateUtf8(s, 8), e + e + "...");
  EXPECT_EQ(TruncateUtf8(s, 9), e + e + e + "...");
  EXPECT_EQ(TruncateUtf8(s, 2), e);
  EXPECT_EQ(TruncateUtf8(s, 1), "");
  for (size_t n = 0; n <= s.size(); ++n) {
    const std::string t = TruncateUtf8(s, n);
    EXPECT_LE(t.size(), n);
    EXPECT_EQ(SanitizeUtf8(t), t) << n;
  }
}

// The reported crash: a message cut inside a character made the status write throw.
TEST(Utf8, MessagesWithCutCharactersStillSerialize) {
  const std::string e = "\xC3\xA9";
  std::string name;
  for (int i = 0; i < 40; ++i) name += e;
  // Describe cuts at 60 bytes: 29 characters and "...", never half of one.
  const std::string d = internal::Describe(json(name));
  EXPECT_EQ(SanitizeUtf8(d), d);
  EXPECT_LE(d.size(), 60u);
  // A status holding invalid UTF-8 (from any source) is written with U+FFFD.
  DDPJobStatus st;
  Condition c;
  c.type = "Failed";
  c.message = "cut: " + name.substr(0, 3);
  st.conditions.push_back(c);
  st.last_failure = LastFailure{};
  st.last_failure->message = "\xFF\xFE";
  const std::string out = StatusToJson(st).dump();
  EXPECT_NE(out.find("cut: \xC3\xA9\xEF\xBF\xBD"), std::string::npos) << out;
  // A validation message quoting a long multi-byte value stays valid UTF-8.
  auto job = ParseDDPJobJson({{"apiVersion", kApiVersion},
                              {"kind", kKind},
                              {"metadata", {{"name", name}}},
                              {"spec", {{"template", json::object()}}}});
  ASSERT_TRUE(job.ok());
  for (const std::string& p : Validate(*job)) EXPECT_EQ(SanitizeUtf8(p), p) << p;
}

}  // namespace
}  // namespace ddp::api
