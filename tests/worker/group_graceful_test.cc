// A growth that ends a formed generation gracefully (authority.h rule 9c, membership.h): the
// watcher leaves the members' communicator alone, asks them to leave once every newcomer arrived
// in the new generation, and aborts at once for any other new generation. A real
// GroupMembership on an in-process store; the test writes what the authority and the newcomers
// would.
#include <gtest/gtest.h>

#include <atomic>

#include "worker/comm/deadline.h"
#include "worker/comm/local_store.h"
#include "worker/group/authority_loop.h"
#include "worker/group/keys.h"
#include "worker/group/membership.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class DoneWork : public Work {
 public:
  Status Wait() override { return Status::OK(); }
  bool IsCompleted() override { return true; }
  double seconds() const override { return 0; }
};

// Records Abort(); no collective is run here.
class WatchedCommunicator : public Communicator {
 public:
  WatchedCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor&) override {
    return std::make_shared<DoneWork>();
  }
  Status Broadcast(std::vector<at::Tensor>&, int) override { return Status::OK(); }
  Status Barrier() override { return Status::OK(); }
  void Abort() override { aborted = true; }
  std::string name() const override { return "watched"; }

  std::atomic<bool> aborted{false};

 private:
  int rank_, size_;
};

// One member (rank 0 of a group of 1) formed in generation 0, its communicator watched.
struct Formed {
  // The project's in-process store: the watcher parks its watches as on a real one.
  c10::intrusive_ptr<c10d::Store> store =
      LocalStore(std::make_shared<ddp::store::StoreState>(), std::chrono::seconds(30));
  WatchedCommunicator* comm = nullptr;
  std::unique_ptr<Communicator> owned;
  std::unique_ptr<GroupMembership> member;

  Formed() {
    store->set(kEpochKey, Bytes("e1"));
    store->set(kWorldKey, Bytes("1"));
    auto open = [s = store]() -> StatusOr<c10::intrusive_ptr<c10d::Store>> { return s; };
    auto make = [](c10::intrusive_ptr<c10d::Store>, int rank,
                   int size) -> StatusOr<std::unique_ptr<Communicator>> {
      return std::unique_ptr<Communicator>(new WatchedCommunicator(rank, size));
    };
    member = std::make_unique<GroupMembership>(open, 0, 1, MemberIdentity{"w0/u/0/0", "w0/u", 0},
                                               std::chrono::seconds(30), make);
  }
  void Form() {
    ASSERT_TRUE(member->Connect().ok());
    auto f = member->Join(/*committed_step=*/5);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_EQ(f->end, GroupEnd::kNone);
    ASSERT_EQ(f->generation, 0);
    owned = std::move(f->comm);
    comm = static_cast<WatchedCommunicator*>(owned.get());
    member->Watch(comm);
  }
  // What the authority writes for a growth to `world` ranks: the size, then (graceful) the
  // mark, then the generation.
  void Grow(int world, bool graceful) {
    store->set(kWorldKey, Bytes(std::to_string(world)));
    if (graceful) store->set(GracefulKey(1), Bytes("1"));
    TryAdvance(*store, 0);
  }
  // A newcomer's arrival in generation `g`, as its Join writes it.
  void Arrive(int64_t g, int rank, const std::string& value) {
    store->set(ArrivedKey(g, rank), Bytes(value));
    store->add(ArrivalsKey(g), 1);
  }
  // True when `done` holds within `ms`.
  bool Within(int ms, const std::function<bool()>& done) {
    return PollUntil(Clock::now() + milliseconds(ms), milliseconds(10), done) == PollOutcome::kDone;
  }
};

TEST(GracefulGrowthTest, TheMemberTrainsOnUntilTheNewcomersArrivedThenIsAskedToLeave) {
  Formed g;
  ASSERT_NO_FATAL_FAILURE(g.Form());
  g.Grow(3, /*graceful=*/true);
  // Neither newcomer arrived in generation 1: train on (no abort, no leave).
  EXPECT_FALSE(g.Within(600, [&] { return g.comm->aborted.load() || g.member->leave_requested(); }));
  g.Arrive(1, 1, "-1 w1/u/0/0");
  EXPECT_FALSE(g.Within(400, [&] { return g.member->leave_requested(); })) << "rank 2 is not there";
  g.Arrive(1, 2, "-1 w2/u/0/0");
  EXPECT_TRUE(g.Within(5000, [&] { return g.member->leave_requested(); }));
  EXPECT_FALSE(g.comm->aborted.load()) << "a graceful growth never aborts inside kGracefulLeave";
  // The member leaves at its agreement and joins generation 1: asked no more.
  g.member->Watch(nullptr);
  auto f = g.member->Join(5);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->generation, 1);
  EXPECT_EQ(f->world, 3);
  EXPECT_EQ(f->steps, (StepsSummary{5, 0, 2}));  // rank 0 at step 5 heals the two newcomers
  EXPECT_FALSE(g.member->leave_requested());
}

TEST(GracefulGrowthTest, ANewGenerationWithoutTheMarkAbortsAtOnce) {
  Formed g;
  ASSERT_NO_FATAL_FAILURE(g.Form());
  g.Grow(3, /*graceful=*/false);
  EXPECT_TRUE(g.Within(5000, [&] { return g.comm->aborted.load(); }));
  EXPECT_FALSE(g.member->leave_requested());
}

TEST(GracefulGrowthTest, AGenerationPastTheMarkedOneAbortsAtOnce) {
  Formed g;
  ASSERT_NO_FATAL_FAILURE(g.Form());
  g.Grow(3, /*graceful=*/true);
  // A newcomer was lost before it arrived: the authority moves on again, not gracefully.
  TryAdvance(*g.store, 1);
  EXPECT_TRUE(g.Within(5000, [&] { return g.comm->aborted.load(); }));
}

TEST(GracefulGrowthTest, AMarkWithASizeThatDoesNotGrowIsNoGrowth) {
  Formed g;
  ASSERT_NO_FATAL_FAILURE(g.Form());
  g.Grow(1, /*graceful=*/true);  // no newcomer rank: not a growth of this member's generation
  EXPECT_TRUE(g.Within(5000, [&] { return g.comm->aborted.load(); }));
  EXPECT_FALSE(g.member->leave_requested());
}

}  // namespace
}  // namespace ddp::worker::group
