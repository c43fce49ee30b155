// Checkpoint payload (de)serialization with torch archives.
#include "worker/train/train_state.h"

#include <algorithm>
#include <set>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "worker/train/checksum.h"

namespace ddp::worker {
namespace {

at::Tensor Scalar(int64_t v) { return at::scalar_tensor(v, at::kLong); }

int64_t ReadInt(torch::serialize::InputArchive& a, const char* key) {
  at::Tensor t;
  a.read(key, t);
  return t.item<int64_t>();
}

// Key of device i's CUDA generator state; "cuda_rng_count" says how many there are.
std::string CudaRngKey(int i) { return "cuda_rng_" + std::to_string(i); }

at::Generator CudaGenerator(int i) {
  const c10::Device device(c10::kCUDA, static_cast<c10::DeviceIndex>(i));
  return at::globalContext().defaultGenerator(device);
}

// The default generators' states: the CPU's and every visible CUDA device's (as
// torch.cuda.get_rng_state_all does). Through ATen's device-generic generator API, so this
// compiles and runs against a LibTorch without CUDA (then there are no CUDA generators).
void WriteRngStates(torch::serialize::OutputArchive& root) {
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    root.write("cpu_rng", gen.get_state());
  }
  const int n = VisibleCudaDevices();
  root.write("cuda_rng_count", Scalar(n));
  for (int i = 0; i < n; ++i) {
    auto gen = CudaGenerator(i);
    std::lock_guard<std::mutex> lock(gen.mutex());
    root.write(CudaRngKey(i), gen.get_state());
  }
}

struct RngStates {
  at::Tensor cpu;
  std::vector<at::Tensor> cuda;
};

// Reads what WriteRngStates wrote. A payload written before CUDA generators were saved has no
// "cuda_rng_count": it holds none. FailedPrecondition when the payload holds more CUDA
// generators than this process sees (their states would be lost, so a resumed run would not
// draw what the saved one would have).
StatusOr<RngStates> ReadRngStates(torch::serialize::InputArchive& root) {
  RngStates s;
  root.read("cpu_rng", s.cpu);
  at::Tensor count;
  const int64_t n = root.try_read("cuda_rng_count", count) ? count.item<int64_t>() : 0;
  const int visible = VisibleCudaDevices();
  if (n < 0 || n > visible) {
    return Status::FailedPrecondition(
        "the checkpoint holds the random generator states of " + std::to_string(n) +
        " CUDA device(s) but this process sees " + std::to_string(visible) +
        ". HINT: resume with at least as many GPUs visible to each worker process as the run "
        "that saved it");
  }
  for (int64_t i = 0; i < n; ++i) {
    at::Tensor t;
    root.read(CudaRngKey(static_cast<int>(i)), t);
    s.cuda.push_back(t.cpu());
  }
  return s;
}

Status Mismatch(const std::string& what) {
  return Status::FailedPrecondition(
      "the checkpoint was written by another model: " + what +
      ". HINT: resume with the model settings (model.*) of the run that wrote it, or use a new "
      "checkpoint directory for a new model");
}

// OK when `archive` (what Module::save wrote) holds exactly the parameters, buffers and
// submodules of `module` (names under `prefix`), each tensor with the module's shape. Else
// FailedPrecondition naming the first difference, in registration order. Reads only.
Status MatchModelArchive(const torch::nn::Module& module, torch::serialize::InputArchive& archive,
                         const std::string& prefix) {
  std::set<std::string> known;
  auto match = [&](const std::string& name, const at::Tensor& mine, bool buffer) -> Status {
    known.insert(name);
    at::Tensor saved;
    const char* kind = buffer ? "buffer " : "parameter ";
    if (!archive.try_read(name, saved, buffer)) {
      return Mismatch(kind + prefix + name + " " + ShapeText(mine) + " is missing from it");
    }
    if (saved.sizes() != mine.sizes()) {
      return Mismatch(kind + prefix + name + " has shape " + ShapeText(saved) +
                      " in the checkpoint and " + ShapeText(mine) + " in this model");
    }
    return Status::OK();
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    DDP_RETURN_IF_ERROR(match(p.key(), p.value(), false));
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false)) {
    DDP_RETURN_IF_ERROR(match(b.key(), b.value(), true));
  }
  for (const auto& child : module.named_children()) {
    known.insert(child.key());
    torch::serialize::InputArchive sub;
    if (!archive.try_read(child.key(), sub)) {
      return Mismatch("module " + prefix + child.key() + " is missing from it");
    }
    DDP_RETURN_IF_ERROR(MatchModelArchive(*child.value(), sub, prefix + child.key() + "."));
  }
  // What the archive holds beyond the module (its other attributes are not tensors).
  for (const std::string& key : archive.keys()) {
    if (known.count(key) > 0) continue;
    at::Tensor t;
    torch::serialize::InputArchive sub;
    if (archive.try_read(key, t)) {
      return Mismatch("parameter " + prefix + key + " " + ShapeText(t) + " is not in this model");
    }
    if (archive.try_read(key, sub)) {
      return Mismatch("module " + prefix + key + " is not in this model");
    }
  }
  return Status::OK();
}

void SetRngStates(const RngStates& s) {
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(s.cpu.cpu());
  }
  for (size_t i = 0; i < s.cuda.size(); ++i) {
    auto gen = CudaGenerator(static_cast<int>(i));
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(s.cuda[i]);
  }
}

void ReadProgress(torch::serialize::InputArchive& root, TrainProgress* progress) {
  progress->step = ReadInt(root, "step");
  progress->sampler.epoch = ReadInt(root, "epoch");
  progress->world_size = ReadInt(root, "world_size");
  at::Tensor global;
  progress->sampler_per_rank = !root.try_read("sampler_global_offset", global);
  progress->sampler.offset = progress->sampler_per_rank ? ReadInt(root, "sampler_offset")
                                                        : global.item<int64_t>();
}

}  // namespace

std::string ShapeText(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

void WriteProgressAndRng(torch::serialize::OutputArchive& root, const TrainProgress& progress) {
  root.write("step", Scalar(progress.step));
  root.write("epoch", Scalar(progress.sampler.epoch));
  // The per-rank offset an earlier worker reads (it resumes a few samples early, never late).
  root.write("sampler_offset", Scalar(progress.sampler.offset / std::max<int64_t>(1, progress.world_size)));
  root.write("sampler_global_offset", Scalar(progress.sampler.offset));
  root.write("world_size", Scalar(progress.world_size));
  WriteRngStates(root);
}

Status ReadProgressAndRng(torch::serialize::InputArchive& root, TrainProgress* progress) {
  StatusOr<RngStates> rng = ReadRngStates(root);
  if (!rng.ok()) return rng.status();
  TrainProgress read;
  ReadProgress(root, &read);
  SetRngStates(*rng);
  *progress = read;
  return Status::OK();
}

int VisibleCudaDevices() {
  return at::hasCUDA() ? static_cast<int>(at::detail::getCUDAHooks().getNumGPUs()) : 0;
}

StatusOr<std::string> SerializeTrainState(torch::nn::Module& model, torch::optim::Optimizer& opt,
                                          const TrainProgress& progress) {
  try {
    torch::serialize::OutputArchive root, model_ar, opt_ar;
    model.save(model_ar);
    opt.save(opt_ar);
    root.write("model", model_ar);
    root.write("optimizer", opt_ar);
    WriteProgressAndRng(root, progress);
    std::ostringstream out;
    root.save_to(out);
    return out.str();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("serialize checkpoint: ") + e.what());
  }
}

Status RestoreTrainState(const std::string& bytes, const c10::Device& device,
                         torch::nn::Module& model, torch::optim::Optimizer& opt,
                         TrainProgress* progress) {
  try {
    torch::serialize::InputArchive root, model_ar, opt_ar;
    std::istringstream in(bytes);
    root.load_from(in, device);
    // The generators first: a payload this process cannot restore leaves the model untouched.
    StatusOr<RngStates> rng = ReadRngStates(root);
    if (!rng.ok()) return rng.status();
    root.read("model", model_ar);
    root.read("optimizer", opt_ar);
    // Module::load takes a saved tensor of any shape; another model's would fail only later,
    // in the forward pass, as if it were a transient error.
    DDP_RETURN_IF_ERROR(MatchModelArchive(model, model_ar, ""));
    model.load(model_ar);
    opt.load(opt_ar);
    ReadProgress(root, progress);
    SetRngStates(*rng);
    return Status::OK();
  } catch (const std::exception& e) {
    std::string what = e.what();
    return Status::DataLoss("unreadable checkpoint payload: " + what.substr(0, what.find('\n')));
  }
}

std::string ParamChecksum(const torch::nn::Module& model) {
  uint64_t h = kFnvOffset;
  for (const auto& p : model.parameters()) {
    at::Tensor c = p.detach().to(at::kCPU).contiguous();
    h = Fnv1a64(c.data_ptr(), c.numel() * c.element_size(), h);
  }
  return HexU64(h);
}

}  // namespace ddp::worker
