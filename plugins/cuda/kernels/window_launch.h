// Launches of the device code of the window ops (kernels/window.cu): the pools and their
// gradients, and the copy of an NHWC image into a larger zero-padded one (and back) that lets
// cuDNN, whose convolutions pad symmetrically, run TensorFlow's asymmetric paddings. Plain C++
// over raw float pointers, free of the SDK; each returns the launch's error.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_WINDOW_LAUNCH_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_WINDOW_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cfx::cuda {

// One pooling window geometry over NHWC images [n, in_h, in_w, c] -> [n, out_h, out_w, c]:
// output (oh, ow) covers input rows oh * stride_h - pad_h + [0, kernel_h), clipped to the image
// (and columns likewise). Every window holds at least one input element.
struct PoolWindow {
  int64_t n = 0, c = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
};

enum class PoolFn : int32_t { kMax, kAvg };

// y = the window's maximum (starting from the lowest float; a NaN never wins) or mean over its
// real elements, per output element. Needs out_h * out_w * n * c > 0.
cudaError_t LaunchPool(PoolFn fn, const PoolWindow& w, const float* x, float* y,
                       cudaStream_t stream);

// MaxPoolGrad: dx[i] = the sum, over the windows whose first maximum (row-major scan; a NaN first
// element stays the choice) is input element i, of that window's dy, added in output order.
// Needs n * in_h * in_w * c > 0.
cudaError_t LaunchMaxPoolGrad(const PoolWindow& w, const float* x, const float* dy, float* dx,
                              cudaStream_t stream);

// AvgPoolGrad: dx[i] = the sum, over the windows holding input element i, of dy / (the window's
// real element count), added in output order. Needs n * in_h * in_w * c > 0.
cudaError_t LaunchAvgPoolGrad(const PoolWindow& w, const float* dy, float* dx, cudaStream_t stream);

// An NHWC image batch [n, h, w, c] placed at rows [top, top + h) and columns [left, left + w) of a
// larger batch [n, big_h, big_w, c].
struct ImagePlacement {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t big_h = 0, big_w = 0, top = 0, left = 0;
};

// big = zeros with small copied into its place (to_big), or small = big's place (!to_big).
cudaError_t LaunchPlaceImages(const ImagePlacement& p, bool to_big, const float* from, float* to,
                              cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_WINDOW_LAUNCH_H_
