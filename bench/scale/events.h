// The scale bench's bookkeeping: what the simulated trainers said (formed and aborted, by rank and
// generation, in monotonic nanoseconds), the children it runs, and the summaries it prints.
#ifndef DDP_BENCH_SCALE_EVENTS_H_
#define DDP_BENCH_SCALE_EVENTS_H_

#include <sys/types.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace ddp::bench {

// Thread-safe.
class EventTable {
 public:
  // One "formed|aborted <rank> <generation> <ns>" line; anything else is ignored.
  void Add(const std::string& line);
  // The first time every rank of `ranks` formed one generation >= `from`: that generation's
  // latest formed time, or -1 while not all did. *generation gets it.
  int64_t AllFormed(const std::set<int>& ranks, int64_t from, int64_t* generation) const;
  // The aborted times of `ranks` in generation `g` (fewer than ranks.size() while some still run).
  std::vector<int64_t> Aborted(const std::set<int>& ranks, int64_t g) const;
  // Polls `done` every 20 ms until it holds or `within` passed.
  static bool WaitFor(std::chrono::seconds within, const std::function<bool()>& done);

 private:
  mutable std::mutex mu_;
  std::map<int64_t, std::map<int, int64_t>> formed_, aborted_;  // generation -> rank -> ns
};

// p50, p99 and max of `v` (in the units given), "-" when empty.
struct Quantiles {
  double p50 = NAN, p99 = NAN, max = NAN;
};
Quantiles Quantile(std::vector<double> v);

// A child process: argv[0] run with `env` added, stdout to `on_line` line by line (a thread of
// its own), stderr to `log`. Its own process group.
struct Child {
  pid_t pid = -1;
};
Child Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& log, std::function<void(const std::string&)> on_line);

// CPU seconds (user + system) and resident KiB of `pid`, from /proc.
double CpuSeconds(pid_t pid);
int64_t RssKib(pid_t pid);

}  // namespace ddp::bench

#endif  // DDP_BENCH_SCALE_EVENTS_H_
