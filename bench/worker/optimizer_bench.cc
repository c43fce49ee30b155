// The optimizer step on its own: LibTorch's AdamW and clip_grad_norm_ (the peer) against
// ForeachAdamW and ClipGradNorm, on the parameter shapes of a GPT (minGPT layout: per layer
// two LayerNorms, qkv, attention and MLP projections with biases; tied embedding), in one
// process, alternating. Prints ms per step for each and the ratio.
//
//   optimizer_bench [--layers L] [--embd C] [--vocab V] [--block T] [--steps N] [--device cpu|cuda]
//                   [--part both|clip|adamw]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "worker/train/clip.h"
#include "worker/train/foreach_adamw.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::vector<int64_t>> GptShapes(int64_t layers, int64_t c, int64_t vocab, int64_t t) {
  std::vector<std::vector<int64_t>> s = {{vocab, c}, {t, c}};
  for (int64_t l = 0; l < layers; ++l) {
    for (auto shape : std::vector<std::vector<int64_t>>{{c}, {c}, {3 * c, c}, {3 * c}, {c, c}, {c},
                                                         {c}, {c}, {4 * c, c}, {4 * c}, {c, 4 * c}, {c}}) {
      s.push_back(shape);
    }
  }
  s.push_back({c});
  s.push_back({c});
  return s;
}

struct Setup {
  std::vector<at::Tensor> params;
  std::unique_ptr<torch::optim::AdamW> opt;
};

template <typename Opt>
Setup Make(const std::vector<std::vector<int64_t>>& shapes, const at::Device& device) {
  Setup s;
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& shape : shapes) {
    at::Tensor p = at::randn(shape, at::TensorOptions().device(device)).requires_grad_(true);
    p.mutable_grad() = at::randn(shape, at::TensorOptions().device(device)) * 1e-2;
    (p.dim() >= 2 ? decay : no_decay).push_back(p);
    s.params.push_back(p);
  }
  auto opts = [](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(6e-4).betas({0.9, 0.95}).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, opts(0.1));
  groups.emplace_back(no_decay, opts(0.0));
  s.opt = std::make_unique<Opt>(std::move(groups), torch::optim::AdamWOptions(6e-4));
  return s;
}

void Sync(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t layers = 4, embd = 128, vocab = 32, block = 64, steps = 50;
  std::string dev = "cpu", part = "both";
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "optimizer_bench: %s needs a value\n", argv[i]);
      return 2;
    }
    const char* v = argv[i + 1];
    if (flag == "--layers") layers = std::atoll(v);
    else if (flag == "--embd") embd = std::atoll(v);
    else if (flag == "--vocab") vocab = std::atoll(v);
    else if (flag == "--block") block = std::atoll(v);
    else if (flag == "--steps") steps = std::atoll(v);
    else if (flag == "--device") dev = v;
    else if (flag == "--part") part = v;
    else {
      std::fprintf(stderr, "optimizer_bench: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (layers < 1 || embd < 1 || vocab < 1 || block < 1 || steps < 1) {
    std::fprintf(stderr, "optimizer_bench: --layers, --embd, --vocab, --block and --steps must be >= 1\n");
    return 2;
  }
  if (part != "both" && part != "clip" && part != "adamw") {
    std::fprintf(stderr, "optimizer_bench: --part must be both, clip or adamw (got %s)\n", part.c_str());
    return 2;
  }
  at::set_num_threads(1);
  const at::Device device(dev);
  const auto shapes = GptShapes(layers, embd, vocab, block);
  int64_t numel = 0;
  for (const auto& s : shapes) numel += at::prod(at::tensor(s)).item<int64_t>();
  at::manual_seed(1);
  Setup base = Make<torch::optim::AdamW>(shapes, device);
  at::manual_seed(1);
  Setup ours = Make<ddp::worker::ForeachAdamW>(shapes, device);
  std::vector<double> t_base, t_ours;
  for (int64_t i = 0; i < steps; ++i) {
    for (int side = 0; side < 2; ++side) {  // alternate which goes first
      const bool base_turn = (side == 0) == (i % 2 == 0);
      Setup& s = base_turn ? base : ours;
      Sync(device);
      const auto t0 = Clock::now();
      if (part != "adamw") {
        if (base_turn) {
          torch::nn::utils::clip_grad_norm_(s.params, 1.0);
        } else {
          ddp::worker::ClipGradNorm(s.params, 1.0);
        }
      }
      if (part != "clip") s.opt->step();
      Sync(device);
      (base_turn ? t_base : t_ours).push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
  }
  bool same = true;
  for (size_t i = 0; i < base.params.size(); ++i) {
    same = same && at::allclose(base.params[i], ours.params[i], 1e-5, 1e-6);
  }
  auto median = [](std::vector<double> v) {
    v.erase(v.begin(), v.begin() + std::min<size_t>(v.size() / 5, 5));  // warm-up
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double b = median(t_base), o = median(t_ours);
  std::printf("# %zu parameter tensors, %lld parameters, %s, %lld steps each, part %s\n",
              shapes.size(), static_cast<long long>(numel), device.str().c_str(),
              static_cast<long long>(steps), part.c_str());
  std::printf("LibTorch (AdamW, clip_grad_norm_): %.3f ms/step\n", b * 1e3);
  std::printf("ours (ForeachAdamW, ClipGradNorm): %.3f ms/step\n", o * 1e3);
  std::printf("ratio LibTorch / ours (> 1: ours faster): %.2f; same parameters: %s\n", b / o,
              same ? "yes" : "NO");
  return same ? 0 : 1;
}
