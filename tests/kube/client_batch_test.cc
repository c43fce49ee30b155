// KubeClient::CreateAll and DeleteAll against the test API server: every call is sent, results
// keep call order and map like single calls, at most 16 requests are in flight, retries follow
// the single-call rules, and a stopped client sends nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "tests/kube/client_test_util.h"

namespace ddp::controller {
namespace {

using json = nlohmann::json;

class ClientBatchTest : public FakeServerTest {
 protected:
  std::vector<CreateCall> Pods(int n, const std::string& prefix = "p") {
    std::vector<CreateCall> calls;
    for (int i = 0; i < n; ++i) {
      calls.push_back({&kPods, "ml", PodObject(prefix + std::to_string(i))});
    }
    return calls;
  }
  size_t PodCount() {
    auto list = client_->List(kPods, "ml", {});
    return list.ok() ? (*list)["items"].size() : 0;
  }
};

TEST_F(ClientBatchTest, CreateAllSendsEveryCallAndKeepsTheirOrder) {
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p5")).ok());
  std::vector<CreateCall> calls = Pods(40);
  calls[7].object["metadata"]["name"] = "Bad_Name";
  calls.push_back({&kServices, "ml", {{"apiVersion", "v1"}, {"kind", "Service"},
                                      {"metadata", {{"name", "svc"}}}, {"spec", json::object()}}});
  server_->ResetCounters();
  std::vector<Status> r = client_->CreateAll(calls);
  ASSERT_EQ(r.size(), 41u);
  for (size_t i = 0; i < r.size(); ++i) {
    if (i == 5) {
      EXPECT_EQ(r[i].code(), StatusCode::kAlreadyExists) << r[i].ToString();
      EXPECT_NE(r[i].message().find("create pods ml/p5"), std::string::npos) << r[i].message();
    } else if (i == 7) {
      EXPECT_EQ(r[i].code(), StatusCode::kInvalidArgument) << r[i].ToString();
    } else {
      EXPECT_TRUE(r[i].ok()) << i << ": " << r[i].ToString();
    }
  }
  EXPECT_EQ(server_->RequestCount("create"), 41);
  EXPECT_EQ(PodCount(), 39u);  // p5 from before, 38 new; Bad_Name was refused
  EXPECT_TRUE(client_->Get(kServices, "ml", "svc").ok());
}

TEST_F(ClientBatchTest, AtMostSixteenRequestsAreInFlight) {
  // The server holds each create until 16 are held together (or every create has arrived), then
  // lets them go: with a window of 16 the peak is exactly 16; a wider window shows a 17th, a
  // narrower one never reaches 16 (and waits out the deadline).
  constexpr int kCalls = 40;
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, arrived = 0, peak = 0, released = 0;  // released: groups let go so far
  server_->SetRequestHook([&](const std::string& verb, const std::string&) {
    if (verb != "create") return;
    std::unique_lock<std::mutex> l(mu);
    const int group = released;
    ++arrived;
    peak = std::max(peak, ++in_flight);
    cv.notify_all();
    if (in_flight >= 16 || arrived == kCalls) {
      // A client that ignores the window would send a 17th now: give it 200 ms to show itself.
      cv.wait_for(l, std::chrono::milliseconds(200), [&] { return in_flight > 16; });
      ++released;
      cv.notify_all();
    }
    cv.wait_for(l, std::chrono::seconds(3), [&] { return released > group; });
    --in_flight;
  });
  std::vector<Status> r = client_->CreateAll(Pods(kCalls));
  for (const Status& s : r) EXPECT_TRUE(s.ok()) << s.ToString();
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(peak, 16);
  EXPECT_EQ(arrived, kCalls);
  EXPECT_EQ(PodCount(), static_cast<size_t>(kCalls));
}

TEST_F(ClientBatchTest, RetriesFollowTheSingleCallRules) {
  // 429: retried (the server did not act on it); 500 on a write: not retried.
  server_->FailNext("create", "pods", 429, 1);
  server_->ResetCounters();
  std::vector<Status> r = client_->CreateAll(Pods(4, "a"));
  for (const Status& s : r) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(server_->RequestCount("create"), 5);

  server_->FailNext("create", "pods", 500, 1);
  server_->ResetCounters();
  r = client_->CreateAll(Pods(4, "b"));
  EXPECT_EQ(std::count_if(r.begin(), r.end(), [](const Status& s) {
              return s.code() == StatusCode::kUnavailable;
            }), 1);
  EXPECT_EQ(std::count_if(r.begin(), r.end(), [](const Status& s) { return s.ok(); }), 3);
  EXPECT_EQ(server_->RequestCount("create"), 4);
  EXPECT_EQ(PodCount(), 7u);
}

TEST_F(ClientBatchTest, DeleteAllMapsEachResult) {
  auto kept = client_->Create(kPods, "ml", PodObject("kept"));
  auto gone = client_->Create(kPods, "ml", PodObject("gone"));
  ASSERT_TRUE(kept.ok() && gone.ok());
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "not-the-uid";
  DeleteOptions right_uid;
  right_uid.precondition_uid = (*gone)["metadata"]["uid"];
  std::vector<Status> r = client_->DeleteAll({{&kPods, "ml", "kept", wrong_uid},
                                              {&kPods, "ml", "missing", {}},
                                              {&kPods, "ml", "gone", right_uid}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].code(), StatusCode::kConflict) << r[0].ToString();
  EXPECT_EQ(r[1].code(), StatusCode::kNotFound) << r[1].ToString();
  EXPECT_NE(r[1].message().find("delete pods ml/missing"), std::string::npos);
  EXPECT_TRUE(r[2].ok()) << r[2].ToString();
  EXPECT_TRUE(client_->Get(kPods, "ml", "kept").ok());
  EXPECT_TRUE(Eventually([&] {
    return client_->Get(kPods, "ml", "gone").status().code() == StatusCode::kNotFound;
  }));
}

TEST_F(ClientBatchTest, ObserverSeesEveryBatchedRequest) {
  std::atomic<int> created{0};
  client_->SetRequestObserver([&](const std::string& verb, int code, double) {
    if (verb == "create" && code == 201) ++created;
  });
  for (const Status& s : client_->CreateAll(Pods(20))) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(created.load(), 20);
}

TEST_F(ClientBatchTest, StoppedClientSendsNothing) {
  client_->Stop();
  server_->ResetCounters();
  std::vector<Status> r = client_->CreateAll(Pods(3));
  ASSERT_EQ(r.size(), 3u);
  for (const Status& s : r) EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(client_->DeleteAll({{&kPods, "ml", "p0", {}}})[0].code(), StatusCode::kUnavailable);
  EXPECT_EQ(server_->RequestCount(""), 0);
}

}  // namespace
}  // namespace ddp::controller
