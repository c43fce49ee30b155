#include "operator/kube/resource.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "operator/kube/client_cancel.h"

namespace ddp::controller {
namespace {

TEST(Resource, Paths) {
  struct Case {
    const Resource& r;
    std::string ns, name, want;
  };
  const std::vector<Case> cases = {
      {kPods, "ml", "x", "/api/v1/namespaces/ml/pods/x"},
      {kPods, "ml", "", "/api/v1/namespaces/ml/pods"},
      {kPods, "", "", "/api/v1/pods"},
      {kServices, "ml", "j", "/api/v1/namespaces/ml/services/j"},
      {kEvents, "ml", "", "/api/v1/namespaces/ml/events"},
      {kLeases, "ddp-system", "ddp-operator",
       "/apis/coordination.k8s.io/v1/namespaces/ddp-system/leases/ddp-operator"},
      {kDDPJobs, "", "", "/apis/ddp.dev/v1alpha1/ddpjobs"},
      {kDDPJobs, "ml", "mingpt", "/apis/ddp.dev/v1alpha1/namespaces/ml/ddpjobs/mingpt"},
      {kNodes, "ignored", "n1", "/api/v1/nodes/n1"},
  };
  for (const Case& c : cases) EXPECT_EQ(c.r.Path(c.ns, c.name), c.want);
  EXPECT_EQ(kDDPJobs.ApiVersion(), "ddp.dev/v1alpha1");
  EXPECT_EQ(kPods.ApiVersion(), "v1");
  EXPECT_EQ(kLeases.Display(), "leases.coordination.k8s.io");
}

TEST(Cancellation, CallbacksRunOnceAndLateOnesRunAtOnce) {
  Cancellation c;
  int a = 0, b = 0, removed = 0;
  c.AddCallback([&] { ++a; });
  int id = c.AddCallback([&] { ++removed; });
  c.RemoveCallback(id);
  EXPECT_FALSE(c.cancelled());
  c.Cancel();
  c.Cancel();
  EXPECT_TRUE(c.cancelled());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(removed, 0);
  c.AddCallback([&] { ++b; });  // already cancelled: runs inside AddCallback
  EXPECT_EQ(b, 1);
}

TEST(Cancellation, ConcurrentCancelRunsEachCallbackOnce) {
  Cancellation c;
  std::atomic<int> runs{0};
  for (int i = 0; i < 100; ++i) c.AddCallback([&] { ++runs; });
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { c.Cancel(); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(runs, 100);
}

}  // namespace
}  // namespace ddp::controller
