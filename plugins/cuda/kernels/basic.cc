// Const, Identity, Reshape, ExpandDims, Squeeze and Fill on CUDA. Const uploads its value once (on
// the compute stream, so every consumer runs after the copy) and hands out that device buffer
// every step; Identity and the shape ops share their input's buffer (the SDK's kernels); Fill
// writes its host-memory scalar over a new tensor.
#include <cstring>
#include <mutex>
#include <vector>

#include "conflux/sdk/basic_kernels.h"
#include "cuda_common.h"
#include "kernels/kernels.h"
#include "kernels/launch.h"

namespace cfx::cuda {
namespace {

constexpr cfx_dtype kTypes[] = {CFX_FLOAT, CFX_INT32, CFX_INT64, CFX_BOOL};

class ConstKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return sdk::ReadConstValue(init.attrs(), &value_);
  }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    if (device_value_.view().valid()) return ctx.SetOutput(0, device_value_.view());
    const sdk::Tensor host = value_.view();
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, host.shape()));
    if (host.byte_size() > 0) {
      // The kernel keeps the host value alive, so the copy may still run after this returns.
      CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
      CFX_SDK_RETURN_IF_ERROR(CudaCheck(
          cudaMemcpyAsync(out.raw_data(), host.raw_data(), host.byte_size(), cudaMemcpyHostToDevice,
                          Stream(ctx)),
          ctx.device()->name,
          sdk::StrCat("cudaMemcpyAsync of a ", host.byte_size(), "-byte constant to the device")));
    }
    device_value_ = sdk::TensorRef::Share(out);
    return sdk::Status();
  }

 private:
  std::mutex mu_;
  sdk::TensorRef value_;         // host
  sdk::TensorRef device_value_;  // on the device once uploaded
};

// Fill(dims, value): dims and value in host memory.
class FillKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    std::vector<int64_t> dims;
    sdk::Tensor value;
    CFX_SDK_RETURN_IF_ERROR(sdk::ReadFillInputs(ctx, &dims, &value));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, dims));
    const int64_t n = out.num_elements();
    if (n == 0) {
      done();
      return sdk::Status();
    }
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    const size_t size = sdk::DTypeSize(value.dtype());
    if (size == 1) {
      unsigned char byte;
      std::memcpy(&byte, value.raw_data(), 1);
      CFX_SDK_RETURN_IF_ERROR(
          CudaCheck(cudaMemsetAsync(out.raw_data(), byte, static_cast<size_t>(n), Stream(ctx)),
                    dev->name, "cudaMemsetAsync"));
    } else {
      CFX_SDK_RETURN_IF_ERROR(
          CudaCheck(LaunchFill(value.raw_data(), size, out.raw_data(), n, Stream(ctx)), dev->name,
                    "launch of Fill"));
    }
    return CompleteAsync(ctx, done);
  }
};

}  // namespace

void RegisterBasicKernels(sdk::Plugin& p) {
  for (cfx_dtype t : kTypes) {
    p.Kernel<ConstKernel>("Const", kDeviceType).TypeConstraint("dtype", t);
    p.Kernel<sdk::IdentityKernel>("Identity", kDeviceType).TypeConstraint("T", t).Inexpensive();
    p.Kernel<sdk::ReshapeKernel>("Reshape", kDeviceType)
        .TypeConstraint("T", t)
        .HostMemory("shape")
        .Inexpensive();
    p.Kernel<sdk::ExpandDimsKernel>("ExpandDims", kDeviceType)
        .TypeConstraint("T", t)
        .HostMemory("dim")
        .Inexpensive();
    p.Kernel<sdk::SqueezeKernel>("Squeeze", kDeviceType).TypeConstraint("T", t).Inexpensive();
    p.AsyncKernel<FillKernel>("Fill", kDeviceType)
        .TypeConstraint("T", t)
        .HostMemory("dims")
        .HostMemory("value")
        .Inexpensive();
  }
}

}  // namespace cfx::cuda
