// One-line, thread-safe logging to stderr: `DDP_LOG(INFO) << "ml/mingpt: round 2 -> 3";`
// Lines look like `I1122 10:04:05.123 controller.cc:88] ml/mingpt: ...`. No files, no rotation:
// in a pod the kubelet collects stderr.
#ifndef DDP_COMMON_LOGGING_H_
#define DDP_COMMON_LOGGING_H_

#include <sstream>
#include <string>

namespace ddp {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Thread-safe. Messages below the level are dropped before they are formatted.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug|info|warning|warn|error" (any case). Returns false on anything else.
bool ParseLogLevel(const std::string& text, LogLevel* level);

namespace internal {
// Collects one message and writes it, whole, under a lock when destroyed.
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
// Lets `cond ? (void)0 : Voidify() & stream` type-check.
struct Voidify {
  void operator&(std::ostream&) {}
};
}  // namespace internal
}  // namespace ddp

#define DDP_LOG_LEVEL_DEBUG ::ddp::LogLevel::kDebug
#define DDP_LOG_LEVEL_INFO ::ddp::LogLevel::kInfo
#define DDP_LOG_LEVEL_WARNING ::ddp::LogLevel::kWarning
#define DDP_LOG_LEVEL_ERROR ::ddp::LogLevel::kError

#define DDP_LOG(severity)                                                  \
  (DDP_LOG_LEVEL_##severity < ::ddp::GetLogLevel())                        \
      ? (void)0                                                            \
      : ::ddp::internal::Voidify() &                                       \
            ::ddp::internal::LogMessage(DDP_LOG_LEVEL_##severity, __FILE__, \
                                        __LINE__).stream()

#endif  // DDP_COMMON_LOGGING_H_
