// A generation's communicator can wait on a dead peer outside the store: Gloo's passive side of a
// pair waits for the peer to connect, NCCL's init for every rank, each up to the collective
// timeout. A member lost between publishing its address and connecting left the others there,
// and the group could not re-form until that timeout (a CI run on LibTorch 2.6: a pod crashed
// while the group re-formed, 60 s without a step). Join leaves such a creation once the
// generation moves on (membership.cc, forming.h). Real GroupMemberships on the in-process store.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "worker/comm/gloo_communicator.h"
#include "worker/comm/local_store.h"
#include "worker/group/authority_loop.h"
#include "worker/group/forming.h"
#include "worker/group/keys.h"
#include "worker/group/membership.h"
#include "no_collectives.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::atomic<int> g_destroyed{0};

// A store whose every blocking read after the first set() waits until released, then fails: a
// member that published its address and then died (or froze) before connecting.
class FreezeAfterSet : public c10d::Store {
 public:
  FreezeAfterSet(c10::intrusive_ptr<c10d::Store> inner, std::atomic<bool>* published,
                 std::atomic<bool>* release)
      : inner_(std::move(inner)), published_(published), release_(release) {}
  void set(const std::string& k, const std::vector<uint8_t>& v) override {
    inner_->set(k, v);
    published_->store(true);
  }
  std::vector<uint8_t> compareSet(const std::string& k, const std::vector<uint8_t>& c,
                                  const std::vector<uint8_t>& v) override {
    return inner_->compareSet(k, c, v);
  }
  std::vector<uint8_t> get(const std::string& k) override {
    Freeze();
    return inner_->get(k);
  }
  int64_t add(const std::string& k, int64_t v) override { return inner_->add(k, v); }
  bool deleteKey(const std::string& k) override { return inner_->deleteKey(k); }
  bool check(const std::vector<std::string>& ks) override {
    Freeze();
    return inner_->check(ks);
  }
  int64_t getNumKeys() override { return inner_->getNumKeys(); }
  void wait(const std::vector<std::string>& ks) override {
    Freeze();
    inner_->wait(ks);
  }
  void wait(const std::vector<std::string>& ks, const milliseconds& t) override {
    Freeze();
    inner_->wait(ks, t);
  }
  c10::intrusive_ptr<c10d::Store> clone() { return c10::intrusive_ptr<c10d::Store>::reclaim_copy(this); }

 private:
  void Freeze() {
    if (!published_->load()) return;
    const auto until = Clock::now() + seconds(60);
    while (!release_->load() && Clock::now() < until) std::this_thread::sleep_for(milliseconds(10));
    throw std::runtime_error("frozen member released");
  }
  c10::intrusive_ptr<c10d::Store> inner_;
  std::atomic<bool>* published_;
  std::atomic<bool>* release_;
};

struct Group {
  explicit Group(int size) : store(LocalStore(std::make_shared<ddp::store::StoreState>(), seconds(30))) {
    store->set(kEpochKey, Bytes("e1"));
    store->set(kWorldKey, Bytes(std::to_string(size)));
  }
  std::unique_ptr<GroupMembership> Member(int rank, int size, CommunicatorMaker make) {
    auto open = [s = store]() -> StatusOr<c10::intrusive_ptr<c10d::Store>> { return s; };
    const std::string pod = "w" + std::to_string(rank) + "/u";
    auto m = std::make_unique<GroupMembership>(open, rank, size,
                                               MemberIdentity{pod + "/0/0", pod, rank},
                                               seconds(20), std::move(make));
    EXPECT_TRUE(m->Connect().ok());
    return m;
  }
  c10::intrusive_ptr<c10d::Store> store;
};

bool WaitUntil(const std::function<bool()>& f, Clock::duration limit) {
  const auto until = Clock::now() + limit;
  while (!f()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// The mechanism alone: rank 1's creation hangs without a store read; the generation moves on.
TEST(GroupFormingTest, ACreationThatHangsOutsideTheStoreIsLeftWhenTheGenerationMovesOn) {
  Group g(2);
  std::atomic<bool> entered{false}, release{false};
  const int destroyed_before = g_destroyed.load();
  const size_t left_before = CreationsLeft();
  auto make = [&](c10::intrusive_ptr<c10d::Store>, int rank,
                  int size) -> StatusOr<std::unique_ptr<Communicator>> {
    if (rank == 1) {
      entered = true;
      WaitUntil([&] { return release.load(); }, seconds(60));
    }
    return std::unique_ptr<Communicator>(new NoCollectives(rank, size, &g_destroyed));
  };
  auto m0 = g.Member(0, 2, make);
  auto m1 = g.Member(1, 2, make);
  std::thread t0([&] { (void)m0->Join(0); });
  StatusOr<Formation> f1 = Status::Internal("not joined");
  std::atomic<bool> returned{false};
  std::thread t1([&] {
    f1 = m1->Join(0);
    returned = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return entered.load(); }, seconds(10)));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(returned.load()) << "the creation has not ended yet";
  TryAdvance(*g.store, 0);  // what the authority does when a member is lost
  const auto moved = Clock::now();
  EXPECT_TRUE(WaitUntil([&] { return returned.load(); }, seconds(5)))
      << "Join waited on a creation of a generation that is gone";
  EXPECT_LT(Clock::now() - moved, seconds(2));
  EXPECT_EQ(CreationsLeft(), left_before + 1) << "the hanging creation is left, and counted";
  release = true;
  t1.join();
  t0.join();
  ASSERT_FALSE(f1.ok());
  EXPECT_EQ(f1.status().code(), StatusCode::kUnavailable) << f1.status().ToString();
  EXPECT_NE(f1.status().ToString().find("moved on"), std::string::npos) << f1.status().ToString();
  // The late communicator is not kept: both made ones are gone (rank 0's with its Formation, rank
  // 1's on the creation's own thread once it ended).
  EXPECT_TRUE(WaitUntil([&] { return g_destroyed.load() - destroyed_before >= 2; }, seconds(5)));
  EXPECT_TRUE(WaitUntil([&] { return CreationsLeft() == left_before; }, seconds(5)));
}

// Real Gloo: one member publishes its address and never connects (frozen or dead). Whichever of
// the pair waits for the other to connect, the live member leaves once the generation moves on,
// well inside Gloo's timeout (60 s here).
TEST(GroupFormingTest, AGlooPeerThatPublishedAndDiedDoesNotHoldTheOtherPastTheGeneration) {
  for (const int frozen : {0, 1}) {
    SCOPED_TRACE("frozen rank " + std::to_string(frozen));
    Group g(2);
    std::atomic<bool> published{false}, release{false};
    auto make = [&](c10::intrusive_ptr<c10d::Store> s, int rank,
                    int size) -> StatusOr<std::unique_ptr<Communicator>> {
      if (rank == frozen) s = c10::make_intrusive<FreezeAfterSet>(s, &published, &release);
      GlooOptions o;
      o.hostname = "127.0.0.1";
      return GlooCommunicator::Create(s, rank, size, seconds(60), o);
    };
    auto dead = g.Member(frozen, 2, make);
    auto live = g.Member(1 - frozen, 2, make);
    std::atomic<bool> returned{false};
    StatusOr<Formation> f = Status::Internal("not joined");
    std::thread td([&] { (void)dead->Join(0); });
    std::thread tl([&] {
      f = live->Join(0);
      returned = true;
    });
    ASSERT_TRUE(WaitUntil([&] { return published.load(); }, seconds(20)));
    // The live member's creation is under way: it read the address, or waits to be connected to.
    std::this_thread::sleep_for(milliseconds(500));
    TryAdvance(*g.store, 0);
    const auto moved = Clock::now();
    const bool left = WaitUntil([&] { return returned.load(); }, seconds(10));
    EXPECT_TRUE(left) << "the live member stayed in a generation that is gone";
    EXPECT_LT(Clock::now() - moved, seconds(5));
    release = true;
    tl.join();
    td.join();
    // Either the creation failed (the generation moved on under it) or it formed before the
    // move: never a member held past it.
    if (!f.ok()) {
      EXPECT_EQ(f.status().code(), StatusCode::kUnavailable) << f.status().ToString();
    }
  }
}

}  // namespace
}  // namespace ddp::worker::group
