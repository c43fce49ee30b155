// End-to-end: inputs a restart cannot fix end the real ddp-worker with exit 2 (permanent) and a
// message naming the cause, on every rank: another model's checkpoint, non-finite or
// overflowing flags.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/worker/e2e_util.h"

namespace ddp::testing {
namespace {

std::string Describe(const GroupResult& g) {
  std::string s;
  for (size_t r = 0; r < g.codes.size(); ++r) {
    s += "rank " + std::to_string(r) + " code " + (g.codes[r] ? std::to_string(*g.codes[r]) : "timeout") +
         "\n" + g.err[r].substr(g.err[r].size() > 3000 ? g.err[r].size() - 3000 : 0) + "\n";
  }
  return s;
}

TEST(WorkerInputE2E, ResumingAnotherModelSizeFromItsCheckpointIsExit2NamingTheParameter) {
  const std::string dir = MakeTempDir("ddp-e2e-mismatch");
  auto args = TinyArgs(6);  // n_embd 32
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ck", "--checkpoint-every", "3"});
  GroupResult first = RunGroup(2, args, {}, dir);
  ASSERT_EQ(first.codes[0], 0) << Describe(first);
  ASSERT_TRUE(std::filesystem::exists(dir + "/ck/step-00000006/DONE"));

  auto wider = args;
  wider.insert(wider.end(), {"--n-embd", "64", "--steps", "8"});  // later flags win
  GroupResult again = RunGroup(2, wider, {}, dir, std::chrono::seconds(60));
  // Both ranks stop at once with exit 2: rank 1 is told, it does not time out waiting (75).
  ASSERT_EQ(again.codes[0], 2) << Describe(again);
  ASSERT_EQ(again.codes[1], 2) << Describe(again);
  // The directory's OWNER record names the model configuration it was written with: both named.
  EXPECT_NE(again.err[0].find("embd=32"), std::string::npos) << again.err[0];
  EXPECT_NE(again.err[0].find("embd=64"), std::string::npos) << again.err[0];
  EXPECT_NE(again.err[0].find(dir + "/ck"), std::string::npos) << again.err[0];
  EXPECT_NE(again.err[1].find("rank 0 cannot use the checkpoint"), std::string::npos) << again.err[1];

  // A directory an older ddp-worker wrote has no OWNER: the parameters' shapes decide, before
  // anything is restored. minGPT's first parameter is wte: [vocab, n_embd]; vocab 32 here.
  std::filesystem::rename(dir + "/ck/OWNER", dir + "/OWNER.kept");
  GroupResult older = RunGroup(2, wider, {}, dir, std::chrono::seconds(60));
  ASSERT_EQ(older.codes[0], 2) << Describe(older);
  ASSERT_EQ(older.codes[1], 2) << Describe(older);
  EXPECT_NE(older.err[0].find("parameter wte.weight has shape [32, 32] in the checkpoint and "
                              "[32, 64] in this model"),
            std::string::npos)
      << older.err[0];
  EXPECT_FALSE(std::filesystem::exists(dir + "/ck/OWNER")) << "a refused run claims nothing";
  std::filesystem::rename(dir + "/OWNER.kept", dir + "/ck/OWNER");
  // Nothing was lost: the checkpoint is still there and the old model still resumes from it.
  auto longer = args;
  longer.insert(longer.end(), {"--steps", "8"});
  GroupResult resumed = RunGroup(2, longer, {}, dir);
  ASSERT_EQ(resumed.codes[0], 0) << Describe(resumed);
  EXPECT_EQ(Field(resumed.out[0], "resumed_from"), "6");
  std::filesystem::remove_all(dir);
}

TEST(WorkerInputE2E, NonFiniteAndOverflowingFlagsAreExit2BeforeAnyWork) {
  const std::string dir = MakeTempDir("ddp-e2e-flags");
  struct Row {
    std::vector<std::string> flags;
    std::string names;
  };
  const std::vector<Row> rows = {
      {{"--lr", "inf"}, "--lr: want a finite number, got 'inf'"},
      {{"--lr", "nan"}, "--lr: want a finite number, got 'nan'"},
      {{"--collective-timeout", "9223372036854775807"}, "train.collective_timeout_seconds"},
      {{"--bucket-cap-mb", "1e308"}, "train.bucket_cap_mb"},
  };
  for (const Row& r : rows) {
    auto args = TinyArgs(4);
    args.insert(args.end(), r.flags.begin(), r.flags.end());
    // One rank of a two-rank world: a config error comes before the rendezvous, so no peer is
    // needed to see it.
    Proc p = StartProc(kWorkerBin, args,
                       {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(FreePort())},
                        {"WORLD_SIZE", "2"}, {"RANK", "1"}, {"DDP_RENDEZVOUS_TIMEOUT", "30"}},
                       dir, "flags");
    const auto code = WaitProc(p, std::chrono::seconds(30));
    const std::string err = ReadAll(p.err_path);
    EXPECT_EQ(code, 2) << r.names << "\n" << err;
    EXPECT_NE(err.find(r.names), std::string::npos) << err;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
