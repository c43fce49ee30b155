// The scale bench's bookkeeping (see events.h).
#include "bench/scale/events.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace ddp::bench {

void EventTable::Add(const std::string& line) {
  std::istringstream in(line);
  std::string kind;
  int rank = -1;
  int64_t g = -1, ns = -1;
  if (!(in >> kind >> rank >> g >> ns) || rank < 0 || g < 0 || ns <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (kind == "formed") formed_[g][rank] = ns;
  if (kind == "aborted") aborted_[g][rank] = ns;
}

int64_t EventTable::AllFormed(const std::set<int>& ranks, int64_t from, int64_t* generation) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = formed_.lower_bound(from); it != formed_.end(); ++it) {
    int64_t latest = 0;
    bool all = true;
    for (int r : ranks) {
      auto f = it->second.find(r);
      if (f == it->second.end()) {
        all = false;
        break;
      }
      latest = std::max(latest, f->second);
    }
    if (all) {
      *generation = it->first;
      return latest;
    }
  }
  return -1;
}

std::vector<int64_t> EventTable::Aborted(const std::set<int>& ranks, int64_t g) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> out;
  auto it = aborted_.find(g);
  if (it == aborted_.end()) return out;
  for (int r : ranks) {
    if (auto a = it->second.find(r); a != it->second.end()) out.push_back(a->second);
  }
  return out;
}

bool EventTable::WaitFor(std::chrono::seconds within, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

Quantiles Quantile(std::vector<double> v) {
  Quantiles q;
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
  };
  q.p50 = at(0.5);
  q.p99 = at(0.99);
  q.max = v.back();
  return q;
}

Child Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& log, std::function<void(const std::string&)> on_line) {
  int out[2];
  if (::pipe(out) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out[1], 1);
    const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) ::dup2(err, 2);
    ::close(out[0]);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::thread([fd = out[0], on_line] {
    FILE* f = ::fdopen(fd, "r");
    char buf[256];
    while (f != nullptr && std::fgets(buf, sizeof(buf), f) != nullptr) {
      std::string line(buf);
      if (!line.empty() && line.back() == '\n') line.pop_back();
      on_line(line);
    }
    if (f != nullptr) std::fclose(f);
  }).detach();
  return Child{pid};
}

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(stat.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

int64_t RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return 0;
}

}  // namespace ddp::bench
