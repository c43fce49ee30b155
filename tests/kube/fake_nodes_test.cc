// The test API server's nodes: Node objects with the node lifecycle controller's conditions and
// taints, and pods bound to a node that is not Ready staying Terminating until a force delete,
// as in Kubernetes. Observed through the REST client, the way the operator sees them.
#include <gtest/gtest.h>

#include "tests/kube/client_test_util.h"

namespace ddp::controller {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kGrace{100};

class FakeNodesTest : public FakeServerTest {
 protected:
  void SetUp() override {
    fake::FakeApiServerOptions opts;
    opts.pod_grace = kGrace;
    StartServer(opts);
  }
  // Creates pod `name` bound to `node`; returns its uid.
  std::string PodOn(const std::string& name, const std::string& node) {
    StatusOr<json> created = client_->Create(kPods, "ml", PodObject(name));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_TRUE(server_->BindPod("ml", name, node));
    return created.ok() ? (*created)["metadata"].value("uid", "") : "";
  }
  bool Gone(const std::string& name) {
    return client_->Get(kPods, "ml", name).status().code() == StatusCode::kNotFound;
  }
  static DeleteOptions Force(const std::string& uid) {
    DeleteOptions o;
    o.grace_period_seconds = 0;
    o.precondition_uid = uid;
    return o;
  }
};

TEST_F(FakeNodesTest, NodesCarryTheLifecycleControllersConditionsAndTaints) {
  ASSERT_TRUE(server_->AddNode("n1"));
  EXPECT_FALSE(server_->AddNode("n1"));  // AlreadyExists
  ASSERT_TRUE(server_->Mutate("/api/v1/nodes/n1", [](json& n) {
    n["spec"]["taints"] = json::array({{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}});
  }));
  StatusOr<json> node = client_->Get(kNodes, "", "n1");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ((*node)["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ((*node)["status"]["conditions"][0]["status"], "True");

  ASSERT_TRUE(server_->SetNodeReady("n1", "Unknown"));
  node = client_->Get(kNodes, "", "n1");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["status"]["conditions"][0]["status"], "Unknown");
  EXPECT_EQ((*node)["status"]["conditions"][0]["reason"], "NodeStatusUnknown");
  const json want_taints = json::array(
      {{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}},
       {{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoSchedule"}},
       {{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoExecute"}}});
  EXPECT_EQ((*node)["spec"]["taints"], want_taints);

  ASSERT_TRUE(server_->SetNodeReady("n1", "True"));  // back: only the user's taint is left
  node = client_->Get(kNodes, "", "n1");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["spec"]["taints"], json::array({want_taints[0]}));
  StatusOr<json> list = client_->List(kNodes, "", {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ((*list)["items"].size(), 1u);
  EXPECT_FALSE(server_->SetNodeReady("absent", "True"));
}

// The pod on the ready node goes after its grace; the one on the silent node does not, however
// long: its deletion waits for a kubelet that never answers, until a force delete by UID.
TEST_F(FakeNodesTest, PodOnASilentNodeStaysTerminatingUntilForceDeleted) {
  ASSERT_TRUE(server_->AddNode("n1"));
  ASSERT_TRUE(server_->AddNode("n2"));
  PodOn("a", "n1");
  const std::string uid_b = PodOn("b", "n2");
  ASSERT_TRUE(server_->SetNodeReady("n2", "Unknown"));
  ASSERT_TRUE(client_->Delete(kPods, "ml", "a", {}).ok());
  ASSERT_TRUE(client_->Delete(kPods, "ml", "b", {}).ok());
  ASSERT_TRUE(Eventually([&] { return Gone("a"); }));
  // Ten graces later b is still Terminating: nobody confirms it.
  EXPECT_FALSE(Eventually([&] { return Gone("b"); }, 10 * kGrace));
  StatusOr<json> b = client_->Get(kPods, "ml", "b");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE((*b)["metadata"].contains("deletionTimestamp"));

  Status stale = client_->Delete(kPods, "ml", "b", Force("uid-of-an-older-b"));
  EXPECT_EQ(stale.code(), StatusCode::kConflict) << stale.ToString();
  EXPECT_NE(stale.message().find("Precondition failed: UID in precondition"), std::string::npos)
      << stale.message();
  EXPECT_FALSE(Gone("b"));
  Status forced = client_->Delete(kPods, "ml", "b", Force(uid_b));
  ASSERT_TRUE(forced.ok()) << forced.ToString();
  EXPECT_TRUE(Gone("b"));  // at once: a force delete does not wait for the kubelet
}

TEST_F(FakeNodesTest, ForceDeleteOfARunningPodRemovesItAtOnce) {
  ASSERT_TRUE(server_->AddNode("n1"));
  const std::string uid = PodOn("p", "n1");
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", Force(uid)).ok());
  EXPECT_TRUE(Gone("p"));
}

TEST_F(FakeNodesTest, KubeletBackOnlineConfirmsTheDeletion) {
  ASSERT_TRUE(server_->AddNode("n1"));
  PodOn("p", "n1");
  ASSERT_TRUE(server_->SetNodeReady("n1", "False"));
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", {}).ok());
  EXPECT_FALSE(Eventually([&] { return Gone("p"); }, 5 * kGrace));
  ASSERT_TRUE(server_->SetNodeReady("n1", "True"));
  EXPECT_TRUE(Eventually([&] { return Gone("p"); }));
}

TEST_F(FakeNodesTest, PodOnANodeThatIsGoneStaysTerminating) {
  const std::string uid = PodOn("p", "ghost");
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", {}).ok());
  EXPECT_FALSE(Eventually([&] { return Gone("p"); }, 5 * kGrace));
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", Force(uid)).ok());
  EXPECT_TRUE(Gone("p"));
}

// A kubelet deletes by UID: the old incarnation's confirmation never removes a successor.
TEST_F(FakeNodesTest, FinalizeByUidSparesASuccessorUnderTheSameName) {
  ASSERT_TRUE(server_->AddNode("n1"));
  const std::string old_uid = PodOn("p", "n1");
  ASSERT_TRUE(server_->SetNodeReady("n1", "Unknown"));
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", {}).ok());
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", Force(old_uid)).ok());
  const std::string new_uid = PodOn("p", "n1");
  ASSERT_NE(new_uid, old_uid);
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", {}).ok());  // the successor is Terminating too
  EXPECT_FALSE(server_->FinalizePod("ml", "p", old_uid));
  StatusOr<json> still = client_->Get(kPods, "ml", "p");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ((*still)["metadata"]["uid"], new_uid);
  EXPECT_TRUE(server_->FinalizePod("ml", "p", new_uid));
  EXPECT_TRUE(Gone("p"));
}

}  // namespace
}  // namespace ddp::controller
