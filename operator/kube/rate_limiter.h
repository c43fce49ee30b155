// Client-side token bucket (client-go's --qps/--burst): at most `burst` requests at once, refilled
// at `qps` per second. The clock is injected so the arithmetic is testable without sleeping.
#ifndef DDP_OPERATOR_KUBE_RATE_LIMITER_H_
#define DDP_OPERATOR_KUBE_RATE_LIMITER_H_

#include <chrono>
#include <functional>
#include <mutex>

namespace ddp::controller {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  using NowFn = std::function<Clock::time_point()>;

  // qps <= 0 disables limiting (Reserve always returns 0). burst < 1 is treated as 1.
  TokenBucket(double qps, int burst, NowFn now = &Clock::now);

  // Takes one token, possibly from the future: returns how long the caller must wait before
  // acting (0 when a token was available). Reservations queue fairly in call order.
  // Thread-safe.
  std::chrono::nanoseconds Reserve();
  // Reserve() then sleep for the returned duration.
  void Wait();

 private:
  const double qps_;
  const double burst_;
  const NowFn now_;
  std::mutex mu_;
  double tokens_;            // may go negative: outstanding reservations
  Clock::time_point last_;   // when tokens_ was last brought up to date
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_RATE_LIMITER_H_
