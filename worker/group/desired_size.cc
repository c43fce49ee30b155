// The desired group size, from the file the operator's annotation is projected into (see
// desired_size.h).
#include "worker/group/desired_size.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "common/logging.h"

namespace ddp::worker::group {

int ParseDesiredNodes(const std::string& text, int max_nodes, std::string* why) {
  why->clear();
  const size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return -1;
  const size_t e = text.find_last_not_of(" \t\r\n");
  const std::string v = text.substr(b, e - b + 1);
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || end == v.c_str() || *end != '\0' || v.size() > 12) {
    *why = "\"" + v.substr(0, 16) + "\" is not an integer";
    return -1;
  }
  if (n < 1 || n > max_nodes) {
    *why = std::to_string(n) + " is outside [1, " + std::to_string(max_nodes) + "]";
    return -1;
  }
  return static_cast<int>(n);
}

int DesiredSizeFile::Read() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return -1;
  char buf[64];
  in.read(buf, sizeof(buf));
  const std::string text(buf, static_cast<size_t>(in.gcount()));
  std::string why;
  const int n = ParseDesiredNodes(text, max_, &why);
  if (!why.empty() && text != last_refused_) {
    last_refused_ = text;
    DDP_LOG(WARNING) << "group size in " << path_ << " refused: " << why << "; the size is kept";
  }
  return n;
}

}  // namespace ddp::worker::group
