// Reaper: destructions run off the caller's thread, at most max_pending at a time.
#include "worker/comm/reaper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ddp::worker {
namespace {

TEST(ReaperTest, DestroysOffTheCallersThreadAndRefusesPastItsBound) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> destroyed{0};
  std::atomic<bool> on_caller_thread{false};
  const auto caller = std::this_thread::get_id();
  auto blocking = [&] {
    if (std::this_thread::get_id() == caller) on_caller_thread = true;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });  // a destructor stuck until Gloo's timeout
    ++destroyed;
  };
  {
    Reaper reaper(2);
    EXPECT_TRUE(reaper.Adopt(blocking));
    EXPECT_TRUE(reaper.Adopt(blocking));
    bool ran_refused = false;
    EXPECT_FALSE(reaper.Adopt([&] { ran_refused = true; }));  // the caller keeps the object
    EXPECT_FALSE(ran_refused);
    EXPECT_EQ(reaper.pending(), 2u);
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (reaper.pending() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(reaper.pending(), 0u);
    EXPECT_TRUE(reaper.Adopt([&] { ++destroyed; }));  // room again
  }  // the destructor waits for the last one
  EXPECT_EQ(destroyed.load(), 3);
  EXPECT_FALSE(on_caller_thread.load());
}

}  // namespace
}  // namespace ddp::worker
