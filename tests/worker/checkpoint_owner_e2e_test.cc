// The real ddp-worker and OWNER (worker/train/checkpoint_owner.h): a job never resumes from
// another job's checkpoints, nor from another model's; the job that wrote them resumes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/worker/e2e_util.h"

namespace ddp::testing {
namespace {

std::vector<std::string> Args(int steps, const std::string& dir, const std::string& job) {
  auto args = TinyArgs(steps);
  args.insert(args.end(), {"--checkpoint-dir", dir + "/ck", "--checkpoint-every", "4",
                           "--checkpoint-job", job});
  return args;
}

TEST(CheckpointOwnerE2E, AnotherJobOrModelIsRefusedTheOwnerResumes) {
  const std::string dir = MakeTempDir("ddp-e2e-owner");
  GroupResult first = RunGroup(1, Args(8, dir, "ml/a"), {}, dir);
  ASSERT_EQ(first.codes[0], 0) << first.err[0];
  std::ifstream owner(dir + "/ck/OWNER");
  const std::string text((std::istreambuf_iterator<char>(owner)), {});
  EXPECT_NE(text.find("job ml/a\n"), std::string::npos) << text;

  // Another job on the same directory: exit 2 (invalid configuration, not retried), nothing
  // trained or written.
  GroupResult other = RunGroup(1, Args(12, dir, "ml/b"), {}, dir);
  EXPECT_EQ(other.codes[0], 2) << other.err[0];
  EXPECT_NE(other.err[0].find("belong to job ml/a, not to job ml/b"), std::string::npos) << other.err[0];
  EXPECT_FALSE(std::filesystem::exists(dir + "/ck/step-00000012"));

  // The same job with another model width: exit 2 as well.
  auto wider = Args(12, dir, "ml/a");
  wider.insert(wider.end(), {"--n-embd", "48"});
  GroupResult model = RunGroup(1, wider, {}, dir);
  EXPECT_EQ(model.codes[0], 2) << model.err[0];
  EXPECT_NE(model.err[0].find("another model configuration"), std::string::npos) << model.err[0];

  // The job itself, asked for more steps: resumes from its own step 8.
  GroupResult again = RunGroup(1, Args(12, dir, "ml/a"), {}, dir);
  ASSERT_EQ(again.codes[0], 0) << again.err[0];
  EXPECT_EQ(Field(again.out[0], "resumed_from"), "8");
  EXPECT_TRUE(std::filesystem::exists(dir + "/ck/step-00000012"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
