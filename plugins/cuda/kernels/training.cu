// Device code of the optimizer updates (kernels/training_launch.h): one kernel, the rule a
// uniform switch, each element read once and written once. The hyper-parameters are device
// scalars read by every thread (one cached load each), so that no step waits to bring them to
// the host. Expressions are grouped as in the CPU kernels (plugins/cpu/kernels/training.cc).
#include <cmath>
#include <cstdint>

#include "kernels/training_launch.h"

namespace cfx::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535 * 8;  // grid-stride beyond

int NumVariables(ApplyRule rule) {
  switch (rule) {
    case ApplyRule::kGradientDescent:
      return 1;
    case ApplyRule::kMomentum:
      return 2;
    case ApplyRule::kAdam:
    case ApplyRule::kRMSProp:
      return 3;
  }
  return kMaxApplyVariables + 1;
}
int NumScalars(ApplyRule rule) {
  switch (rule) {
    case ApplyRule::kGradientDescent:
      return 1;
    case ApplyRule::kMomentum:
      return 2;
    case ApplyRule::kAdam:
      return 6;
    case ApplyRule::kRMSProp:
      return 4;
  }
  return kMaxApplyScalars + 1;
}

__global__ void ApplyKernel(ApplyArgs a) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const float* g = a.grad;
  switch (a.rule) {
    case ApplyRule::kGradientDescent: {
      // var -= alpha * delta
      float* var = a.variables[0];
      const float alpha = *a.scalars[0];
      for (int64_t i = first; i < a.n; i += stride) var[i] -= alpha * g[i];
      break;
    }
    case ApplyRule::kMomentum: {
      // accum = accum * momentum + grad;
      // var -= lr * accum, or with Nesterov var -= grad * lr + accum * momentum * lr.
      float *var = a.variables[0], *accum = a.variables[1];
      const float lr = *a.scalars[0], momentum = *a.scalars[1];
      for (int64_t i = first; i < a.n; i += stride) {
        const float acc = accum[i] * momentum + g[i];
        accum[i] = acc;
        var[i] -= a.nesterov ? g[i] * lr + acc * momentum * lr : acc * lr;
      }
      break;
    }
    case ApplyRule::kAdam: {
      // lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
      // m += (grad - m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2);
      // var -= m * lr_t / (sqrt(v) + epsilon), or with Nesterov
      // var -= (grad * (1 - beta1) + beta1 * m) * lr_t / (sqrt(v) + epsilon).
      float *var = a.variables[0], *m = a.variables[1], *v = a.variables[2];
      const float beta1_power = *a.scalars[0], beta2_power = *a.scalars[1], lr = *a.scalars[2],
                  beta1 = *a.scalars[3], beta2 = *a.scalars[4], epsilon = *a.scalars[5];
      const float lr_t = lr * sqrtf(1.0f - beta2_power) / (1.0f - beta1_power);
      const float one_minus_beta1 = 1.0f - beta1, one_minus_beta2 = 1.0f - beta2;
      for (int64_t i = first; i < a.n; i += stride) {
        const float grad = g[i];
        const float m_new = m[i] + (grad - m[i]) * one_minus_beta1;
        const float v_new = v[i] + (grad * grad - v[i]) * one_minus_beta2;
        m[i] = m_new;
        v[i] = v_new;
        const float step = a.nesterov ? grad * one_minus_beta1 + beta1 * m_new : m_new;
        var[i] -= step * lr_t / (sqrtf(v_new) + epsilon);
      }
      break;
    }
    case ApplyRule::kRMSProp: {
      // ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms + epsilon);
      // var -= mom.
      float *var = a.variables[0], *ms = a.variables[1], *mom = a.variables[2];
      const float lr = *a.scalars[0], rho = *a.scalars[1], momentum = *a.scalars[2],
                  epsilon = *a.scalars[3];
      const float one_minus_rho = 1.0f - rho;
      for (int64_t i = first; i < a.n; i += stride) {
        const float grad = g[i];
        const float ms_new = ms[i] + (grad * grad - ms[i]) * one_minus_rho;
        const float mom_new = mom[i] * momentum + grad * lr / sqrtf(ms_new + epsilon);
        ms[i] = ms_new;
        mom[i] = mom_new;
        var[i] -= mom_new;
      }
      break;
    }
  }
}

}  // namespace

cudaError_t LaunchApply(const ApplyArgs& a, cudaStream_t stream) {
  const int vars = NumVariables(a.rule), scalars = NumScalars(a.rule);
  if (a.n < 1 || a.grad == nullptr || vars > kMaxApplyVariables || scalars > kMaxApplyScalars)
    return cudaErrorInvalidValue;
  for (int k = 0; k < vars; ++k)
    if (a.variables[k] == nullptr) return cudaErrorInvalidValue;
  for (int k = 0; k < scalars; ++k)
    if (a.scalars[k] == nullptr) return cudaErrorInvalidValue;
  const int64_t blocks = (a.n + kThreads - 1) / kThreads;
  ApplyKernel<<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0,
                stream>>>(a);
  return cudaGetLastError();
}

}  // namespace cfx::cuda
