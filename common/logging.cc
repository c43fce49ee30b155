#include "common/logging.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace ddp {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_write_mu;

const char* Basename(const char* path) {
  const char* slash = path;
  for (const char* p = path; *p; ++p) if (*p == '/') slash = p + 1;
  return slash;
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

bool ParseLogLevel(const std::string& text, LogLevel* level) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "debug") *level = LogLevel::kDebug;
  else if (t == "info") *level = LogLevel::kInfo;
  else if (t == "warning" || t == "warn") *level = LogLevel::kWarning;
  else if (t == "error") *level = LogLevel::kError;
  else return false;
  return true;
}

namespace internal {

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t secs = system_clock::to_time_t(now);
  int millis = static_cast<int>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char head[64];
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  std::snprintf(head, sizeof(head), "%c%02d%02d %02d:%02d:%02d.%03d ",
                kLetters[static_cast<int>(level)], tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, millis);
  stream_ << head << Basename(file) << ':' << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  const std::string text = stream_.str();
  std::lock_guard<std::mutex> lock(g_write_mu);
  std::fwrite(text.data(), 1, text.size(), stderr);
  if (level_ >= LogLevel::kWarning) std::fflush(stderr);
}

}  // namespace internal
}  // namespace ddp
