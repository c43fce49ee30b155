// Manifest parsing for local mode, edit diffs, and the file watcher.
#include "operator/local/manifest.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/common/poll.h"

namespace ddp::controller::local {
namespace {

const char kValid[] =
    "apiVersion: ddp.dev/v1alpha1\n"
    "kind: DDPJob\n"
    "metadata: {name: demo}\n"
    "spec:\n"
    "  replicas: 2\n"
    "  template: {spec: {containers: [{name: worker, image: x, command: [sh]}]}}\n";

TEST(ParseLocalManifest, OneValidJobIsDefaulted) {
  StatusOr<api::DDPJob> job = ParseLocalManifest(kValid, "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job.value().name, "demo");
  EXPECT_EQ(job.value().namespace_name, "default");  // ApplyDefaults ran
  EXPECT_EQ(job.value().spec.replicas, 2);
}

TEST(ParseLocalManifest, ErrorsNameTheFileAndField) {
  std::string bad = kValid;
  bad.replace(bad.find("replicas: 2"), 11, "replicas: 0");
  StatusOr<api::DDPJob> job = ParseLocalManifest(bad, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message().rfind("job.yaml: invalid DDPJob:", 0), 0u);
  EXPECT_NE(job.status().message().find("spec.replicas"), std::string::npos);

  StatusOr<api::DDPJob> two = ParseLocalManifest(std::string(kValid) + "---\n" + kValid, "j.yaml");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("exactly one DDPJob; the file has 2"), std::string::npos);

  EXPECT_FALSE(ParseLocalManifest("spec: [unclosed", "j.yaml").ok());
}

// A misspelt key must not quietly run with its default: `recovry: InPlace` would run Restart.
TEST(ParseLocalManifest, UnknownFieldsAreRefused) {
  std::string bad = kValid;
  bad.replace(bad.find("  replicas: 2\n"), 14, "  replicas: 2\n  failurePolicy: {recovry: InPlace}\n");
  StatusOr<api::DDPJob> job = ParseLocalManifest(bad, "job.yaml");
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find(
                "unknown field \"spec.failurePolicy.recovry\" (did you mean recovery?)"),
            std::string::npos)
      << job.status().message();
}

TEST(DiffJson, LeafPaths) {
  nlohmann::json a = {{"replicas", 2}, {"runPolicy", {{"suspend", false}}}};
  nlohmann::json b = {{"replicas", 3}, {"runPolicy", {{"suspend", true}}}, {"x", 1}};
  std::vector<std::string> d = DiffJson(a, b);
  std::vector<std::string> expected = {"replicas: 2 -> 3", "runPolicy.suspend: false -> true",
                                       "x: (unset) -> 1"};
  EXPECT_EQ(d, expected);
  EXPECT_TRUE(DiffJson(a, a).empty());
  EXPECT_EQ(DiffJson(a, b, 1).size(), 2u);  // one entry, then "..."
}

class WatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ddp-watch-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/job.yaml";
    Write("one");
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  void Write(const std::string& text) {
    std::ofstream(path_, std::ios::trunc) << text;
  }
  // Polls until a change is reported or 5 s pass.
  std::optional<std::string> PollUntilChange(ManifestWatcher* w) {
    std::optional<std::string> text;
    ddp::testing::PollUntil([&] { return (text = w->Poll()).has_value(); },
                            std::chrono::seconds(5));
    return text;
  }
  std::string dir_, path_;
};

TEST_F(WatcherTest, ReportsANewVersionOnce) {
  ManifestWatcher w(path_);
  ASSERT_EQ(w.ReadInitial().value(), "one");
  EXPECT_FALSE(w.Poll());
  Write("two, longer");  // the size changes, so the stamp differs even with coarse mtimes
  std::optional<std::string> text = PollUntilChange(&w);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "two, longer");
  EXPECT_FALSE(w.Poll());
  EXPECT_FALSE(w.Poll());
}

TEST_F(WatcherTest, ReplacedFileIsSeen) {
  ManifestWatcher w(path_);
  ASSERT_TRUE(w.ReadInitial().ok());
  // Editors save by writing a new file and renaming it over the old one.
  std::string tmp = dir_ + "/.job.yaml.swp";
  std::ofstream(tmp) << "three";
  ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
  std::optional<std::string> text = PollUntilChange(&w);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "three");
}

TEST(Watcher, MissingFileIsAnError) {
  ManifestWatcher w("/nonexistent/job.yaml");
  EXPECT_FALSE(w.ReadInitial().ok());
  EXPECT_FALSE(w.Poll());
}

}  // namespace
}  // namespace ddp::controller::local
