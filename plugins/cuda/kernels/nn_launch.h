// Launches of the nn device code (kernels/nn.cu): Softmax, LogSoftmax and the softmax cross
// entropies, row by row. Plain C++ over raw device pointers, free of the SDK (nvcc compiles
// this header). BiasAddGrad and L2Loss are reductions (kernels/reduction_launch.h).
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_NN_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_NN_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cfx::cuda {

enum class SoftmaxMode : int32_t {
  kSoftmax,            // y = exp(x - max) / sum
  kLogSoftmax,         // y = x - max - log(sum)
  kCrossEntropy,       // loss = log(sum) * sum(l) - sum(l * (x - max)); y = softmax - l
  kSparseCrossEntropy  // loss = log(sum) - (x[label] - max); y = softmax - onehot(label)
};

// Rows of `cols` (>= 1) elements; element (r, k) of x is x[r * x_row_step + k * x_col_step] (a
// step of 0 broadcasts), as are dense labels. `y` is [rows, cols] row-major and may be x itself
// when x is the whole matrix (each y element is written after its x element was last read);
// `loss` is [rows] (cross entropies). Sparse labels are int64 in [0, cols), checked by the caller.
struct SoftmaxArgs {
  SoftmaxMode mode = SoftmaxMode::kSoftmax;
  int64_t rows = 0;
  int64_t cols = 0;
  const float* x = nullptr;
  int64_t x_row_step = 0;
  int64_t x_col_step = 1;
  const float* labels = nullptr;
  int64_t labels_row_step = 0;
  int64_t labels_col_step = 1;
  const int64_t* sparse_labels = nullptr;
  float* y = nullptr;
  float* loss = nullptr;
};

// A warp per row up to this many columns, a block per row beyond.
inline constexpr int64_t kSoftmaxWarpMaxCols = 1024;

// Enqueues the rows' computation (rows >= 1, cols >= 1); cudaErrorInvalidValue for bad args.
cudaError_t LaunchSoftmax(const SoftmaxArgs& args, cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_NN_LAUNCH_H_
