// End-to-end: real ddp-worker processes training together over Gloo on 127.0.0.1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/worker/e2e_util.h"

namespace ddp::testing {
namespace {

std::string Describe(const GroupResult& g) {
  std::string s;
  for (size_t r = 0; r < g.codes.size(); ++r) {
    s += "rank " + std::to_string(r) + " code " + (g.codes[r] ? std::to_string(*g.codes[r]) : "timeout") +
         "\n" + g.out[r] + g.err[r].substr(g.err[r].size() > 3000 ? g.err[r].size() - 3000 : 0) + "\n";
  }
  return s;
}

TEST(WorkerE2E, ReplicasEndBitIdenticalWith2And3Ranks) {
  for (int n : {2, 3}) {
    const std::string dir = MakeTempDir("ddp-e2e-replicas");
    GroupResult g = RunGroup(n, TinyArgs(12), {}, dir);
    std::string first;
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(g.codes[r], 0) << Describe(g);
      const std::string sum = Field(g.out[r], "param_checksum");
      ASSERT_EQ(sum.size(), 16u) << g.out[r];
      if (r == 0) first = sum;
      EXPECT_EQ(sum, first) << "rank " << r << " of " << n << " diverged\n" << Describe(g);
    }
    std::filesystem::remove_all(dir);
  }
}

// Rebuilding the buckets in arrival order after step 1 moves gradients to other buckets and
// offsets, never changes what is summed: with 2 ranks every element is the same two-term sum, so
// the run (with gradient accumulation, i.e. no_sync micro-steps) ends bit-identical to one that
// keeps its initial buckets. Buckets of ~2 KiB give minGPT's 29 parameters 11 buckets.
TEST(WorkerE2E, BucketRebuildLeavesTheResultBitIdentical) {
  const std::string dir = MakeTempDir("ddp-e2e-rebuild");
  auto args = TinyArgs(6);
  args.insert(args.end(), {"--bucket-cap-mb", "0.002", "--first-bucket-cap-mb", "0.002",
                           "--grad-accum", "2"});
  auto fixed_args = args;
  fixed_args.insert(fixed_args.end(), {"--rebuild-buckets", "false"});
  GroupResult rebuilt = RunGroup(2, args, {}, dir);
  GroupResult fixed = RunGroup(2, fixed_args, {}, dir);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(rebuilt.codes[r], 0) << Describe(rebuilt);
    ASSERT_EQ(fixed.codes[r], 0) << Describe(fixed);
  }
  EXPECT_NE(rebuilt.err[0].find("reducer: buckets rebuilt in gradient arrival order"),
            std::string::npos) << rebuilt.err[0];
  EXPECT_EQ(fixed.err[0].find("buckets rebuilt"), std::string::npos) << fixed.err[0];
  const std::string want = Field(fixed.out[0], "param_checksum");
  ASSERT_EQ(want.size(), 16u) << fixed.out[0];
  EXPECT_EQ(Field(fixed.out[1], "param_checksum"), want);
  EXPECT_EQ(Field(rebuilt.out[0], "param_checksum"), want);
  EXPECT_EQ(Field(rebuilt.out[1], "param_checksum"), want);
  std::filesystem::remove_all(dir);
}

TEST(WorkerE2E, SyntheticDataIsVisiblyLearned) {
  const std::string dir = MakeTempDir("ddp-e2e-learn");
  auto args = TinyArgs(120, 16);
  args.insert(args.end(), {"--lr", "0.01", "--log-every", "1"});
  GroupResult g = RunGroup(1, args, {}, dir);
  ASSERT_EQ(g.codes[0], 0) << Describe(g);
  auto losses = LossTrajectory(g.err[0]);
  ASSERT_GE(losses.size(), 10u) << g.err[0];
  // Uniform guessing over the 32-token vocabulary costs ln 32 = 3.47 nats, and a model that only
  // learned token frequencies (no context) cannot beat the stream's unigram entropy, 3.44 (both
  // computed from the generator, see bench/worker/torch_ddp_bench.py's port of it). Going below
  // 2.5 therefore means the model predicts from context; the bigram entropy (2.18) is reached
  // after ~100 steps and the full rule (~0.5) takes longer than a unit test should.
  // The first logged loss is step 1's, computed by the untrained model: near uniform guessing.
  EXPECT_NEAR(losses.front(), std::log(32.0), 0.6);
  EXPECT_LT(losses.back(), 2.5) << g.err[0];
  std::filesystem::remove_all(dir);
}

// N ranks with batch b take the same examples per step as 1 rank with batch N*b (the sampler's
// interleaving, unit-tested), and the reducer averages gradients, so both runs follow the same
// math. They differ only in float32 summation order (a mean of N partial means vs one mean), a
// relative error of ~1e-7 per step; Adam divides by sqrt(v) and can amplify that for tiny
// gradients, so after 10 steps we allow 1e-3 absolute on a loss of ~3, still two orders of
// magnitude below the loss change of a single step at this learning rate (~0.1).
TEST(WorkerE2E, NRanksMatchOneRankWithNTimesTheBatch) {
  const std::string dir = MakeTempDir("ddp-e2e-batch");
  GroupResult one = RunGroup(1, TinyArgs(10, 8), {}, dir);
  GroupResult two = RunGroup(2, TinyArgs(10, 4), {}, dir);
  ASSERT_EQ(one.codes[0], 0) << Describe(one);
  ASSERT_EQ(two.codes[0], 0) << Describe(two);
  auto a = LossTrajectory(one.err[0]), b = LossTrajectory(two.err[0]);
  ASSERT_EQ(a.size(), 10u);
  ASSERT_EQ(b.size(), 10u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-3) << "step " << i + 1;
  EXPECT_NEAR(std::stod(Field(one.out[0], "loss")), std::stod(Field(two.out[0], "loss")), 1e-3);
  EXPECT_GT(a.front() - a.back(), 0.05) << "the runs must actually move for the match to mean anything";
  std::filesystem::remove_all(dir);
}

// Gradient accumulation: 2 micro-steps of batch 4 (the first under no_sync, so no communication)
// see the same examples as one step of batch 8 (the sampler hands out consecutive slices of the
// same epoch order) and average the same per-example losses, so the trajectories match within
// float32 summation-order noise (tolerance argued in the test above). The accumulated run takes
// its settings from a YAML file, which also exercises the YAML path end to end.
TEST(WorkerE2E, GradientAccumulationMatchesTheLargerBatch) {
  const std::string dir = MakeTempDir("ddp-e2e-accum");
  std::ofstream(dir + "/accum.yaml") << "train:\n  batch_size: 4\n  grad_accum: 2\n";
  auto accum_args = TinyArgs(8, 4);
  accum_args.insert(accum_args.end(), {"--config", dir + "/accum.yaml"});
  GroupResult accum = RunGroup(2, accum_args, {}, dir);
  GroupResult big = RunGroup(2, TinyArgs(8, 8), {}, dir);
  ASSERT_EQ(accum.codes[0], 0) << Describe(accum);
  ASSERT_EQ(big.codes[0], 0) << Describe(big);
  EXPECT_EQ(Field(accum.out[0], "param_checksum"), Field(accum.out[1], "param_checksum"));
  auto a = LossTrajectory(accum.err[0]), b = LossTrajectory(big.err[0]);
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-3) << "step " << i + 1;
  std::filesystem::remove_all(dir);
}

TEST(WorkerE2E, SigtermThenResumeEqualsUninterruptedRun) {
  const std::string dir = MakeTempDir("ddp-e2e-resume");
  auto args = TinyArgs(16);
  GroupResult straight = RunGroup(2, args, {}, dir);
  ASSERT_EQ(straight.codes[0], 0) << Describe(straight);
  const std::string want = Field(straight.out[0], "param_checksum");

  auto ck_args = args;
  ck_args.insert(ck_args.end(), {"--checkpoint-dir", dir + "/ck"});
  // Rank 0 gets a real SIGTERM before step 7; both ranks agree to stop, checkpoint, exit 75.
  GroupResult stopped = RunGroup(2, ck_args, {{"DDP_FAULT", "0:7:term"}}, dir);
  ASSERT_EQ(stopped.codes[0], 75) << Describe(stopped);
  ASSERT_EQ(stopped.codes[1], 75) << Describe(stopped);
  EXPECT_EQ(Field(stopped.out[1], "preempted"), "1");
  const int64_t stop_step = std::stoll(Field(stopped.out[0], "step"));
  EXPECT_EQ(stop_step, 8);  // the signal lands before step 7 runs; the group stops after it
  EXPECT_TRUE(std::filesystem::exists(dir + "/ck/step-00000008/DONE"));

  GroupResult resumed = RunGroup(2, ck_args, {}, dir);
  ASSERT_EQ(resumed.codes[0], 0) << Describe(resumed);
  EXPECT_EQ(Field(resumed.out[0], "resumed_from"), "8");
  // Bit-identical: the checkpoint holds parameters, AdamW moments and step counts, the sampler
  // position and RNG state; the LR is a function of the step; CPU kernels with one thread and
  // Gloo's fixed-order ring are deterministic.
  EXPECT_EQ(Field(resumed.out[0], "param_checksum"), want);
  EXPECT_EQ(Field(resumed.out[1], "param_checksum"), want);
  std::filesystem::remove_all(dir);
}

// The ranks read their loss/stop agreement on the host only at agreement steps (the first, each
// multiple of --log-every, the last, and about every second of training), not every step. How
// often they agree changes nothing in the training (same parameters as agreeing every step), and
// a SIGTERM is still acted on by both ranks at one common step, checkpointed and resumable.
TEST(WorkerE2E, AgreementOnlyAtAgreementStepsChangesNothingAndStillStopsTogether) {
  const std::string dir = MakeTempDir("ddp-e2e-agree");
  auto every_step = TinyArgs(24);  // --log-every 1: the agreement runs every step
  GroupResult each = RunGroup(2, every_step, {}, dir);
  ASSERT_EQ(each.codes[0], 0) << Describe(each);
  EXPECT_EQ(Field(each.out[0], "agreements"), "24");
  const std::string want = Field(each.out[0], "param_checksum");

  auto args = every_step;
  args.insert(args.end(), {"--log-every", "8"});  // the later flag wins
  GroupResult sparse = RunGroup(2, args, {}, dir);
  ASSERT_EQ(sparse.codes[0], 0) << Describe(sparse);
  EXPECT_EQ(Field(sparse.out[0], "param_checksum"), want);
  EXPECT_EQ(Field(sparse.out[1], "param_checksum"), want);
  // Steps 1, 8, 16 and 24 always; more only when a step took over 1/7 s (a loaded machine).
  const int agreements = std::stoi(Field(sparse.out[0], "agreements"));
  EXPECT_GE(agreements, 4);
  EXPECT_LE(agreements, 12);
  EXPECT_EQ(Field(sparse.out[1], "agreements"), Field(sparse.out[0], "agreements"));
  EXPECT_EQ(LossTrajectory(sparse.err[0]).size(), 3u);  // the log lines of steps 8, 16 and 24
  EXPECT_NEAR(std::stod(Field(sparse.out[0], "loss")), std::stod(Field(each.out[0], "loss")), 1e-6);

  // SIGTERM before step 2 (step 1 agreed already): the group stops at the next agreement.
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ck"});
  GroupResult stopped = RunGroup(2, args, {{"DDP_FAULT", "0:2:term"}}, dir);
  ASSERT_EQ(stopped.codes[0], 75) << Describe(stopped);
  ASSERT_EQ(stopped.codes[1], 75) << Describe(stopped);
  const std::string stop_step = Field(stopped.out[0], "step");
  EXPECT_EQ(Field(stopped.out[1], "step"), stop_step);
  EXPECT_GE(std::stoi(stop_step), 3);
  EXPECT_LE(std::stoi(stop_step), 8);
  char name[32];
  std::snprintf(name, sizeof(name), "/ck/step-%08d/DONE", std::stoi(stop_step));
  EXPECT_TRUE(std::filesystem::exists(dir + name)) << name;
  GroupResult resumed = RunGroup(2, args, {}, dir);
  ASSERT_EQ(resumed.codes[0], 0) << Describe(resumed);
  EXPECT_EQ(Field(resumed.out[0], "resumed_from"), stop_step);
  EXPECT_EQ(Field(resumed.out[0], "param_checksum"), want);
  std::filesystem::remove_all(dir);
}

// A preemption checkpoint that cannot be written is reported as failed on every rank, with the
// step the next round resumes from (no checkpoint: 0), not as saved.
TEST(WorkerE2E, SigtermWithUnwritableCheckpointDirReportsTheFailure) {
  const std::string dir = MakeTempDir("ddp-e2e-ckfail");
  // A path under a regular file: no directory can be made there, not even by root.
  { std::ofstream(dir + "/blocker") << "a file, not a directory\n"; }
  auto args = TinyArgs(16);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/blocker/ck"});
  GroupResult stopped = RunGroup(2, args, {{"DDP_FAULT", "0:7:term"}}, dir);
  ASSERT_EQ(stopped.codes[0], 75) << Describe(stopped);
  ASSERT_EQ(stopped.codes[1], 75) << Describe(stopped);
  EXPECT_EQ(Field(stopped.out[0], "step"), "8");
  for (int r = 0; r < 2; ++r) {
    const std::string& log = stopped.err[r];
    EXPECT_NE(log.find("stopped by signal; checkpoint of step 8 failed: "), std::string::npos) << log;
    EXPECT_NE(log.find("; the next round resumes from step 0 (exit 75)"), std::string::npos) << log;
    EXPECT_EQ(log.find("after checkpointing"), std::string::npos) << log;
  }
  // Rank 0 names the path it could not write; rank 1 knows only that rank 0 failed.
  EXPECT_NE(stopped.err[0].find(dir + "/blocker/ck"), std::string::npos) << stopped.err[0];
  EXPECT_NE(stopped.err[1].find("rank 0 could not write it"), std::string::npos) << stopped.err[1];
  EXPECT_FALSE(std::filesystem::exists(dir + "/blocker/ck"));
  std::filesystem::remove_all(dir);
}

TEST(WorkerE2E, CorruptNewestCheckpointResumesFromPrevious) {
  const std::string dir = MakeTempDir("ddp-e2e-corrupt");
  auto args = TinyArgs(12);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ck", "--checkpoint-every", "4",
                           "--keep-checkpoints", "5"});
  GroupResult first = RunGroup(1, args, {}, dir);
  ASSERT_EQ(first.codes[0], 0) << Describe(first);
  const std::string newest = dir + "/ck/step-00000012/state.pt";
  ASSERT_TRUE(std::filesystem::exists(newest));
  {
    // Flip every bit of the middle byte: writing a constant would change nothing when the byte
    // already held it.
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(newest) / 2);
    f.seekg(middle);
    const char byte = static_cast<char>(f.get());
    f.seekp(middle);
    f.put(static_cast<char>(~byte));
  }
  auto more = args;
  more.insert(more.end(), {"--steps", "14"});
  GroupResult again = RunGroup(1, more, {}, dir);
  ASSERT_EQ(again.codes[0], 0) << Describe(again);
  EXPECT_EQ(Field(again.out[0], "resumed_from"), "8");
  EXPECT_NE(again.err[0].find("skipping checkpoint"), std::string::npos) << again.err[0];
  EXPECT_NE(again.err[0].find("step-00000012"), std::string::npos) << again.err[0];
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
