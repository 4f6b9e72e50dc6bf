// Array ops that gradient functions build on, on CPU: BroadcastTo (every fixed-size dtype),
// BroadcastGradientArgs and InvertPermutation (int32 and int64).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "conflux/sdk/gradient_shape_rules.h"
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

// Writes int64 `values` to a new vector output `i` of the output's dtype (int32 or int64).
template <typename T>
sdk::Status WriteVector(sdk::KernelContext& ctx, int i, const Dims& values) {
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out,
                           ctx.AllocateOutput(i, {static_cast<int64_t>(values.size())}));
  for (size_t k = 0; k < values.size(); ++k) out.data<T>()[k] = static_cast<T>(values[k]);
  return sdk::Status();
}

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

// BroadcastGradientArgs(s0, s1) -> (r0, r1), in the dtype T of all four.
template <typename T>
class BroadcastGradientArgsKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    Dims s0, s1, r0, r1;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 0, "s0", &s0));
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "s1", &s1));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::BroadcastGradientArgs(s0, s1, &r0, &r1)));
    CFX_SDK_RETURN_IF_ERROR(WriteVector<T>(ctx, 0, r0));
    return WriteVector<T>(ctx, 1, r1);
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
  RegisterForTypes<BroadcastGradientArgsKernel, int32_t, int64_t>(p, "BroadcastGradientArgs", "T",
                                                                  /*inexpensive=*/true);
  RegisterForTypes<InvertPermutationKernel, int32_t, int64_t>(p, "InvertPermutation", "T",
                                                              /*inexpensive=*/true);
}

}  // namespace cfx::cpu
