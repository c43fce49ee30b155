// The work queue's rules, driven with explicit times (QueueCore) and with threads (WorkQueue).
#include "operator/kube/workqueue.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(QueueCoreTest, DeduplicatesQueuedKeys) {
  QueueCore q;
  q.Add("ml/a");
  q.Add("ml/b");
  q.Add("ml/a");
  EXPECT_EQ(q.ReadyLen(), 2u);
  EXPECT_EQ(q.Pop(), "ml/a");
  EXPECT_EQ(q.Pop(), "ml/b");
  EXPECT_EQ(q.Pop(), std::nullopt);
}

TEST(QueueCoreTest, KeyBeingProcessedIsNotHandedOutAgainButRequeuedOnDone) {
  QueueCore q;
  q.Add("ml/a");
  ASSERT_EQ(q.Pop(), "ml/a");
  q.Add("ml/a");  // an event while a worker holds the key
  EXPECT_EQ(q.Pop(), std::nullopt) << "a second worker must not get the same key";
  q.Add("ml/a");  // still one pending pass, not two
  q.Done("ml/a");
  EXPECT_EQ(q.Pop(), "ml/a");
  q.Done("ml/a");
  EXPECT_EQ(q.Pop(), std::nullopt);
}

TEST(QueueCoreTest, DoneWithoutNewAddDoesNotRequeue) {
  QueueCore q;
  q.Add("ml/a");
  ASSERT_EQ(q.Pop(), "ml/a");
  q.Done("ml/a");
  EXPECT_EQ(q.ReadyLen(), 0u);
}

TEST(QueueCoreTest, DelayedKeyBecomesReadyAtItsTimeAndEarliestWins) {
  QueueCore q;
  QueueTime t0{};
  q.AddAt("ml/a", t0 + seconds(10));
  q.AddAt("ml/a", t0 + seconds(3));   // earlier: wins
  q.AddAt("ml/a", t0 + seconds(20));  // later: ignored
  EXPECT_EQ(q.NextDelayed(), t0 + seconds(3));
  q.Promote(t0 + seconds(2));
  EXPECT_EQ(q.Pop(), std::nullopt);
  q.Promote(t0 + seconds(3));
  EXPECT_EQ(q.Pop(), "ml/a");
  EXPECT_EQ(q.NextDelayed(), std::nullopt);
}

TEST(QueueCoreTest, ImmediateAddSupersedesDelayedOne) {
  QueueCore q;
  QueueTime t0{};
  q.AddAt("ml/a", t0 + seconds(10));
  q.Add("ml/a");
  EXPECT_EQ(q.DelayedLen(), 0u);
  EXPECT_EQ(q.Pop(), "ml/a");
  q.Done("ml/a");
  q.Promote(t0 + seconds(11));
  EXPECT_EQ(q.Pop(), std::nullopt) << "the delayed pass was already served";
}

TEST(QueueCoreTest, DelayedAddWhileProcessingWaitsForItsTime) {
  QueueCore q;
  QueueTime t0{};
  q.Add("ml/a");
  ASSERT_EQ(q.Pop(), "ml/a");
  q.AddAt("ml/a", t0 + seconds(5));  // requeue_after from the pass being run
  q.Done("ml/a");
  EXPECT_EQ(q.Pop(), std::nullopt);
  q.Promote(t0 + seconds(5));
  EXPECT_EQ(q.Pop(), "ml/a");
}

TEST(KeyBackoffTest, DoublesFrom5msAndCapsAt1000s) {
  KeyBackoff b;
  EXPECT_EQ(b.NextDelay("k"), milliseconds(5));
  EXPECT_EQ(b.NextDelay("k"), milliseconds(10));
  EXPECT_EQ(b.NextDelay("k"), milliseconds(20));
  EXPECT_EQ(b.NextDelay("other"), milliseconds(5)) << "backoff is per key";
  for (int i = 0; i < 100; ++i) b.NextDelay("k");
  EXPECT_EQ(b.NextDelay("k"), seconds(1000));
  // 5 ms * 2^n first reaches 1000 s at n = 18 (5 ms * 262144 = 1310 s > 1000 s; 2^17 -> 655 s).
  KeyBackoff c;
  QueueDuration d{};
  for (int i = 0; i < 18; ++i) d = c.NextDelay("k");
  EXPECT_EQ(d, milliseconds(5) * (1 << 17));
  EXPECT_EQ(c.NextDelay("k"), seconds(1000));
  b.Forget("k");
  EXPECT_EQ(b.Failures("k"), 0);
  EXPECT_EQ(b.NextDelay("k"), milliseconds(5));
}

TEST(WorkQueueTest, AtMostOneWorkerPerKeyUnderConcurrency) {
  WorkQueue q;
  std::atomic<int> in_flight{0}, max_in_flight{0}, passes{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      std::string key;
      while (q.Get(&key)) {
        int n = ++in_flight;
        int m = max_in_flight.load();
        while (n > m && !max_in_flight.compare_exchange_weak(m, n)) {}
        std::this_thread::yield();
        --in_flight;
        ++passes;
        q.Done(key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add("ml/only");
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (q.Len() > 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(max_in_flight.load(), 1);
  EXPECT_GE(passes.load(), 1);
  EXPECT_LE(passes.load(), 2000);
}

TEST(WorkQueueTest, AddAfterWakesABlockedGet) {
  WorkQueue q;
  auto start = std::chrono::steady_clock::now();
  std::thread adder([&] { q.AddAfter("ml/a", milliseconds(30)); });
  std::string key;
  ASSERT_TRUE(q.Get(&key));
  EXPECT_EQ(key, "ml/a");
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(30));
  adder.join();
  q.Done(key);
}

TEST(WorkQueueTest, ShutDownReleasesBlockedGets) {
  WorkQueue q;
  std::thread t([&] {
    std::string key;
    EXPECT_FALSE(q.Get(&key));
  });
  q.ShutDown();
  t.join();
  q.Add("ml/a");
  EXPECT_EQ(q.Len(), 0u) << "adds after shutdown are dropped";
}

}  // namespace
}  // namespace ddp::controller
