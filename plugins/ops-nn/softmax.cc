// Softmax and LogSoftmax over the last dimension, with TensorFlow's op definitions.
//
// Each row is computed from its maximum (exp(x - max) never overflows; the largest term is 1, so
// the sum is >= 1 and its log is finite): softmax = exp(x - max) / sum, log_softmax = x - max -
// log(sum). Rows are independent and spread over the device's intra-op pool. Float softmax takes
// its exponentials from a vectorized loop (ExpOfNonPositive); the C library's expf, one element
// at a time, took most of a transformer's Softmax time.
//
// Why a loop rather than oneDNN's softmax primitive: this plugin is built on plugin-api/ alone
// and has no say over oneDNN's threading (the CPU plugin owns the OpenMP pool setup); a row-wise
// loop on ctx.ParallelFor uses the configured intra-op threads and vectorizes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "conflux/sdk/shape_rules.h"
#include "nn_ops.h"

namespace cfx::nn {
namespace {

using shape_rules::ShapeStr;

sdk::Status CheckLogitsRank(int rank, const sdk::Shape& dims) {
  if (rank < 1)
    return sdk::InvalidArgument("logits must have rank >= 1 (softmax runs over the last ",
                                "dimension), got shape ", ShapeStr(dims));
  return sdk::Status();
}

sdk::Status SoftmaxShape(sdk::ShapeContext& c) {
  sdk::PartialShape logits = c.input(0);
  if (!logits.unknown_rank)
    CFX_SDK_RETURN_IF_ERROR(CheckLogitsRank(static_cast<int>(logits.dims.size()), logits.dims));
  c.set_output(0, logits);
  return sdk::Status();
}

// e^x for x <= 0 or NaN (a logit less its row's maximum), branch-free so that a loop of it
// vectorizes: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so that n ln2 is exact
// enough), e^r = 1 + r + r^2 q(r) with q a degree-5 fit of (e^r - 1 - r) / r^2, and 2^n from the
// exponent bits. Within 2 ulp of the C library's expf down to -87, where e^x nears the smallest
// normal float; below it (and for -inf) 0. NaN stays NaN.
inline float ExpOfNonPositive(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
  constexpr float kRoundingShift = 12582912.0f;  // + and - 1.5 * 2^23 rounds to an integer
  constexpr float kLowest = -87.0f;
  const float clamped = x < kLowest ? kLowest : x;
  const float shifted = clamped * kLog2e + kRoundingShift;
  const float n = shifted - kRoundingShift;
  const float r = (clamped - n * kLn2High) - n * kLn2Low;
  float q = 0.00019906176021322608f;
  q = q * r + 0.0013938960619270802f;
  q = q * r + 0.008333289995789528f;
  q = q * r + 0.041666414588689804f;
  q = q * r + 0.1666666716337204f;
  q = q * r + 0.5f;
  const float e_r = (q * r) * r + r + 1.0f;
  // The low bits of `shifted` hold n + 2^22; n + 127 in the exponent field is 2^n.
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  const uint32_t scale_bits = (bits - 0x4B400000u + 127u) << 23;
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return x < kLowest ? 0.0f : e_r * scale;
}

// y[k] = e^(x[k] - max), compiled for AVX-512, AVX2 and the baseline, the widest the CPU has
// chosen when the plugin loads.
__attribute__((target_clones("avx512f", "avx2", "default"))) void ShiftedExp(const float* x,
                                                                             float max, float* y,
                                                                             int64_t n) {
  for (int64_t k = 0; k < n; ++k) y[k] = ExpOfNonPositive(x[k] - max);
}

template <typename T>
void SoftmaxRow(const T* x, T* y, int64_t n, bool log) {
  T max = x[0];
  for (int64_t k = 1; k < n; ++k) max = std::max(max, x[k]);
  T sum(0);
  if (log) {
    for (int64_t k = 0; k < n; ++k) sum += std::exp(x[k] - max);
    const T shift = max + std::log(sum);
    for (int64_t k = 0; k < n; ++k) y[k] = x[k] - shift;
    return;
  }
  // y may alias x (a forwarded input): each y[k] is written after x[k] was last read.
  if constexpr (std::is_same_v<T, float>) {
    ShiftedExp(x, max, y, n);
    for (int64_t k = 0; k < n; ++k) sum += y[k];
  } else {
    for (int64_t k = 0; k < n; ++k) {
      y[k] = std::exp(x[k] - max);
      sum += y[k];
    }
  }
  const T scale = T(1) / sum;
  for (int64_t k = 0; k < n; ++k) y[k] *= scale;
}

template <typename T, bool Log>
class SoftmaxKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor logits = ctx.input(0);
    const sdk::Shape shape = logits.shape();
    CFX_SDK_RETURN_IF_ERROR(CheckLogitsRank(logits.rank(), shape));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, shape));
    const int64_t n = shape.back();
    if (n == 0) return sdk::Status();
    const int64_t rows = logits.num_elements() / n;
    const T* x = logits.data<T>();
    T* y = out.data<T>();
    // About 20 cycles per element: a max, an exp and a scale.
    ctx.ParallelFor(rows, 20 * n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) SoftmaxRow<T>(x + r * n, y + r * n, n, Log);
    });
    return sdk::Status();
  }
};

template <typename T>
using Softmax = SoftmaxKernel<T, false>;
template <typename T>
using LogSoftmax = SoftmaxKernel<T, true>;

}  // namespace

void RegisterSoftmaxOps(sdk::Plugin& p) {
  p.Op("Softmax")
      .Input("logits: T")
      .Output("softmax: T")
      .Attr("T: {half, bfloat16, float, double}")
      .ShapeFn<&SoftmaxShape>();
  p.Op("LogSoftmax")
      .Input("logits: T")
      .Output("logsoftmax: T")
      .Attr("T: {half, bfloat16, float, double}")
      .ShapeFn<&SoftmaxShape>();
  p.Kernel<Softmax<float>>("Softmax", "CPU").TypeConstraint<float>("T");
  p.Kernel<Softmax<double>>("Softmax", "CPU").TypeConstraint<double>("T");
  p.Kernel<LogSoftmax<float>>("LogSoftmax", "CPU").TypeConstraint<float>("T");
  p.Kernel<LogSoftmax<double>>("LogSoftmax", "CPU").TypeConstraint<double>("T");
}

}  // namespace cfx::nn
