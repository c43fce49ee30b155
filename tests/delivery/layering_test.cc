// The operator's layers (STYLE.md): api <- plan <- controller -> kube, local -> plan. The CMake
// libraries link only along these arrows, but a header-only include (a constant, an inline
// function) would not fail to link, so this test reads every #include of operator/<layer>/.
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/delivery/repo_files.h"

namespace ddp::delivery {
namespace {

// The operator layers each layer may include (besides itself, common/ and third parties).
const std::map<std::string, std::set<std::string>> kAllowed = {
    {"api", {}},
    {"plan", {"api"}},
    {"kube", {"api"}},  // time formatting only; the client takes plain values
    {"controller", {"api", "plan", "kube"}},
    {"local", {"api", "plan"}},
    {"chaos", {"api", "plan"}},  // `ddp-operator chaos`: reads statuses, acts through kubectl
};

TEST(Layering, OperatorIncludesFollowTheLayers) {
  const std::regex kInclude(R"re(#include "operator/([a-z_]+)/)re");
  int files = 0;
  for (const auto& [layer, allowed] : kAllowed) {
    const std::filesystem::path dir = SourcePath("operator/" + layer);
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() != ".h" && entry.path().extension() != ".cc") continue;
      ++files;
      const std::string text = ReadSource("operator/" + layer + "/" + name);
      for (std::sregex_iterator it(text.begin(), text.end(), kInclude), end; it != end; ++it) {
        const std::string to = (*it)[1];
        EXPECT_TRUE(to == layer || allowed.count(to))
            << "operator/" << layer << "/" << name << " includes operator/" << to
            << "/: the " << layer << " layer may not depend on " << to;
      }
    }
  }
  EXPECT_GT(files, 50) << "read too few files to be the operator";
}

// The worker's layers: contract (env names, exit codes) and the store's server and wire (store/,
// which knows sockets, not LibTorch) below everything; the group protocol
// (group/) knows communicators, not processes: the launcher, supervisor and rendezvous pod's
// process (launch/) and the trainer (train/) stand on it, never the other way round.
const std::map<std::string, std::set<std::string>> kWorkerAllowed = {
    {"contract", {}},
    {"store", {}},
    {"comm", {"contract", "store"}},
    {"group", {"comm", "contract", "store"}},
    {"ddp", {"comm", "contract"}},
    {"data", {"contract"}},
    {"model", {"contract"}},
    {"train", {"comm", "contract", "data", "ddp", "group", "model"}},
    {"launch", {"comm", "contract", "group", "store", "train"}},
};

TEST(Layering, WorkerIncludesFollowTheLayers) {
  const std::regex kInclude(R"re(#include "worker/([a-z_]+)/)re");
  int files = 0;
  for (const auto& [layer, allowed] : kWorkerAllowed) {
    const std::filesystem::path dir = SourcePath("worker/" + layer);
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() != ".h" && entry.path().extension() != ".cc") continue;
      ++files;
      const std::string text = ReadSource("worker/" + layer + "/" + name);
      for (std::sregex_iterator it(text.begin(), text.end(), kInclude), end; it != end; ++it) {
        const std::string to = (*it)[1];
        EXPECT_TRUE(to == layer || allowed.count(to))
            << "worker/" << layer << "/" << name << " includes worker/" << to
            << "/: the " << layer << " layer may not depend on " << to;
      }
    }
  }
  EXPECT_GT(files, 40) << "read too few files to be the worker";
}

}  // namespace
}  // namespace ddp::delivery
