// See e2e_util.h.
#include "e2e_util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/common/poll.h"

namespace ddp::testing_local {

TempDir::TempDir() {
  char tmpl[] = "/tmp/ddp-local-test-XXXXXX";
  path_ = mkdtemp(tmpl);
}

TempDir::~TempDir() {
  // DDP_TEST_KEEP_FAILED=1 keeps a failed test's run directory (pod logs, status) to read.
  if (std::getenv("DDP_TEST_KEEP_FAILED") && ::testing::Test::HasFailure()) {
    std::cerr << "kept " << path_ << std::endl;
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void WriteFileAtomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::trunc) << text;
  std::rename(tmp.c_str(), path.c_str());
}

bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  return ddp::testing::PollUntil(cond, timeout, std::chrono::milliseconds(20));
}

OperatorProcess::OperatorProcess(const std::vector<std::string>& args,
                                 const std::string& output_path)
    : output_path_(output_path) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    int fd = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid_, pid_);
}

OperatorProcess::~OperatorProcess() {
  if (running()) {
    kill(-pid_, SIGKILL);
    Wait(std::chrono::seconds(5));
  }
}

bool OperatorProcess::running() {
  if (exit_code_ >= 0) return false;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) != pid_) return true;
  exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return false;
}

int OperatorProcess::Wait(std::chrono::milliseconds timeout) {
  WaitFor([&] { return !running(); }, timeout);
  return exit_code_;
}

nlohmann::json ReadStatus(const std::string& run_dir) {
  std::string text = ReadFile(run_dir + "/status.json");
  if (text.empty()) return nullptr;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  return doc.is_discarded() ? nlohmann::json() : doc["status"];
}

std::string ShellJob(const std::string& name, int replicas, const std::string& script,
                     const std::string& extra_spec) {
  nlohmann::json quoted = script;  // a JSON string is a valid YAML double-quoted scalar
  return "apiVersion: ddp.dev/v1alpha1\n"
         "kind: DDPJob\n"
         "metadata:\n"
         "  name: " + name + "\n"
         "spec:\n"
         "  replicas: " + std::to_string(replicas) + "\n" + extra_spec +
         "  template:\n"
         "    spec:\n"
         "      terminationGracePeriodSeconds: 2\n"
         "      containers:\n"
         "      - name: worker\n"
         "        image: unused-locally\n"
         "        command: [sh, -c, " + quoted.dump() + "]\n";
}

std::string WorkerBin() {
  if (const char* env = std::getenv("DDP_WORKER_BIN")) return env;
#ifdef DDP_WORKER_BIN
  return DDP_WORKER_BIN;
#else
  return "";
#endif
}

std::string LastChecksum(const std::string& log) {
  static const std::regex kRe("param_checksum=([0-9a-fA-F]+)");
  std::string found;
  for (std::sregex_iterator it(log.begin(), log.end(), kRe), end; it != end; ++it) {
    found = (*it)[1];
  }
  return found;
}

}  // namespace ddp::testing_local
