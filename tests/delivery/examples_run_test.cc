// The examples against the images and the worker: each names the image it needs (CPU examples
// the CPU image, GPU examples the CUDA one), docs/install.md says the same, and every CPU
// example's worker arguments start the real ddp-worker, which trains two steps and writes its
// checkpoints (a bad flag value would make the job fail on the cluster with exit 2).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/free_port.h"
#include "tests/delivery/repo_files.h"

namespace ddp::delivery {
namespace {

using nlohmann::json;

struct Example {
  std::string file;
  json job;        // the DDPJob
  json container;  // its worker container (named "worker", else the first)
  bool gpu = false;
};

std::vector<Example> Examples() {
  std::vector<Example> out;
  for (const auto& entry : std::filesystem::directory_iterator(SourcePath("examples"))) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string rel = "examples/" + entry.path().filename().string();
    for (const json& doc : ReadYamlDocs(rel)) {
      if (doc.value("kind", "") != "DDPJob") continue;
      const json& containers = doc["spec"]["template"]["spec"]["containers"];
      json worker = containers.at(0);
      for (const json& c : containers) {
        if (c.value("name", "") == "worker") worker = c;
      }
      // A GPU example asks for GPUs; it cannot run on the CPU image.
      const bool gpu = worker.dump().find("nvidia.com/gpu") != std::string::npos;
      out.push_back({rel, doc, worker, gpu});
    }
  }
  std::sort(out.begin(), out.end(), [](const Example& a, const Example& b) { return a.file < b.file; });
  return out;
}

bool RunsDdpWorker(const Example& e) {
  const json& cmd = e.container.value("command", json::array());
  return !cmd.empty() && cmd[0] == "ddp-worker";
}

TEST(ExampleImages, CpuExamplesUseTheCpuImageAndGpuExamplesTheCudaOne) {
  int cpu = 0, gpu = 0;
  for (const Example& e : Examples()) {
    if (!RunsDdpWorker(e)) continue;  // torchrun and local-only examples bring their own image
    const std::string image = e.container.value("image", "");
    const std::string want = e.gpu ? "ddp-worker:" : "ddp-worker-cpu:";
    EXPECT_EQ(image.rfind(want, 0), 0u) << e.file << ": image " << image << ", want " << want << "<tag>";
    ++(e.gpu ? gpu : cpu);
  }
  EXPECT_GE(cpu, 3);
  EXPECT_GE(gpu, 3);
}

// docs/install.md has a table row "| `examples/<file>` | `<image>` ..." for every example.
TEST(ExampleImages, InstallDocNamesTheImageOfEveryExample) {
  const std::string doc = ReadSource("docs/install.md");
  for (const Example& e : Examples()) {
    const std::regex row("\\| `" + e.file + "` \\| `([^`]+)`");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(doc, m, row)) << "docs/install.md has no row for " << e.file;
    const std::string image = e.container.value("image", "");
    if (RunsDdpWorker(e)) {
      EXPECT_EQ(m[1].str(), image) << e.file;
    }
  }
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `command` through the shell; returns the exit code and the output.
int RunShell(const std::string& command, std::string* output) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) output->append(buf.data(), n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ExampleRuns, EveryCpuExampleTrainsTwoStepsWithItsOwnArguments) {
  int ran = 0;
  for (const Example& e : Examples()) {
    const json& cmd = e.container.value("command", json::array());
    if (e.gpu || !RunsDdpWorker(e) || cmd.size() != 1) continue;
    const std::string dir = std::filesystem::temp_directory_path() /
                            ("ddp-example-" + std::to_string(getpid()) + "-" + std::to_string(ran));
    std::filesystem::create_directories(dir + "/checkpoints");
    // The environment the operator gives rank 0 of a one-pod world (docs/env-contract.md),
    // the example's own env, and the checkpoint path moved into the temporary directory.
    std::string env = "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(testing::FreePort()) +
                      " WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1"
                      " DDP_RENDEZVOUS_TIMEOUT=60 DDP_CHECKPOINT_DIR=" + Quote(dir + "/checkpoints");
    for (const json& v : e.container.value("env", json::array())) {
      env += " " + Quote(v.value("name", "") + "=" + v.value("value", ""));
    }
    std::string line = "cd " + Quote(dir) + " && env " + env + " timeout 120 " + Quote(DDP_WORKER_BIN);
    for (const json& a : e.container.value("args", json::array())) line += " " + Quote(a.get<std::string>());
    // Later flags win: two steps, a checkpoint after each.
    line += " --steps=2 --checkpoint-every=1";
    std::string out;
    const int code = RunShell(line, &out);
    EXPECT_EQ(code, 0) << e.file << ": " << line << "\n" << out;
    EXPECT_NE(out.find("summary rank=0 world_size=1 step=2 "), std::string::npos) << e.file << "\n" << out;
    EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoints/step-00000002")) << e.file << "\n" << out;
    std::filesystem::remove_all(dir);
    ++ran;
  }
  EXPECT_GE(ran, 3) << "too few CPU examples ran";
}

}  // namespace
}  // namespace ddp::delivery
