// Mass silence is not mass loss (worker/group/authority.h rule 1), end to end with real ddp-worker
// processes (the test plays the operator): half of six pods frozen at once (SIGSTOP of their
// process groups, as a starved host does) for two and a half liveness timeouts, then thawed. The
// authority declares at most one of them lost per liveness timeout (before, all three within the
// same second); the others train on once thawed, and the one declared lost is replaced and healed.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <regex>
#include <set>

#include "tests/worker/inplace_util.h"

namespace ddp::testing {
namespace {

using Clock = std::chrono::steady_clock;

TEST(SilenceE2E, HalfThePodsFrozenAtOnceLoseAtMostOnePerLivenessTimeout) {
  constexpr int kLiveness = 4;
  const std::string dir = MakeTempDir("ddp-e2e-silence");
  InPlaceGroup g = StartInPlace(6, TinyArgs(1500), dir, {},
                                {{"DDP_LIVENESS_TIMEOUT", std::to_string(kLiveness)}});
  KillOnExit reaper{&g};
  const auto deadline = std::chrono::seconds(180);
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= 100; }, deadline))
      << ReadAll(g.rendezvous.err_path);
  for (int p : {1, 2, 3}) kill(-g.pods[static_cast<size_t>(p)].pid, SIGSTOP);
  const auto frozen = Clock::now();
  // The fault's length, not a wait for a condition: 2.5 liveness timeouts frozen.
  PollUntil([&] { return Clock::now() - frozen >= std::chrono::milliseconds(2500 * kLiveness); },
            std::chrono::seconds(3 * kLiveness));
  for (int p : {1, 2, 3}) kill(-g.pods[static_cast<size_t>(p)].pid, SIGCONT);
  // The pods declared lost by silence end Fenced; the operator replaces each under its name.
  const std::string during = ReadAll(g.rendezvous.err_path);
  const std::regex lost("pod (pod[0-9]) lost: silent");
  std::set<std::string> fenced;
  for (std::sregex_iterator it(during.begin(), during.end(), lost), end; it != end; ++it) {
    fenced.insert((*it)[1]);
  }
  for (const std::string& name : fenced) {
    const int n = name.back() - '0';
    WaitProc(g.pods[static_cast<size_t>(n)], std::chrono::seconds(60));
    StartPod(&g, name, n);
  }
  PodsResult r = Wait(g);
  EXPECT_NE(r.rendezvous_err.find("a mass silence"), std::string::npos) << r.rendezvous_err;
  EXPECT_LE(fenced.size(), 2u) << r.rendezvous_err;
  EXPECT_EQ(Count(r.rendezvous_err, "lost: silent"), fenced.size()) << r.rendezvous_err;
  for (size_t p = 0; p < r.codes.size(); ++p) {
    const std::string name = p < 6 ? "pod" + std::to_string(p) : "replacement";
    if (p < 6 && fenced.count(name)) {
      EXPECT_EQ(r.ends[p].rfind("ddp: Fenced", 0), 0u) << name << ": " << r.ends[p];
      continue;
    }
    EXPECT_EQ(r.codes[p], 0) << name << "\n" << r.err[p];
    EXPECT_EQ(r.ends[p].rfind("ddp: Finished", 0), 0u) << name << ": " << r.ends[p];
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
