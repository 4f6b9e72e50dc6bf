// The CUDA plugin's shared machinery: the device object, CUDA error statuses, stream completion
// and the cuBLAS handles.
//
// Every device keeps its CUDA ordinal; a function that calls CUDA for a device first makes it
// current on the calling thread (DeviceScope), since the host calls from any thread.
//
// Adding a kernel (kernels/*.cc, compiled by the C++ compiler; device code in kernels/*.cu):
//   register it with Plugin::AsyncKernel<K>(op, kDeviceType).TypeConstraint(...).Inexpensive()
//   (a launch only enqueues), enqueue on Stream(ctx) and finish with CompleteAsync(ctx, done).
//   The .cu files expose plain launch functions (kernels/launch.h) and include no SDK header,
//   which keeps nvcc's work small.
#ifndef CONFLUX_PLUGINS_CUDA_CUDA_COMMON_H_
#define CONFLUX_PLUGINS_CUDA_CUDA_COMMON_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bfc_allocator.h"
#include "conflux/sdk.h"
#include "conflux/sdk/callback_thread.h"

namespace cfx::cuda {

inline constexpr const char* kDeviceType = "GPU";

// "cudaErrorMemoryAllocation (out of memory)".
std::string CudaErrorName(cudaError_t err);
// OK for cudaSuccess; else INTERNAL (RESOURCE_EXHAUSTED for out of memory):
// "<where>: <what> failed: <CUDA name> (<CUDA text>)".
sdk::Status CudaCheck(cudaError_t err, const std::string& where, const std::string& what);
// The same for cuBLAS status codes.
sdk::Status BlasCheck(cublasStatus_t st, const std::string& where, const std::string& what);

struct CudnnHandle;  // cudnn_api.h

// One cuBLAS handle bound to one stream, with its workspace; used under `mu`.
struct BlasHandle {
  std::mutex mu;
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
};

}  // namespace cfx::cuda

// One CUDA device.
struct cfx_device {
  int index = 0;                                        // GPU:<index>
  int ordinal = 0;                                      // the CUDA device ordinal
  std::string name;                                     // "GPU:0"
  std::string description;                              // model, compute capability, memory
  bool allow_tf32 = false;                              // float32 products in TF32
  bool cudnn_autotune = true;  // measure cuDNN's convolution algorithms once per shape
  cudaStream_t default_stream = nullptr;                // for hosts that pass no stream
  std::unique_ptr<cfx::cuda::BfcAllocator> memory;      // device memory (cudaMalloc regions)
  std::unique_ptr<cfx::cuda::BfcAllocator> pinned;      // pinned host memory (cudaHostAlloc)
  std::unique_ptr<cfx::sdk::CallbackThread> callbacks;  // runs stream completions
  std::mutex blas_mu;                                   // guards blas
  std::map<cudaStream_t, std::unique_ptr<cfx::cuda::BlasHandle>> blas;
  std::mutex dnn_mu;  // guards dnn
  // cuDNN handles per stream (cudnn_api.h); each is destroyed with its last reference.
  std::map<cudaStream_t, std::shared_ptr<cfx::cuda::CudnnHandle>> dnn;
};

// A stream of the device (non-blocking with respect to the legacy default stream).
struct cfx_stream {
  cudaStream_t stream = nullptr;
};

namespace cfx::cuda {

// The CUDA stream of `stream` on `dev` (NULL: the device's default stream).
inline cudaStream_t StreamOf(cfx_device* dev, cfx_stream* stream) {
  return stream != nullptr ? stream->stream : dev->default_stream;
}
inline cudaStream_t Stream(sdk::KernelContext& ctx) { return StreamOf(ctx.device(), ctx.stream()); }

// Makes the device current on this thread (cudaSetDevice when another one is).
sdk::Status DeviceScope(const cfx_device* dev);

// Calls fn(status) on the device's callback thread once everything enqueued on `stream` so far
// has completed; status is the stream's error if a command failed. On an enqueue error returns it
// and never calls fn.
sdk::Status WhenComplete(cfx_device* dev, cudaStream_t stream,
                         std::function<void(const sdk::Status&)> fn);

// Finishes an asynchronous kernel. On the host's compute stream the kernel is done once enqueued
// (every later kernel of the device runs behind it on that stream and readers elsewhere wait for
// an event recorded on it); on the default stream, done runs once the work has completed.
// Returns an enqueue error without calling done (the SDK then fails the kernel).
sdk::Status CompleteAsync(sdk::KernelContext& ctx, sdk::AsyncDone done);

// The cuBLAS handle bound to `stream` (made on first use, with a workspace from the pool).
sdk::Result<BlasHandle*> BlasFor(cfx_device* dev, cudaStream_t stream);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_CUDA_COMMON_H_
