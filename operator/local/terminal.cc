// Live or plain output.
#include "operator/local/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace ddp::controller::local {

Terminal::Terminal(FILE* out, bool live, std::chrono::seconds plain_interval)
    : out_(out), live_(live), plain_interval_(plain_interval) {}

int Terminal::Width() const {
  winsize ws{};
  if (live_ && ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void Terminal::Line(const std::string& text) {
  if (live_ && !shown_.empty()) std::fputs("\r\033[K", out_);
  std::fputs(text.c_str(), out_);
  std::fputc('\n', out_);
  if (live_ && !shown_.empty()) std::fputs(shown_.c_str(), out_);
  std::fflush(out_);
}

void Terminal::Status(const std::string& text, const std::string& key) {
  if (live_) {
    if (text == shown_) return;
    shown_ = text;
    std::fputs("\r\033[K", out_);
    std::fputs(text.c_str(), out_);
    std::fflush(out_);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (key == last_key_ && now - last_plain_ < plain_interval_) return;
  last_key_ = key;
  last_plain_ = now;
  std::fputs(text.c_str(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

void Terminal::ClearStatus() {
  if (live_ && !shown_.empty()) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
  shown_.clear();
}

}  // namespace ddp::controller::local
