// CUDA errors, the callback thread, stream completion and the cuBLAS handles.
#include "cuda_common.h"

namespace cfx::cuda {

std::string CudaErrorName(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

sdk::Status CudaCheck(cudaError_t err, const std::string& where, const std::string& what) {
  if (err == cudaSuccess) return sdk::Status();
  const cfx_code code = err == cudaErrorMemoryAllocation ? CFX_RESOURCE_EXHAUSTED : CFX_INTERNAL;
  return sdk::Status(code, where + ": " + what + " failed: " + CudaErrorName(err));
}

sdk::Status BlasCheck(cublasStatus_t st, const std::string& where, const std::string& what) {
  if (st == CUBLAS_STATUS_SUCCESS) return sdk::Status();
  const cfx_code code = st == CUBLAS_STATUS_ALLOC_FAILED ? CFX_RESOURCE_EXHAUSTED : CFX_INTERNAL;
  return sdk::Status(code, where + ": " + what + " failed: " + cublasGetStatusName(st) + " (" +
                               cublasGetStatusString(st) + ")");
}

// ---- Streams -----------------------------------------------------------------------------------

sdk::Status DeviceScope(const cfx_device* dev) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == dev->ordinal) return sdk::Status();
  return CudaCheck(cudaSetDevice(dev->ordinal), dev->name, "cudaSetDevice");
}

namespace {

struct PendingCompletion {
  cfx_device* dev;
  std::function<void(const sdk::Status&)> fn;
};

// A stream callback. CUDA runs it exactly once, also after a device error (with that error), but
// forbids CUDA calls and waits that may depend on other work inside it; so it only hands off to
// the callback thread. (cudaLaunchHostFunc would not run at all after a device error, leaving
// the host waiting.)
void CUDART_CB OnStreamReached(cudaStream_t, cudaError_t status, void* arg) {
  auto* p = static_cast<PendingCompletion*>(arg);
  p->dev->callbacks->Post(
      [p, status] {
        std::unique_ptr<PendingCompletion> owned(p);
        owned->fn(CudaCheck(status, owned->dev->name, "work on the stream"));
      },
      /*expected=*/true);
}

}  // namespace

sdk::Status WhenComplete(cfx_device* dev, cudaStream_t stream,
                         std::function<void(const sdk::Status&)> fn) {
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
  auto* pending = new PendingCompletion{dev, std::move(fn)};
  dev->callbacks->Expect();
  const cudaError_t err = cudaStreamAddCallback(stream, &OnStreamReached, pending, 0);
  if (err != cudaSuccess) {
    dev->callbacks->Post([] {}, /*expected=*/true);  // nothing will post: undo the Expect
    delete pending;
    return CudaCheck(err, dev->name, "cudaStreamAddCallback");
  }
  return sdk::Status();
}

sdk::Status CompleteAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
  cfx_device* dev = ctx.device();
  if (ctx.stream() != nullptr) {
    // A launch error (bad configuration) shows at once; a fault while running shows at the next
    // synchronization of the stream.
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(cudaPeekAtLastError(), dev->name, "kernel launch"));
    done();
    return sdk::Status();
  }
  return WhenComplete(dev, dev->default_stream, [done](const sdk::Status& s) { done(s); });
}

// ---- cuBLAS ------------------------------------------------------------------------------------

namespace {
// What cuBLAS recommends for Hopper; smaller GPUs need less but it is a one-off per stream.
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
}  // namespace

sdk::Result<BlasHandle*> BlasFor(cfx_device* dev, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(dev->blas_mu);
  auto it = dev->blas.find(stream);
  if (it != dev->blas.end()) return it->second.get();
  auto h = std::make_unique<BlasHandle>();
  CFX_SDK_RETURN_IF_ERROR(BlasCheck(cublasCreate(&h->handle), dev->name, "cublasCreate"));
  sdk::Status s = BlasCheck(cublasSetStream(h->handle, stream), dev->name, "cublasSetStream");
  if (s.ok() && dev->allow_tf32)
    s = BlasCheck(cublasSetMathMode(h->handle, CUBLAS_TF32_TENSOR_OP_MATH), dev->name,
                  "cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH)");
  // The workspace comes from the pool when it has room; otherwise cuBLAS uses its own default.
  auto workspace = dev->memory->Allocate(kBlasWorkspaceBytes);
  if (s.ok() && workspace.ok()) {
    h->workspace = *workspace;
    s = BlasCheck(cublasSetWorkspace(h->handle, h->workspace, kBlasWorkspaceBytes), dev->name,
                  "cublasSetWorkspace");
  } else if (workspace.ok()) {
    dev->memory->Free(*workspace);
  }
  if (!s.ok()) {
    cublasDestroy(h->handle);
    dev->memory->Free(h->workspace);
    return s;
  }
  BlasHandle* raw = h.get();
  dev->blas.emplace(stream, std::move(h));
  return raw;
}

}  // namespace cfx::cuda
