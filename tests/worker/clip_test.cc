// ClipGradNorm against the closed form and against LibTorch's own clip_grad_norm_.
#include "worker/train/clip.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>

#include <cmath>

namespace ddp::worker {
namespace {

// A parameter whose .grad is `grad`.
at::Tensor WithGrad(at::Tensor grad) {
  at::Tensor p = at::zeros_like(grad).requires_grad_(true);
  p.mutable_grad() = std::move(grad);
  return p;
}

TEST(ClipGradNormTest, ScalesToTheMaxNormAndReturnsTheNormBefore) {
  // Norm of {3, 4} and {12}: sqrt(9 + 16 + 144) = 13.
  std::vector<at::Tensor> params = {WithGrad(at::tensor({3.0f, 4.0f})), WithGrad(at::tensor({12.0f})),
                                    at::zeros({2}).requires_grad_(true)};  // no grad: skipped
  at::Tensor norm = ClipGradNorm(params, 1.3);
  EXPECT_FLOAT_EQ(norm.item<float>(), 13.0f);
  const float coef = static_cast<float>(1.3 / (13.0 + 1e-6));
  EXPECT_FLOAT_EQ(params[0].grad()[0].item<float>(), 3.0f * coef);
  EXPECT_FLOAT_EQ(params[0].grad()[1].item<float>(), 4.0f * coef);
  EXPECT_FLOAT_EQ(params[1].grad()[0].item<float>(), 12.0f * coef);
  EXPECT_FALSE(params[2].grad().defined());
}

TEST(ClipGradNormTest, BelowTheMaxNormLeavesTheGradientsAlone) {
  std::vector<at::Tensor> params = {WithGrad(at::tensor({0.3f, 0.4f}))};
  EXPECT_FLOAT_EQ(ClipGradNorm(params, 1.0).item<float>(), 0.5f);
  EXPECT_TRUE(at::equal(params[0].grad(), at::tensor({0.3f, 0.4f})));
  EXPECT_FLOAT_EQ(ClipGradNorm({at::zeros({3}).requires_grad_(true)}, 1.0).item<float>(), 0.0f);
}

// Same gradients, LibTorch's clip_grad_norm_ (which reads the norm on the host) on a copy: the
// same norm and the same clipped gradients, to float rounding.
TEST(ClipGradNormTest, MatchesLibTorchsClipGradNorm) {
  at::manual_seed(7);
  std::vector<at::Tensor> ours, theirs;
  for (auto shape : std::vector<std::vector<int64_t>>{{64, 32}, {32}, {7, 5, 3}, {1}}) {
    at::Tensor g = at::randn(shape) * 3;
    ours.push_back(WithGrad(g.clone()));
    theirs.push_back(WithGrad(g.clone()));
  }
  const double want = torch::nn::utils::clip_grad_norm_(theirs, 2.5);
  EXPECT_NEAR(ClipGradNorm(ours, 2.5).item<double>(), want, want * 1e-6);
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_TRUE(at::allclose(ours[i].grad(), theirs[i].grad(), 1e-6, 1e-7)) << "parameter " << i;
  }
}

}  // namespace
}  // namespace ddp::worker
