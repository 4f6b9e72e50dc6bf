// Const, Identity, Fill, ZerosLike, OnesLike, Reshape, ExpandDims and Squeeze on OpenCL. None of
// them needs a program: Const uploads once, the fills use clEnqueueFillBuffer, and the shape ops
// share the input's buffer under a new shape.
#include <mutex>
#include <vector>

#include "conflux/sdk.h"
#include "conflux/sdk/basic_kernels.h"
#include "kernels/kernels.h"
#include "opencl_runtime.h"

namespace cfx::ocl {
namespace {

// The dtypes of these type-agnostic kernels: the ones with OpenCL kernels elsewhere.
constexpr cfx_dtype kTypes[] = {CFX_FLOAT, CFX_INT32, CFX_BOOL};

// Uploads the attr value on the first run and hands out that device buffer every step (the
// kernel keeps a reference, so no consumer ever updates it in place).
class ConstKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return sdk::ReadConstValue(init.attrs(), &value_);
  }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!device_value_.view().valid()) {
      sdk::Tensor host = value_.view();
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, host.shape()));
      if (host.byte_size() > 0) {
        cfx_device* dev = ctx.device();
        cl_int err = clEnqueueWriteBuffer(Queue(dev, ctx.stream()), Mem(out), CL_TRUE, 0,
                                          host.byte_size(), host.raw_data(), 0, nullptr, nullptr);
        if (err != CL_SUCCESS)
          return ClError(err, dev->name,
                         "uploading " + std::to_string(host.byte_size()) + " bytes of a constant");
      }
      device_value_ = sdk::TensorRef::Share(out);
      return sdk::Status();
    }
    return ctx.SetOutput(0, device_value_.view());
  }

 private:
  std::mutex mu_;
  sdk::TensorRef value_;         // host
  sdk::TensorRef device_value_;  // on the device once uploaded
};

// Fills output 0 (of `shape`) with copies of `elem_size` bytes at `value`, then completes.
sdk::Status FillOutput(sdk::KernelContext& ctx, sdk::AsyncDone done, const sdk::Shape& shape,
                       const void* value, size_t elem_size) {
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, shape));
  if (out.num_elements() == 0) {
    done();
    return sdk::Status();
  }
  CFX_SDK_RETURN_IF_ERROR(FillBuffer(ctx, Mem(out), value, elem_size, out.byte_size()));
  return CompleteAsync(ctx, done);
}

// Fill(dims, value): dims and value in host memory.
class FillKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    std::vector<int64_t> dims;
    sdk::Tensor value;
    CFX_SDK_RETURN_IF_ERROR(sdk::ReadFillInputs(ctx, &dims, &value));
    return FillOutput(ctx, done, dims, value.raw_data(), sdk::DTypeSize(value.dtype()));
  }
};

// ZerosLike (kOne = false) and OnesLike (kOne = true).
template <bool kOne>
class FillLikeKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    sdk::Tensor in = ctx.input(0);
    unsigned char pattern[4] = {0, 0, 0, 0};
    const size_t size = sdk::DTypeSize(in.dtype());
    if (kOne) {
      const float one_f = 1.0f;
      const int32_t one_i = 1;
      switch (in.dtype()) {
        case CFX_FLOAT:
          std::memcpy(pattern, &one_f, 4);
          break;
        case CFX_INT32:
          std::memcpy(pattern, &one_i, 4);
          break;
        case CFX_BOOL:
          pattern[0] = 1;
          break;
        default:
          return sdk::Unimplemented("OnesLike on OpenCL does not support ",
                                    sdk::DTypeName(in.dtype()));
      }
    }
    return FillOutput(ctx, done, in.shape(), pattern, size);
  }
};

template <typename K>
void RegisterSync(sdk::Plugin& p, const char* op, std::initializer_list<const char*> host = {},
                  const char* type_attr = "T") {
  for (cfx_dtype t : kTypes) {
    auto b = p.Kernel<K>(op, kDeviceType);
    b.TypeConstraint(type_attr, t).Inexpensive();
    for (const char* h : host) b.HostMemory(h);
  }
}

template <typename K>
void RegisterAsync(sdk::Plugin& p, const char* op, std::initializer_list<const char*> host = {}) {
  for (cfx_dtype t : kTypes) {
    auto b = p.AsyncKernel<K>(op, kDeviceType);
    b.TypeConstraint("T", t).Inexpensive();  // only enqueues
    for (const char* h : host) b.HostMemory(h);
  }
}

}  // namespace

void RegisterBasicKernels(sdk::Plugin& p) {
  RegisterSync<ConstKernel>(p, "Const", {}, "dtype");
  RegisterSync<sdk::IdentityKernel>(p, "Identity");
  RegisterSync<sdk::ReshapeKernel>(p, "Reshape", {"shape"});
  RegisterSync<sdk::ExpandDimsKernel>(p, "ExpandDims", {"dim"});
  RegisterSync<sdk::SqueezeKernel>(p, "Squeeze");
  RegisterAsync<FillKernel>(p, "Fill", {"dims", "value"});
  RegisterAsync<FillLikeKernel<false>>(p, "ZerosLike");
  RegisterAsync<FillLikeKernel<true>>(p, "OnesLike");
}

}  // namespace cfx::ocl
