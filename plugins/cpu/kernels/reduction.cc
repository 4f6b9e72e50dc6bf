// Sum, Mean, Max, Min and Prod on CPU for float, double, int32 and int64; All and Any on bool.
//
// A reduction is planned (reduction.h), then run by the rows or columns loop
// (reduction_loops.h). Layouts that are neither, such as [reduced, kept, reduced], are first
// permuted into [kept..., reduced...] with one copy (CopyWalks, shared with Transpose) and run
// as rows.
// Kernels hold only their attrs: Compute may run concurrently.
#include "kernels/reduction.h"

#include <cstring>

#include "kernels/array_util.h"
#include "kernels/kernels.h"
#include "kernels/reduction_loops.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

using reduction::ReduceColumns;
using reduction::ReduceRows;

// Runs `plan` over `in` into `out` (not finalized). The plan has at least one reduced group and
// no empty axis.
template <typename Op, typename T = typename Op::Value>
sdk::Status Reduce(sdk::KernelContext& ctx, const T* in, const ReductionPlan& plan, T* out) {
  const std::vector<int64_t>& g = plan.groups;
  if (g.size() == 1) return ReduceRows<Op>(ctx, in, 1, g[0], out);
  if (g.size() == 2 && !plan.first_reduced) return ReduceRows<Op>(ctx, in, g[0], g[1], out);
  if (g.size() == 2) return ReduceColumns<Op>(ctx, in, 1, g[0], g[1], out);
  if (g.size() == 3 && !plan.first_reduced)
    return ReduceColumns<Op>(ctx, in, g[0], g[1], g[2], out);
  // Permute to [kept..., reduced...]: out axis i walks the input's group perm[i].
  std::vector<int64_t> strides(g.size(), 1);
  for (size_t i = g.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * g[i + 1];
  std::vector<Walk> walks;
  for (bool reduced : {false, true})
    for (size_t i = 0; i < g.size(); ++i)
      if (plan.reduced(i) == reduced) walks.push_back({g[i], strides[i]});
  CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef scratch, reduction::Scratch<T>(ctx, plan.input_elements));
  T* permuted = scratch.view().data<T>();
  CopyWalks(ctx, reinterpret_cast<const char*>(in), reinterpret_cast<char*>(permuted), sizeof(T),
            walks);
  return ReduceRows<Op>(ctx, permuted, plan.output_elements, plan.reduced_elements, out);
}

template <typename Op>
class ReduceKernel {
 public:
  using T = typename Op::Value;

  sdk::Status Init(const sdk::KernelInit& init) {
    return init.attrs().Get("keep_dims", &keep_dims_);
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    const sdk::Tensor input = ctx.input(0);
    const sdk::Tensor indices = ctx.input(1);
    if (indices.rank() > 1)
      return sdk::InvalidArgument("reduction_indices must be a scalar or a vector, got shape ",
                                  sdk::ShapeString(indices.shape()));
    std::vector<int64_t> axes;
    CFX_SDK_RETURN_IF_ERROR(ReadIndexVector(indices, "reduction_indices", &axes));
    CFX_SDK_ASSIGN_OR_RETURN(ReductionPlan plan, PlanReduction(input.shape(), axes, keep_dims_));
    bool reduces = false;
    for (size_t i = 0; i < plan.groups.size(); ++i) reduces |= plan.reduced(i);
    if (!reduces) {  // only axes of length 1 (or none) are reduced: the values are unchanged
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor output,
                               ctx.ForwardOrAllocateOutput({0}, 0, plan.output_shape));
      if (output.raw_data() != input.raw_data() && input.byte_size() > 0)
        std::memcpy(output.raw_data(), input.raw_data(), input.byte_size());
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor output, ctx.AllocateOutput(0, plan.output_shape));
    T* out = output.data<T>();
    if (plan.input_elements == 0) {  // every output folds nothing
      std::fill(out, out + plan.output_elements, Op::Finalize(Op::Identity(), 0));
      return sdk::Status();
    }
    CFX_SDK_RETURN_IF_ERROR(Reduce<Op>(ctx, input.data<T>(), plan, out));
    if constexpr (Op::kFinalizes) {
      for (int64_t i = 0; i < plan.output_elements; ++i)
        out[i] = Op::Finalize(out[i], plan.reduced_elements);
    }
    return sdk::Status();
  }

 private:
  bool keep_dims_ = false;
};

template <typename T>
using SumKernel = ReduceKernel<reduction::Sum<T>>;
template <typename T>
using MeanKernel = ReduceKernel<reduction::Mean<T>>;
template <typename T>
using ProdKernel = ReduceKernel<reduction::Prod<T>>;
template <typename T>
using MaxKernel = ReduceKernel<reduction::Max<T>>;
template <typename T>
using MinKernel = ReduceKernel<reduction::Min<T>>;

}  // namespace

void RegisterReductionKernels(sdk::Plugin& p) {
  constexpr const char* kIndices = "reduction_indices";
  RegisterForTypes<SumKernel, float, double, int32_t, int64_t>(p, "Sum", "T", false, kIndices);
  RegisterForTypes<MeanKernel, float, double, int32_t, int64_t>(p, "Mean", "T", false, kIndices);
  RegisterForTypes<ProdKernel, float, double, int32_t, int64_t>(p, "Prod", "T", false, kIndices);
  RegisterForTypes<MaxKernel, float, double, int32_t, int64_t>(p, "Max", "T", false, kIndices);
  RegisterForTypes<MinKernel, float, double, int32_t, int64_t>(p, "Min", "T", false, kIndices);
  p.Kernel<ReduceKernel<reduction::All>>("All", "CPU").HostMemory(kIndices);
  p.Kernel<ReduceKernel<reduction::Any>>("Any", "CPU").HostMemory(kIndices);
  RegisterArgReductionKernels(p);
  RegisterScanKernels(p);
}

}  // namespace cfx::cpu
