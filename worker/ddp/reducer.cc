// Reducer: bucket views, grad-accumulator post-hooks, in-order asynchronous bucket all-reduce.
#include "worker/ddp/reducer.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <unordered_set>

#include "common/logging.h"
#include "worker/comm/deadline.h"
#include "worker/ddp/allreduce_time.h"

namespace ddp::worker {
namespace {

using Clock = std::chrono::steady_clock;

std::string GroupOf(const at::Tensor& p) {
  return std::string(c10::toString(p.scalar_type())) + "@" + p.device().str();
}

// Bucket buffers of abandoned reducers with the collectives launched on them (Reducer::Abandon).
struct Grave {
  std::vector<at::Tensor> buffers;
  std::vector<std::shared_ptr<Work>> works;
};

std::mutex graveyard_mu;
std::vector<Grave>& Graveyard() {  // guarded by graveyard_mu; leaked: no destructor at exit
  static auto* graves = new std::vector<Grave>();
  return *graves;
}

}  // namespace

size_t SweepAbandonedBuckets() {
  std::lock_guard<std::mutex> lock(graveyard_mu);
  std::vector<Grave>& graves = Graveyard();
  size_t held = 0;
  for (auto it = graves.begin(); it != graves.end();) {
    const bool stopped = std::all_of(it->works.begin(), it->works.end(),
                                     [](const std::shared_ptr<Work>& w) { return w->IsCompleted(); });
    if (stopped) {
      it = graves.erase(it);
    } else {
      held += it->buffers.size();
      ++it;
    }
  }
  return held;
}

struct Reducer::State {
  // Fixed at construction.
  std::vector<at::Tensor> params;
  std::vector<std::string> names;      // per parameter, for error messages
  std::vector<ParamSpec> param_specs;  // per parameter
  ReducerOptions options;
  Communicator* comm = nullptr;
  // Set at construction, and once more by the rebuild after the first synchronised step.
  std::vector<BucketSpec> specs;
  std::vector<at::Tensor> buffers;     // one flat buffer per bucket
  std::vector<at::Tensor> views;       // per parameter: its slice of the bucket, param-shaped
  std::vector<size_t> bucket_of;       // per parameter
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;  // kept alive for the hooks
  std::vector<uintptr_t> hook_keys;

  // Per step, guarded by mu (hooks may run on autograd device threads).
  std::mutex mu;
  bool sync = true;
  std::vector<bool> ready;             // per parameter
  std::vector<size_t> pending;         // per bucket: parameters not yet ready
  size_t next_bucket = 0;              // buckets launch strictly in order on every rank
  std::vector<std::shared_ptr<Work>> works;
  Clock::time_point step_start = Clock::now();
  double last_ready_seconds = 0;
  Status duplicate;                    // the first gradient that arrived twice this step
  Stats stats;
  bool abandoned = false;              // Abandon() was called: inert from then on
  bool rebuild_pending = false;        // until the first synchronised FinalizeBackward
  std::vector<size_t> arrival;         // parameters in the order their gradients arrived

  // Allocates a flat buffer per bucket of `new_specs` and makes every .grad a view into its
  // bucket, carrying its current value over. REQUIRES: mu held, or no hooks registered yet.
  void Build(std::vector<BucketSpec> new_specs) {
    at::NoGradGuard no_grad;
    specs = std::move(new_specs);
    buffers.clear();
    views.assign(params.size(), at::Tensor());
    bucket_of.assign(params.size(), 0);
    for (size_t b = 0; b < specs.size(); ++b) {
      const BucketSpec& spec = specs[b];
      const at::Tensor& first = params[spec.params[0]];
      buffers.push_back(at::zeros({spec.numel}, first.options().requires_grad(false)));
      for (size_t k = 0; k < spec.params.size(); ++k) {
        const size_t i = spec.params[k];
        // detach(): same memory, but not an autograd "view", so optimizers may detach_() the
        // grad in zero_grad (LibTorch 1.13's does; it throws on views).
        views[i] = buffers[b].narrow(0, spec.offsets[k], params[i].numel())
                       .view(params[i].sizes())
                       .detach();
        bucket_of[i] = b;
      }
    }
    for (size_t i = 0; i < params.size(); ++i) PointGradAtView(i);
    works.assign(specs.size(), nullptr);
    pending.assign(specs.size(), 0);
  }

  // Every rank takes rank 0's arrival order (completed with the parameters that got no
  // gradient) and rebuilds its buckets in it. REQUIRES: mu held, every bucket's work finished.
  Status RebuildInArrivalOrder() {
    if (params.empty()) return Status::OK();
    const size_t n = params.size();
    at::Tensor order = at::full({static_cast<int64_t>(n)}, -1, at::kLong);
    if (comm->rank() == 0) {
      StatusOr<std::vector<size_t>> mine = CompleteArrivalOrder(arrival, n);
      if (!mine.ok()) return mine.status().WithContext("reducer");
      for (size_t k = 0; k < n; ++k) {
        order[static_cast<int64_t>(k)] = static_cast<int64_t>((*mine)[k]);
      }
    }
    std::vector<at::Tensor> shipped{order.to(buffers[0].device())};
    DDP_RETURN_IF_ERROR(comm->Broadcast(shipped, 0).WithContext("reducer: bucket order"));
    const at::Tensor got = shipped[0].cpu();
    std::vector<size_t> received;
    for (size_t k = 0; k < n; ++k) {
      const int64_t v = got[static_cast<int64_t>(k)].item<int64_t>();
      received.push_back(v < 0 ? n : static_cast<size_t>(v));
    }
    StatusOr<std::vector<size_t>> checked = CompleteArrivalOrder(received, n);
    if (!checked.ok()) return checked.status().WithContext("reducer: rank 0's bucket order");
    std::vector<BucketSpec> rebuilt = AssignBucketsInOrder(
        param_specs, *checked, options.bucket_cap_bytes, options.first_bucket_cap_bytes);
    if (rebuilt == specs) return Status::OK();
    if (comm->rank() == 0) {
      DDP_LOG(INFO) << "reducer: buckets rebuilt in gradient arrival order: " << specs.size()
                    << " -> " << rebuilt.size() << " buckets";
    }
    Build(std::move(rebuilt));
    return Status::OK();
  }

  // Makes p.grad the bucket view, carrying over its current value (zeros when undefined).
  void PointGradAtView(size_t i) {
    at::Tensor& grad = params[i].mutable_grad();
    const at::Tensor& view = views[i];
    if (grad.defined() && grad.data_ptr() == view.data_ptr() && grad.sizes() == view.sizes()) {
      return;
    }
    if (grad.defined()) {
      view.copy_(grad);
    } else {
      view.zero_();
    }
    grad = view;
  }

  // REQUIRES: mu held.
  void LaunchBucket(size_t b) {
    buffers[b].div_(comm->size());  // average = sum of (g / N): what PyTorch's DDP hook does
    works[b] = comm->AllReduceSumAsync(buffers[b]);
    stats.bucket_launch_seconds.push_back(Since(step_start));
    stats.allreduce_bytes += static_cast<int64_t>(specs[b].bytes);
    ++stats.buckets;
  }

  void RemoveHooks() {
    for (size_t i = 0; i < accumulators.size(); ++i) accumulators[i]->del_post_hook(hook_keys[i]);
    accumulators.clear();
    hook_keys.clear();
  }

  // Called by the hook after autograd accumulated parameter i's gradient.
  void MarkReady(size_t i) {
    at::NoGradGuard no_grad;
    std::lock_guard<std::mutex> lock(mu);
    if (!sync || abandoned) return;  // no_sync: the gradient simply accumulates in the bucket view
    if (ready[i]) {
      // Its bucket may already be in flight: the second contribution cannot be reduced.
      if (duplicate.ok()) {
        duplicate = Status::FailedPrecondition(
            "reducer: gradient of parameter '" + names[i] + "'" +
            " arrived twice in one step (a second backward through it before FinalizeBackward); "
            "HINT: call PrepareForBackward before each backward, or set_sync(false) to accumulate");
      }
      return;
    }
    PointGradAtView(i);  // the user may have set .grad to undefined since PrepareForBackward
    ready[i] = true;
    if (rebuild_pending) arrival.push_back(i);
    last_ready_seconds = Since(step_start);
    const size_t b = bucket_of[i];
    if (--pending[b] != 0) return;
    while (next_bucket < specs.size() && pending[next_bucket] == 0) {
      LaunchBucket(next_bucket++);
      ++stats.buckets_launched_in_backward;
    }
  }
};

namespace {

// Runs after AccumulateGrad wrote the parameter's .grad. The signature is the same in LibTorch
// 1.13 and 2.x.
class ReadyHook : public torch::autograd::FunctionPostHook {
 public:
  explicit ReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    on_ready_();
    return outputs;
  }

 private:
  std::function<void()> on_ready_;
};

}  // namespace

Reducer::Reducer(std::vector<at::Tensor> params, Communicator* comm, ReducerOptions options)
    : state_(std::make_unique<State>()) {
  if (const size_t held = SweepAbandonedBuckets(); held > 0) {
    DDP_LOG(INFO) << "reducer: " << held << " bucket(s) of an abandoned reducer still wait for "
                  << "their collectives to stop";
  }
  State& s = *state_;
  // Tied weights appear twice in Module::parameters(); one bucket slot per tensor.
  std::unordered_set<const c10::TensorImpl*> seen;
  for (size_t j = 0; j < params.size(); ++j) {
    const at::Tensor& p = params[j];
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    s.params.push_back(p);
    s.names.push_back(j < options.param_names.size() ? options.param_names[j]
                                                     : std::to_string(j));
  }
  s.comm = comm;
  for (const auto& p : s.params) {
    s.param_specs.push_back({p.numel(), static_cast<size_t>(p.element_size()), GroupOf(p)});
  }
  s.options = options;
  s.rebuild_pending = options.rebuild_buckets;
  s.Build(AssignBuckets(s.param_specs, options.bucket_cap_bytes, options.first_bucket_cap_bytes));
  for (size_t i = 0; i < s.params.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(s.params[i]);
    s.hook_keys.push_back(acc->add_post_hook(std::make_unique<ReadyHook>([&s, i] { s.MarkReady(i); })));
    s.accumulators.push_back(std::move(acc));
  }
  s.ready.assign(s.params.size(), false);
  PrepareForBackward();
  DDP_LOG(INFO) << "reducer: " << s.params.size() << " parameters in " << s.specs.size()
                << " buckets over " << comm->name() << " (" << comm->size() << " ranks)";
}

Reducer::~Reducer() { state_->RemoveHooks(); }

void Reducer::set_sync(bool sync) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->sync = sync;
}

bool Reducer::sync() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->sync;
}

void Reducer::PrepareForBackward() {
  State& s = *state_;
  at::NoGradGuard no_grad;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.abandoned) return;
  for (size_t i = 0; i < s.params.size(); ++i) s.PointGradAtView(i);
  s.ready.assign(s.params.size(), false);
  for (size_t b = 0; b < s.specs.size(); ++b) {
    s.pending[b] = s.specs[b].params.size();
    s.works[b].reset();
  }
  s.next_bucket = 0;
  s.step_start = Clock::now();
  s.last_ready_seconds = 0;
  s.duplicate = Status::OK();
  s.arrival.clear();  // only the backward that FinalizeBackward completes counts
  s.stats = Stats();
}

Status Reducer::FinalizeBackward() {
  State& s = *state_;
  at::NoGradGuard no_grad;
  std::vector<std::shared_ptr<Work>> works;
  double backward_end = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.abandoned) {
      return Status::FailedPrecondition("reducer: abandoned after a failure; build a new one");
    }
    if (!s.sync) return Status::OK();
    backward_end = Since(s.step_start);
    s.stats.backward_seconds = s.last_ready_seconds;
    // Buckets with parameters that got no gradient: reduce their current .grad (zeros after
    // zero_grad) so that every rank issues the same collectives in the same order.
    while (s.next_bucket < s.specs.size()) s.LaunchBucket(s.next_bucket++);
    works = s.works;
  }
  Status first_error;
  for (size_t b = 0; b < works.size(); ++b) {
    Status st = works[b]->Wait();
    if (!st.ok() && first_error.ok()) first_error = st.WithContext("reducer bucket " + std::to_string(b));
  }
  std::lock_guard<std::mutex> lock(s.mu);
  // Both from the buckets' in-flight intervals: the whole union, and its part after backward
  // ended (this call began). Time in this call outside any bucket's flight (launching leftover
  // buckets, the one-off bucket rebuild below) is neither.
  std::vector<BucketInterval> flights;
  for (size_t b = 0; b < works.size() && b < s.stats.bucket_launch_seconds.size(); ++b) {
    flights.push_back({s.stats.bucket_launch_seconds[b], works[b]->seconds()});
  }
  const AllReduceTime times = MeasureAllReduce(flights, backward_end);
  s.stats.allreduce_seconds = times.total;
  s.stats.exposed_allreduce_seconds = times.exposed;
  for (size_t i = 0; i < s.params.size(); ++i) s.ready[i] = true;  // late hooks: no-op
  // Every rank reaches this with its collectives done (or the communicator aborted, then no
  // rebuild): the broadcast happens on all ranks at the same step.
  if (s.rebuild_pending && first_error.ok()) {
    s.rebuild_pending = false;
    DDP_RETURN_IF_ERROR(s.RebuildInArrivalOrder());
  }
  if (!s.duplicate.ok()) return s.duplicate;
  return first_error;
}

void Reducer::Abandon() {
  State& s = *state_;
  Grave grave;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.abandoned) return;
    s.abandoned = true;
    s.RemoveHooks();
    for (at::Tensor& p : s.params) p.mutable_grad() = at::Tensor();
    grave.buffers = std::move(s.buffers);
    for (std::shared_ptr<Work>& w : s.works) {
      if (w) grave.works.push_back(std::move(w));
    }
    s.buffers.clear();
    s.views.clear();
    s.works.clear();
  }
  {
    std::lock_guard<std::mutex> lock(graveyard_mu);
    Graveyard().push_back(std::move(grave));
  }
  const size_t held = SweepAbandonedBuckets();
  DDP_LOG(INFO) << "reducer: abandoned; " << held << " bucket(s) wait for their collectives to stop";
}

Reducer::Stats Reducer::last_stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

const std::vector<BucketSpec>& Reducer::buckets() const { return state_->specs; }

}  // namespace ddp::worker
