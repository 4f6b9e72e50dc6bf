// Launches of the optimizer updates' device code (kernels/training.cu). Plain C++ over raw device
// pointers, free of the SDK (nvcc compiles this header).
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_TRAINING_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_TRAINING_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cfx::cuda {

enum class ApplyRule : int32_t { kGradientDescent, kMomentum, kAdam, kRMSProp };

inline constexpr int kMaxApplyVariables = 3;
inline constexpr int kMaxApplyScalars = 6;

// One update of n (>= 1) float elements in place. `variables` are var and its slots, `scalars`
// the hyper-parameters (device scalars), both in the op's input order:
//   kGradientDescent  var                 alpha
//   kMomentum         var, accum          lr, momentum
//   kAdam             var, m, v           beta1_power, beta2_power, lr, beta1, beta2, epsilon
//   kRMSProp          var, ms, mom        lr, rho, momentum, epsilon
// The formulas are TensorFlow's (and the CPU kernels'); see training.cu.
struct ApplyArgs {
  ApplyRule rule = ApplyRule::kGradientDescent;
  bool nesterov = false;  // Momentum and Adam
  float* variables[kMaxApplyVariables] = {};
  const float* scalars[kMaxApplyScalars] = {};
  const float* grad = nullptr;
  int64_t n = 0;
};

// Enqueues the update; cudaErrorInvalidValue when a pointer the rule uses is null or n < 1.
cudaError_t LaunchApply(const ApplyArgs& args, cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_TRAINING_LAUNCH_H_
