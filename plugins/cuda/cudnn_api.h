// cuDNN, loaded at run time. The plugin links no cuDNN library: LoadCudnn() opens libcudnn.so.9
// once and looks up the functions the convolution kernels call. Without cuDNN (not installed, or
// another major version) the plugin still loads and its GPU device works; it registers no
// convolution kernels, so placement puts convolutions on the CPU, and says why in one log line.
//
// Handles are per (device, stream) and used under their mutex, as the cuBLAS handles are.
#ifndef CONFLUX_PLUGINS_CUDA_CUDNN_API_H_
#define CONFLUX_PLUGINS_CUDA_CUDNN_API_H_

#include <cudnn.h>

#include <mutex>
#include <string>

#include "conflux/sdk.h"
#include "cuda_common.h"

namespace cfx::cuda {

// The cuDNN functions the kernels use (the library's own signatures).
struct CudnnApi {
  size_t version = 0;  // cudnnGetVersion(), e.g. 90300
  std::string path;    // what was opened
#define CFX_CUDNN_FN(name) decltype(&::name) name = nullptr;
#include "cudnn_functions.inc"
#undef CFX_CUDNN_FN
};

// Opens cuDNN (first call only; thread-safe): `library` when not empty, else libcudnn.so.9 from
// the loader's search path, then next to the CUDA toolkit the plugin was built with. Null when it
// cannot, with the reason in *why.
const CudnnApi* LoadCudnn(const std::string& library, std::string* why);

// The loaded API (LoadCudnn succeeded before; kernels are registered only then).
const CudnnApi& Cudnn();

// OK for CUDNN_STATUS_SUCCESS; else INTERNAL (RESOURCE_EXHAUSTED for allocation failures):
// "<where>: <what> failed: <cuDNN's name of the status>".
sdk::Status CudnnCheck(cudnnStatus_t st, const std::string& where, const std::string& what);

// One cuDNN handle bound to one stream; used under `mu`.
struct CudnnHandle {
  std::mutex mu;
  cudnnHandle_t handle = nullptr;
};

// The cuDNN handle bound to `stream` of `dev` (made on first use; destroyed with the device).
sdk::Result<CudnnHandle*> CudnnFor(cfx_device* dev, cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_CUDNN_API_H_
