// Array ops that gradient functions build on, on CPU: BroadcastTo (every fixed-size dtype),
// BroadcastGradientArgs, BroadcastArgs, ConcatOffset and InvertPermutation (int32 and int64).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "conflux/sdk/gradient_shape_rules.h"
#include "conflux/sdk/host_kernels.h"  // BroadcastGradientArgs, shared with the other devices
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

// BroadcastTo(input, shape): `input` stretched to `shape`, one strided copy in which the
// broadcast dimensions step 0 through the input.
class BroadcastToKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    const Dims dims = in.shape();
    Dims shape, out_shape;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "shape", &shape));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::CheckNonNegative(shape, "shape")));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::BroadcastToShape(dims, shape, &out_shape)));
    // No element repeats: the input's buffer under the new shape.
    if (shape_rules::NumElements(out_shape) == in.num_elements())
      return ReshapedOutput(ctx, 0, out_shape);
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    const size_t offset = out_shape.size() - dims.size();
    std::vector<Walk> walks(out_shape.size());
    int64_t stride = 1;  // of input dimension d - offset
    for (size_t d = out_shape.size(); d-- > 0;) {
      const bool from_input = d >= offset && dims[d - offset] != 1;
      walks[d] = {out_shape[d], from_input ? stride : 0};
      if (d >= offset) stride *= dims[d - offset];
    }
    CopyWalks(ctx, static_cast<const char*>(in.raw_data()), static_cast<char*>(out.raw_data()),
              elem_size, walks);
    return sdk::Status();
  }
};

// InvertPermutation(x): y[x[i]] = i; x must hold each of 0 .. n-1 once.
template <typename T>
class InvertPermutationKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor x = ctx.input(0);
    if (x.dtype() != sdk::kDType<T>)
      return sdk::InvalidArgument("x is ", sdk::DTypeName(x.dtype()), "; expected ",
                                  sdk::DTypeName(sdk::kDType<T>));
    if (x.rank() != 1)
      return sdk::InvalidArgument("x must be a vector, got shape ", sdk::ShapeString(x.shape()));
    const int64_t n = x.num_elements();
    if (n > std::numeric_limits<int32_t>::max())
      return sdk::InvalidArgument("x has ", n, " elements; at most 2^31 - 1 are supported");
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.AllocateOutput(0, {n}));
    const T* in = x.data<T>();
    T* out = y.data<T>();
    std::fill(out, out + n, T(-1));
    for (int64_t i = 0; i < n; ++i) {
      const T d = in[i];
      if (d < 0 || d >= n)
        return sdk::InvalidArgument("x[", i, "] = ", d, " is not in [0, ", n,
                                    "): x must be a permutation of 0 .. ", n - 1);
      if (out[d] != T(-1))
        return sdk::InvalidArgument("x[", i, "] = ", d, " is duplicated (also x[", out[d],
                                    "]): x must be a permutation of 0 .. ", n - 1);
      out[d] = static_cast<T>(i);
    }
    return sdk::Status();
  }
};

}  // namespace

void RegisterGradientArrayKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<BroadcastToKernel>(p, "BroadcastTo", "T", {"shape"});
  RegisterForTypes<sdk::BroadcastGradientArgsKernel, int32_t, int64_t>(p, "BroadcastGradientArgs",
                                                                       "T",
                                                                       /*inexpensive=*/true);
  RegisterForTypes<InvertPermutationKernel, int32_t, int64_t>(p, "InvertPermutation", "T",
                                                              /*inexpensive=*/true);
  RegisterForTypes<sdk::ConcatOffsetKernel, int32_t, int64_t>(p, "ConcatOffset", "shape_type",
                                                              /*inexpensive=*/true);
  RegisterForTypes<sdk::BroadcastArgsKernel, int32_t, int64_t>(p, "BroadcastArgs", "T",
                                                               /*inexpensive=*/true);
}

}  // namespace cfx::cpu
