// State transfer from the member at the latest committed step (see heal.h).
#include "worker/train/heal.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "worker/group/steps.h"
#include "worker/train/foreach_adamw.h"

namespace ddp::worker {
namespace {

// A heal's tensors go in chunks of about this many bytes (a bigger tensor alone): Gloo coalesces
// each chunk into one buffer (NCCL broadcasts in place), so a heal needs about this much memory
// beyond the state, or one tensor's size where that is more.

// One line per parameter and buffer, in registration order: what must match between members.
std::string Layout(const torch::nn::Module& model) {
  std::string out;
  auto line = [&](const char* kind, const std::string& name, const at::Tensor& t) {
    out += std::string(kind) + " " + name + " " + c10::toString(t.scalar_type()) + " " +
           ShapeText(t) + "\n";
  };
  for (const auto& p : model.named_parameters()) line("parameter", p.key(), p.value());
  for (const auto& b : model.named_buffers()) {
    if (b.value().defined()) line("buffer", b.key(), b.value());
  }
  return out;
}

// The first line where `there` and `here` differ, as "`a` there, `b` here".
std::string FirstDifference(const std::string& there, const std::string& here) {
  std::istringstream a(there), b(here);
  std::string la, lb;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "the same layout";
    if (!more_a) la = "nothing";
    if (!more_b) lb = "nothing";
    if (la != lb) return "`" + la + "` there, `" + lb + "` here";
  }
}

at::Tensor LongTensor(const std::vector<int64_t>& v) {
  return at::tensor(at::ArrayRef<int64_t>(v), at::kLong);
}

// What the source sends first: progress and generators, the layout, and per parameter (model
// order) its AdamW step count (-1: no state yet) and whether it keeps max_exp_avg_sq.
struct Header {
  std::string layout;
  std::vector<int64_t> adam_steps, adam_max;
};

std::string WriteHeader(torch::nn::Module& model, torch::optim::AdamW& opt,
                        const TrainProgress& progress) {
  torch::serialize::OutputArchive root;
  WriteProgressAndRng(root, progress);
  std::vector<int64_t> steps, max;
  for (const auto& p : model.parameters()) {
    const torch::optim::AdamWParamState* st = AdamWStateOf(opt, p);
    steps.push_back(st ? st->step() : -1);
    max.push_back(st && st->max_exp_avg_sq().defined() ? 1 : 0);
  }
  root.write("layout", c10::IValue(Layout(model)));
  root.write("adam_steps", LongTensor(steps));
  root.write("adam_max", LongTensor(max));
  std::ostringstream out;
  root.save_to(out);
  return out.str();
}

std::vector<int64_t> ReadLongs(torch::serialize::InputArchive& root, const char* key) {
  at::Tensor t;
  root.read(key, t);
  t = t.contiguous();
  return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()};
}

// Empty when the header fits this model and process; else why not.
std::string Check(torch::serialize::InputArchive& root, torch::nn::Module& model, Header* h) {
  c10::IValue layout;
  root.read("layout", layout);
  h->layout = layout.toStringRef();
  h->adam_steps = ReadLongs(root, "adam_steps");
  h->adam_max = ReadLongs(root, "adam_max");
  if (const std::string mine = Layout(model); h->layout != mine) {
    return "its model differs: " + FirstDifference(h->layout, mine) +
           ". HINT: every member of a job must run the same model settings (model.*)";
  }
  const size_t n = model.parameters().size();
  if (h->adam_steps.size() != n || h->adam_max.size() != n) {
    return "its optimizer state names " + std::to_string(h->adam_steps.size()) +
           " parameter(s), this model has " + std::to_string(n);
  }
  at::Tensor count;
  if (root.try_read("cuda_rng_count", count) && count.item<int64_t>() > VisibleCudaDevices()) {
    return "it holds the random generator states of " + std::to_string(count.item<int64_t>()) +
           " CUDA device(s), this process sees " + std::to_string(VisibleCudaDevices());
  }
  return "";
}

// Every member's list of the state's tensors, in the same order: parameters, buffers, then the
// moments of each parameter the source keeps state for (made here where this member has none).
std::vector<at::Tensor> StateTensors(torch::nn::Module& model, torch::optim::AdamW& opt,
                                     const Header& h) {
  std::vector<at::Tensor> ts;
  const auto params = model.parameters();
  for (const auto& p : params) ts.push_back(p.detach());
  for (const auto& b : model.buffers()) {
    if (b.defined()) ts.push_back(b.detach());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (h.adam_steps[i] < 0) continue;
    torch::optim::AdamWParamState* st = AdamWStateOf(opt, params[i], /*create=*/true, h.adam_max[i] > 0);
    ts.push_back(st->exp_avg());
    ts.push_back(st->exp_avg_sq());
    if (h.adam_max[i] > 0) {
      if (!st->max_exp_avg_sq().defined()) {
        st->max_exp_avg_sq(at::zeros_like(params[i], at::MemoryFormat::Preserve));
      }
      ts.push_back(st->max_exp_avg_sq());
    }
  }
  return ts;
}

Status BroadcastInChunks(Communicator* comm, std::vector<at::Tensor>& ts, int root,
                         int64_t chunk_bytes) {
  std::vector<at::Tensor> chunk;
  int64_t bytes = 0;
  auto flush = [&]() -> Status {
    if (chunk.empty()) return Status::OK();
    Status s = comm->Broadcast(chunk, root);
    chunk.clear();
    bytes = 0;
    return s;
  };
  for (const at::Tensor& t : ts) {
    const int64_t n = t.numel() * static_cast<int64_t>(t.element_size());
    if (bytes > 0 && bytes + n > chunk_bytes) DDP_RETURN_IF_ERROR(flush());
    chunk.push_back(t);
    bytes += n;
  }
  return flush();
}

}  // namespace

HealPlan PlanHeal(const std::vector<int64_t>& committed_steps) {
  const group::StepsSummary s = group::SummarizeSteps(committed_steps);
  return HealPlan{s.step, s.source, s.behind};
}

Status TransferState(Communicator* comm, const HealPlan& plan, int64_t my_step,
                     const c10::Device& device, torch::nn::Module& model,
                     torch::optim::AdamW& opt, TrainProgress* progress,
                     const HealOptions& options) {
  if (plan.step < 0 || plan.behind == 0) return Status::OK();
  const bool source = comm->rank() == plan.source;
  const bool receiver = my_step < plan.step;
  std::string bytes;
  if (source) {
    try {
      bytes = WriteHeader(model, opt, *progress);
    } catch (const std::exception& e) {
      return Status::Internal(std::string("heal: writing the state's header: ") + e.what());
    }
  }
  // 1. The header's size, so that receivers can allocate; 2. the header. Gloo broadcasts CPU
  // tensors and NCCL CUDA ones: the buffers live on the communicator's device.
  const auto on = at::TensorOptions().device(device);
  std::vector<at::Tensor> size{at::full({1}, static_cast<int64_t>(bytes.size()), on.dtype(at::kLong))};
  DDP_RETURN_IF_ERROR(comm->Broadcast(size, plan.source).WithContext("heal: header size"));
  const int64_t n = size[0].cpu().item<int64_t>();
  at::Tensor buf = at::empty({n}, at::TensorOptions().dtype(at::kByte));
  if (source) std::memcpy(buf.data_ptr(), bytes.data(), bytes.size());
  std::vector<at::Tensor> header{buf.to(device)};
  DDP_RETURN_IF_ERROR(comm->Broadcast(header, plan.source).WithContext("heal: header"));
  if (!source) {
    at::Tensor got = header[0].cpu().contiguous();
    bytes.assign(static_cast<const char*>(got.data_ptr()), static_cast<size_t>(n));
  }
  // 3. Whether every member can take the state: one that cannot (another model) would send or
  // receive tensors of other sizes, so all learn it before any tensor moves.
  torch::serialize::InputArchive root;
  Header h;
  std::string unfit;
  try {
    std::istringstream in(bytes);
    root.load_from(in, at::kCPU);
    unfit = Check(root, model, &h);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    unfit = "its header is unreadable: " + what.substr(0, what.find('\n'));
  }
  at::Tensor unfit_count = at::full({1}, unfit.empty() ? 0.0 : 1.0, on.dtype(at::kFloat));
  DDP_RETURN_IF_ERROR(comm->AllReduceSumAsync(unfit_count)->Wait().WithContext("heal: agreement"));
  const std::string from = "rank " + std::to_string(plan.source) + " at step " + std::to_string(plan.step);
  if (!unfit.empty()) return Status::DataLoss("heal: the state of " + from + " does not fit: " + unfit);
  if (unfit_count.cpu().item<float>() > 0) {
    return Status::Unavailable("heal: a member cannot take the state of " + from);
  }
  // 4. The tensors, in place. A receiver holds no usable state from the first one on, so it
  // reports none until the last arrived (it is never the source of a later heal half-written).
  std::vector<at::Tensor> ts = StateTensors(model, opt, h);
  if (receiver) progress->step = -1;
  if (Status s = BroadcastInChunks(comm, ts, plan.source, std::max<int64_t>(1, options.chunk_bytes));
      !s.ok()) {
    s = s.WithContext("heal: state of " + from);
    if (!receiver) return s;
    // Cut off: some tensors are the source's, the rest this member's own. Back to a known state.
    opt.state().clear();
    if (!options.reset) return s;
    if (Status r = options.reset(); !r.ok()) {
      return Status::Internal(s.message() + "; resetting the model after it: " + r.ToString());
    }
    return s;
  }
  if (!receiver) return Status::OK();
  const auto params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (h.adam_steps[i] < 0) {
      EraseAdamWState(opt, params[i]);
    } else {
      AdamWStateOf(opt, params[i])->step(h.adam_steps[i]);
    }
  }
  try {
    return ReadProgressAndRng(root, progress).WithContext("heal: restoring the state of " + from);
  } catch (const std::exception& e) {
    return Status::DataLoss(std::string("heal: restoring the progress of ") + from + ": " + e.what());
  }
}

}  // namespace ddp::worker
