#include "operator/kube/rate_limiter.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

struct FakeClock {
  TokenBucket::Clock::time_point now{};
  TokenBucket::NowFn fn() {
    return [this] { return now; };
  }
};

TEST(TokenBucket, BurstThenQps) {
  FakeClock clock;
  TokenBucket bucket(10, 3, clock.fn());  // 10/s: one token every 100 ms
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(), nanoseconds(0)) << i;
  // The 4th and 5th wait one and two token periods.
  EXPECT_EQ(bucket.Reserve(), milliseconds(100));
  EXPECT_EQ(bucket.Reserve(), milliseconds(200));
  clock.now += milliseconds(200);  // pays back both reservations exactly
  EXPECT_EQ(bucket.Reserve(), milliseconds(100));
}

TEST(TokenBucket, RefillIsCappedAtBurst) {
  FakeClock clock;
  TokenBucket bucket(5, 2, clock.fn());
  clock.now += std::chrono::seconds(60);  // idle for long: still only `burst` tokens
  EXPECT_EQ(bucket.Reserve(), nanoseconds(0));
  EXPECT_EQ(bucket.Reserve(), nanoseconds(0));
  EXPECT_EQ(bucket.Reserve(), milliseconds(200));
}

TEST(TokenBucket, DisabledWhenQpsIsZero) {
  FakeClock clock;
  TokenBucket bucket(0, 1, clock.fn());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(bucket.Reserve(), nanoseconds(0));
}

TEST(TokenBucket, SustainedRateMatchesQps) {
  FakeClock clock;
  TokenBucket bucket(50, 1, clock.fn());
  // 1 + 50*2 requests fit in 2 seconds: the n-th waits (n-1)/50 s after the first.
  for (int i = 0; i < 101; ++i) {
    EXPECT_EQ(bucket.Reserve(), milliseconds(20 * i)) << i;
  }
}

}  // namespace
}  // namespace ddp::controller
