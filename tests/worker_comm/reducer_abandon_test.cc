// Reducer::Abandon with a fake communicator whose collectives complete when the test says so:
// a collective abandoned by an abort that completes late must not change the gradients the
// trainer sees afterwards, and its buckets must stay allocated until it stopped.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "worker/ddp/reducer.h"

namespace ddp::worker {
namespace {

// What a real backend does after an abort, at its worst: Wait returns at once with an error,
// while the collective itself runs on and writes its result into the tensor later. It does not
// keep the tensor alive (the caller must), but notices when it would have written freed memory.
class LateCommunicator : public Communicator {
 public:
  explicit LateCommunicator(int size, bool auto_complete)
      : size_(size), auto_complete_(auto_complete) {}

  int rank() const override { return 0; }
  int size() const override { return size_; }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor& t) override {
    auto w = std::make_shared<LateWork>(this, t);
    if (auto_complete_) {
      w->Complete(/*late_value=*/std::nullopt);
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back(w);
    }
    return w;
  }
  Status Broadcast(std::vector<at::Tensor>&, int) override { return Status::OK(); }
  Status Barrier() override { return Status::OK(); }
  void Abort() override { aborted_ = true; }
  std::string name() const override { return "late"; }

  // Completes every pending collective, writing `value` into its tensor (a result that arrives
  // after the abort).
  void CompleteAll(float value) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : pending_) w->Complete(value);
    pending_.clear();
  }
  bool aborted() const { return aborted_; }
  int writes_into_freed_memory = 0;

 private:
  class LateWork : public Work {
   public:
    LateWork(LateCommunicator* comm, const at::Tensor& t)
        : comm_(comm), storage_(t.storage().getWeakStorageImpl()),
          data_(static_cast<float*>(t.data_ptr())), numel_(t.numel()) {}
    // Without a late value: sum over the ranks of identical contributions, in place.
    void Complete(std::optional<float> late_value) {
      auto alive = storage_.lock();
      if (!alive) {
        ++comm_->writes_into_freed_memory;
      } else {
        for (int64_t i = 0; i < numel_; ++i) data_[i] = late_value ? *late_value : data_[i] * comm_->size_;
      }
      completed_ = true;
    }
    Status Wait() override {
      if (completed_) return Status::OK();
      if (comm_->aborted()) return Status::Unavailable("late: communicator was aborted");
      return Status::DeadlineExceeded("late: the test never completed it");
    }
    bool IsCompleted() override { return completed_; }
    double seconds() const override { return 0; }

   private:
    LateCommunicator* comm_;
    c10::weak_intrusive_ptr<c10::StorageImpl> storage_;
    float* data_;
    int64_t numel_;
    bool completed_ = false;
  };

  int size_;
  bool auto_complete_;
  bool aborted_ = false;
  std::mutex mu_;
  std::vector<std::shared_ptr<LateWork>> pending_;
};

torch::nn::Sequential MakeModel() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::Tanh(), torch::nn::Linear(8, 2));
}

torch::Tensor Loss(torch::nn::Sequential& m) {
  torch::manual_seed(11);
  return torch::mse_loss(m->forward(torch::randn({5, 4})), torch::randn({5, 2}));
}

ReducerOptions OneParamPerBucket() {
  ReducerOptions o;
  o.bucket_cap_bytes = 1;  // every parameter in a bucket of its own: 4 buckets, 4 collectives
  o.first_bucket_cap_bytes = 1;
  o.rebuild_buckets = false;
  return o;
}

TEST(ReducerAbandonTest, LateCollectiveNeitherChangesGradientsNorWritesFreedMemory) {
  ASSERT_EQ(SweepAbandonedBuckets(), 0u);
  auto model = MakeModel();
  // The failed step: backward launches every bucket, the watcher aborts, the step fails.
  LateCommunicator failed(/*size=*/2, /*auto_complete=*/false);
  auto reducer = std::make_unique<Reducer>(model->parameters(), &failed, OneParamPerBucket());
  ASSERT_EQ(reducer->buckets().size(), 4u);
  reducer->PrepareForBackward();
  Loss(model).backward();
  failed.Abort();
  EXPECT_EQ(reducer->FinalizeBackward().code(), StatusCode::kUnavailable);

  reducer->Abandon();
  for (const auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
  EXPECT_EQ(SweepAbandonedBuckets(), 4u) << "the buckets wait for their collectives";
  EXPECT_EQ(reducer->FinalizeBackward().code(), StatusCode::kFailedPrecondition);
  reducer.reset();

  // The trainer's next step, on a new communicator (one rank: the average is the local gradient).
  LateCommunicator healthy(/*size=*/1, /*auto_complete=*/true);
  Reducer next(model->parameters(), &healthy, OneParamPerBucket());
  next.PrepareForBackward();
  for (const auto& p : model->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_TRUE(torch::equal(p.grad(), torch::zeros_like(p)));
  }
  // The abandoned collectives complete now, into the old buckets, with a result that would
  // poison any gradient that still aliased them.
  failed.CompleteAll(1000.0f);
  EXPECT_EQ(failed.writes_into_freed_memory, 0) << "a bucket was freed before its collective stopped";
  for (const auto& p : model->parameters()) {
    EXPECT_TRUE(torch::equal(p.grad(), torch::zeros_like(p))) << "a late result reached a gradient";
  }
  EXPECT_EQ(SweepAbandonedBuckets(), 0u) << "stopped collectives release their buckets";

  // And the step computes the right gradients: an independent single-process reference.
  Loss(model).backward();
  ASSERT_TRUE(next.FinalizeBackward().ok());
  auto reference = MakeModel();
  Loss(reference).backward();
  auto got = model->parameters();
  auto want = reference->parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::equal(got[i].grad(), want[i].grad())) << "parameter " << i;
  }
}

// The buckets of an abandoned reducer are freed by a later sweep once their collectives stopped,
// not before, and Abandon itself never waits.
TEST(ReducerAbandonTest, BucketsAreFreedOnlyOnceTheirCollectivesStopped) {
  ASSERT_EQ(SweepAbandonedBuckets(), 0u);
  auto model = MakeModel();
  LateCommunicator failed(/*size=*/2, /*auto_complete=*/false);
  Reducer reducer(model->parameters(), &failed, OneParamPerBucket());
  reducer.PrepareForBackward();
  Loss(model).backward();  // every bucket launched by the hooks, none completes
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> buckets;
  for (const auto& p : model->parameters()) buckets.emplace_back(p.grad().storage().getWeakStorageImpl());
  failed.Abort();
  reducer.Abandon();  // without FinalizeBackward: a failure elsewhere in the step
  reducer.Abandon();  // idempotent
  for (auto& b : buckets) EXPECT_FALSE(b.expired());
  EXPECT_EQ(SweepAbandonedBuckets(), 4u);
  failed.CompleteAll(1.0f);
  EXPECT_EQ(failed.writes_into_freed_memory, 0);
  EXPECT_EQ(SweepAbandonedBuckets(), 0u);
  for (auto& b : buckets) EXPECT_TRUE(b.expired());
}

}  // namespace
}  // namespace ddp::worker
