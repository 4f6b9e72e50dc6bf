// Reductions on CUDA: Sum, Max, Min, Prod (float, int32, int64) and Mean (float) over
// `reduction_indices` (int32 or int64, host memory; negative axes count from the end; keep_dims),
// and ArgMax / ArgMin of float along `dimension` (host memory) with int32 or int64 indices.
//
// The SDK's ReductionPlan simplifies the layout; kernels/reduction_plan_cuda.h turns it into
// launches of reduction.cu: one pass for rows (the last dims), columns (the first dims, e.g. a
// batch sum) and the middle dims, a few passes for other layouts, each with warp or block folds.
// Semantics follow the CPU kernels: an empty reduction gives TensorFlow's identities (Sum 0,
// Prod 1, Max the lowest value (-inf), Min the highest (+inf), float Mean NaN = 0/0); Max and Min
// propagate NaN; integer sums and products wrap; ArgMax/ArgMin give the first index of the
// extreme value, a NaN counting as the extreme. Kernels hold only their attrs.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "conflux/sdk/reduction_plan.h"
#include "cuda_common.h"
#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "kernels/reduction_launch.h"
#include "kernels/reduction_plan_cuda.h"
#include "kernels/reduction_run.h"

namespace cfx::cuda {
namespace {

// The values of host tensor `t` (named `what`): int16, int32 or int64.
sdk::Status ReadIndices(const sdk::Tensor& t, const char* what, std::vector<int64_t>* out) {
  const int64_t n = t.num_elements();
  out->resize(static_cast<size_t>(n));
  switch (t.dtype()) {
    case CFX_INT16:
      for (int64_t i = 0; i < n; ++i) (*out)[i] = t.data<int16_t>()[i];
      return sdk::Status();
    case CFX_INT32:
      for (int64_t i = 0; i < n; ++i) (*out)[i] = t.data<int32_t>()[i];
      return sdk::Status();
    case CFX_INT64:
      for (int64_t i = 0; i < n; ++i) (*out)[i] = t.data<int64_t>()[i];
      return sdk::Status();
    default:
      return sdk::InvalidArgument(what, " must be int32 or int64, got ", sdk::DTypeName(t.dtype()));
  }
}

// Bytes of `value` as `dtype` (float, int32 or int64), for LaunchFill.
struct Pattern {
  unsigned char bytes[8] = {};
  size_t size = 0;
};
template <typename T>
Pattern PatternOf(T value) {
  Pattern p;
  std::memcpy(p.bytes, &value, sizeof(T));
  p.size = sizeof(T);
  return p;
}

// What an empty reduction gives: Finalize(Identity()) of the CPU reducers.
template <typename T>
T EmptyResult(ReduceFn fn, bool mean) {
  using L = std::numeric_limits<T>;
  if (mean) {
    if constexpr (L::has_quiet_NaN) return L::quiet_NaN();  // 0 / 0
    return T(0);
  }
  switch (fn) {
    case ReduceFn::kSum:
      return T(0);
    case ReduceFn::kProd:
      return T(1);
    case ReduceFn::kMax:
      return L::has_infinity ? -L::infinity() : L::lowest();
    case ReduceFn::kMin:
      return L::has_infinity ? L::infinity() : L::max();
  }
  return T(0);
}

Pattern EmptyPattern(cfx_dtype dtype, ReduceFn fn, bool mean) {
  switch (dtype) {
    case CFX_INT32:
      return PatternOf(EmptyResult<int32_t>(fn, mean));
    case CFX_INT64:
      return PatternOf(EmptyResult<int64_t>(fn, mean));
    default:
      return PatternOf(EmptyResult<float>(fn, mean));
  }
}

template <ReduceFn kFn, bool kMean>
class ReduceKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return init.attrs().GetOr("keep_dims", &keep_dims_, false);
  }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor input = ctx.input(0), indices = ctx.input(1);
    if (indices.rank() > 1)
      return sdk::InvalidArgument("reduction_indices must be a scalar or a vector, got shape ",
                                  sdk::ShapeString(indices.shape()));
    if (indices.dtype() != CFX_INT32 && indices.dtype() != CFX_INT64)
      return sdk::InvalidArgument("reduction_indices must be int32 or int64, got ",
                                  sdk::DTypeName(indices.dtype()));
    const cfx_dtype dtype = input.dtype();
    if (dtype != CFX_FLOAT && (kMean || (dtype != CFX_INT32 && dtype != CFX_INT64)))
      return sdk::InvalidArgument("input of ", node_, ": ", sdk::DTypeName(dtype),
                                  " is not supported by the GPU kernel");
    std::vector<int64_t> axes;
    CFX_SDK_RETURN_IF_ERROR(ReadIndices(indices, "reduction_indices", &axes));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::ReductionPlan plan,
                             sdk::PlanReduction(input.shape(), axes, keep_dims_));
    cfx_device* dev = ctx.device();
    const cudaStream_t stream = Stream(ctx);
    if (!ReducesAnything(plan)) {
      // Only axes of length 1 (or none) are reduced: the values are unchanged.
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor output,
                               ctx.ForwardOrAllocateOutput({0}, 0, plan.output_shape));
      if (output.raw_data() == input.raw_data() || input.byte_size() == 0) {
        done();
        return sdk::Status();
      }
      CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
      CFX_SDK_RETURN_IF_ERROR(
          CudaCheck(cudaMemcpyAsync(output.raw_data(), input.raw_data(), input.byte_size(),
                                    cudaMemcpyDeviceToDevice, stream),
                    dev->name, "cudaMemcpyAsync of " + node_ + "'s input"));
      return CompleteAsync(ctx, done);
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor output, ctx.AllocateOutput(0, plan.output_shape));
    if (plan.output_elements == 0) {
      done();
      return sdk::Status();
    }
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    if (plan.input_elements == 0) {  // every output folds nothing
      const Pattern p = EmptyPattern(dtype, kFn, kMean);
      CFX_SDK_RETURN_IF_ERROR(
          CudaCheck(LaunchFill(p.bytes, p.size, output.raw_data(), plan.output_elements, stream),
                    dev->name, "launch of the fill of " + node_ + "'s empty reduction"));
      return CompleteAsync(ctx, done);
    }
    const ReduceSchedule schedule = ScheduleReduction(ReducePasses(plan), MultiprocessorCount(dev));
    CFX_SDK_RETURN_IF_ERROR(EnqueueReduceSchedule(ctx, schedule, kFn, dtype, input.raw_data(),
                                                  output.raw_data(), false,
                                                  kMean ? plan.reduced_elements : 0, node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
  bool keep_dims_ = false;
};

template <bool kMax>
class ArgReduceKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::Status();
  }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor input = ctx.input(0), dimension = ctx.input(1);
    const sdk::Shape shape = input.shape();
    if (input.dtype() != CFX_FLOAT)
      return sdk::InvalidArgument("input of ", node_, ": ", sdk::DTypeName(input.dtype()),
                                  " is not supported by the GPU kernel");
    if (dimension.rank() != 0)
      return sdk::InvalidArgument("dimension must be a scalar, got shape ",
                                  sdk::ShapeString(dimension.shape()));
    std::vector<int64_t> value;
    CFX_SDK_RETURN_IF_ERROR(ReadIndices(dimension, "dimension", &value));
    CFX_SDK_ASSIGN_OR_RETURN(int axis, sdk::CanonicalAxis("dimension", value[0], shape));
    if (shape[axis] == 0)
      return sdk::InvalidArgument("cannot take the ", kMax ? "argmax" : "argmin", " over axis ",
                                  axis, " of length 0 (input shape ", sdk::ShapeString(shape), ")");
    const cfx_dtype out_dtype = ctx.output_dtype(0);
    if (out_dtype != CFX_INT32 && out_dtype != CFX_INT64)
      return sdk::InvalidArgument("output_type must be int32 or int64 on GPU, got ",
                                  sdk::DTypeName(out_dtype));
    const ReducePass pass = ArgPass(shape, axis);
    if (out_dtype == CFX_INT32 && pass.n - 1 > std::numeric_limits<int32_t>::max())
      return sdk::InvalidArgument("output_type int32 cannot hold indices along axis ", axis,
                                  " of length ", pass.n, " (input shape ", sdk::ShapeString(shape),
                                  ")");
    sdk::Shape out_shape;
    for (int i = 0; i < static_cast<int>(shape.size()); ++i)
      if (i != axis) out_shape.push_back(shape[i]);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor output, ctx.AllocateOutput(0, out_shape));
    if (pass.outer * pass.inner == 0) {
      done();
      return sdk::Status();
    }
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    const cudaStream_t stream = Stream(ctx);
    const int64_t segments = ReduceSegments(pass, MultiprocessorCount(dev));
    const std::string what = "launch of " + node_ + "'s " + (kMax ? "argmax" : "argmin");
    if (segments == 1) {
      CFX_SDK_RETURN_IF_ERROR(CudaCheck(
          LaunchArgReduce(kMax, input.data<float>(), nullptr, {pass.outer, pass.n, pass.inner, 1},
                          nullptr, nullptr, output.raw_data(), out_dtype, stream),
          dev->name, what));
      return CompleteAsync(ctx, done);
    }
    // Each segment's extreme and its index, then the first extreme of those.
    const sdk::Shape partial_shape{pass.outer * segments * pass.inner};
    CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef values, ctx.AllocateTemp(CFX_FLOAT, partial_shape));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef indices, ctx.AllocateTemp(CFX_INT64, partial_shape));
    float* partial_values = values.view().data<float>();
    int64_t* partial_indices = indices.view().data<int64_t>();
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchArgReduce(kMax, input.data<float>(), nullptr,
                                  {pass.outer, pass.n, pass.inner, segments}, partial_values,
                                  partial_indices, nullptr, out_dtype, stream),
                  dev->name, what + " (segments)"));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchArgReduce(kMax, partial_values, partial_indices,
                                  {pass.outer, segments, pass.inner, 1}, nullptr, nullptr,
                                  output.raw_data(), out_dtype, stream),
                  dev->name, what));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
};

template <ReduceFn kFn, bool kMean = false>
void Register(sdk::Plugin& p, const char* op, std::initializer_list<cfx_dtype> types) {
  for (cfx_dtype t : types)
    p.AsyncKernel<ReduceKernel<kFn, kMean>>(op, kDeviceType)
        .TypeConstraint("T", t)
        .HostMemory("reduction_indices")
        .Inexpensive();
}

template <bool kMax>
void RegisterArg(sdk::Plugin& p, const char* op) {
  for (cfx_dtype out : {CFX_INT32, CFX_INT64})
    p.AsyncKernel<ArgReduceKernel<kMax>>(op, kDeviceType)
        .TypeConstraint("T", CFX_FLOAT)
        .TypeConstraint("output_type", out)
        .HostMemory("dimension")
        .Inexpensive();
}

}  // namespace

void RegisterReductionKernels(sdk::Plugin& p) {
  Register<ReduceFn::kSum>(p, "Sum", {CFX_FLOAT, CFX_INT32, CFX_INT64});
  Register<ReduceFn::kSum, /*kMean=*/true>(p, "Mean", {CFX_FLOAT});
  Register<ReduceFn::kMax>(p, "Max", {CFX_FLOAT, CFX_INT32, CFX_INT64});
  Register<ReduceFn::kMin>(p, "Min", {CFX_FLOAT, CFX_INT32, CFX_INT64});
  Register<ReduceFn::kProd>(p, "Prod", {CFX_FLOAT, CFX_INT32, CFX_INT64});
  RegisterArg<true>(p, "ArgMax");
  RegisterArg<false>(p, "ArgMin");
}

}  // namespace cfx::cuda
