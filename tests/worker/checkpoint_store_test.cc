#include "worker/train/checkpoint_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

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
  // As rename(2): onto a non-empty directory fails (AlreadyExists), onto an empty one replaces it.
  Status Rename(const std::string& from, const std::string& to) override {
    if (Tick()) return Status::Unavailable("crash");
    if (!dirs.count(from)) return Status::Unavailable("rename: no " + from);
    if (HasEntries(to)) return Status::AlreadyExists("rename: " + to + " is not empty");
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
  bool HasEntries(const std::string& dir) {
    auto names = ListDir(dir);
    return names.ok() && !names->empty();
  }

 private:
  bool Tick() {
    ++ops;
    return crash_at > 0 && ops >= crash_at;
  }
  static std::string Parent(const std::string& p) { return p.substr(0, p.rfind('/')); }
};

std::string PayloadFor(int64_t step) { return "payload-of-step-" + std::to_string(step) + std::string(100, 'x'); }

// One writer's view of a shared CrashingFs (several writers, one directory): counts this writer's
// mutations, runs `before_op` (another writer's whole save) just before mutation number
// `interleave_at`, and "kills" this writer at mutation `crash_at`: that one takes half effect (a
// write keeps half its bytes) and fails, and so does every later one. Reads pass through.
class WriterFs : public FileSystem {
 public:
  explicit WriterFs(CrashingFs* base) : base_(base) {}
  int ops = 0;
  int interleave_at = 0;  // 0 = never
  std::function<void()> before_op;
  int crash_at = 0;  // 0 = never
  std::vector<std::string> log;  // the mutations, in order

  Status WriteFile(const std::string& path, const std::string& data) override {
    switch (Next("WriteFile")) {
      case kRun: return base_->WriteFile(path, data);
      case kCrash: (void)base_->WriteFile(path, data.substr(0, data.size() / 2)); break;
      case kDead: break;
    }
    return Status::Unavailable("killed");
  }
  StatusOr<std::string> ReadFile(const std::string& path) override { return base_->ReadFile(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return Next("Rename") == kRun ? base_->Rename(from, to) : Status::Unavailable("killed");
  }
  Status SyncDir(const std::string& dir) override {
    return Next("SyncDir") == kRun ? base_->SyncDir(dir) : Status::Unavailable("killed");
  }
  Status MakeDirs(const std::string& dir) override {
    return Next("MakeDirs") == kRun ? base_->MakeDirs(dir) : Status::Unavailable("killed");
  }
  StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override { return base_->ListDir(dir); }
  Status RemoveAll(const std::string& path) override {
    return Next("RemoveAll") == kRun ? base_->RemoveAll(path) : Status::Unavailable("killed");
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }

 private:
  enum Outcome { kRun, kCrash, kDead };
  Outcome Next(const char* what) {
    ++ops;
    log.push_back(what);
    if (ops == interleave_at && before_op) before_op();
    if (crash_at > 0 && ops > crash_at) return kDead;
    return crash_at > 0 && ops == crash_at ? kCrash : kRun;
  }
  CrashingFs* base_;
};

// Entries of `dir` in `fs` whose name starts with `prefix`.
std::vector<std::string> Entries(FileSystem& fs, const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  auto names = fs.ListDir(dir);
  if (!names.ok()) return out;
  for (const auto& n : *names) {
    if (n.rfind(prefix, 0) == 0) out.push_back(n);
  }
  return out;
}

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

std::string WriterPayload(char who) { return std::string("state saved by ") + who + std::string(150, who); }

// Two survivors save the just-in-time checkpoint of the same step (different bytes here, to
// tell who won). Writer A's whole save runs just before B's k-th file operation (after B found
// no complete copy: the race), and B is killed at its j-th operation, for every k and j, or
// never. Expected from the protocol alone: the first rename wins, so the step holds A's copy
// unless B renamed before A ran; nothing B does, dying or not, removes or replaces a complete
// copy; and there is always exactly one copy.
TEST(CheckpointStoreTest, ConcurrentSavesOfOneStepKeepTheFirstCompleteCopy) {
  int b_ops = 0, b_rename = 0;
  {
    CrashingFs fs;
    ASSERT_TRUE(CheckpointStore(&fs, "/ck", 3).Save(10, PayloadFor(10)).ok());
    WriterFs b(&fs);
    ASSERT_TRUE(CheckpointStore(&b, "/ck", 3).Save(30, WriterPayload('B'), "r1").ok());
    b_ops = b.ops;
    b_rename = static_cast<int>(std::find(b.log.begin(), b.log.end(), "Rename") - b.log.begin()) + 1;
  }
  ASSERT_GE(b_ops, 8);
  ASSERT_LE(b_rename, b_ops);
  int a_won = 0, b_won = 0;
  for (int k = 1; k <= b_ops + 1; ++k) {    // k = b_ops + 1: A after B's save
    for (int j = 1; j <= b_ops + 1; ++j) {  // j = b_ops + 1: B is never killed
      const std::string row = "A before B's op " + std::to_string(k) + ", B killed at op " + std::to_string(j);
      CrashingFs fs;
      ASSERT_TRUE(CheckpointStore(&fs, "/ck", 3).Save(10, PayloadFor(10)).ok());
      CheckpointStore a(&fs, "/ck", 3);
      WriterFs b_fs(&fs);
      CheckpointStore b(&b_fs, "/ck", 3);
      bool a_ran = false;
      Status a_saved;
      b_fs.interleave_at = k;
      b_fs.before_op = [&] { a_ran = true, a_saved = a.Save(30, WriterPayload('A'), "r0"); };
      b_fs.crash_at = j <= b_ops ? j : 0;
      const Status b_saved = b.Save(30, WriterPayload('B'), "r1");
      if (!a_ran) a_saved = a.Save(30, WriterPayload('A'), "r0");
      ASSERT_TRUE(a_saved.ok()) << row << ": " << a_saved.ToString();
      if (j > b_ops) {
        ASSERT_TRUE(b_saved.ok()) << row << ": " << b_saved.ToString();
      }
      // The next process: one complete copy, the first renamed.
      CheckpointStore reader(&fs, "/ck", 3);
      auto latest = reader.LoadLatest();
      ASSERT_TRUE(latest.has_value()) << row;
      ASSERT_EQ(latest->step, 30) << row;
      const bool b_renamed_first = k > b_rename && j > b_rename;
      EXPECT_EQ(latest->payload, WriterPayload(b_renamed_first ? 'B' : 'A')) << row;
      (b_renamed_first ? b_won : a_won) += 1;
      EXPECT_EQ(Entries(fs, "/ck", "step-00000030"), std::vector<std::string>{"step-00000030"}) << row;
      EXPECT_EQ(reader.ListSteps(), (std::vector<int64_t>{10, 30})) << row;
    }
  }
  EXPECT_GT(a_won, 0);
  EXPECT_GT(b_won, 0);
}

// A complete copy exists and a second writer of that step is killed at each of its operations
// (it raced past the check): the step still loads the first copy, and the dead writer's
// temporary is gone once the step is old enough to prune.
TEST(CheckpointStoreTest, AWriterKilledAnywhereNeverCostsTheStepItsCompleteCopy) {
  for (int j = 1; j <= 12; ++j) {
    CrashingFs fs;
    CheckpointStore a(&fs, "/ck", 1);
    WriterFs b_fs(&fs);
    CheckpointStore b(&b_fs, "/ck", 1);
    b_fs.interleave_at = 1;  // A completes right after B's check
    b_fs.before_op = [&] { ASSERT_TRUE(a.Save(30, WriterPayload('A'), "r0").ok()); };
    b_fs.crash_at = j;
    (void)b.Save(30, WriterPayload('B'), "r1");
    auto loaded = CheckpointStore(&fs, "/ck", 1).Load(30);
    ASSERT_TRUE(loaded.ok()) << "B killed at op " << j << ": " << loaded.status().ToString();
    EXPECT_EQ(loaded->payload, WriterPayload('A')) << "B killed at op " << j;
    ASSERT_TRUE(a.Save(40, PayloadFor(40), "r0").ok());
    EXPECT_EQ(Entries(fs, "/ck", ""), std::vector<std::string>{"step-00000040"}) << "B killed at op " << j;
  }
}

// A torn step directory left by the previous protocol (DONE written after the rename) is never
// written into or removed by a save of its step: the new copy goes to step-<n>.1, readers take
// it, and pruning the step later removes both.
TEST(CheckpointStoreTest, ATornCopyOfTheOlderProtocolIsSteppedAround) {
  CrashingFs fs;
  fs.dirs.insert("/ck");
  fs.dirs.insert("/ck/step-00000030");
  fs.files["/ck/step-00000030/state.pt"] = "half a payload";
  CheckpointStore store(&fs, "/ck", 2);
  EXPECT_FALSE(store.NewestComplete().has_value());
  ASSERT_TRUE(store.Save(30, PayloadFor(30), "r2").ok());
  EXPECT_EQ(fs.files["/ck/step-00000030/state.pt"], "half a payload");
  EXPECT_TRUE(fs.Exists("/ck/step-00000030.1/DONE"));
  EXPECT_EQ(store.NewestComplete(), 30);
  EXPECT_EQ(store.ListSteps(), (std::vector<int64_t>{30}));
  auto loaded = store.Load(30);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->payload, PayloadFor(30));
  ASSERT_TRUE(store.Save(30, "another state", "r3").ok());  // the complete copy wins
  EXPECT_EQ(store.Load(30)->payload, PayloadFor(30));
  for (int64_t s : {40, 50}) ASSERT_TRUE(store.Save(s, PayloadFor(s)).ok());
  EXPECT_EQ(Entries(fs, "/ck", ""), (std::vector<std::string>{"step-00000040", "step-00000050"}));
}

// Two threads on the real filesystem save the same step at the same moment, many times: both
// succeed, one complete copy remains (either one's), and no temporary is left behind.
TEST(CheckpointStoreTest, TwoThreadsSavingOneStepOnDiskLeaveOneCompleteCopy) {
  const std::string root = std::filesystem::temp_directory_path() /
                           ("ddp-ckpt-race-" + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  int first = 0, second = 0;
  for (int round = 0; round < 50; ++round) {
    const std::string dir = root + "/" + std::to_string(round);
    std::atomic<int> ready{0};
    Status saved[2];
    auto writer = [&](int w) {
      CheckpointStore store(PosixFileSystem(), dir, 2);
      ++ready;
      while (ready.load() < 2) {
      }
      saved[w] = store.Save(7, WriterPayload(static_cast<char>('A' + w)), "r" + std::to_string(w));
    };
    std::thread t0(writer, 0), t1(writer, 1);
    t0.join();
    t1.join();
    ASSERT_TRUE(saved[0].ok()) << saved[0].ToString();
    ASSERT_TRUE(saved[1].ok()) << saved[1].ToString();
    auto loaded = CheckpointStore(PosixFileSystem(), dir, 2).Load(7);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    ASSERT_TRUE(loaded->payload == WriterPayload('A') || loaded->payload == WriterPayload('B'));
    (loaded->payload == WriterPayload('A') ? first : second) += 1;
    EXPECT_EQ(Entries(*PosixFileSystem(), dir, ""), std::vector<std::string>{"step-00000007"});
  }
  std::fprintf(stderr, "writer A's copy won %d rounds, B's %d\n", first, second);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace ddp::worker

namespace ddp::worker {
namespace {

// PosixFileSystem's RemoveAll (nftw): a tree goes with its files and empty folders; a link is
// removed, never followed; a path that does not exist is already removed.
TEST(PosixFileSystemTest, RemoveAllTakesTheTreeAndNotWhatLinksPointTo) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("ddp-rm-" + std::to_string(::getpid()));
  fs::create_directories(root / "tree/a/b");
  fs::create_directories(root / "outside");
  FileSystem* posix = PosixFileSystem();
  ASSERT_TRUE(posix->WriteFile((root / "tree/a/b/f").string(), "x").ok());
  ASSERT_TRUE(posix->WriteFile((root / "outside/keep").string(), "k").ok());
  fs::create_directories(root / "tree/empty");
  fs::create_directory_symlink(root / "outside", root / "tree/a/link");
  EXPECT_TRUE(posix->RemoveAll((root / "tree").string()).ok());
  EXPECT_FALSE(posix->Exists((root / "tree").string()));
  EXPECT_TRUE(posix->Exists((root / "outside/keep").string()));
  EXPECT_TRUE(posix->RemoveAll((root / "tree").string()).ok());  // gone already
  EXPECT_TRUE(posix->RemoveAll((root / "outside/keep").string()).ok());  // a file
  EXPECT_FALSE(posix->Exists((root / "outside/keep").string()));
  fs::remove_all(root);
}

}  // namespace
}  // namespace ddp::worker
