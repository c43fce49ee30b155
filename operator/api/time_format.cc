// RFC 3339 formatting and parsing without locale or TZ dependence (timegm/gmtime_r are UTC).
#include "operator/api/time_format.h"

#include <cstdio>
#include <ctime>

namespace ddp::api {

TimePoint TruncateToSeconds(TimePoint t) {
  return TimePoint(std::chrono::floor<std::chrono::seconds>(t));
}

std::string FormatTime(TimePoint t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(TruncateToSeconds(t));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

StatusOr<TimePoint> ParseTime(const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19) {
    return Status::InvalidArgument("bad RFC 3339 time \"" + text + "\"");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
  }
  long offset_seconds = 0;
  std::string zone = text.substr(pos);
  if (zone == "Z" || zone == "z") {
    offset_seconds = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    int hh = 0, mm = 0;
    if (std::sscanf(zone.c_str() + 1, "%2d:%2d", &hh, &mm) != 2) {
      return Status::InvalidArgument("bad RFC 3339 time zone in \"" + text + "\"");
    }
    offset_seconds = (hh * 3600L + mm * 60L) * (zone[0] == '-' ? -1 : 1);
  } else {
    return Status::InvalidArgument("bad RFC 3339 time zone in \"" + text + "\"");
  }
  std::time_t secs = timegm(&tm) - offset_seconds;
  return TimePoint(std::chrono::seconds(secs));
}

}  // namespace ddp::api
