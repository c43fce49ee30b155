// The standard process_* metrics of Prometheus client libraries (CPU seconds, resident and
// virtual memory, start time, open and max file descriptors), read from /proc/self when
// scraped. The same names kube-apiserver exports, so one PromQL query compares the two.
// Linux only; elsewhere Update() leaves the values at 0.
#ifndef DDP_COMMON_PROCESS_METRICS_H_
#define DDP_COMMON_PROCESS_METRICS_H_

#include <mutex>
#include <optional>
#include <string>

#include "common/prometheus.h"

namespace ddp::metrics {

// What one /proc/<pid>/stat line says, in seconds and bytes.
struct ProcStat {
  double cpu_seconds = 0;       // utime + stime
  double start_after_boot = 0;  // starttime, seconds after boot
  double virtual_bytes = 0;
  double resident_bytes = 0;
};

// Parses a /proc/<pid>/stat line (the command name may hold spaces and parentheses).
// clock_ticks: sysconf(_SC_CLK_TCK); page_bytes: sysconf(_SC_PAGESIZE). nullopt when malformed.
std::optional<ProcStat> ParseProcStat(const std::string& line, long clock_ticks, long page_bytes);

class ProcessMetrics {
 public:
  // Registers the process_* families in `registry`, which must outlive this object.
  explicit ProcessMetrics(Registry* registry);
  // Reads /proc/self; call before Registry::Render(). Thread-safe.
  void Update();

 private:
  std::mutex mu_;
  double last_cpu_seconds_ = 0;
  Counter& cpu_seconds_;
  Gauge& resident_bytes_;
  Gauge& virtual_bytes_;
  Gauge& start_time_seconds_;
  Gauge& open_fds_;
  Gauge& max_fds_;
};

}  // namespace ddp::metrics

#endif  // DDP_COMMON_PROCESS_METRICS_H_
