// Slice and StridedSlice on CPU: both copy a box of the input, StridedSlice with steps (negative
// ones included) per dimension.
#include <memory>
#include <utility>
#include <vector>

#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

// How output 0 is made from a box of input 0: all of it (shared, reshaped to `out_shape`), or
// a copy of the elements that `walks` visit from element `base`.
struct SlicePlan {
  bool whole = false;
  Dims out_shape;
  int64_t base = 0;
  std::vector<Walk> walks;
};

// The plan for the box `begin`/`stride`/`size` of an input of shape `dims`, under `out_shape`:
// input elements begin[d] + k * stride[d], k in [0, size[d]), of each dimension d.
SlicePlan PlanSlice(const Dims& dims, const Dims& begin, const Dims& stride, const Dims& size,
                    const Dims& out_shape) {
  SlicePlan plan;
  plan.out_shape = out_shape;
  plan.whole = true;
  for (size_t d = 0; d < dims.size(); ++d)
    plan.whole = plan.whole && begin[d] == 0 && stride[d] == 1 && size[d] == dims[d];
  if (plan.whole) return plan;
  for (size_t d = 0; d < dims.size(); ++d)
    if (size[d] == 0) return plan;  // nothing to copy; `begin` may then lie past the end
  plan.walks.resize(dims.size());
  int64_t in_stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    plan.base += begin[d] * in_stride;
    // A stride is an input value of any size; it is at most the dim when two or more elements
    // are taken, and unused when one is.
    plan.walks[d] = {size[d], size[d] > 1 ? stride[d] * in_stride : 0};
    in_stride *= dims[d];
  }
  return plan;
}

// Output 0 of the kernel as `plan` says, from input 0.
sdk::Status RunSlice(sdk::KernelContext& ctx, const SlicePlan& plan) {
  sdk::Tensor in = ctx.input(0);
  if (plan.whole)
    return HasShape(in, plan.out_shape) ? ctx.SetOutput(0, in)
                                        : ReshapedOutput(ctx, 0, plan.out_shape);
  CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, plan.out_shape));
  if (plan.walks.empty()) return sdk::Status();  // an empty box
  const char* src = static_cast<const char*>(in.raw_data());
  CopyWalks(ctx, src + plan.base * static_cast<int64_t>(elem_size),
            static_cast<char*>(out.raw_data()), elem_size, plan.walks);
  return sdk::Status();
}

// Slice(input, begin, size): size[i] elements from begin[i]; size -1 takes the rest.
class SliceKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    Dims begin, size, out;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "begin", &begin));
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 2, "size", &size));
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::SliceShape(ctx.input(0).shape(), begin, size, &out)));
    return RunSlice(ctx, PlanSlice(ctx.input(0).shape(), begin, Dims(begin.size(), 1), out, out));
  }
};

// StridedSlice(input, begin, end, strides) with TensorFlow's masks (see StridedSliceShape).
// A loop slices the same way in every iteration, and a model in every step: the first slice's
// plan is kept, keyed by the input's shape and the begin/end/strides values, and a later slice
// with the same ones runs it without working out the slice again.
class StridedSliceKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    const sdk::Attrs& a = init.attrs();
    CFX_SDK_RETURN_IF_ERROR(a.Get("begin_mask", &spec_.begin_mask));
    CFX_SDK_RETURN_IF_ERROR(a.Get("end_mask", &spec_.end_mask));
    CFX_SDK_RETURN_IF_ERROR(a.Get("ellipsis_mask", &spec_.ellipsis_mask));
    CFX_SDK_RETURN_IF_ERROR(a.Get("new_axis_mask", &spec_.new_axis_mask));
    return a.Get("shrink_axis_mask", &spec_.shrink_axis_mask);
  }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    const Kept* kept = kept_.get();
    if (kept != nullptr && Matches(ctx, *kept)) return RunSlice(ctx, kept->plan);
    auto fresh = std::make_unique<Kept>();
    shape_rules::StridedSliceSpec spec = spec_;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "begin", &spec.begin));
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 2, "end", &spec.end));
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 3, "strides", &spec.strides));
    fresh->input_shape = ctx.input(0).shape();
    shape_rules::StridedSliceDense dense;
    Dims out;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::StridedSliceShape(fresh->input_shape, spec, &dense, &out)));
    fresh->plan = PlanSlice(fresh->input_shape, dense.begin, dense.stride, dense.size, out);
    const sdk::Status status = RunSlice(ctx, fresh->plan);
    if (kept == nullptr && status.ok()) {
      fresh->begin = std::move(spec.begin);
      fresh->end = std::move(spec.end);
      fresh->strides = std::move(spec.strides);
      kept_.Keep(std::move(fresh));
    }
    return status;
  }

 private:
  struct Kept {
    Dims input_shape, begin, end, strides;
    SlicePlan plan;
  };
  static bool Matches(const sdk::KernelContext& ctx, const Kept& kept) {
    return HasShape(ctx.input(0), kept.input_shape) && HoldsIndices(ctx.input(1), 1, kept.begin) &&
           HoldsIndices(ctx.input(2), 1, kept.end) && HoldsIndices(ctx.input(3), 1, kept.strides);
  }

  shape_rules::StridedSliceSpec spec_;  // masks only; begin/end/strides come per step
  KeptOnce<Kept> kept_;
};

}  // namespace

void RegisterSliceKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<SliceKernel>(p, "Slice", "T", {"begin", "size"});
  RegisterTypeAgnostic<StridedSliceKernel>(p, "StridedSlice", "T", {"begin", "end", "strides"});
}

}  // namespace cfx::cpu
