// Two `ddp-operator run --leader-elect` processes on one Lease: only the holder acts; a killed
// leader is replaced after the lease expires; SIGTERM hands the lease over at once; a leader
// that loses its lease exits non-zero.
#include <signal.h>

#include <gtest/gtest.h>

#include "tests/controller/e2e_harness.h"

namespace ddp::e2e {
namespace {

constexpr milliseconds kWait{20000};
const char* kLeasePath = "/apis/coordination.k8s.io/v1/namespaces/ml/leases/ddp-operator";

std::vector<std::string> Elect(const std::string& id) {
  return {"--leader-elect", "--identity", id, "--leader-election-lease-duration", "2s",
          "--leader-election-renew-deadline", "1500ms", "--leader-election-retry-period", "200ms"};
}

class LeaderE2eTest : public ::testing::Test {
 protected:
  std::string Holder() {
    auto lease = w_.server().GetObject(kLeasePath);
    return lease ? (*lease)["spec"].value("holderIdentity", "") : "";
  }
  World w_;
};

TEST_F(LeaderE2eTest, OnlyTheHolderActsAndTheOtherTakesOverWhenItIsKilled) {
  auto a = w_.StartOperator("a", Elect("op-a"));
  ASSERT_TRUE(WaitFor([&] { return Holder() == "op-a"; }, kWait)) << a->Log();
  auto b = w_.StartOperator("b", Elect("op-b"));
  w_.CreateJob(World::Job("one", 2));
  ASSERT_TRUE(w_.RunRound("one", 0, 2, kWait)) << a->Log();
  ASSERT_TRUE(WaitFor([&] { return b->Log().find("waiting for lease") != std::string::npos; }, kWait))
      << b->Log();
  EXPECT_EQ(b->Log().find("caches synced"), std::string::npos) << "the standby must not act";
  EXPECT_EQ(Holder(), "op-a");

  a->Signal(SIGKILL, kWait);  // no release: b must wait for expiry
  ASSERT_TRUE(WaitFor([&] { return Holder() == "op-b"; }, kWait)) << b->Log();
  w_.CreateJob(World::Job("two", 1));
  ASSERT_TRUE(w_.RunRound("two", 0, 1, kWait)) << b->Log();
  EXPECT_EQ(w_.PodsOfRound("one", 0).size(), 2u) << "the new leader adopts, not recreates";
  EXPECT_EQ(b->Signal(SIGTERM, kWait), 0) << b->Log();
  EXPECT_EQ(Holder(), "") << "SIGTERM releases the lease";
}

TEST_F(LeaderE2eTest, SigtermReleasesTheLeaseSoTheStandbyTakesOverBeforeExpiry) {
  auto a = w_.StartOperator("a", {"--leader-elect", "--identity", "op-a",
                                  "--leader-election-lease-duration", "30s",
                                  "--leader-election-renew-deadline", "20s",
                                  "--leader-election-retry-period", "200ms"});
  ASSERT_TRUE(WaitFor([&] { return Holder() == "op-a"; }, kWait)) << a->Log();
  auto b = w_.StartOperator("b", {"--leader-elect", "--identity", "op-b",
                                  "--leader-election-lease-duration", "30s",
                                  "--leader-election-renew-deadline", "20s",
                                  "--leader-election-retry-period", "200ms"});
  ASSERT_TRUE(WaitFor([&] { return b->Log().find("waiting for lease") != std::string::npos; }, kWait));
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(a->Signal(SIGTERM, kWait), 0) << a->Log();
  ASSERT_TRUE(WaitFor([&] { return Holder() == "op-b"; }, kWait)) << b->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10))
      << "well before the 30 s lease would have expired";
}

TEST_F(LeaderE2eTest, LeaderThatLosesItsLeaseExitsNonZero) {
  auto a = w_.StartOperator("a", Elect("op-a"));
  ASSERT_TRUE(WaitFor([&] { return Holder() == "op-a"; }, kWait)) << a->Log();
  // Another replica took over (e.g. after a partition): the lease names someone else.
  ASSERT_TRUE(w_.server().Mutate(kLeasePath, [](json& lease) {
    lease["spec"]["holderIdentity"] = "intruder";
  }));
  ASSERT_TRUE(WaitFor([&] { return a->ExitCode().has_value(); }, kWait)) << a->Log();
  EXPECT_NE(*a->ExitCode(), 0);
}

}  // namespace
}  // namespace ddp::e2e
