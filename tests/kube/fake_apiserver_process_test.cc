// fake-apiserver as a process (how benchmarks use it): it prints its URL, serves the client,
// and exits 0 on SIGTERM with the request counts by verb.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tests/kube/client_test_util.h"

namespace ddp::controller {
namespace {

TEST(FakeApiServerProcess, ServesAndReportsCountsOnSigterm) {
  int out_pipe[2], err_pipe[2];
  ASSERT_EQ(pipe(out_pipe), 0);
  ASSERT_EQ(pipe(err_pipe), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    alarm(60);  // hard limit, whatever the test does
    execl(FAKE_APISERVER_BIN, "fake-apiserver", "--port", "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  FILE* out = fdopen(out_pipe[0], "r");
  char line[256] = {0};
  ASSERT_NE(fgets(line, sizeof(line), out), nullptr);  // blocks until it listens (or dies)
  std::string url = line;
  ASSERT_EQ(url.rfind("listening on http://127.0.0.1:", 0), 0u) << url;
  url = url.substr(std::string("listening on ").size());
  url.pop_back();  // newline

  ClientConfig cfg;
  cfg.server = url;
  cfg.qps = 0;
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Create(kPods, "ml", PodObject("p")).ok());
  ASSERT_TRUE((*c)->Get(kPods, "ml", "p").ok());
  ASSERT_TRUE((*c)->List(kPods, "ml", {}).ok());

  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = read(err_pipe[0], buf, sizeof(buf))) > 0) err.append(buf, static_cast<size_t>(n));
  EXPECT_NE(err.find("get=1 list=1 watch=0 create=1"), std::string::npos) << err;
  fclose(out);
  close(err_pipe[0]);
}

}  // namespace
}  // namespace ddp::controller
