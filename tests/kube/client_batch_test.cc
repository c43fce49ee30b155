// KubeClient::CreateAll and DeleteAll against the test API server: every call is sent, results
// keep call order and map like single calls, at most 16 requests are in flight, retries follow
// the single-call rules, and a stopped client sends nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

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
  std::atomic<int> in_flight{0}, peak{0};
  server_->SetRequestHook([&](const std::string& verb, const std::string&) {
    if (verb != "create") return;
    int now = ++in_flight;
    int seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    --in_flight;
  });
  auto start = std::chrono::steady_clock::now();
  std::vector<Status> r = client_->CreateAll(Pods(40));
  auto took = std::chrono::steady_clock::now() - start;
  for (const Status& s : r) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_LE(peak.load(), 16);
  EXPECT_GT(peak.load(), 1) << "the creates were sent one at a time";
  // 40 calls through a window of 16: at least three 100 ms waits one after another.
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_EQ(PodCount(), 40u);
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
