// Ops that make tensors from a value rather than from another tensor's elements: Fill,
// ZerosLike, OnesLike and Range, on CPU.
#include <complex>

#include "conflux/sdk/host_kernels.h"  // Range, shared with the other devices
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

// Sets every element of `out` to the `elem_size` bytes at `value`.
void FillElements(sdk::KernelContext& ctx, const sdk::Tensor& out, const void* value,
                  size_t elem_size) {
  char* dst = static_cast<char*>(out.raw_data());
  const char* src = static_cast<const char*>(value);
  ctx.ParallelFor(out.num_elements(), CopyCost(static_cast<int64_t>(elem_size)),
                  [&](int64_t begin, int64_t end) {
                    CopyElements(dst + begin * elem_size, src, end - begin, /*src_step=*/0,
                                 elem_size);
                  });
}

// Fill(dims, value): a tensor of shape `dims` with every element `value`.
class FillKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    shape_rules::Dims dims;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 0, "dims", &dims));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::CheckNonNegative(dims, "dims")));
    sdk::Tensor value = ctx.input(1);
    if (value.rank() != 0)
      return sdk::InvalidArgument("value must be a scalar, got shape ",
                                  sdk::ShapeString(value.shape()));
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(value));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, dims));
    FillElements(ctx, out, value.raw_data(), elem_size);
    return sdk::Status();
  }
};

// ZerosLike(x): zeros of x's shape. All-zero bytes are zero in every fixed-size dtype.
class ZerosLikeKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, in.shape()));
    char* dst = static_cast<char*>(out.raw_data());
    ctx.ParallelFor(static_cast<int64_t>(out.byte_size()), 1, [&](int64_t begin, int64_t end) {
      std::memset(dst + begin, 0, static_cast<size_t>(end - begin));
    });
    return sdk::Status();
  }
};

// The bytes of the value 1 in `dtype` (at most 16); false for dtypes OnesLike does not take.
bool OneOf(cfx_dtype dtype, unsigned char* bytes) {
  auto put = [&](auto one) {
    std::memcpy(bytes, &one, sizeof(one));
    return true;
  };
  switch (dtype) {
    case CFX_FLOAT:
      return put(1.0f);
    case CFX_DOUBLE:
      return put(1.0);
    case CFX_COMPLEX64:
      return put(std::complex<float>(1.0f, 0.0f));
    case CFX_COMPLEX128:
      return put(std::complex<double>(1.0, 0.0));
    case CFX_HALF:
      return put(uint16_t{0x3C00});  // IEEE binary16 1.0
    case CFX_BFLOAT16:
      return put(uint16_t{0x3F80});  // upper half of float 1.0
    case CFX_BOOL:
      return put(true);
    case CFX_INT8:
      return put(int8_t{1});
    case CFX_UINT8:
      return put(uint8_t{1});
    case CFX_INT16:
      return put(int16_t{1});
    case CFX_UINT16:
      return put(uint16_t{1});
    case CFX_INT32:
      return put(int32_t{1});
    case CFX_INT64:
      return put(int64_t{1});
    default:
      return false;
  }
}

// TensorFlow's OnesLike type list.
constexpr cfx_dtype kOnesLikeTypes[] = {
    CFX_BFLOAT16, CFX_HALF,  CFX_FLOAT, CFX_DOUBLE,    CFX_INT8,       CFX_UINT8, CFX_INT16,
    CFX_UINT16,   CFX_INT32, CFX_INT64, CFX_COMPLEX64, CFX_COMPLEX128, CFX_BOOL};

// OnesLike(x): ones of x's shape.
class OnesLikeKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    unsigned char one[16];
    if (!OneOf(in.dtype(), one))
      return sdk::Unimplemented("OnesLike does not support dtype ", sdk::DTypeName(in.dtype()));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, in.shape()));
    FillElements(ctx, out, one, sdk::DTypeSize(in.dtype()));
    return sdk::Status();
  }
};

template <typename... Ts>
void RegisterRange(sdk::Plugin& p) {
  (p.Kernel<sdk::RangeKernel<Ts>>("Range", "CPU")
       .template TypeConstraint<Ts>("Tidx")
       .HostMemory("start")
       .HostMemory("limit")
       .HostMemory("delta"),
   ...);
}

}  // namespace

void RegisterFillKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<FillKernel>(p, "Fill", "T", {"dims"});
  RegisterTypeAgnostic<ZerosLikeKernel>(p, "ZerosLike");
  RegisterTypeAgnostic<OnesLikeKernel>(p, "OnesLike", "T", kOnesLikeTypes);
  RegisterRange<float, double, int32_t, int64_t, int8_t, int16_t, uint16_t, uint32_t>(p);
}

}  // namespace cfx::cpu
