// The REST client against the test API server: every verb, the error mapping, retries,
// pagination, selectors and the API conventions the server follows.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "tests/kube/client_test_util.h"
#include "tests/kube/fake_http.h"

namespace ddp::controller {
namespace {

using json = nlohmann::json;

class ClientTest : public FakeServerTest {};

TEST_F(ClientTest, CreateGetUpdateDelete) {
  StatusOr<json> created = client_->Create(kPods, "ml", PodObject("p0", {{"app", "x"}}));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)["metadata"]["namespace"], "ml");
  EXPECT_FALSE((*created)["metadata"].value("uid", "").empty());
  std::string rv = (*created)["metadata"]["resourceVersion"];

  StatusOr<json> got = client_->Get(kPods, "ml", "p0");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, *created);

  json obj = *got;
  obj["metadata"]["labels"]["app"] = "y";
  StatusOr<json> updated = client_->Update(kPods, "ml", "p0", obj);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ((*updated)["metadata"]["labels"]["app"], "y");
  EXPECT_NE((*updated)["metadata"]["resourceVersion"], rv);

  ASSERT_TRUE(client_->Delete(kPods, "ml", "p0", {}).ok());
  EXPECT_EQ(client_->Get(kPods, "ml", "p0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->Delete(kPods, "ml", "p0", {}).code(), StatusCode::kNotFound);
}

TEST_F(ClientTest, ConflictsAndAlreadyExistsAreDistinguished) {
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  StatusOr<json> dup = client_->Create(kPods, "ml", PodObject("p"));
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists) << dup.status().ToString();
  EXPECT_NE(dup.status().message().find("create pods ml/p"), std::string::npos);

  json stale = *client_->Get(kPods, "ml", "p");
  ASSERT_TRUE(client_->MergePatch(kPods, "ml", "p", {{"metadata", {{"labels", {{"a", "1"}}}}}}).ok());
  StatusOr<json> st = client_->Update(kPods, "ml", "p", stale);  // carries the old RV
  EXPECT_EQ(st.status().code(), StatusCode::kConflict) << st.status().ToString();
}

TEST_F(ClientTest, InvalidNameIs422InvalidArgument) {
  StatusOr<json> r = client_->Create(kPods, "ml", PodObject("Bad_Name"));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("metadata.name"), std::string::npos);
}

TEST_F(ClientTest, ForbiddenNamesTheMissingPermission) {
  server_->FailNext("list", "pods", 403);
  StatusOr<json> r = client_->List(kPods, "ml", {});
  ASSERT_EQ(r.status().code(), StatusCode::kForbidden);
  EXPECT_NE(r.status().message().find("cannot list resource \"pods\""), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("namespace \"ml\""), std::string::npos);
}

TEST_F(ClientTest, UnavailableIsRetriedForReadsHonouringRetryAfter) {
  server_->FailNext("get", "pods", 503, 2);
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  int64_t gets_before = server_->RequestCount("get");
  EXPECT_TRUE(client_->Get(kPods, "ml", "p").ok());
  EXPECT_EQ(server_->RequestCount("get") - gets_before, 3);  // two failures, then success

  // 429 with Retry-After: 1 is retried (for any verb) after about a second.
  server_->FailNext("create", "pods", 429, 1, /*retry_after_s=*/1);
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(client_->Create(kPods, "ml", PodObject("q")).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(950));
}

TEST_F(ClientTest, ServerErrorsOnWritesAreNotRetried) {
  server_->FailNext("create", "pods", 500, 1);
  StatusOr<json> r = client_->Create(kPods, "ml", PodObject("p"));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(server_->RequestCount("create"), 1);
  // Persistent 429s: the retries run out and the delay is reported.
  server_->FailNext("create", "pods", 429, 10, 1);
  ClientConfig cfg;
  cfg.server = server_->url();
  cfg.max_retries = 0;
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok());
  Status s = (*c)->Create(kPods, "ml", PodObject("p")).status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("retry after 1s"), std::string::npos) << s.message();
}

TEST_F(ClientTest, GoneAndOtherCodes) {
  server_->FailNext("get", "pods", 410);
  EXPECT_EQ(client_->Get(kPods, "ml", "x").status().code(), StatusCode::kGone);
  server_->FailNext("patch", "", 409);
  EXPECT_EQ(client_->MergePatch(kPods, "ml", "x", json::object()).status().code(),
            StatusCode::kConflict);
}

TEST_F(ClientTest, ConnectionRefusedIsUnavailable) {
  int port = server_->port();
  server_->Stop();
  ClientConfig cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(port);
  cfg.max_retries = 1;
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok());
  Status s = (*c)->Get(kPods, "ml", "x").status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("get pods ml/x"), std::string::npos);
}

TEST_F(ClientTest, SlowServerHitsTheRequestTimeout) {
  ClientConfig cfg;
  cfg.server = server_->url();
  cfg.qps = 0;
  cfg.request_timeout = std::chrono::milliseconds(300);
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok());
  server_->SetLatency(std::chrono::seconds(2));
  auto start = std::chrono::steady_clock::now();
  Status s = (*c)->Create(kPods, "ml", PodObject("slow")).status();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("create pods ml/slow"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  server_->SetLatency(std::chrono::milliseconds(0));
}

// Pod and Service writes have their own token bucket: with the other one drained (a read here,
// status writes and events in the operator), a pod create does not wait for a token. With one
// shared bucket at 0.2 qps it would wait 5 s.
TEST_F(ClientTest, PodWritesDoNotQueueBehindOtherRequests) {
  ClientConfig cfg;
  cfg.server = server_->url();
  cfg.qps = 0.2;
  cfg.burst = 1;
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->Get(kPods, "ml", "absent").status().code(), StatusCode::kNotFound);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*c)->Create(kPods, "ml", PodObject("urgent")).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

TEST_F(ClientTest, ListWithSelectorsAndPagination) {
  for (int i = 0; i < 7; ++i) {
    json labels = {{"job", i < 5 ? "a" : "b"}, {"round", std::to_string(i % 2)}};
    ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p" + std::to_string(i), labels)).ok());
  }
  ASSERT_TRUE(client_->Create(kPods, "other", PodObject("z", {{"job", "a"}})).ok());
  auto names = [](const json& list) {
    std::vector<std::string> out;
    for (const json& it : list["items"]) out.push_back(it["metadata"]["name"]);
    return out;
  };
  ListOptions o;
  o.label_selector = "job=a,round in (1)";
  EXPECT_EQ(names(*client_->List(kPods, "ml", o)), (std::vector<std::string>{"p1", "p3"}));
  o.label_selector = "job!=a";
  EXPECT_EQ(names(*client_->List(kPods, "ml", o)), (std::vector<std::string>{"p5", "p6"}));
  o.label_selector = "job=a";
  EXPECT_EQ(client_->List(kPods, "", o)->at("items").size(), 6u);  // all namespaces

  o.label_selector = "";
  o.limit = 3;
  StatusOr<json> page = client_->List(kPods, "ml", o);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ((*page)["items"].size(), 3u);
  EXPECT_FALSE((*page)["metadata"].value("continue", "").empty());
  StatusOr<json> all = ListAll(*client_, kPods, "ml", o);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(names(*all), (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4", "p5", "p6"}));
  EXPECT_EQ(server_->RequestCount("list"), 4 + 3);  // 3 selector lists + 1 page, then 3 pages

  // A continue token older than the server's (lost) history has expired.
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("later")).ok());
  server_->Restart();
  o.continue_token = (*page)["metadata"]["continue"];
  EXPECT_EQ(client_->List(kPods, "ml", o).status().code(), StatusCode::kGone);
}

TEST_F(ClientTest, StatusSubresourceIsSeparateAndGenerationTracksSpec) {
  json job = {{"apiVersion", "ddp.dev/v1alpha1"}, {"kind", "DDPJob"},
              {"metadata", {{"name", "j"}}}, {"spec", {{"replicas", 2}}},
              {"status", {{"phase", "Running"}}}};
  StatusOr<json> c = client_->Create(kDDPJobs, "ml", job);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->contains("status"));  // status is not settable through the main resource
  EXPECT_EQ((*c)["metadata"]["generation"], 1);

  StatusOr<json> s = client_->MergePatchStatus(kDDPJobs, "ml", "j", {{"status", {{"phase", "Pending"}}}});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)["status"]["phase"], "Pending");
  EXPECT_EQ((*s)["metadata"]["generation"], 1);  // status writes do not bump generation

  // A main-resource patch that touches spec and status: spec applies, status is ignored.
  StatusOr<json> p = client_->MergePatch(kDDPJobs, "ml", "j",
                                         {{"spec", {{"replicas", 3}}}, {"status", {{"phase", "X"}}}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)["spec"]["replicas"], 3);
  EXPECT_EQ((*p)["status"]["phase"], "Pending");
  EXPECT_EQ((*p)["metadata"]["generation"], 2);

  // Labels are metadata: no generation bump.
  p = client_->MergePatch(kDDPJobs, "ml", "j", {{"metadata", {{"labels", {{"a", "b"}}}}}});
  EXPECT_EQ((*p)["metadata"]["generation"], 2);

  // UpdateStatus applies only status, with optimistic concurrency.
  json next = *p;
  next["status"]["phase"] = "Succeeded";
  next["spec"]["replicas"] = 99;
  StatusOr<json> u = client_->UpdateStatus(kDDPJobs, "ml", "j", next);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ((*u)["status"]["phase"], "Succeeded");
  EXPECT_EQ((*u)["spec"]["replicas"], 3);
  EXPECT_EQ(client_->UpdateStatus(kDDPJobs, "ml", "j", next).status().code(), StatusCode::kConflict);
}

TEST_F(ClientTest, DeleteCascadesToDependentsAndHonoursPreconditions) {
  StatusOr<json> owner = client_->Create(kDDPJobs, "ml", {{"metadata", {{"name", "j"}}}, {"spec", json::object()}});
  ASSERT_TRUE(owner.ok());
  json ref = {{"apiVersion", "ddp.dev/v1alpha1"}, {"kind", "DDPJob"}, {"name", "j"},
              {"uid", (*owner)["metadata"]["uid"]}, {"controller", true}};
  json pod = PodObject("j-worker-0");
  pod["metadata"]["ownerReferences"] = json::array({ref});
  ASSERT_TRUE(client_->Create(kPods, "ml", pod).ok());
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("unrelated")).ok());

  DeleteOptions wrong;
  wrong.precondition_uid = "not-the-uid";
  EXPECT_EQ(client_->Delete(kDDPJobs, "ml", "j", wrong).code(), StatusCode::kConflict);
  DeleteOptions right;
  right.precondition_uid = (*owner)["metadata"]["uid"];
  ASSERT_TRUE(client_->Delete(kDDPJobs, "ml", "j", right).ok());
  EXPECT_EQ(client_->Get(kPods, "ml", "j-worker-0").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(client_->Get(kPods, "ml", "unrelated").ok());
}

TEST_F(ClientTest, PodGracePeriodKeepsDeletionTimestampUntilFinalized) {
  fake::FakeApiServerOptions opts;
  opts.pod_grace = std::chrono::seconds(30);
  StartServer(opts);
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("q")).ok());
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", {}).ok());
  StatusOr<json> p = client_->Get(kPods, "ml", "p");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(server_->FinalizePod("ml", "p"));
  EXPECT_EQ(client_->Get(kPods, "ml", "p").status().code(), StatusCode::kNotFound);
  DeleteOptions now;
  now.grace_period_seconds = 0;  // explicit 0: gone at once
  ASSERT_TRUE(client_->Delete(kPods, "ml", "q", now).ok());
  EXPECT_EQ(client_->Get(kPods, "ml", "q").status().code(), StatusCode::kNotFound);
}

TEST_F(ClientTest, BearerTokenIsSentAndReReadFromTheTokenFile) {
  char tmpl[] = "/tmp/kube_token_XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string path = tmpl;
  std::ofstream(path) << "first\n";
  fake::FakeApiServerOptions opts;
  opts.bearer_token = "first";
  ClientConfig cfg;
  cfg.token_file = path;
  StartServer(opts, cfg);
  EXPECT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  EXPECT_EQ(server_->LastAuthorization(), "Bearer first");

  server_->SetBearerToken("second");  // the token rotates
  EXPECT_EQ(client_->Get(kPods, "ml", "p").status().code(), StatusCode::kUnauthenticated);
  std::ofstream(path) << "second-token-rotated\n";
  server_->SetBearerToken("second-token-rotated");
  EXPECT_TRUE(client_->Get(kPods, "ml", "p").ok());
  unlink(path.c_str());
}

TEST_F(ClientTest, ObserverSeesEveryRequestWithItsCode) {
  std::mutex mu;
  std::map<std::string, int> seen;
  client_->SetRequestObserver([&](const std::string& verb, int code, double seconds) {
    std::lock_guard<std::mutex> lock(mu);
    seen[verb + " " + std::to_string(code)]++;
    EXPECT_GE(seconds, 0);
  });
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  (void)client_->Get(kPods, "ml", "missing");
  ASSERT_TRUE(client_->List(kPods, "ml", {}).ok());
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", {}).ok());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen, (std::map<std::string, int>{{"create 201", 1}, {"get 404", 1}, {"list 200", 1},
                                              {"delete 200", 1}}));
}

// A server that answers every request with a redirect to `location`.
class RedirectingServer {
 public:
  explicit RedirectingServer(std::string location) : location_(std::move(location)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 8) != 0) return;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        fake::HttpConn conn(c, nullptr);
        fake::HttpRequest req;
        while (conn.ReadRequest(&req)) {
          conn.WriteResponse(302, {{"Location", location_ + req.path}}, "", req.keep_alive);
        }
      }
    });
  }
  ~RedirectingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }

 private:
  std::string location_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(ClientTest, RedirectsAreNotFollowed) {
  // Following a redirect would send the bearer token to whatever host the Location names.
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  RedirectingServer redirector(server_->url());
  ASSERT_GT(redirector.port(), 0);
  ClientConfig cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(redirector.port());
  cfg.bearer_token = "secret";
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok());
  server_->ResetCounters();
  Status s = (*c)->Get(kPods, "ml", "p").status();
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("HTTP 302"), std::string::npos) << s.message();
  EXPECT_EQ(server_->RequestCount(""), 0) << "the client followed the redirect";
}

TEST_F(ClientTest, BadConfigIsRejected) {
  ClientConfig cfg;
  cfg.server = "ftp://x";
  EXPECT_EQ(NewRestClient(cfg).status().code(), StatusCode::kInvalidArgument);
  cfg.server = "https://x";
  cfg.io_threads = 0;
  EXPECT_EQ(NewRestClient(cfg).status().code(), StatusCode::kInvalidArgument);
  cfg.io_threads = 2;
  cfg.ca_file = "/nonexistent/ca.crt";
  StatusOr<std::unique_ptr<KubeClient>> c = NewRestClient(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/ca.crt"), std::string::npos);
  cfg.ca_file.clear();
  cfg.ca_data = "not a pem";
  EXPECT_EQ(NewRestClient(cfg).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp::controller
