#include "common/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace ddp::metrics {
namespace {

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "btime <seconds since the epoch>" from /proc/stat; 0 when absent.
double BootTime() {
  std::istringstream in(ReadAll("/proc/stat"));
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

int CountOpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int n = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // the descriptor of this listing
}

}  // namespace

std::optional<ProcStat> ParseProcStat(const std::string& line, long clock_ticks, long page_bytes) {
  // "pid (comm) state ppid ...": comm may contain ") ", so split after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos || clock_ticks <= 0 || page_bytes <= 0) return std::nullopt;
  std::istringstream in(line.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state) of proc(5)
  for (std::string t; in >> t;) f.push_back(t);
  if (f.size() < 22) return std::nullopt;
  try {
    ProcStat s;
    s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / clock_ticks;  // utime, stime
    s.start_after_boot = std::stod(f[19]) / clock_ticks;                 // starttime
    s.virtual_bytes = std::stod(f[20]);                                   // vsize
    s.resident_bytes = std::stod(f[21]) * page_bytes;                     // rss, in pages
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

ProcessMetrics::ProcessMetrics(Registry* r)
    : cpu_seconds_(r->AddCounter("process_cpu_seconds_total",
                                 "Total user and system CPU time spent in seconds.").Get()),
      resident_bytes_(r->AddGauge("process_resident_memory_bytes",
                                  "Resident memory size in bytes.").Get()),
      virtual_bytes_(r->AddGauge("process_virtual_memory_bytes",
                                 "Virtual memory size in bytes.").Get()),
      start_time_seconds_(r->AddGauge("process_start_time_seconds",
                                      "Start time of the process since unix epoch in seconds.")
                              .Get()),
      open_fds_(r->AddGauge("process_open_fds", "Number of open file descriptors.").Get()),
      max_fds_(r->AddGauge("process_max_fds", "Maximum number of open file descriptors.").Get()) {
  Update();
}

void ProcessMetrics::Update() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<ProcStat> s =
      ParseProcStat(ReadAll("/proc/self/stat"), sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
  if (s) {
    if (s->cpu_seconds > last_cpu_seconds_) cpu_seconds_.Inc(s->cpu_seconds - last_cpu_seconds_);
    last_cpu_seconds_ = std::max(last_cpu_seconds_, s->cpu_seconds);
    resident_bytes_.Set(s->resident_bytes);
    virtual_bytes_.Set(s->virtual_bytes);
    if (start_time_seconds_.value() == 0) {
      const double boot = BootTime();
      if (boot > 0) start_time_seconds_.Set(boot + s->start_after_boot);
    }
  }
  open_fds_.Set(CountOpenFds());
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) max_fds_.Set(static_cast<double>(lim.rlim_cur));
}

}  // namespace ddp::metrics
