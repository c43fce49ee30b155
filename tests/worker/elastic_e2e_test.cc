// Elastic in place end to end, with real ddp-worker processes: the group of four pods shrinks to
// three, then two, then grows back to four, each at a new generation, as the size file (the
// rendezvous pod's projected ddp.dev/group-size annotation) says. The survivors keep their
// trainer processes (same PIDs), no trainer is restarted, no checkpoint is read, no failure is
// charged; the pods the group shrank without end 0 as Resized; the newcomers are healed by
// broadcast and every member ends with the same parameters.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/worker/inplace_util.h"
#include "tests/worker/sample_check.h"

namespace ddp::testing {
namespace {

void WriteSize(const std::string& path, int nodes) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << nodes << "\n";
  std::filesystem::rename(tmp, path);  // whole, as the kubelet swaps a projected volume
}

// On an early failure (an ASSERT), no pod outlives the test.
// Whether rank 0's log says the group runs at `world` ranks (the trainer logs each resize).
bool RunsAt(const Proc& rank0, int from, int to) {
  return ReadAll(rank0.err_path).find("resizes the group " + std::to_string(from) + " -> " +
                                      std::to_string(to)) != std::string::npos;
}

TEST(ElasticE2E, ShrinksFourToThreeToTwoAndGrowsBackToFourInPlace) {
  const std::string dir = MakeTempDir("ddp-e2e-elastic");
  const std::string size_file = dir + "/group-size";
  WriteSize(size_file, 4);
  const auto args = TinyArgs(2500);
  InPlaceGroup g = StartInPlace(4, args, dir, {}, {{"DDP_GROUP_SIZE_FILE", size_file}});
  KillOnExit reaper{&g};
  const auto deadline = std::chrono::seconds(180);  // a loaded machine starts 4 trainers slowly
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= 30; }, deadline))
      << ReadAll(g.pods[0].err_path);
  std::vector<std::vector<pid_t>> trainers;
  // Each pod's trainer: its one ddp-worker child once the warm standby it starts beside it has
  // named itself (ddp-standby).
  for (int p = 0; p < 2; ++p) {
    ASSERT_TRUE(PollUntil([&] { return ChildrenNamed(g.pods[p].pid, "ddp-worker").size() == 1; },
                          deadline));
    trainers.push_back(ChildrenNamed(g.pods[p].pid, "ddp-worker"));
  }

  // 4 -> 3: pod 3 leaves.
  WriteSize(size_file, 3);
  const std::optional<int> pod3 = WaitProc(g.pods[3], deadline);
  ASSERT_TRUE(PollUntil([&] { return RunsAt(g.pods[0], 4, 3); }, deadline));
  const int64_t at3 = LastStep(g.pods[0]);
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= at3 + 20; }, deadline));
  // 3 -> 2: pod 2 leaves.
  WriteSize(size_file, 2);
  const std::optional<int> pod2 = WaitProc(g.pods[2], deadline);
  ASSERT_TRUE(PollUntil([&] { return RunsAt(g.pods[0], 3, 2); }, deadline));
  const int64_t at2 = LastStep(g.pods[0]);
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= at2 + 20; }, deadline));
  // 2 -> 4: the pods for node ranks 2 and 3 come back (pod 3 first; the group grows from node
  // rank 2 on, so to 4 at once when both registered by then, else by one pod and then the other).
  WriteSize(size_file, 4);
  StartPod(&g, "pod3", 3);
  StartPod(&g, "pod2", 2);
  ASSERT_TRUE(PollUntil([&] { return RunsAt(g.pods[0], 2, 4) || RunsAt(g.pods[0], 3, 4); },
                        deadline))
      << ReadAll(g.rendezvous.err_path);
  for (int p = 0; p < 2; ++p) {
    const std::vector<pid_t> now = ChildrenNamed(g.pods[p].pid, "ddp-worker");
    for (pid_t t : trainers[p]) {  // a new standby may be starting beside it
      EXPECT_NE(std::find(now.begin(), now.end(), t), now.end()) << "pod " << p << " pid " << t;
    }
  }

  PodsResult r = Wait(g);
  EXPECT_EQ(pod3, 0) << r.err[3];
  EXPECT_EQ(pod2, 0) << r.err[2];
  EXPECT_NE(r.ends[3].find("ddp: Resized:"), std::string::npos) << r.ends[3];
  EXPECT_NE(r.ends[2].find("ddp: Resized:"), std::string::npos) << r.ends[2];
  // The survivors (pods 0, 1) and the newcomers (started 5th and 6th) trained to the end, with
  // nothing charged, in one group: the same parameters everywhere.
  const std::string want = Field(r.out[0], "param_checksum");
  ASSERT_FALSE(want.empty()) << r.err[0];
  for (size_t p : {0u, 1u, 4u, 5u}) {
    EXPECT_EQ(r.codes[p], 0) << "pod " << p << "\n" << r.err[p];
    EXPECT_EQ(Field(r.out[p], "param_checksum"), want) << "pod " << p << "\n" << r.err[p];
    EXPECT_NE(r.ends[p].find("step 2500 of 2500; 0 recoveries"), std::string::npos)
        << "pod " << p << ": " << r.ends[p];
  }
  for (size_t p : {0u, 1u}) {
    EXPECT_EQ(r.err[p].find("restarted rank"), std::string::npos) << r.err[p];
    EXPECT_EQ(r.err[p].find("resumed from checkpoint"), std::string::npos) << r.err[p];
  }
  // The newcomers' trainers started as their pods registered (past the group's size of 2), built
  // their data and model and warmed up outside the group, and were the ones that joined it.
  for (size_t p : {4u, 5u}) {
    EXPECT_NE(r.err[p].find("prepares outside the group"), std::string::npos) << r.err[p];
    EXPECT_NE(r.err[p].find("warmed up in"), std::string::npos) << r.err[p];
    EXPECT_NE(r.err[p].find("its prepared trainers join the group"), std::string::npos) << r.err[p];
    EXPECT_EQ(r.err[p].find("joins unprepared"), std::string::npos) << r.err[p];
  }
  // The growth (the first, at least, of a formed generation) was graceful: the survivors left
  // the old generation at a step they agreed on, no step in flight lost (a shrink aborts).
  EXPECT_GE(Count(r.rendezvous_err, "its members leaving at a step agreement"), 1u) << r.rendezvous_err;
  for (size_t p : {0u, 1u}) {
    EXPECT_NE(r.err[p].find("for a growth, as the group agreed"), std::string::npos) << r.err[p];
  }
  const size_t resizes = Count(r.rendezvous_err, "the group resizes in place");
  EXPECT_GE(resizes, 3u) << r.rendezvous_err;
  EXPECT_LE(resizes, 4u) << r.rendezvous_err;
  EXPECT_EQ(r.rendezvous_code, 0) << r.rendezvous_err;
  std::filesystem::remove_all(dir);
}

// The data and the math across resizes in place: 4 -> 3 -> 2 -> 4 ranks under ConstantGlobal
// (a global batch of 24 on a dataset of 100 examples), wherever in the run the generations
// change. No example of any epoch is trained on twice and none is skipped (the group's sample
// logs, the departed pods' and the newcomers' included; a departing pod cut off inside a step
// after its gradient reached the others logs nothing of that step: sample_check.h), and rank 0's
// loss curve, which would show a share left out, is the fixed-size run's
// to float summation order. The tolerance is elastic_data_e2e_test's (1e-4); measured here at
// most 2e-6 over the 1,500 steps (the log's resolution is 1e-6), as between fixed-size runs at
// 4 and 2 ranks. The learning rate is 0.001: at 0.01 this tiny model overfits its 100 examples
// chaotically, and the first 1e-6 apart (any two world sizes: the summation order) grows to
// 1e-2 within 200 steps, in fixed-size runs as much as across resizes.
TEST(ElasticE2E, ResizesInPlaceSeeEverySampleOnceAndKeepTheFixedSizeMath) {
  constexpr int kSteps = 1500, kGlobal = 24, kExamples = 100;
  const std::string dir = MakeTempDir("ddp-e2e-elastic-math");
  const std::string size_file = dir + "/group-size";
  WriteSize(size_file, 4);
  const auto args = ConstantGlobalArgs(kSteps, 2, kGlobal, kExamples);
  SampleLogs logs{dir, {}};
  std::map<int, std::map<std::string, std::string>> rank_env;
  for (int r = 0; r < 4; ++r) rank_env[r] = logs.For("pod" + std::to_string(r));
  InPlaceGroup g = StartInPlace(4, args, dir, {}, {{"DDP_GROUP_SIZE_FILE", size_file}}, 0, rank_env);
  KillOnExit reaper{&g};
  const auto deadline = std::chrono::seconds(180);
  auto past = [&](int64_t step) {
    return PollUntil([&] { return LastStep(g.pods[0]) >= step; }, deadline);
  };
  ASSERT_TRUE(past(100)) << ReadAll(g.pods[0].err_path);
  WriteSize(size_file, 3);
  ASSERT_TRUE(PollUntil([&] { return RunsAt(g.pods[0], 4, 3); }, deadline));
  ASSERT_TRUE(past(LastStep(g.pods[0]) + 100));
  WriteSize(size_file, 2);
  ASSERT_TRUE(PollUntil([&] { return RunsAt(g.pods[0], 3, 2); }, deadline));
  ASSERT_TRUE(past(LastStep(g.pods[0]) + 100));
  WriteSize(size_file, 4);
  StartPod(&g, "pod3", 3, logs.For("pod3"));
  StartPod(&g, "pod2", 2, logs.For("pod2"));
  ASSERT_TRUE(PollUntil([&] { return RunsAt(g.pods[0], 2, 4) || RunsAt(g.pods[0], 3, 4); },
                        deadline))
      << ReadAll(g.rendezvous.err_path);
  PodsResult r = Wait(g);
  for (size_t p = 0; p < r.codes.size(); ++p) EXPECT_EQ(r.codes[p], 0) << "pod " << p << "\n" << r.err[p];
  ASSERT_NE(Field(r.out[0], "param_checksum"), "") << r.err[0];
  ExpectEverySampleOnce(logs.paths, kSteps, kGlobal, kExamples, /*cut_steps=*/2);  // two shrinks

  std::filesystem::create_directories(dir + "/fixed");
  GroupResult fixed = RunGroup(4, args, {}, dir + "/fixed", std::chrono::seconds(180));
  ASSERT_EQ(fixed.codes[0], 0) << fixed.err[0];
  // By step: the step in flight at each resize is committed without a loss line (its
  // agreement was cut), so rank 0 has at most one line fewer per resize.
  const std::map<int64_t, double> resized = LossByStep(r.err[0]), same = LossByStep(fixed.err[0]);
  ASSERT_EQ(same.size(), static_cast<size_t>(kSteps));
  EXPECT_GE(resized.size(), static_cast<size_t>(kSteps - 4));
  ASSERT_EQ(resized.count(kSteps), 1u);
  double diff = 0;
  for (const auto& [step, loss] : resized) diff = std::max(diff, std::fabs(loss - same.at(step)));
  const double final_diff = std::fabs(resized.at(kSteps) - same.at(kSteps));
  std::printf("in place, ConstantGlobal: max |loss(4-3-2-4) - loss(4)| over %zu of %d steps = "
              "%.3g, at the last step %.3g\n", resized.size(), kSteps, diff, final_diff);
  EXPECT_LT(diff, 1e-4);
  EXPECT_GT(same.at(1) - same.at(kSteps), 0.05) << "the runs must move";
  if (!HasFailure()) std::filesystem::remove_all(dir);  // else kept: the logs say where
}

// A newcomer whose prepared trainer ends before the growth (here: killed as it waits outside the
// group) says so and prepares no more; the group, asked to grow later, takes the pod anyway and
// its trainer starts the usual way. Until then the pod only waits: no growth was asked.
TEST(ElasticE2E, ANewcomerWhosePreparedTrainerEndsJoinsUnprepared) {
  const std::string dir = MakeTempDir("ddp-e2e-elastic-unprepared");
  const std::string size_file = dir + "/group-size";
  WriteSize(size_file, 3);
  InPlaceGroup g = StartInPlace(3, TinyArgs(2000), dir, {}, {{"DDP_GROUP_SIZE_FILE", size_file}});
  KillOnExit reaper{&g};
  const auto deadline = std::chrono::seconds(180);
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= 30; }, deadline))
      << ReadAll(g.pods[0].err_path);
  WriteSize(size_file, 2);
  ASSERT_TRUE(WaitProc(g.pods[2], deadline).has_value());
  ASSERT_TRUE(PollUntil([&] { return RunsAt(g.pods[0], 3, 2); }, deadline));
  const Proc newcomer = StartPod(&g, "pod2", 2);
  ASSERT_TRUE(PollUntil([&] { return ReadAll(newcomer.err_path).find("warmed up in") !=
                                     std::string::npos; }, deadline))
      << ReadAll(newcomer.err_path);
  const std::string log = ReadAll(newcomer.err_path);
  const size_t at = log.find("prepares outside the group");
  ASSERT_NE(at, std::string::npos) << log;
  const size_t pid_at = log.find(", pid ", at);
  ASSERT_NE(pid_at, std::string::npos) << log;
  const pid_t prepared = static_cast<pid_t>(std::atoi(log.c_str() + pid_at + 6));
  ASSERT_GT(prepared, 0) << log;
  ASSERT_EQ(kill(prepared, SIGKILL), 0);
  ASSERT_TRUE(PollUntil([&] { return ReadAll(newcomer.err_path).find("joins unprepared") !=
                                     std::string::npos; }, deadline))
      << ReadAll(newcomer.err_path);
  EXPECT_FALSE(RunsAt(g.pods[0], 2, 3)) << "no growth was asked";
  WriteSize(size_file, 3);
  ASSERT_TRUE(PollUntil([&] { return RunsAt(g.pods[0], 2, 3); }, deadline))
      << ReadAll(g.rendezvous.err_path);
  PodsResult r = Wait(g);
  const std::string want = Field(r.out[0], "param_checksum");
  ASSERT_FALSE(want.empty()) << r.err[0];
  for (size_t p : {0u, 1u, 3u}) {
    EXPECT_EQ(r.codes[p], 0) << "pod " << p << "\n" << r.err[p];
    EXPECT_EQ(Field(r.out[p], "param_checksum"), want) << "pod " << p << "\n" << r.err[p];
    EXPECT_NE(r.ends[p].find("step 2000 of 2000; 0 recoveries"), std::string::npos)
        << "pod " << p << ": " << r.ends[p];
  }
  EXPECT_EQ(r.err[3].find("its prepared trainers join the group"), std::string::npos) << r.err[3];
  EXPECT_NE(r.err[3].find("supervisor: node rank 2: rank 2"), std::string::npos) << r.err[3];
  EXPECT_EQ(Count(r.rendezvous_err, "the group resizes in place"), 2u) << r.rendezvous_err;
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// The summary line names the size the group ended at, not the one the pod was started with
// (WORLD_SIZE): tools that gather one checksum per rank count ranks by it.
TEST(ElasticE2E, TheSummaryNamesTheSizeTheGroupEndedAt) {
  const std::string dir = MakeTempDir("ddp-e2e-elastic-summary");
  const std::string size_file = dir + "/group-size";
  WriteSize(size_file, 3);
  InPlaceGroup g = StartInPlace(3, TinyArgs(800), dir, {}, {{"DDP_GROUP_SIZE_FILE", size_file}});
  KillOnExit reaper{&g};
  ASSERT_TRUE(PollUntil([&] { return LastStep(g.pods[0]) >= 30; }, std::chrono::seconds(180)))
      << ReadAll(g.pods[0].err_path);
  WriteSize(size_file, 2);
  PodsResult r = Wait(g);
  for (size_t p : {0u, 1u}) {
    EXPECT_EQ(r.codes[p], 0) << r.err[p];
    EXPECT_EQ(Field(r.out[p], "world_size"), "2") << r.out[p];
  }
  EXPECT_NE(r.ends[2].find("ddp: Resized:"), std::string::npos) << r.ends[2];
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// A size that is not one refuses nothing but itself: the group keeps training at its size.
TEST(ElasticE2E, AMalformedSizeIsRefusedAndTheGroupKeepsItsSize) {
  const std::string dir = MakeTempDir("ddp-e2e-elastic-bad");
  const std::string size_file = dir + "/group-size";
  std::ofstream(size_file) << "two\n";
  InPlaceGroup g = StartInPlace(2, TinyArgs(300), dir, {}, {{"DDP_GROUP_SIZE_FILE", size_file}});
  KillOnExit reaper{&g};
  PodsResult r = Wait(g);
  EXPECT_EQ(r.codes[0], 0) << r.err[0];
  EXPECT_EQ(r.codes[1], 0) << r.err[1];
  EXPECT_NE(r.rendezvous_err.find("refused: \"two\" is not an integer"), std::string::npos)
      << r.rendezvous_err;
  EXPECT_EQ(r.rendezvous_err.find("resizes in place"), std::string::npos) << r.rendezvous_err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
