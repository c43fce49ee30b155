// Where local mode writes: permanent lines (decisions, warnings) and one live status line. On a
// terminal the status line is redrawn in place under the permanent lines; otherwise (a pipe, a
// CI log) it is printed as a plain line when its key fields change and at most every
// `plain_interval`. Thread-compatible.
#ifndef DDP_OPERATOR_LOCAL_TERMINAL_H_
#define DDP_OPERATOR_LOCAL_TERMINAL_H_

#include <chrono>
#include <cstdio>
#include <string>

namespace ddp::controller::local {

class Terminal {
 public:
  // Does not own `out`.
  Terminal(FILE* out, bool live, std::chrono::seconds plain_interval = std::chrono::seconds(10));

  bool live() const { return live_; }
  // Columns of the terminal (80 when unknown or not live).
  int Width() const;
  // A permanent line.
  void Line(const std::string& text);
  // The status line. `key` holds the fields whose change is news (phase, round, pods); in plain
  // mode the line is printed when the key changes or plain_interval has passed.
  void Status(const std::string& text, const std::string& key);
  // Removes the live status line (before the summary).
  void ClearStatus();

 private:
  FILE* out_;
  bool live_;
  std::chrono::seconds plain_interval_;
  std::string shown_;  // the live line on screen now
  std::string last_key_;
  std::chrono::steady_clock::time_point last_plain_{};
};

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_TERMINAL_H_
