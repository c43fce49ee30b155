// The progress scraper against an injected fetch: what it hands the reconcile, when it wakes the
// queue, and its bound on fetches in flight.
#include "operator/kube/progress_scraper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/common/poll.h"

namespace ddp::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::PollUntil;

std::string Page(int step) {
  return "# TYPE ddp_worker_steps_total counter\nddp_worker_steps_total " + std::to_string(step) +
         "\n# TYPE ddp_worker_total_steps gauge\nddp_worker_total_steps 1000\n";
}

// What the fake fetch answers: a 200 with `body`, another status code, or no answer at all.
StatusOr<HttpAnswer> Reply(std::string body, int code = 200) {
  return HttpAnswer{code, std::move(body)};
}
StatusOr<HttpAnswer> Reply(Status no_answer) { return no_answer; }

ScrapeTarget Target(const std::string& uid, int round = 0) {
  return {uid, "127.0.0.1", 9400, round};
}

TEST(ProgressScraper, ReadsEachTrackedJobAndWakesItsReconcileOnAdvance) {
  std::atomic<int> step{0};
  std::mutex mu;
  std::vector<std::string> woken;
  ProgressScraperOptions o;
  o.interval = milliseconds(20);
  o.min_wake_interval = milliseconds(0);
  ProgressScraper s(
      o,
      [&](const std::string& key) {
        std::lock_guard<std::mutex> l(mu);
        woken.push_back(key);
      },
      {},
      [&](const std::string& host, int port, const std::string& path, int timeout_ms) {
        EXPECT_EQ(host, "127.0.0.1");
        EXPECT_EQ(port, 9400);
        EXPECT_EQ(path, "/metrics");
        EXPECT_EQ(timeout_ms, 2000);
        return Reply(Page(step.fetch_add(1) / 2));  // every other page advances
      });
  s.Start();
  s.Track("ml/a", Target("uid-a", 3));
  ASSERT_TRUE(PollUntil([&] { auto g = s.Get("ml/a"); return g && g->snapshot.step >= 3; },
                        seconds(10)));
  auto got = s.Get("ml/a");
  EXPECT_EQ(got->round, 3);
  EXPECT_EQ(got->snapshot.total_steps, 1000);
  EXPECT_TRUE(got->snapshot.steps_per_second);
  std::lock_guard<std::mutex> l(mu);
  // One wake per advance (steps 0, 1, 2, 3, ...), never one per page.
  EXPECT_GE(woken.size(), 4u);
  EXPECT_LE(woken.size(), static_cast<size_t>(got->snapshot.step) + 2);
  for (const auto& k : woken) EXPECT_EQ(k, "ml/a");
}

TEST(ProgressScraper, AdvancesWakeTheReconcileAtMostOncePerWakeInterval) {
  std::atomic<int> step{0};
  std::atomic<int> wakes{0};
  ProgressScraperOptions o;
  o.interval = milliseconds(5);
  o.min_wake_interval = std::chrono::hours(1);
  ProgressScraper s(o, [&](const std::string&) { wakes++; }, {},
                    [&](const std::string&, int, const std::string&, int) {
                      return Reply(Page(step.fetch_add(1)));  // always advances
                    });
  s.Start();
  s.Track("ml/a", Target("uid-a"));
  ASSERT_TRUE(PollUntil([&] { auto g = s.Get("ml/a"); return g && g->snapshot.step >= 20; },
                        seconds(10)));
  EXPECT_EQ(wakes.load(), 1);  // the first step seen; the next 20 advances are within the hour
}

// Pages with every rank's busy series are kept for the straggler detector, at most
// kMaxBusyReads; once busy_reads_wake wait, an advance wakes the reconcile despite the wake
// interval. A page without the series (an older worker) keeps nothing.
TEST(ProgressScraper, KeepsBusyReadsForTheDetectorAndWakesWhenEnoughWait) {
  std::atomic<int> step{0};
  std::atomic<int> wakes{0};
  std::atomic<bool> with_busy{false};
  ProgressScraperOptions o;
  o.interval = milliseconds(5);
  o.min_wake_interval = std::chrono::hours(1);
  o.busy_reads_wake = 3;
  ProgressScraper s(o, [&](const std::string&) { wakes++; }, {},
                    [&](const std::string&, int, const std::string&, int) {
                      const int n = step.fetch_add(1);
                      std::string page = Page(n);
                      if (with_busy) {
                        page += "ddp_worker_rank_busy_seconds_total{peer_rank=\"0\"} " +
                                std::to_string(n) + "\nddp_worker_rank_busy_steps_total " +
                                std::to_string(n) + "\n";
                      }
                      return Reply(page);
                    });
  s.Start();
  s.Track("ml/a", Target("uid-a"));
  ASSERT_TRUE(PollUntil([&] { auto g = s.Get("ml/a"); return g && g->snapshot.step >= 5; },
                        seconds(10)));
  EXPECT_TRUE(s.TakeBusyReads("ml/a").empty());
  EXPECT_EQ(wakes.load(), 1);  // the first step only
  with_busy = true;
  ASSERT_TRUE(PollUntil([&] { return wakes.load() >= 2; }, seconds(10)));
  std::vector<BusyRead> reads = s.TakeBusyReads("ml/a");
  ASSERT_GE(reads.size(), 3u);
  ASSERT_LE(reads.size(), ProgressScraper::kMaxBusyReads);
  for (size_t i = 1; i < reads.size(); ++i) {  // oldest first
    EXPECT_LT(reads[i - 1].at(0).count, reads[i].at(0).count);
  }
  // Left alone, the kept reads stop at the bound.
  ASSERT_TRUE(PollUntil([&] { return step.load() > 100; }, seconds(10)));
  EXPECT_LE(s.TakeBusyReads("ml/a").size(), ProgressScraper::kMaxBusyReads);
  EXPECT_TRUE(s.TakeBusyReads("ml/unknown").empty());
}

TEST(ProgressScraper, ANewPodStartsFromNoProgressAndForgetDropsTheJob) {
  std::atomic<bool> fail{false};
  ProgressScraperOptions o;
  o.interval = milliseconds(10);
  ProgressScraper s(o, {}, {}, [&](const std::string&, int, const std::string&, int) {
    if (fail) return Reply(Status::Unavailable("connection refused"));
    return Reply(Page(7));
  });
  s.Start();
  s.Track("ml/a", Target("uid-1"));
  ASSERT_TRUE(PollUntil([&] { return s.Get("ml/a").has_value(); }, seconds(10)));
  const auto first = s.Get("ml/a")->snapshot.last_advance;
  fail = true;  // a failing endpoint keeps the last snapshot: its step stops advancing
  s.Track("ml/a", Target("uid-1"));  // the same pod: nothing resets
  ASSERT_TRUE(s.Get("ml/a"));
  EXPECT_EQ(s.Get("ml/a")->snapshot.last_advance, first);
  s.Track("ml/a", Target("uid-2", 1));  // the next round's pod
  EXPECT_FALSE(s.Get("ml/a"));
  fail = false;
  ASSERT_TRUE(PollUntil([&] { return s.Get("ml/a").has_value(); }, seconds(10)));
  EXPECT_EQ(s.Get("ml/a")->round, 1);
  s.Forget("ml/a");
  EXPECT_FALSE(s.Get("ml/a"));
  EXPECT_EQ(s.Tracked(), 0u);
}

TEST(ProgressScraper, FetchesInFlightNeverExceedTheBound) {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, peak = 0, done = 0;
  bool release = false;
  ProgressScraperOptions o;
  o.interval = seconds(3600);  // one read per job in this test
  o.max_in_flight = 3;
  ProgressScraper s(o, {}, {}, [&](const std::string&, int, const std::string&, int) {
    std::unique_lock<std::mutex> l(mu);
    peak = std::max(peak, ++in_flight);
    cv.notify_all();
    cv.wait(l, [&] { return release; });
    --in_flight;
    ++done;
    return Reply(Page(1));
  });
  s.Start();
  for (int i = 0; i < 10; ++i) s.Track("ml/j" + std::to_string(i), Target("u" + std::to_string(i)));
  {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, seconds(10), [&] { return in_flight == 3; }));
    release = true;
    cv.notify_all();
  }
  ASSERT_TRUE(PollUntil([&] { std::lock_guard<std::mutex> l(mu); return done == 10; }, seconds(10)));
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(peak, 3);
}

// A refused page (past a cap, or a value out of range) keeps the last progress, is reported
// once per streak, and a good page ends the streak.
TEST(ProgressScraper, ARefusedPageIsReportedOncePerStreak) {
  std::atomic<int> mode{0};  // 0 good, 1 too many series, 2 an overflowing count
  std::atomic<int> refused{0};
  ProgressScraperOptions o;
  o.interval = milliseconds(5);
  o.max_page_series = 10;
  ProgressScraper s(
      o, {}, [&](ScrapeResult r) { refused += r == ScrapeResult::kRefused ? 1 : 0; },
      [&](const std::string&, int, const std::string&, int) {
        std::string page = Page(4);
        if (mode == 1) {
          for (int i = 0; i < 20; ++i) page += "x" + std::to_string(i) + " 1\n";
        }
        if (mode == 2) page += "ddp_group_generation 1\nddp_group_recoveries 4294967291\n";
        return Reply(page);
      });
  s.Start();
  s.Track("ml/a", Target("uid-a"));
  ASSERT_TRUE(PollUntil([&] { return s.Get("ml/a").has_value(); }, seconds(10)));
  EXPECT_FALSE(s.RefusalToReport("ml/a"));
  mode = 1;
  ASSERT_TRUE(PollUntil([&] { return s.Refusal("ml/a").has_value(); }, seconds(10)));
  EXPECT_NE(s.Refusal("ml/a")->find("more than 10 series"), std::string::npos);
  auto first = s.RefusalToReport("ml/a");
  ASSERT_TRUE(first);
  ASSERT_TRUE(PollUntil([&] { return refused.load() >= 3; }, seconds(10)));
  EXPECT_FALSE(s.RefusalToReport("ml/a")) << "once per streak";
  EXPECT_EQ(s.Get("ml/a")->snapshot.step, 4);  // the last kept page's
  mode = 0;
  ASSERT_TRUE(PollUntil([&] { return !s.Refusal("ml/a").has_value(); }, seconds(10)));
  mode = 2;  // a new streak, another reason
  ASSERT_TRUE(PollUntil([&] { return s.Refusal("ml/a").has_value(); }, seconds(10)));
  auto second = s.RefusalToReport("ml/a");
  ASSERT_TRUE(second);
  EXPECT_NE(second->find("ddp_group_recoveries"), std::string::npos) << *second;
  EXPECT_FALSE(s.GetGroup("ml/a")) << "the overflowing report never reaches the planner";
}

// Eight jobs whose pods stall every read until nearly the timeout, beside one good job: the
// stalling jobs become suspects, back off and hold at most half the threads, so the good job
// keeps its cadence.
TEST(ProgressScraper, StallingPodsDelayOnlyTheirOwnJobs) {
  std::atomic<int> good_reads{0}, bad_reads{0};
  std::atomic<int> step{0};
  ProgressScraperOptions o;
  o.interval = milliseconds(20);
  o.timeout = milliseconds(400);
  o.max_in_flight = 4;
  ProgressScraper s(o, {}, {}, [&](const std::string& host, int, const std::string&, int) {
    if (host != "good") {
      // A drip that ends just before the timeout: slow, never an error.
      std::this_thread::sleep_for(milliseconds(300));  // the hostile pod's own delay
      bad_reads++;
      return Reply(Page(1));
    }
    good_reads++;
    return Reply(Page(step.fetch_add(1)));
  });
  s.Start();
  for (int i = 0; i < 8; ++i) {
    s.Track("ml/bad" + std::to_string(i), {"u" + std::to_string(i), "bad", 9400, 0});
  }
  s.Track("ml/good", {"ug", "good", 9400, 0});
  // After the first reads showed who stalls: count the good job's reads over one second.
  ASSERT_TRUE(PollUntil([&] { return bad_reads.load() >= 8; }, seconds(10)));
  const int before = good_reads.load();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(PollUntil([&] { return good_reads.load() >= before + 20; }, seconds(10)));
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // 20 reads at a 20 ms interval: 0.4 s when undisturbed. Queued behind the stalling reads
  // (8 x 300 ms on 4 threads per round, without backoff and the suspects' quota) it took 12 s.
  EXPECT_LT(secs, 5.0);
}

// A rendezvous pod's page that stops answering (plan/silent_rendezvous.h): the time of its last
// answer stays, failing is set by the first read without one and wakes the job once; an answer
// (kept or refused) clears it.
TEST(ProgressScraper, APageThatStopsAnsweringIsFailingSinceItsLastAnswerAndWakesTheJobOnce) {
  std::atomic<bool> up{true};
  std::atomic<int> wakes{0}, fetches{0};
  ProgressScraperOptions o;
  o.interval = milliseconds(20);
  o.group_interval = milliseconds(20);
  o.min_wake_interval = seconds(3600);  // advances wake nobody here
  ProgressScraper s(
      o, [&](const std::string&) { wakes.fetch_add(1); }, {},
      [&](const std::string&, int, const std::string&, int) {
        fetches.fetch_add(1);
        if (!up.load()) return Reply(Status::Unavailable("timed out"));
        return Reply(Page(1));
      });
  EXPECT_FALSE(s.Reads("ml/a").has_value());
  s.Start();
  ScrapeTarget t = Target("uid-r");
  t.group = true;
  s.Track("ml/a", t);
  ASSERT_TRUE(PollUntil([&] { return s.Reads("ml/a").has_value(); }, seconds(10)));
  EXPECT_EQ(s.Reads("ml/a")->pod_uid, "uid-r");
  EXPECT_FALSE(s.Reads("ml/a")->failing);
  const int before = wakes.load();
  up = false;
  ASSERT_TRUE(PollUntil([&] { return s.Reads("ml/a")->failing; }, seconds(10)));
  const auto last_ok = s.Reads("ml/a")->last_ok;
  ASSERT_TRUE(PollUntil([&] { return wakes.load() >= before + 1; }, seconds(10)));
  // More failed reads: the same last answer, no second wake for the same silence.
  const int seen = fetches.load();
  ASSERT_TRUE(PollUntil([&] { return fetches.load() >= seen + 5; }, seconds(10)));
  EXPECT_EQ(s.Reads("ml/a")->last_ok, last_ok);
  EXPECT_EQ(wakes.load(), before + 1);
  up = true;
  ASSERT_TRUE(PollUntil([&] { return !s.Reads("ml/a")->failing; }, seconds(10)));
  EXPECT_GT(s.Reads("ml/a")->last_ok, last_ok);
  s.Forget("ml/a");
  EXPECT_FALSE(s.Reads("ml/a").has_value());
}

// The pods on a silent rendezvous pod's node (SetProbes): probed with /healthz after every failed
// read of the page and never while it answers; a pod that answers once is answered for this
// silence; more than kMaxProbes pods: the first ones; an answer of the page clears the probes.
TEST(ProgressScraper, AFailingGroupPageProbesThePodsOnItsNode) {
  std::atomic<bool> up{true};
  std::mutex mu;
  std::vector<std::string> probed;  // "host path"
  std::atomic<int> pages{0};        // reads of the group page
  ProgressScraperOptions o;
  o.interval = milliseconds(20);
  o.group_interval = milliseconds(20);
  o.min_wake_interval = seconds(3600);
  ProgressScraper s(
      o, [](const std::string&) {}, {},
      [&](const std::string& host, int, const std::string& path, int) {
        if (path == "/healthz") {
          std::lock_guard<std::mutex> l(mu);
          probed.push_back(host + " " + path);
          if (host == "10.0.0.2") return Reply("ok\n");  // alive
          return Reply(Status::Unavailable("timed out"));   // frozen
        }
        pages.fetch_add(1);
        if (!up.load()) return Reply(Status::Unavailable("timed out"));
        return Reply(Page(1));
      });
  s.Start();
  ScrapeTarget t = Target("uid-r");
  t.group = true;
  s.Track("ml/a", t);
  std::vector<ProbeTarget> mates = {{"uid-1", "10.0.0.1", 9400}, {"uid-2", "10.0.0.2", 9400}};
  for (int k = 3; k <= 6; ++k) mates.push_back({"uid-" + std::to_string(k), "10.0.0.9", 9400});
  s.SetProbes("ml/a", mates);
  ASSERT_TRUE(PollUntil([&] { return s.Reads("ml/a").has_value(); }, seconds(10)));
  // Answering: no probe at all, over several reads of the page.
  const int read_before = pages.load();
  ASSERT_TRUE(PollUntil([&] { return pages.load() >= read_before + 3; }, seconds(10)));
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_TRUE(probed.empty());
  }
  EXPECT_TRUE(s.Reads("ml/a")->probes.empty());
  up = false;
  ASSERT_TRUE(PollUntil(
      [&] {
        auto r = s.Reads("ml/a");
        return r && r->probes.count("uid-1") && r->probes.at("uid-1").sent >= 2;
      },
      seconds(10)));
  PageReads r = *s.Reads("ml/a");
  EXPECT_TRUE(r.failing);
  EXPECT_FALSE(r.probes.at("uid-1").answered);
  ASSERT_TRUE(r.probes.count("uid-2"));
  EXPECT_TRUE(r.probes.at("uid-2").answered);
  EXPECT_EQ(r.probes.size(), ProgressScraper::kMaxProbes);  // uid-1 .. uid-4
  EXPECT_FALSE(r.probes.count("uid-5"));
  // A pod no longer listed is no longer probed, and its reads go.
  s.SetProbes("ml/a", {mates[0]});
  EXPECT_EQ(s.Reads("ml/a")->probes.size(), 1u);
  up = true;
  ASSERT_TRUE(PollUntil([&] { return !s.Reads("ml/a")->failing; }, seconds(10)));
  EXPECT_TRUE(s.Reads("ml/a")->probes.empty());
}

// Any HTTP answer is a sign of life (progress_scraper.h): a busy page's 503 or a 431 keeps the
// pod answering though it gives no page, and so does a probe's; a group page that times out
// while its pod's own /healthz answers (the page waits on another pod) is not silent either.
TEST(ProgressScraper, AnyHttpAnswerIsASignOfLifeWhateverItsCode) {
  std::atomic<int> mode{0};  // 0: pages; 1: the page 503, probes 431; 2: the page times out
  std::atomic<int> pages{0};
  ProgressScraperOptions o;
  o.interval = milliseconds(20);
  o.group_interval = milliseconds(20);
  o.min_wake_interval = seconds(3600);
  ProgressScraper s(
      o, [](const std::string&) {}, {},
      [&](const std::string& host, int, const std::string& path, int) {
        if (path == "/healthz") {
          if (host == "127.0.0.1") return Reply("ok\n");  // the group pod's own server
          return Reply("request head too large\n", 431);
        }
        pages.fetch_add(1);
        if (mode == 1) return Reply("busy\n", 503);
        if (mode == 2) return Reply(Status::Unavailable("read timed out"));
        return Reply(Page(5));
      });
  s.Start();
  ScrapeTarget t = Target("uid-r");
  t.group = true;
  s.Track("ml/a", t);
  s.SetProbes("ml/a", {{"uid-1", "10.0.0.1", 9400}});
  ASSERT_TRUE(PollUntil([&] { return s.Get("ml/a").has_value(); }, seconds(10)));
  for (int m : {1, 2}) {
    SCOPED_TRACE("mode " + std::to_string(m));
    mode = m;
    const auto before = s.Reads("ml/a")->last_ok;
    const int read = pages.load();
    ASSERT_TRUE(PollUntil([&] { return pages.load() >= read + 4; }, seconds(10)));
    ASSERT_TRUE(PollUntil([&] { return s.Reads("ml/a")->last_ok > before; }, seconds(10)));
    const PageReads r = *s.Reads("ml/a");
    EXPECT_FALSE(r.failing);
    EXPECT_TRUE(r.probes.empty());  // nobody is probed: the pod answers
    EXPECT_EQ(s.Get("ml/a")->snapshot.step, 5);  // no page taken from the 503 or the timeout
  }
  // The page and its pod silent: the neighbour's 431 is an answer.
  ProgressScraper silent(
      o, [](const std::string&) {}, {},
      [&](const std::string& host, int, const std::string& path, int) {
        if (path == "/healthz" && host != "127.0.0.1") return Reply("too large\n", 431);
        if (mode == 3 || path == "/healthz") return Reply(Status::Unavailable("timed out"));
        return Reply(Page(5));
      });
  mode = 0;
  silent.Start();
  silent.Track("ml/b", t);
  silent.SetProbes("ml/b", {{"uid-1", "10.0.0.1", 9400}});
  ASSERT_TRUE(PollUntil([&] { return silent.Reads("ml/b").has_value(); }, seconds(10)));
  mode = 3;
  ASSERT_TRUE(PollUntil(
      [&] {
        auto r = silent.Reads("ml/b");
        return r && r->failing && r->probes.count("uid-1") && r->probes.at("uid-1").sent >= 1;
      },
      seconds(10)));
  EXPECT_TRUE(silent.Reads("ml/b")->probes.at("uid-1").answered);
}

}  // namespace
}  // namespace ddp::controller
