// Runs `promtool check metrics` on an exposition, for tests. Header-only test helper.
#ifndef DDP_TESTS_COMMON_PROMTOOL_H_
#define DDP_TESTS_COMMON_PROMTOOL_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ddp::testing {

// True when promtool is on PATH.
inline bool HavePromtool() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

// Writes `text` to promtool's stdin. Returns its exit code; `*output` gets what it printed.
// promtool exits 0 for a valid exposition (it may still print lint hints) and 1 for errors.
inline int PromtoolCheck(const std::string& text, std::string* output) {
  char path[] = "/tmp/ddp-promtool-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  FILE* f = fdopen(fd, "w");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  std::string cmd = "promtool check metrics < " + std::string(path) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512];
  output->clear();
  while (p && std::fgets(buf, sizeof(buf), p)) *output += buf;
  int rc = p ? pclose(p) : -1;
  std::remove(path);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_COMMON_PROMTOOL_H_
