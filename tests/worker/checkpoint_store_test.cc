#include "worker/train/checkpoint_store.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace ddp::worker {
namespace {

// An in-memory filesystem that can "crash": operation number `crash_at` (1-based, counting
// mutations) takes half effect (a write keeps half its bytes) and fails, and so does every later
// mutation, like a process that died there. Reads keep working (they model the next process).
class CrashingFs : public FileSystem {
 public:
  int crash_at = 0;  // 0 = never
  int ops = 0;
  std::map<std::string, std::string> files;
  std::set<std::string> dirs;

  Status WriteFile(const std::string& path, const std::string& data) override {
    if (Tick()) {
      files[path] = data.substr(0, data.size() / 2);
      return Status::Unavailable("crash");
    }
    if (!dirs.count(Parent(path))) return Status::Unavailable("no dir " + Parent(path));
    files[path] = data;
    return Status::OK();
  }
  StatusOr<std::string> ReadFile(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return Status::NotFound(path);
    return it->second;
  }
  Status Rename(const std::string& from, const std::string& to) override {
    if (Tick()) return Status::Unavailable("crash");
    std::map<std::string, std::string> moved;
    for (auto it = files.begin(); it != files.end();) {
      if (it->first.rfind(from + "/", 0) == 0) {
        moved[to + it->first.substr(from.size())] = it->second;
        it = files.erase(it);
      } else {
        ++it;
      }
    }
    files.insert(moved.begin(), moved.end());
    dirs.erase(from);
    dirs.insert(to);
    return Status::OK();
  }
  Status SyncDir(const std::string&) override { return Tick() ? Status::Unavailable("crash") : Status::OK(); }
  Status MakeDirs(const std::string& dir) override {
    if (Tick()) return Status::Unavailable("crash");
    dirs.insert(dir);
    return Status::OK();
  }
  StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    std::set<std::string> names;
    for (const auto& d : dirs) {
      if (d.rfind(dir + "/", 0) == 0) names.insert(d.substr(dir.size() + 1));
    }
    for (const auto& [f, _] : files) {
      if (f.rfind(dir + "/", 0) == 0 && f.find('/', dir.size() + 1) == std::string::npos) {
        names.insert(f.substr(dir.size() + 1));
      }
    }
    return std::vector<std::string>(names.begin(), names.end());
  }
  Status RemoveAll(const std::string& path) override {
    if (Tick()) return Status::Unavailable("crash");
    dirs.erase(path);
    for (auto it = files.begin(); it != files.end();) {
      it = (it->first == path || it->first.rfind(path + "/", 0) == 0) ? files.erase(it) : std::next(it);
    }
    return Status::OK();
  }
  bool Exists(const std::string& path) override { return files.count(path) || dirs.count(path); }

 private:
  bool Tick() {
    ++ops;
    return crash_at > 0 && ops >= crash_at;
  }
  static std::string Parent(const std::string& p) { return p.substr(0, p.rfind('/')); }
};

std::string PayloadFor(int64_t step) { return "payload-of-step-" + std::to_string(step) + std::string(100, 'x'); }

TEST(CheckpointStoreTest, SaveLoadAndKeepLastK) {
  CrashingFs fs;
  CheckpointStore store(&fs, "/ck", /*keep=*/2);
  for (int64_t s : {10, 20, 30}) ASSERT_TRUE(store.Save(s, PayloadFor(s)).ok());
  EXPECT_EQ(store.ListSteps(), (std::vector<int64_t>{20, 30}));
  auto latest = store.LoadLatest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 30);
  EXPECT_EQ(latest->payload, PayloadFor(30));
}

// Crash at every mutation of the third Save: the next process always loads a complete checkpoint:
// step 20 when the crash came before DONE, step 30 once DONE was written. Never a torn one.
TEST(CheckpointStoreTest, CrashAtAnyPointLeavesAUsableCheckpoint) {
  CrashingFs probe;
  CheckpointStore p(&probe, "/ck", 3);
  ASSERT_TRUE(p.Save(10, PayloadFor(10)).ok());
  ASSERT_TRUE(p.Save(20, PayloadFor(20)).ok());
  const int before = probe.ops;
  ASSERT_TRUE(p.Save(30, PayloadFor(30)).ok());
  const int save_ops = probe.ops - before;
  ASSERT_GT(save_ops, 5);
  bool saw_old = false, saw_new = false;
  for (int k = 1; k <= save_ops; ++k) {
    CrashingFs fs;
    CheckpointStore w(&fs, "/ck", 3);
    ASSERT_TRUE(w.Save(10, PayloadFor(10)).ok());
    ASSERT_TRUE(w.Save(20, PayloadFor(20)).ok());
    fs.crash_at = fs.ops + k;
    (void)w.Save(30, PayloadFor(30));
    fs.crash_at = 0;  // the restarted process
    CheckpointStore r(&fs, "/ck", 3);
    auto latest = r.LoadLatest();
    ASSERT_TRUE(latest.has_value()) << "crash at op " << k;
    ASSERT_TRUE(latest->step == 20 || latest->step == 30) << latest->step;
    EXPECT_EQ(latest->payload, PayloadFor(latest->step)) << "crash at op " << k;
    (latest->step == 20 ? saw_old : saw_new) = true;
    // And the next Save after the crash cleans up and succeeds.
    ASSERT_TRUE(r.Save(40, PayloadFor(40)).ok()) << "crash at op " << k;
    EXPECT_EQ(r.LoadLatest()->step, 40);
  }
  EXPECT_TRUE(saw_old);
  EXPECT_TRUE(saw_new);
}

TEST(CheckpointStoreTest, CorruptNewestFallsBackToPrevious) {
  struct Row { std::string what; std::function<void(CrashingFs&)> damage; };
  const std::vector<Row> rows = {
      {"flipped payload byte", [](CrashingFs& fs) { fs.files["/ck/step-00000030/state.pt"][5] ^= 1; }},
      {"truncated payload", [](CrashingFs& fs) { fs.files["/ck/step-00000030/state.pt"].resize(10); }},
      {"no DONE", [](CrashingFs& fs) { fs.files.erase("/ck/step-00000030/DONE"); }},
      {"no MANIFEST", [](CrashingFs& fs) { fs.files.erase("/ck/step-00000030/MANIFEST"); }},
      {"garbage MANIFEST", [](CrashingFs& fs) { fs.files["/ck/step-00000030/MANIFEST"] = "??"; }},
  };
  for (const auto& r : rows) {
    CrashingFs fs;
    CheckpointStore store(&fs, "/ck", 5);
    for (int64_t s : {10, 20, 30}) ASSERT_TRUE(store.Save(s, PayloadFor(s)).ok());
    r.damage(fs);
    auto latest = store.LoadLatest();
    ASSERT_TRUE(latest.has_value()) << r.what;
    EXPECT_EQ(latest->step, 20) << r.what;
    EXPECT_FALSE(store.Load(30).ok()) << r.what;
  }
}

TEST(CheckpointStoreTest, AcceptCallbackCanRejectAndNoneLeft) {
  CrashingFs fs;
  CheckpointStore store(&fs, "/ck", 5);
  for (int64_t s : {10, 20}) ASSERT_TRUE(store.Save(s, PayloadFor(s)).ok());
  auto l = store.LoadLatest([](const CheckpointStore::Loaded& c) {
    return c.step == 20 ? Status::DataLoss("unreadable archive") : Status::OK();
  });
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->step, 10);
  EXPECT_FALSE(store.LoadLatest([](const CheckpointStore::Loaded&) { return Status::DataLoss("no"); }));
  CheckpointStore empty(&fs, "/nothing-here", 1);
  EXPECT_FALSE(empty.LoadLatest().has_value());
}

TEST(CheckpointStoreTest, NamesAndPruning) {
  EXPECT_EQ(CheckpointName(120), "step-00000120");
  EXPECT_EQ(ParseCheckpointName("step-00000120"), 120);
  for (const char* bad : {".tmp-step-00000120", "step-", "step-12a", "DONE"}) {
    EXPECT_FALSE(ParseCheckpointName(bad).has_value()) << bad;
  }
  EXPECT_EQ(StepsToPrune({30, 10, 20}, 2), (std::vector<int64_t>{10}));
  EXPECT_EQ(StepsToPrune({30, 10, 20}, 3), (std::vector<int64_t>{}));
  EXPECT_EQ(StepsToPrune({5, 1, 4, 2}, 1), (std::vector<int64_t>{1, 2, 4}));
}

}  // namespace
}  // namespace ddp::worker
