// A template that moves the termination message (terminationMessagePath, as log shippers want)
// with the real ddp-worker in `ddp-operator local`: the operator hands the path on as
// DDP_TERMINATION_LOG, local mode plays the kubelet (a file of the run, read back), and the
// pods' `ddp: Finished` is found, so the job Succeeds instead of reading every finished pod as
// one that exited 0 without saying it trained. The path is one no process here could write: a
// worker that wrote there would fail to say anything at all.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <gtest/gtest.h>

#include "worker_job.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

class LocalTerminationTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  }
  TempDir dir_;
};

TEST_P(LocalTerminationTest, AJobWhoseTemplateMovesTheMessageSucceeds) {
  constexpr int kSteps = 200;
  JobOptions o;
  o.name = "moved";
  o.recovery = GetParam();
  o.steps = kSteps;
  o.termination_message_path = "/nonexistent-ddp-dir/termination-message";
  LocalJob job(dir_, o);
  ASSERT_EQ(job.op().Wait(seconds(120)), 0) << job.op().Output();
  const nlohmann::json st = job.Status();
  EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
  EXPECT_EQ(Int(st, "round"), 0) << st.dump();
  EXPECT_EQ(Int(st, "restarts"), 0) << st.dump();
  EXPECT_EQ(Int(st, "recoveries"), 0) << st.dump();
  EXPECT_EQ(Int(st, "disruptions"), 0) << st.dump();
  // The finish the pods said is where the status' step comes from.
  ASSERT_TRUE(st.contains("progress")) << st.dump();
  EXPECT_EQ(st["progress"].value("step", -1), kSteps) << st.dump();
  EXPECT_EQ(job.op().Output().find("without saying it trained"), std::string::npos)
      << job.op().Output();
}

INSTANTIATE_TEST_SUITE_P(Recovery, LocalTerminationTest, ::testing::Values("InPlace", "Restart"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ddp::testing_local
