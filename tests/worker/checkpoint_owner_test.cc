// OWNER (worker/train/checkpoint_owner.h): the job and model a checkpoint directory belongs to.
#include "worker/train/checkpoint_owner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ddp::worker {
namespace {

ModelConfig Model(int64_t embd = 64) {
  ModelConfig m;
  m.n_embd = embd;
  return m;
}

std::string TempDir(const std::string& name) {
  const std::string d = std::filesystem::temp_directory_path() /
                        (name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  return d;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(CheckpointOwner, FingerprintNamesWhatTheParametersMean) {
  // Written out by hand from ModelConfig's defaults (model.h) and the given vocabulary.
  EXPECT_EQ(ModelFingerprint(Model(), 65),
            "kind=mingpt vocab=65 block=64 layers=2 heads=2 embd=64 mlp=256 tie=0 file=");
  EXPECT_NE(ModelFingerprint(Model(), 65), ModelFingerprint(Model(), 66));
  EXPECT_NE(ModelFingerprint(Model(), 65), ModelFingerprint(Model(32), 65));
}

TEST(CheckpointOwner, FormatAndParseRoundTrip) {
  const CheckpointOwner o{"ml/mingpt-kind", ModelFingerprint(Model(), 65)};
  EXPECT_EQ(FormatOwner(o), "format 1\njob ml/mingpt-kind\nmodel " + o.model + "\n");
  auto back = ParseOwner(FormatOwner(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->job, o.job);
  EXPECT_EQ(back->model, o.model);
  // A run by hand records no job; later versions may add keys.
  back = ParseOwner("format 1\nmodel m\nwritten_by 9.9\n");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->job, "");
  for (const char* bad : {"", "model m\n", "format 2\nmodel m\n", "format 1\njob a/b\n", "\x01\x02"}) {
    EXPECT_EQ(ParseOwner(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CheckpointOwner, CheckTable) {
  const std::string m = ModelFingerprint(Model(), 65), other = ModelFingerprint(Model(32), 65);
  struct Row {
    CheckpointOwner recorded, ours;
    bool ok;
    const char* says;  // part of the error message
  };
  const Row rows[] = {
      {{"ml/a", m}, {"ml/a", m}, true, ""},
      {{"ml/a", m}, {"ml/b", m}, false, "belong to job ml/a, not to job ml/b"},
      {{"ml/a", m}, {"other/a", m}, false, "belong to job ml/a, not to job other/a"},
      {{"ml/a", m}, {"", m}, false, "not to a run without a job"},
      {{"", m}, {"ml/a", m}, true, ""},  // a job adopts what a run by hand wrote
      {{"ml/a", m}, {"ml/a", other}, false, "another model configuration"},
      {{"", m}, {"", other}, false, "another model configuration"},
  };
  for (const Row& r : rows) {
    Status s = CheckOwner(r.recorded, r.ours, "/ck");
    EXPECT_EQ(s.ok(), r.ok) << r.recorded.job << " vs " << r.ours.job << ": " << s.ToString();
    if (!r.ok) {
      EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);  // exit 2: not retried
      EXPECT_NE(s.message().find(r.says), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("HINT"), std::string::npos) << s.message();
    }
  }
}

TEST(CheckpointOwner, ClaimWritesOnceThenChecks) {
  const std::string dir = TempDir("ddp-owner-claim");
  FileSystem* fs = PosixFileSystem();
  const CheckpointOwner a{"ml/a", ModelFingerprint(Model(), 65)};
  ASSERT_TRUE(ClaimCheckpointDir(fs, dir, a).ok());  // creates the directory
  EXPECT_EQ(Slurp(dir + "/OWNER"), FormatOwner(a));
  EXPECT_FALSE(std::filesystem::exists(dir + "/OWNER.tmp"));
  EXPECT_TRUE(ClaimCheckpointDir(fs, dir, a).ok());
  const Status other = ClaimCheckpointDir(fs, dir, {"ml/b", a.model});
  EXPECT_EQ(other.code(), StatusCode::kFailedPrecondition) << other.ToString();
  EXPECT_EQ(Slurp(dir + "/OWNER"), FormatOwner(a));  // a refused claim changes nothing
  // A run by hand's directory is adopted by the first job that resumes it.
  std::filesystem::remove_all(dir);
  const CheckpointOwner by_hand{"", a.model};
  ASSERT_TRUE(ClaimCheckpointDir(fs, dir, by_hand).ok());
  ASSERT_TRUE(ClaimCheckpointDir(fs, dir, a).ok());
  EXPECT_EQ(Slurp(dir + "/OWNER"), FormatOwner(a));
  // Garbage in OWNER: DataLoss (exit 3), left in place.
  { std::ofstream(dir + "/OWNER") << "not an owner file"; }
  EXPECT_EQ(ClaimCheckpointDir(fs, dir, a).code(), StatusCode::kDataLoss);
  EXPECT_EQ(Slurp(dir + "/OWNER"), "not an owner file");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::worker
