// Parsing --scale-at (see scale_at.h).
#include "operator/local/scale_at.h"

#include <cerrno>
#include <cstdlib>

namespace ddp::controller::local {
namespace {

bool ParseWhole(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  errno = 0;
  const long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno != 0 || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

StatusOr<std::vector<std::pair<int64_t, int>>> ParseScaleAt(const std::string& text) {
  std::vector<std::pair<int64_t, int>> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string entry = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                            : comma - start);
    const size_t eq = entry.find('=');
    int64_t step = 0, replicas = 0;
    if (eq == std::string::npos || !ParseWhole(entry.substr(0, eq), 1, int64_t{1} << 40, &step) ||
        !ParseWhole(entry.substr(eq + 1), 1, 100000, &replicas)) {
      return Status::InvalidArgument("--scale-at: \"" + entry.substr(0, 40) +
                                     "\": want STEP=REPLICAS (STEP >= 1, REPLICAS 1..100000)");
    }
    if (!out.empty() && step <= out.back().first) {
      return Status::InvalidArgument("--scale-at: step " + std::to_string(step) +
                                     " is not after step " + std::to_string(out.back().first));
    }
    out.push_back({step, static_cast<int>(replicas)});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace ddp::controller::local
