// `ddp-operator chaos kill-trainer` in local mode kills a trainer of the pod and nothing else
// (review F3's local note): the pid comes from the pod's log, so a trainer that ended may have
// left its pid to another process, and a supervised pod whose log names no trainer of the rank
// is not a trainer. Real processes stand in for the pod (a process group's leader) and a
// stranger (a process of its own group whose pid the log names).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "operator/chaos/target.h"

namespace ddp::chaos {
namespace {

namespace fs = std::filesystem;

// A `sleep 60` leading a process group of its own; killed and reaped by the destructor.
struct Sleeper {
  pid_t pid = -1;
  Sleeper() {
    pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    ::setpgid(pid, pid);
  }
  ~Sleeper() {
    if (pid <= 0 || !Alive()) return;  // a pid already reaped may be another process's now
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  bool Alive() const {
    int status = 0;
    return ::waitpid(pid, &status, WNOHANG) == 0;
  }
};

class ChaosLocalPidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ddp-chaos-local-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "status.json") << R"({"status": {"phase": "Running"}})";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // pods.json with worker pod 1 (its process `pod`) whose log holds `log`.
  void Pod(pid_t pod, const std::string& log) {
    std::ofstream(dir_ / "worker-1.log") << log;
    const nlohmann::json pods = {
        {"pods", {{{"name", "job-worker-1"}, {"role", "worker"}, {"index", 1}, {"round", 0},
                   {"pid", pod}, {"alive", true}, {"log", (dir_ / "worker-1.log").string()}}}}};
    std::ofstream(dir_ / "pods.json") << pods.dump();
  }
  StatusOr<std::string> KillTrainer(int rank) {
    auto t = OpenLocal(dir_.string());
    if (!t.ok()) return t.status();
    return (*t)->Inject(*ParseFailure({"kill-trainer", std::to_string(rank)}));
  }

  fs::path dir_;
};

TEST_F(ChaosLocalPidTest, APidTheLogNamesThatIsNoLongerThePodsIsNotKilled) {
  Sleeper pod, stranger;
  Pod(pod.pid, "I1206 00:00:00.000 supervisor.cc:1] supervisor: node rank 1: rank 1 (local 0) pid " +
                   std::to_string(stranger.pid) + "\n");
  auto done = KillTrainer(1);
  ASSERT_FALSE(done.ok()) << *done;
  EXPECT_EQ(done.status().code(), StatusCode::kFailedPrecondition) << done.status().ToString();
  EXPECT_TRUE(stranger.Alive()) << "a process outside the pod was killed";
  EXPECT_TRUE(pod.Alive());
}

TEST_F(ChaosLocalPidTest, ASupervisedPodWithoutTheRanksTrainerKeepsItsSupervisor) {
  Sleeper pod;
  Pod(pod.pid, "I1206 00:00:00.000 supervisor.cc:1] supervisor: node rank 1: waiting for the group\n");
  auto done = KillTrainer(1);
  ASSERT_FALSE(done.ok()) << *done;
  EXPECT_EQ(done.status().code(), StatusCode::kNotFound) << done.status().ToString();
  EXPECT_TRUE(pod.Alive()) << "the supervisor was killed as if it were the trainer";
}

TEST_F(ChaosLocalPidTest, ATrainerOfThePodIsKilledAndAnUnsupervisedPodIsItsTrainer) {
  {
    Sleeper pod;
    // A trainer: a child in the pod's process group.
    const pid_t trainer = ::fork();
    if (trainer == 0) {
      ::setpgid(0, pod.pid);
      ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    ::setpgid(trainer, pod.pid);
    Pod(pod.pid, "I1206 00:00:00.000 supervisor.cc:1] supervisor: node rank 1: rank 1 (local 0) pid " +
                     std::to_string(trainer) + "\n");
    auto done = KillTrainer(1);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    int status = 0;
    ASSERT_EQ(::waitpid(trainer, &status, 0), trainer);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    EXPECT_TRUE(pod.Alive());
  }
  Sleeper alone;  // recovery Restart: no supervisor, the pod's process is the trainer
  Pod(alone.pid, "I1206 00:00:00.000 trainer.cc:1] step 1/10\n");
  auto done = KillTrainer(1);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  int status = 0;
  ASSERT_EQ(::waitpid(alone.pid, &status, 0), alone.pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

}  // namespace
}  // namespace ddp::chaos
