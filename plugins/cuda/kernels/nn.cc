// Neural-network kernels on CUDA (float): Softmax and LogSoftmax over the last dimension,
// SoftmaxCrossEntropyWithLogits (features and labels broadcast to a matrix as the CPU kernel
// allows), SparseSoftmaxCrossEntropyWithLogits (int32 or int64 labels), BiasAddGrad (NHWC or
// NCHW) and L2Loss. The ops are the ops-nn plugin's; inputs are validated with its rules and
// messages so that both devices refuse the same inputs the same way.
//
// The softmax family runs row by row in nn.cu; BiasAddGrad (a sum over every dimension but the
// channels) and L2Loss (a sum of squares, halved) are planned reductions (reduction.cu).
//
// Sparse labels are declared host memory and checked on the host before anything is enqueued:
// an out-of-range label is the CPU kernel's InvalidArgument (the executor adds the node's name),
// and the step stays asynchronous where the labels come from the host (a feed), as they usually
// do: there is no wait for the device. (Checking on the device instead would hold the kernel's
// completion, and every node after it, until the stream had drained to read an error flag back.)
// Labels produced on the GPU are copied to the host by the executor, which waits for them there.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "conflux/sdk/data_format.h"
#include "conflux/sdk/reduction_plan.h"
#include "cuda_common.h"
#include "kernels/kernels.h"
#include "kernels/nn_launch.h"
#include "kernels/reduction_plan_cuda.h"
#include "kernels/reduction_run.h"

namespace cfx::cuda {
namespace {

sdk::Status Launched(cudaError_t err, sdk::KernelContext& ctx, const std::string& what) {
  return CudaCheck(err, ctx.device()->name, "launch of " + what);
}

// ---- Softmax and LogSoftmax.

template <SoftmaxMode kMode>
class SoftmaxKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor logits = ctx.input(0);
    const sdk::Shape shape = logits.shape();
    if (logits.rank() < 1)
      return sdk::InvalidArgument("logits must have rank >= 1 (softmax runs over the last ",
                                  "dimension), got shape ", sdk::ShapeString(shape));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, shape));
    const int64_t cols = shape.back();
    if (logits.num_elements() == 0) {
      done();
      return sdk::Status();
    }
    SoftmaxArgs a;
    a.mode = kMode;
    a.rows = logits.num_elements() / cols;
    a.cols = cols;
    a.x = logits.data<float>();
    a.x_row_step = cols;
    a.y = out.data<float>();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    CFX_SDK_RETURN_IF_ERROR(Launched(LaunchSoftmax(a, Stream(ctx)), ctx, node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
};

// ---- Cross entropies.

// TensorFlow's broadcast of two known shapes (right-aligned; a dimension of 1 stretches); false
// when two dimensions differ and neither is 1.
bool BroadcastDims(const sdk::Shape& a, const sdk::Shape& b, sdk::Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != 1 && y != 1 && x != y) return false;
    (*out)[i] = x == 1 ? y : x;
  }
  return true;
}

// Where element (r, k) of a [rows, cols] broadcast operand of shape `s` lies: r * row + k * col.
struct Steps {
  int64_t row, col;
};
Steps BroadcastSteps(const sdk::Shape& s, int64_t cols) {
  const int64_t d0 = s.size() >= 2 ? s[s.size() - 2] : 1, d1 = s.empty() ? 1 : s.back();
  return {d0 == 1 ? 0 : d1, d1 == 1 && cols != 1 ? 0 : 1};
}

class XentKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor features = ctx.input(0), labels = ctx.input(1);
    const sdk::Shape fs = features.shape(), ls = labels.shape();
    sdk::Shape dims;
    if (!BroadcastDims(fs, ls, &dims))
      return sdk::InvalidArgument("features (shape ", sdk::ShapeString(fs), ") and labels (shape ",
                                  sdk::ShapeString(ls), ") must be broadcastable");
    if (dims.size() != 2)
      return sdk::InvalidArgument(
          "features (shape ", sdk::ShapeString(fs), ") and labels (shape ", sdk::ShapeString(ls),
          ") must be matrices, or broadcast to one; they broadcast to ", sdk::ShapeString(dims));
    const int64_t rows = dims[0], cols = dims[1];
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor loss, ctx.AllocateOutput(0, {rows}));
    // The features' buffer can hold the backprop only when it is the whole [rows, cols] matrix.
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor backprop, features.num_elements() == rows * cols
                                                       ? ctx.ForwardOrAllocateOutput({0}, 1, dims)
                                                       : ctx.AllocateOutput(1, dims));
    if (rows == 0) {
      done();
      return sdk::Status();
    }
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    if (cols == 0) {  // a sum over no classes
      CFX_SDK_RETURN_IF_ERROR(
          CudaCheck(cudaMemsetAsync(loss.raw_data(), 0, loss.byte_size(), Stream(ctx)), dev->name,
                    "cudaMemsetAsync of " + node_ + "'s loss"));
      return CompleteAsync(ctx, done);
    }
    const Steps x = BroadcastSteps(fs, cols), l = BroadcastSteps(ls, cols);
    SoftmaxArgs a;
    a.mode = SoftmaxMode::kCrossEntropy;
    a.rows = rows;
    a.cols = cols;
    a.x = features.data<float>();
    a.x_row_step = x.row;
    a.x_col_step = x.col;
    a.labels = labels.data<float>();
    a.labels_row_step = l.row;
    a.labels_col_step = l.col;
    a.y = backprop.data<float>();
    a.loss = loss.data<float>();
    CFX_SDK_RETURN_IF_ERROR(Launched(LaunchSoftmax(a, Stream(ctx)), ctx, node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
};

// Copies `values` to device memory `dst` on the kernel's stream through pinned staging (freed
// once the copy has run), so that the enqueue does not wait for the stream.
sdk::Status UploadLabels(sdk::KernelContext& ctx, const std::vector<int64_t>& values,
                         int64_t* dst) {
  cfx_device* dev = ctx.device();
  const cudaStream_t stream = Stream(ctx);
  const size_t bytes = values.size() * sizeof(int64_t);
  const std::string what = sdk::StrCat("cudaMemcpyAsync of ", bytes, " bytes of labels");
  auto staging = dev->pinned->Allocate(bytes);
  if (!staging.ok()) {
    // Pageable memory: the driver has read it once the call returns.
    return CudaCheck(cudaMemcpyAsync(dst, values.data(), bytes, cudaMemcpyHostToDevice, stream),
                     dev->name, what);
  }
  std::memcpy(*staging, values.data(), bytes);
  BfcAllocator* pool = dev->pinned.get();
  void* buffer = *staging;
  sdk::Status s = CudaCheck(cudaMemcpyAsync(dst, buffer, bytes, cudaMemcpyHostToDevice, stream),
                            dev->name, what);
  // The staging buffer goes back on the callback thread once the copy has run.
  if (s.ok())
    s = WhenComplete(dev, stream, [pool, buffer](const sdk::Status&) { pool->Free(buffer); });
  if (!s.ok()) {
    cudaStreamSynchronize(stream);
    pool->Free(buffer);
  }
  return s;
}

class SparseXentKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor features = ctx.input(0), labels = ctx.input(1);  // labels: host memory
    const sdk::Shape fs = features.shape(), ls = labels.shape();
    if (fs.size() != 2)
      return sdk::InvalidArgument("features must have rank 2 ([batch, classes]), got shape ",
                                  sdk::ShapeString(fs));
    if (ls.size() != 1)
      return sdk::InvalidArgument("labels must have rank 1 ([batch]), got shape ",
                                  sdk::ShapeString(ls));
    const int64_t rows = fs[0], cols = fs[1];
    if (ls[0] != rows)
      return sdk::InvalidArgument("features (shape ", sdk::ShapeString(fs), ") and labels (shape ",
                                  sdk::ShapeString(ls), ") must have the same first dimension");
    if (rows > 0 && cols == 0)
      return sdk::InvalidArgument("features must have at least one class, got shape ",
                                  sdk::ShapeString(fs));
    std::vector<int64_t> label(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      label[r] =
          labels.dtype() == CFX_INT32 ? labels.data<int32_t>()[r] : labels.data<int64_t>()[r];
      if (label[r] < 0 || label[r] >= cols)
        return sdk::InvalidArgument("labels[", r, "] = ", label[r],
                                    " is outside the valid range of classes [0, ", cols, ")");
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor loss, ctx.AllocateOutput(0, {rows}));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor backprop, ctx.ForwardOrAllocateOutput({0}, 1, fs));
    if (rows == 0) {
      done();
      return sdk::Status();
    }
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(ctx.device()));
    // Freed in stream order by the host, after the launch below has read it.
    CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef device_labels,
                             ctx.AllocateTemp(CFX_INT64, sdk::Shape{rows}));
    int64_t* dl = device_labels.view().data<int64_t>();
    CFX_SDK_RETURN_IF_ERROR(UploadLabels(ctx, label, dl));
    SoftmaxArgs a;
    a.mode = SoftmaxMode::kSparseCrossEntropy;
    a.rows = rows;
    a.cols = cols;
    a.x = features.data<float>();
    a.x_row_step = cols;
    a.sparse_labels = dl;
    a.y = backprop.data<float>();
    a.loss = loss.data<float>();
    CFX_SDK_RETURN_IF_ERROR(Launched(LaunchSoftmax(a, Stream(ctx)), ctx, node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
};

// ---- Sums: BiasAddGrad and L2Loss.

class BiasAddGradKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::ReadDataFormat(init.attrs(), &format_);
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor grad = ctx.input(0);
    const sdk::Shape shape = grad.shape();
    CFX_SDK_RETURN_IF_ERROR(
        sdk::CheckChanneledRank(grad.rank(), sdk::ShapeString(shape), "out_backprop"));
    const int channel = sdk::ChannelDim(format_, grad.rank());
    std::vector<int64_t> axes;
    for (int d = 0; d < grad.rank(); ++d)
      if (d != channel) axes.push_back(d);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::ReductionPlan plan, sdk::PlanReduction(shape, axes, false));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, {shape[channel]}));
    if (plan.output_elements == 0) {
      done();
      return sdk::Status();
    }
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    const cudaStream_t stream = Stream(ctx);
    if (plan.input_elements == 0) {  // sums of nothing
      CFX_SDK_RETURN_IF_ERROR(CudaCheck(cudaMemsetAsync(out.raw_data(), 0, out.byte_size(), stream),
                                        dev->name, "cudaMemsetAsync of " + node_ + "'s output"));
      return CompleteAsync(ctx, done);
    }
    if (!ReducesAnything(plan)) {  // every other dimension is 1: the gradient itself
      CFX_SDK_RETURN_IF_ERROR(
          CudaCheck(cudaMemcpyAsync(out.raw_data(), grad.raw_data(), out.byte_size(),
                                    cudaMemcpyDeviceToDevice, stream),
                    dev->name, "cudaMemcpyAsync of " + node_ + "'s input"));
      return CompleteAsync(ctx, done);
    }
    const ReduceSchedule schedule = ScheduleReduction(ReducePasses(plan), MultiprocessorCount(dev));
    CFX_SDK_RETURN_IF_ERROR(EnqueueReduceSchedule(ctx, schedule, ReduceFn::kSum, CFX_FLOAT,
                                                  grad.raw_data(), out.raw_data(), false, 0,
                                                  node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
  sdk::DataFormat format_ = sdk::DataFormat::kNHWC;
};

class L2LossKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor t = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, {}));
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    const int64_t n = t.num_elements();
    if (n == 0) {
      CFX_SDK_RETURN_IF_ERROR(
          CudaCheck(cudaMemsetAsync(out.raw_data(), 0, sizeof(float), Stream(ctx)), dev->name,
                    "cudaMemsetAsync of " + node_ + "'s output"));
      return CompleteAsync(ctx, done);
    }
    // sum(t^2) / 2: one contiguous run, squared as it is read, halved as it is written.
    const ReduceSchedule schedule = ScheduleReduction({{1, n, 1}}, MultiprocessorCount(dev));
    CFX_SDK_RETURN_IF_ERROR(EnqueueReduceSchedule(ctx, schedule, ReduceFn::kSum, CFX_FLOAT,
                                                  t.raw_data(), out.raw_data(),
                                                  /*square_input=*/true, /*divisor=*/2, node_));
    return CompleteAsync(ctx, done);
  }

 private:
  std::string node_;
};

}  // namespace

void RegisterNnKernels(sdk::Plugin& p) {
  p.AsyncKernel<SoftmaxKernel<SoftmaxMode::kSoftmax>>("Softmax", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<SoftmaxKernel<SoftmaxMode::kLogSoftmax>>("LogSoftmax", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<XentKernel>("SoftmaxCrossEntropyWithLogits", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  for (cfx_dtype labels : {CFX_INT32, CFX_INT64})
    p.AsyncKernel<SparseXentKernel>("SparseSoftmaxCrossEntropyWithLogits", kDeviceType)
        .TypeConstraint("T", CFX_FLOAT)
        .TypeConstraint("Tlabels", labels)
        .HostMemory("labels")
        .Inexpensive();
  p.AsyncKernel<BiasAddGradKernel>("BiasAddGrad", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<L2LossKernel>("L2Loss", kDeviceType).TypeConstraint("T", CFX_FLOAT).Inexpensive();
}

}  // namespace cfx::cuda
