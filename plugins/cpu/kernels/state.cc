// Arithmetic updates of variables: AssignAdd and AssignSub (reference inputs from VariableV2,
// updated in place as in TensorFlow) and AssignAddVariableOp and AssignSubVariableOp (resource
// variables; copy on write when a reader still holds the buffer).
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

template <typename T>
void Update(sdk::KernelContext& ctx, T* dst, const T* src, int64_t n, bool subtract) {
  ctx.ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    if (subtract) {
      for (int64_t i = begin; i < end; ++i) dst[i] -= src[i];
    } else {
      for (int64_t i = begin; i < end; ++i) dst[i] += src[i];
    }
  });
}

// dst += src (or -= when `subtract`) for the numeric dtypes of util.h's DispatchDType.
sdk::Status UpdateTensor(sdk::KernelContext& ctx, const sdk::Tensor& dst, const sdk::Tensor& src,
                         bool subtract) {
  if (dst.shape() != src.shape())
    return sdk::InvalidArgument("the variable has shape ", sdk::ShapeString(dst.shape()),
                                " and the value has shape ", sdk::ShapeString(src.shape()),
                                "; they must be equal");
  if (dst.dtype() != src.dtype())
    return sdk::InvalidArgument("the variable is ", sdk::DTypeName(dst.dtype()),
                                " and the value is ", sdk::DTypeName(src.dtype()));
  return DispatchDType(dst.dtype(), "the variable", [&](auto zero) -> sdk::Status {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      return sdk::InvalidArgument("bool variables cannot be added to");
    } else {
      Update<T>(ctx, dst.data<T>(), src.data<T>(), dst.num_elements(), subtract);
      return sdk::Status();
    }
  });
}

// AssignAdd/AssignSub (a reference input, locked when use_locking) and AssignAddVariableOp/
// AssignSubVariableOp (a resource input, which has no use_locking attr: always locked).
template <bool Subtract>
class AssignUpdateKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return init.attrs().GetOr("use_locking", &use_locking_, false);
  }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    const sdk::Tensor value = ctx.input(1);
    return sdk::UpdateVariables(ctx, {{0, ctx.input_is_ref(0) ? "ref" : "resource"}}, use_locking_,
                                [&](const std::vector<sdk::Tensor>& variable) {
                                  return UpdateTensor(ctx, variable[0], value, Subtract);
                                });
  }

 private:
  bool use_locking_ = false;
};

}  // namespace

void RegisterStateKernels(sdk::Plugin& p) {
  p.Kernel<AssignUpdateKernel<false>>("AssignAdd", "CPU").Inexpensive();
  p.Kernel<AssignUpdateKernel<true>>("AssignSub", "CPU").Inexpensive();
  p.Kernel<AssignUpdateKernel<false>>("AssignAddVariableOp", "CPU").HostMemory("resource");
  p.Kernel<AssignUpdateKernel<true>>("AssignSubVariableOp", "CPU").HostMemory("resource");
}

}  // namespace cfx::cpu
