// DDP_FAULT parsing and injection.
#include "worker/train/fault.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <vector>

#include "common/logging.h"

namespace ddp::worker {
namespace {

bool ToInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

}  // namespace

StatusOr<std::optional<Fault>> ParseFault(const std::string& text) {
  if (text.empty()) return std::optional<Fault>();
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  const Status bad = Status::InvalidArgument(
      std::string(kEnvFault) + "='" + text +
      "': want rank:step:exit:CODE, rank:step:kill or rank:step:term (step may be step@incarnation)");
  int64_t rank = 0, step = 0, incarnation = -1;
  if (parts.size() < 3) return bad;
  if (size_t at = parts[1].find('@'); at != std::string::npos) {
    if (!ToInt(parts[1].substr(at + 1), &incarnation) || incarnation < 0) return bad;
    parts[1].resize(at);
  }
  if (!ToInt(parts[0], &rank) || !ToInt(parts[1], &step) || rank < 0 || step < 0) return bad;
  Fault f;
  f.incarnation = static_cast<int>(incarnation);
  f.rank = static_cast<int>(rank);
  f.step = step;
  if (parts[2] == "kill" && parts.size() == 3) {
    f.kind = Fault::Kind::kKill;
  } else if (parts[2] == "term" && parts.size() == 3) {
    f.kind = Fault::Kind::kTerm;
  } else if (parts[2] == "exit" && parts.size() == 4) {
    int64_t code = 0;
    if (!ToInt(parts[3], &code) || code < 0 || code > 255) return bad;
    f.kind = Fault::Kind::kExit;
    f.exit_code = static_cast<int>(code);
  } else {
    return bad;
  }
  return std::optional<Fault>(f);
}

void MaybeInjectFault(const std::optional<Fault>& fault, int rank, int64_t step) {
  if (!fault || fault->rank != rank || fault->step != step) return;
  DDP_LOG(WARNING) << kEnvFault << ": injecting fault on rank " << rank << " at step " << step;
  switch (fault->kind) {
    case Fault::Kind::kExit:
      _exit(fault->exit_code);
    case Fault::Kind::kKill:
      kill(getpid(), SIGKILL);
      break;
    case Fault::Kind::kTerm:
      kill(getpid(), SIGTERM);
      break;
  }
}

}  // namespace ddp::worker
