// The GPU device options of a config (devices.GPU.options) and the memory pool's size: plain
// host logic, apart from the CUDA calls, so that it is tested without a GPU.
#ifndef CONFLUX_PLUGINS_CUDA_GPU_OPTIONS_H_
#define CONFLUX_PLUGINS_CUDA_GPU_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "conflux/sdk/status.h"

namespace cfx::cuda {

struct GpuOptions {
  // The CUDA device ordinals that GPU:0, GPU:1, ... stand for, in that order; empty = every
  // device, in CUDA's order (the `visible_devices` option, e.g. "1,0").
  std::vector<int> visible_devices;
  // The share of the device's memory that its pool may take (0, 1] (`memory_fraction`).
  double memory_fraction = 0.9;
  // float32 matrix products on the tensor cores in TF32 (10-bit mantissa inputs, float32
  // accumulation), as PyTorch's allow_tf32 and TensorFlow's enable_tensor_float_32_execution;
  // off by default: exact float32 (`allow_tf32`: true/false).
  bool allow_tf32 = false;
  // Convolution algorithms: measured once per shape by cuDNN (true, TensorFlow's and PyTorch's
  // cudnn.benchmark), or cuDNN's heuristic choice without running them (`cudnn_autotune`).
  bool cudnn_autotune = true;
};

// Parses the device options (key/value strings). InvalidArgument naming the key, the value and
// what was expected for an unknown key or a bad value.
sdk::Result<GpuOptions> ParseGpuOptions(size_t count, const char* const* keys,
                                        const char* const* values);

// The CUDA ordinal of GPU:`index` among `device_count` CUDA devices; NotFound naming the index,
// the visible devices and the count when there is none.
sdk::Result<int> CudaOrdinal(const GpuOptions& options, int index, int device_count);

// The bytes the device's pool may hold: memory_fraction of `total_bytes`, at most what is
// `free_bytes` now, and at most `memory_limit` (the devices.GPU.memory_limit key) when it is > 0.
size_t PoolLimit(const GpuOptions& options, size_t total_bytes, size_t free_bytes,
                 int64_t memory_limit);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_GPU_OPTIONS_H_
