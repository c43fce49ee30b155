// RFC 3339 times as the API server writes them.
#include <gtest/gtest.h>

#include "operator/api/time_format.h"

namespace ddp::api {
namespace {

TimePoint Epoch(int64_t s) { return TimePoint(std::chrono::seconds(s)); }

TEST(TimeFormat, FormatsUtcWholeSeconds) {
  EXPECT_EQ(FormatTime(Epoch(0)), "1970-01-01T00:00:00Z");
  // 2026-01-01T00:00:00Z is 56 years of days after the epoch: 20454 days * 86400 s.
  EXPECT_EQ(FormatTime(Epoch(20454LL * 86400)), "2026-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(Epoch(90) + std::chrono::milliseconds(999)), "1970-01-01T00:01:30Z");
}

TEST(TimeFormat, ParsesZonesAndFractions) {
  EXPECT_EQ(*ParseTime("1970-01-01T00:01:30Z"), Epoch(90));
  EXPECT_EQ(*ParseTime("1970-01-01T00:01:30.123456Z"), Epoch(90));
  EXPECT_EQ(*ParseTime("1970-01-01T02:01:30+02:00"), Epoch(90));
  EXPECT_EQ(*ParseTime("1969-12-31T23:31:30-00:30"), Epoch(90));
}

TEST(TimeFormat, RejectsGarbageWithTheText) {
  for (const char* bad : {"", "yesterday", "2026-01-01", "2026-01-01T00:00:00", "2026-01-01T00:00:00+0200"}) {
    auto t = ParseTime(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find(std::string("\"") + bad + "\""), std::string::npos);
  }
}

TEST(TimeFormat, TruncationMakesRoundTripsExact) {
  const TimePoint t = Epoch(1000) + std::chrono::microseconds(123456);
  EXPECT_EQ(TruncateToSeconds(t), Epoch(1000));
  EXPECT_EQ(*ParseTime(FormatTime(t)), TruncateToSeconds(t));
}

}  // namespace
}  // namespace ddp::api
