// Shared fixture: a FakeApiServer on 127.0.0.1 and a REST client pointed at it.
#ifndef DDP_TESTS_KUBE_CLIENT_TEST_UTIL_H_
#define DDP_TESTS_KUBE_CLIENT_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "operator/kube/client.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/common/poll.h"

namespace ddp::controller {

inline nlohmann::json PodObject(const std::string& name, nlohmann::json labels = nlohmann::json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"containers", {{{"name", "worker"}, {"image", "ddp-worker"}}}}}}};
}

// Polls `cond` until it holds or `timeout` passes. Returns the last value.
inline bool Eventually(const std::function<bool()>& cond,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  return ddp::testing::PollUntil(cond, timeout, std::chrono::milliseconds(5));
}

class FakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }
  void StartServer(fake::FakeApiServerOptions options, ClientConfig cfg = {}) {
    client_.reset();
    server_ = std::make_unique<fake::FakeApiServer>(options);
    std::string error;
    ASSERT_TRUE(server_->Start(0, &error)) << error;
    cfg.server = server_->url();
    cfg.qps = 0;  // tests measure the server, not the limiter
    cfg.request_timeout = std::chrono::seconds(5);
    auto c = NewRestClient(cfg);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  std::unique_ptr<fake::FakeApiServer> server_;
  std::unique_ptr<KubeClient> client_;
};

}  // namespace ddp::controller

#endif  // DDP_TESTS_KUBE_CLIENT_TEST_UTIL_H_
