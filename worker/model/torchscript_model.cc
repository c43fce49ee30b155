// TorchScript models: loading, parameter registration and the (idx, targets) forward contract.
#include "worker/model/torchscript_model.h"

#include <fstream>

#include <torch/nn/functional/loss.h>

namespace ddp::worker {
namespace {

std::string ModuleName(const std::string& script_name) {
  std::string out;
  for (char c : script_name) {
    if (c == '.') out += "__";
    else out += c;
  }
  return out;
}

}  // namespace

StatusOr<std::shared_ptr<TorchScriptModel>> TorchScriptModel::Load(const std::string& path) {
  if (!std::ifstream(path, std::ios::binary)) {
    return Status::NotFound("model.file " + path + " cannot be opened");
  }
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, c10::Device(c10::kCPU));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return Status::InvalidArgument("model.file " + path + " is not a TorchScript module: " +
                                   what.substr(0, what.find('\n')) +
                                   ". HINT: save it with torch.jit.save(torch.jit.script(model), path)");
  }
  if (!module.find_method("forward")) {
    return Status::InvalidArgument("model.file " + path + " has no forward(idx, targets) method");
  }
  return std::shared_ptr<TorchScriptModel>(new TorchScriptModel(std::move(module)));
}

TorchScriptModel::TorchScriptModel(torch::jit::Module module) : module_(std::move(module)) {
  module_.train(true);
  for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
    register_parameter(ModuleName(p.name), p.value, p.value.requires_grad());
  }
  for (const auto& b : module_.named_buffers(/*recurse=*/true)) {
    register_buffer(ModuleName(b.name), b.value);
  }
}

torch::Tensor TorchScriptModel::Loss(const torch::Tensor& x, const torch::Tensor& y) {
  torch::Tensor out = module_.forward({x, y}).toTensor();
  if (out.dim() == 0) return out.to(at::kFloat);
  return torch::nn::functional::cross_entropy(out.reshape({-1, out.size(-1)}).to(at::kFloat),
                                              y.reshape({-1}));
}

double TorchScriptModel::TrainFlopsPerToken() const {
  return 6.0 * static_cast<double>(CountParameters(*this));
}

}  // namespace ddp::worker
