// The watch stream's framing: lines split across reads, and each line's mapping to an event or
// a Status (410 -> Gone). The expected lines are the input's lines, however the bytes arrive.
#include "operator/kube/client_watch_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ddp::controller {
namespace {

// Feeds `chunks` in order, then finishes; returns every line handed out.
std::vector<std::string> Split(const std::vector<std::string>& chunks) {
  WatchLineSplitter s;
  std::vector<std::string> got;
  auto keep = [&](std::string_view line) {
    got.emplace_back(line);
    return true;
  };
  for (const auto& c : chunks) EXPECT_TRUE(s.Feed(c, keep));
  EXPECT_TRUE(s.Finish(keep));
  return got;
}

TEST(WatchLineSplitter, LinesAreTheSameWhereverTheReadsSplitTheStream) {
  const std::string a = R"({"type":"ADDED","object":{"n":1}})";
  const std::string b = R"({"type":"DELETED","object":{"n":2}})";
  const std::string stream = a + "\n" + b + "\n";
  // Every single split point, and one byte per read.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    EXPECT_EQ(Split({stream.substr(0, cut), stream.substr(cut)}), (std::vector<std::string>{a, b}))
        << "cut at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  EXPECT_EQ(Split(bytes), (std::vector<std::string>{a, b}));
}

TEST(WatchLineSplitter, CrLfEmptyLinesAndAnUnterminatedLastLine) {
  struct Case {
    std::vector<std::string> chunks;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {{"x\r\ny\r\n"}, {"x", "y"}},
      {{"x\r", "\ny\n"}, {"x", "y"}},
      {{"\n\nx\n\r\n\n"}, {"x"}},
      {{"x\ny"}, {"x", "y"}},    // the end of the stream completes the last line
      {{"x\n", "y", "z"}, {"x", "yz"}},
      {{""}, {}},
      {{"\r"}, {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Split(c.chunks), c.want) << ::testing::PrintToString(c.chunks);
  }
}

TEST(WatchLineSplitter, StopsAtTheLineWhoseHandlerSaysStop) {
  WatchLineSplitter s;
  std::vector<std::string> got;
  auto until_b = [&](std::string_view line) {
    got.emplace_back(line);
    return line != "b";
  };
  EXPECT_FALSE(s.Feed("a\nb\nc\n", until_b));
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b"}));
}

TEST(ParseWatchLine, EventTypesAndErrors) {
  struct Case {
    std::string line;
    StatusCode want_code;
    WatchEventType want_type;  // when OK
  };
  const std::vector<Case> cases = {
      {R"({"type":"ADDED","object":{"a":1}})", StatusCode::kOk, WatchEventType::kAdded},
      {R"({"type":"MODIFIED","object":{}})", StatusCode::kOk, WatchEventType::kModified},
      {R"({"type":"DELETED","object":{}})", StatusCode::kOk, WatchEventType::kDeleted},
      {R"({"type":"BOOKMARK","object":{}})", StatusCode::kOk, WatchEventType::kBookmark},
      {R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})",
       StatusCode::kGone, WatchEventType::kError},
      {R"({"type":"ERROR","object":{"kind":"Status","code":500,"message":"boom"}})",
       StatusCode::kUnavailable, WatchEventType::kError},
      // An ERROR without a usable code is still an error (mapped as a 500).
      {R"({"type":"ERROR","object":{"code":"x"}})", StatusCode::kUnavailable, WatchEventType::kError},
      {R"({"type":"ERROR","object":{"code":200}})", StatusCode::kUnavailable, WatchEventType::kError},
      {R"({"type":"RENAMED","object":{}})", StatusCode::kInternal, WatchEventType::kError},
      {R"({"type":"ADDED"})", StatusCode::kInternal, WatchEventType::kError},
      {R"({"type":"ADDED","object":)", StatusCode::kInternal, WatchEventType::kError},
      {R"(["ADDED"])", StatusCode::kInternal, WatchEventType::kError},
  };
  for (const Case& c : cases) {
    auto ev = ParseWatchLine(c.line, "watch pods ml");
    EXPECT_EQ(ev.ok() ? StatusCode::kOk : ev.status().code(), c.want_code) << c.line;
    if (ev.ok()) {
      EXPECT_EQ(ev->type, c.want_type) << c.line;
    } else {
      EXPECT_EQ(ev.status().message().rfind("watch pods ml: ", 0), 0u) << ev.status().message();
    }
  }
  auto added = ParseWatchLine(R"({"type":"ADDED","object":{"a":1}})", "w");
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->object, nlohmann::json({{"a", 1}}));
  auto bad = ParseWatchLine(std::string(300, 'x'), "w");
  EXPECT_LT(bad.status().message().size(), 260u) << "the quoted line is cut short";
}

}  // namespace
}  // namespace ddp::controller
