// A generation forms however its arrivals were counted (membership.cc JoinOnce): a join retried
// after the store counted it (its reply lost) counts twice, and the last real arrival must still
// sum the steps up. Real GroupMemberships on the project's in-process store.
#include <gtest/gtest.h>

#include <thread>

#include "worker/comm/local_store.h"
#include "worker/group/keys.h"
#include "worker/group/membership.h"
#include "no_collectives.h"
#include "worker/group/steps.h"

namespace ddp::worker::group {
namespace {

TEST(GroupJoinTest, AnArrivalCountedTwiceStillLetsTheGenerationForm) {
  for (const int extra : {1, 2}) {
    auto store = LocalStore(std::make_shared<ddp::store::StoreState>(), std::chrono::seconds(30));
    store->set(kEpochKey, Bytes("e1"));
    store->set(kWorldKey, Bytes("3"));
    // Counted, never arrived: what a join whose reply was lost leaves before it is retried.
    store->add(ArrivalsKey(0), extra);
    auto open = [s = store]() -> StatusOr<c10::intrusive_ptr<c10d::Store>> { return s; };
    auto make = [](c10::intrusive_ptr<c10d::Store>, int rank,
                   int size) -> StatusOr<std::unique_ptr<Communicator>> {
      return std::unique_ptr<Communicator>(new NoCollectives(rank, size));
    };
    std::vector<std::unique_ptr<GroupMembership>> members;
    for (int r = 0; r < 3; ++r) {
      const std::string pod = "w" + std::to_string(r) + "/u";
      members.push_back(std::make_unique<GroupMembership>(
          open, r, 3, MemberIdentity{pod + "/0/0", pod, r}, std::chrono::seconds(20), make));
      ASSERT_TRUE(members.back()->Connect().ok());
    }
    std::vector<int64_t> generation(3, -1), source(3, -2);
    std::vector<std::thread> joins;
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < 3; ++r) {
      joins.emplace_back([&, r] {
        auto f = members[r]->Join(/*committed_step=*/10 * (r + 1));
        if (f.ok() && f->end == GroupEnd::kNone) generation[r] = f->generation;
      });
    }
    for (auto& t : joins) t.join();
    EXPECT_EQ(generation, (std::vector<int64_t>{0, 0, 0})) << "counted " << extra << " extra";
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    // The summary every member read: the latest step (30, rank 2's), two ranks behind it.
    const auto v = store->get(StepsKey(0));
    StepsSummary s;
    ASSERT_TRUE(ParseSteps(std::string(v.begin(), v.end()), &s));
    EXPECT_EQ(s, (StepsSummary{30, 2, 2}));
  }
}

}  // namespace
}  // namespace ddp::worker::group
