// The rendezvous pod's copy of rank 0's page: served at once from the last fetch, whatever rank
// 0's pod does, and dropped once rank 0 stopped answering for a while (no old page passed off as
// a live one).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/http_server.h"
#include "worker/launch/rank0_page.h"

namespace ddp::worker {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

bool PollFor(milliseconds within, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + within;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

TEST(Rank0PageTest, AFrozenRank0NeverDelaysThePageAndItsOldCopyExpires) {
  std::atomic<bool> frozen{false};
  std::atomic<int> answered{0};
  HttpServer rank0;
  rank0.Handle("/metrics", [&] {
    // A frozen pod: the request is accepted and never answered in time.
    while (frozen.load()) std::this_thread::sleep_for(milliseconds(10));
    ++answered;
    return HttpResponse{200, "text/plain", "ddp_worker_steps_total 7\n"};
  }, HttpServer::Dispatch::kMayBlock);
  ASSERT_TRUE(rank0.Start("127.0.0.1:0").ok());
  const std::string where = "127.0.0.1:" + std::to_string(rank0.port());
  MemberPageCache cache([&] { return where; }, milliseconds(50), milliseconds(200), milliseconds(600));
  ASSERT_TRUE(PollFor(milliseconds(5000), [&] { return !cache.page().empty(); }));
  EXPECT_EQ(cache.page(), "ddp_worker_steps_total 7\n");
  frozen = true;
  const int before = answered.load();
  // Every read is immediate while the fetches time out behind it.
  const auto frozen_at = Clock::now();
  bool expired = false;
  while (Clock::now() - frozen_at < milliseconds(3000)) {
    const auto t0 = Clock::now();
    const std::string page = cache.page();
    EXPECT_LT(Clock::now() - t0, milliseconds(50));
    if (page.empty()) {
      expired = true;
      break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(expired) << "an old copy was served long after rank 0 stopped answering";
  EXPECT_GE(Clock::now() - frozen_at, milliseconds(300)) << "the last copy was dropped at once";
  EXPECT_LE(answered.load(), before + 1);
  frozen = false;
  EXPECT_TRUE(PollFor(milliseconds(5000), [&] { return !cache.page().empty(); }));
}

TEST(Rank0PageTest, NoRank0MeansNoPage) {
  std::atomic<int> asked{0};
  MemberPageCache cache([&] {
    asked++;
    return std::string();
  }, milliseconds(20));
  // A few rounds of the fetch loop, each finding no rank 0.
  ASSERT_TRUE(PollFor(milliseconds(5000), [&] { return asked.load() >= 3; }));
  EXPECT_EQ(cache.page(), "");
}

}  // namespace
}  // namespace ddp::worker
