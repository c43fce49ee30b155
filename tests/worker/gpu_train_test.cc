// The training step's pieces on a CUDA device, in process (label gpu): bf16 autocast over fp32
// master weights, ForeachAdamW's multi-tensor kernels against LibTorch's AdamW, and a train state
// saved from and restored onto the GPU. Each test skips without a device.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include "worker/train/autocast.h"
#include "worker/train/foreach_adamw.h"
#include "worker/train/train_state.h"

namespace ddp::worker {
namespace {

#define SKIP_WITHOUT_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)"

const at::TensorOptions kCuda = at::TensorOptions().device(at::kCUDA, 0);

torch::nn::Linear CudaLinear(int64_t in, int64_t out, uint64_t seed) {
  torch::manual_seed(seed);
  torch::nn::Linear lin(in, out);
  lin->to(at::Device(at::kCUDA, 0));
  return lin;
}

// One step of sum((Wx+b)^2) on `x`, gradients zeroed first.
// Whether `key` is p's in Optimizer::state(): its TensorImpl's address, printed (LibTorch 1.13)
// or not (2.x).
template <typename Key>
bool IsKeyOf(const Key& key, const at::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream addr;
    addr << p.unsafeGetTensorImpl();
    return key == addr.str();
  } else {
    return static_cast<const void*>(key) == static_cast<const void*>(p.unsafeGetTensorImpl());
  }
}
const torch::optim::AdamWParamState* StateOf(const torch::optim::Optimizer& o, const at::Tensor& p) {
  for (const auto& [key, st] : o.state()) {
    if (IsKeyOf(key, p)) return static_cast<const torch::optim::AdamWParamState*>(st.get());
  }
  return nullptr;
}

void Step(torch::nn::Linear& lin, torch::optim::Optimizer& opt, const at::Tensor& x) {
  opt.zero_grad();
  lin->forward(x).pow(2).sum().backward();
  opt.step();
}

// Under autocast the matmul runs in bf16, yet the weights, their gradients and the optimizer's
// update stay fp32: an update far below bf16's resolution still lands in the master copy.
TEST(WorkerGpuTrain, Bf16AutocastKeepsAnFp32MasterCopy) {
  SKIP_WITHOUT_CUDA();
  torch::nn::Linear lin = CudaLinear(64, 64, 1);
  {
    torch::NoGradGuard no_grad;
    lin->weight.fill_(1.0);
    lin->bias.zero_();
  }
  const double lr = 1e-4;  // bf16 spaces values near 1.0 by 2^-7; fp32 by 2^-23
  ForeachAdamW opt(lin->parameters(), torch::optim::AdamWOptions(lr).weight_decay(0.0));
  at::Tensor x = at::randn({32, 64}, kCuda);
  at::Tensor y;
  {
    BF16Autocast autocast(true);
    y = lin->forward(x);
  }
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  EXPECT_EQ(lin->forward(x).scalar_type(), at::kFloat) << "autocast leaked past its scope";
  y.to(at::kFloat).pow(2).sum().backward();
  ASSERT_EQ(lin->weight.scalar_type(), at::kFloat);
  ASSERT_EQ(lin->weight.grad().scalar_type(), at::kFloat);
  const at::Tensor g = lin->weight.grad().clone();
  opt.step();
  // First AdamW step, no decay: m^ = g, v^ = g^2, so w -= lr * g / (|g| + eps) = lr * sign(g).
  const at::Tensor want = 1.0 - lr * g / (g.abs() + 1e-8);
  EXPECT_TRUE(at::allclose(lin->weight, want, /*rtol=*/0, /*atol=*/1e-6))
      << (lin->weight - want).abs().max().item<double>();
  EXPECT_GT((lin->weight - 1.0).abs().min().item<double>(), lr / 2);  // every weight moved
  // Rounded to bf16, every weight is still exactly 1: a bf16 master copy would have lost it.
  EXPECT_TRUE(at::equal(lin->weight.to(at::kBFloat16).to(at::kFloat), at::ones_like(lin->weight)));
}

// ForeachAdamW's _foreach_* kernels against LibTorch's per-tensor AdamW on the same GPU: the same
// arithmetic (to float rounding: a fused multi-tensor kernel may contract differently).
TEST(WorkerGpuTrain, ForeachAdamWMatchesLibTorchAdamWOnCuda) {
  SKIP_WITHOUT_CUDA();
  torch::nn::Linear a = CudaLinear(96, 48, 7), b = CudaLinear(96, 48, 7);
  ASSERT_TRUE(at::equal(a->weight, b->weight));
  auto options = torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).weight_decay(0.1);
  ForeachAdamW fa(a->parameters(), options);
  torch::optim::AdamW ta(b->parameters(), options);
  for (int i = 0; i < 5; ++i) {
    at::Tensor x = at::randn({16, 96}, kCuda);
    Step(a, fa, x);
    Step(b, ta, x);
  }
  EXPECT_TRUE(at::allclose(a->weight, b->weight, 1e-5, 1e-6))
      << (a->weight - b->weight).abs().max().item<double>();
  EXPECT_TRUE(at::allclose(a->bias, b->bias, 1e-5, 1e-6));
  EXPECT_FALSE(at::equal(a->weight, CudaLinear(96, 48, 7)->weight)) << "nothing was trained";
}

// A state serialized from the GPU and restored onto the GPU into a differently initialised
// replica: parameters and AdamW moments are bit-identical and on the device, and the next
// identical step keeps them so.
TEST(WorkerGpuTrain, TrainStateSavedOnGpuResumesBitIdentical) {
  SKIP_WITHOUT_CUDA();
  torch::nn::Linear a = CudaLinear(32, 16, 3);
  ForeachAdamW oa(a->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  for (int i = 0; i < 3; ++i) Step(a, oa, at::randn({8, 32}, kCuda));
  TrainProgress p;
  p.step = 3;
  auto bytes = SerializeTrainState(*a, oa, p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();

  torch::nn::Linear b = CudaLinear(32, 16, 99);
  ForeachAdamW ob(b->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  TrainProgress got;
  ASSERT_TRUE(RestoreTrainState(*bytes, at::Device(at::kCUDA, 0), *b, ob, &got).ok());
  EXPECT_EQ(got.step, 3);
  const std::vector<at::Tensor> params_a = a->parameters(), params_b = b->parameters();
  for (size_t i = 0; i < params_a.size(); ++i) {
    const at::Tensor& pa = params_a[i];
    const at::Tensor& pb = params_b[i];
    EXPECT_TRUE(pb.is_cuda());
    EXPECT_TRUE(at::equal(pa, pb)) << "parameter " << i;
    const auto* sa = StateOf(oa, pa);
    const auto* sb = StateOf(ob, pb);
    ASSERT_TRUE(sa != nullptr && sb != nullptr) << "parameter " << i << " has state on both";
    EXPECT_EQ(sa->step(), sb->step());
    EXPECT_TRUE(sb->exp_avg().is_cuda());
    EXPECT_TRUE(at::equal(sa->exp_avg(), sb->exp_avg())) << "exp_avg " << i;
    EXPECT_TRUE(at::equal(sa->exp_avg_sq(), sb->exp_avg_sq())) << "exp_avg_sq " << i;
  }
  at::Tensor x = at::randn({8, 32}, kCuda);
  Step(a, oa, x);
  Step(b, ob, x);
  EXPECT_TRUE(at::equal(a->weight, b->weight));
  EXPECT_EQ(ParamChecksum(*a), ParamChecksum(*b));
}

}  // namespace
}  // namespace ddp::worker
