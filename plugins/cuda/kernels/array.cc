// Array kernels on CUDA for bool, float, int32 and int64 data: Transpose, Tile, BroadcastTo,
// Slice and StridedSlice (one strided copy), ConcatV2, Pack, Split and Unpack (row copies),
// GatherV2, ZerosLike, OnesLike, Select and SelectV2, and Shape, Size and Rank (outputs in host
// memory). Index and shape inputs are in host memory; inputs are checked with the SDK's shape
// rules, as the CPU kernels check them, and a result that is all of an input shares its buffer.
// The device code is in array.cu. Kernels keep only attrs, so ComputeAsync may run concurrently.
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "conflux/sdk/basic_kernels.h"
#include "conflux/sdk/gradient_shape_rules.h"
#include "conflux/sdk/host_kernels.h"
#include "conflux/sdk/shape_rules.h"
#include "cuda_common.h"
#include "kernels/array_plan.h"
#include "kernels/kernels.h"
#include "kernels/segment_sum_launch.h"

namespace cfx::cuda {
namespace {

constexpr cfx_dtype kTypes[] = {CFX_FLOAT, CFX_INT32, CFX_INT64, CFX_BOOL};

sdk::Status DoneAtOnce(sdk::AsyncDone done) {
  done();
  return sdk::Status();
}

// ---- Host-memory index inputs -------------------------------------------------------------

// `t` (int16, int32 or int64) as int64 values; InvalidArgument naming `what` otherwise.
sdk::Status ReadValues(const sdk::Tensor& t, const char* what, Dims* out) {
  const int64_t n = t.num_elements();
  out->resize(static_cast<size_t>(n));
  switch (t.dtype()) {
    case CFX_INT16:
      for (int64_t k = 0; k < n; ++k) (*out)[k] = t.data<int16_t>()[k];
      return sdk::Status();
    case CFX_INT32:
      for (int64_t k = 0; k < n; ++k) (*out)[k] = t.data<int32_t>()[k];
      return sdk::Status();
    case CFX_INT64:
      for (int64_t k = 0; k < n; ++k) (*out)[k] = t.data<int64_t>()[k];
      return sdk::Status();
    default:
      return sdk::InvalidArgument(what, " must be int16, int32 or int64, got ",
                                  sdk::DTypeName(t.dtype()));
  }
}

// Input `i` (named `what`), a vector.
sdk::Status ReadVector(const sdk::KernelContext& ctx, int i, const char* what, Dims* out) {
  const sdk::Tensor t = ctx.input(i);
  if (t.rank() != 1)
    return sdk::InvalidArgument(what, " must be a vector, got shape ", sdk::ShapeString(t.shape()));
  return ReadValues(t, what, out);
}

// Input `i` (named `what`), a scalar.
sdk::Status ReadScalar(const sdk::KernelContext& ctx, int i, const char* what, int64_t* out) {
  const sdk::Tensor t = ctx.input(i);
  if (t.rank() != 0)
    return sdk::InvalidArgument(what, " must be a scalar, got shape ", sdk::ShapeString(t.shape()));
  Dims v;
  CFX_SDK_RETURN_IF_ERROR(ReadValues(t, what, &v));
  *out = v[0];
  return sdk::Status();
}

// ---- Copies --------------------------------------------------------------------------------

// Allocates output 0 with `out_shape` and fills it from input 0 by `plan`, then completes.
sdk::Status EnqueueStridedCopy(sdk::KernelContext& ctx, sdk::AsyncDone done,
                               const sdk::Shape& out_shape, const StridedCopyPlan& plan) {
  const sdk::Tensor in = ctx.input(0);
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
  if (plan.num_elements == 0) return DoneAtOnce(done);
  const size_t elem_size = sdk::DTypeSize(in.dtype());
  cfx_device* dev = ctx.device();
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
  if (plan.contiguous) {
    const char* src =
        static_cast<const char*>(in.raw_data()) + plan.index.base * static_cast<int64_t>(elem_size);
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(
        cudaMemcpyAsync(out.raw_data(), src, static_cast<size_t>(plan.num_elements) * elem_size,
                        cudaMemcpyDeviceToDevice, Stream(ctx)),
        dev->name, "cudaMemcpyAsync of " + ctx.node_name()));
  } else {
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(LaunchStridedCopy(in.raw_data(), out.raw_data(), elem_size,
                                                        plan.index, plan.num_elements, Stream(ctx)),
                                      dev->name,
                                      "launch of the strided copy of " + ctx.node_name()));
  }
  return CompleteAsync(ctx, done);
}

// One tensor's part of a join or a cut: its data and its rows around the axis.
struct Part {
  char* data;
  int64_t row_bytes;
};

// Copies between `whole` (`outer` rows, each the parts' rows in order) and the parts: into
// `whole` when `join`, else out of it. Empty parts are skipped.
sdk::Status CopyParts(sdk::KernelContext& ctx, char* whole, const std::vector<Part>& parts,
                      int64_t outer, bool join) {
  int64_t row = 0;
  for (const Part& p : parts) row += p.row_bytes;
  if (outer == 0 || row == 0) return sdk::Status();
  cfx_device* dev = ctx.device();
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
  int64_t offset = 0;
  for (const Part& p : parts) {
    if (p.row_bytes > 0) {
      const cudaError_t err = join ? LaunchCopyRows(p.data, p.row_bytes, whole + offset, row,
                                                    p.row_bytes, outer, Stream(ctx))
                                   : LaunchCopyRows(whole + offset, row, p.data, p.row_bytes,
                                                    p.row_bytes, outer, Stream(ctx));
      CFX_SDK_RETURN_IF_ERROR(CudaCheck(err, dev->name, "row copy of " + ctx.node_name()));
    }
    offset += p.row_bytes;
  }
  return sdk::Status();
}

// Allocates output 0 with `out_shape` and joins inputs [0, n) into it along `axis`.
sdk::Status JoinInputs(sdk::KernelContext& ctx, sdk::AsyncDone done, int n,
                       const sdk::Shape& out_shape, size_t axis) {
  const size_t elem_size = sdk::DTypeSize(ctx.input(0).dtype());
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
  std::vector<Part> parts;
  for (int k = 0; k < n; ++k) {
    const sdk::Tensor in = ctx.input(k);
    parts.push_back({static_cast<char*>(in.raw_data()), RowsOf(in.shape(), axis, elem_size).bytes});
  }
  CFX_SDK_RETURN_IF_ERROR(CopyParts(ctx, static_cast<char*>(out.raw_data()), parts,
                                    RowsOf(out_shape, axis, elem_size).outer, /*join=*/true));
  return CompleteAsync(ctx, done);
}

// Allocates every output with shape `piece` and cuts `in` into them along `axis`.
sdk::Status CutInput(sdk::KernelContext& ctx, sdk::AsyncDone done, const sdk::Tensor& in,
                     const sdk::Shape& piece, size_t axis) {
  const size_t elem_size = sdk::DTypeSize(in.dtype());
  const RowsAround rows = RowsOf(piece, axis, elem_size);
  std::vector<Part> parts;
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(k, piece));
    parts.push_back({static_cast<char*>(out.raw_data()), rows.bytes});
  }
  CFX_SDK_RETURN_IF_ERROR(CopyParts(ctx, static_cast<char*>(in.raw_data()), parts,
                                    RowsOf(in.shape(), axis, elem_size).outer, /*join=*/false));
  return CompleteAsync(ctx, done);
}

// ---- Rearrangements ------------------------------------------------------------------------

// Transpose(x, perm): output dimension i is input dimension perm[i].
class TransposeKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor in = ctx.input(0);
    const Dims dims = in.shape();
    Dims perm, out_shape;
    CFX_SDK_RETURN_IF_ERROR(ReadVector(ctx, 1, "perm", &perm));
    CFX_SDK_RETURN_IF_ERROR(sdk::RuleStatus(shape_rules::TransposeShape(dims, perm, &out_shape)));
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
    if (identity) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutput(0, in));
      return DoneAtOnce(done);
    }
    CFX_SDK_ASSIGN_OR_RETURN(StridedCopyPlan plan, PlanTranspose(dims, perm));
    return EnqueueStridedCopy(ctx, done, out_shape, plan);
  }
};

// Tile(input, multiples): dimension i repeated multiples[i] times.
class TileKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor in = ctx.input(0);
    const Dims dims = in.shape();
    Dims multiples, out_shape;
    CFX_SDK_RETURN_IF_ERROR(ReadVector(ctx, 1, "multiples", &multiples));
    CFX_SDK_RETURN_IF_ERROR(sdk::RuleStatus(shape_rules::TileShape(dims, multiples, &out_shape)));
    if (out_shape == dims) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutput(0, in));
      return DoneAtOnce(done);
    }
    CFX_SDK_ASSIGN_OR_RETURN(StridedCopyPlan plan, PlanTile(dims, multiples));
    return EnqueueStridedCopy(ctx, done, out_shape, plan);
  }
};

// BroadcastTo(input, shape): `input` stretched to `shape` by NumPy's rules.
class BroadcastToKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor in = ctx.input(0);
    const Dims dims = in.shape();
    Dims shape, out_shape;
    CFX_SDK_RETURN_IF_ERROR(ReadVector(ctx, 1, "shape", &shape));
    CFX_SDK_RETURN_IF_ERROR(sdk::RuleStatus(shape_rules::CheckNonNegative(shape, "shape")));
    CFX_SDK_RETURN_IF_ERROR(
        sdk::RuleStatus(shape_rules::BroadcastToShape(dims, shape, &out_shape)));
    // No element repeats: the input's buffer under the new shape.
    if (shape_rules::NumElements(out_shape) == in.num_elements()) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutputReshaped(0, in, out_shape));
      return DoneAtOnce(done);
    }
    CFX_SDK_ASSIGN_OR_RETURN(StridedCopyPlan plan, PlanBroadcastTo(dims, out_shape));
    return EnqueueStridedCopy(ctx, done, out_shape, plan);
  }
};

// Output 0: the box begin/stride/size of input 0 under `out_shape`; the input itself when the box
// is all of it.
sdk::Status SliceOutput(sdk::KernelContext& ctx, sdk::AsyncDone done, const Dims& begin,
                        const Dims& stride, const Dims& size, const Dims& out_shape) {
  const sdk::Tensor in = ctx.input(0);
  const Dims dims = in.shape();
  bool whole = true;
  for (size_t d = 0; d < dims.size(); ++d)
    whole = whole && begin[d] == 0 && stride[d] == 1 && size[d] == dims[d];
  if (whole) {
    CFX_SDK_RETURN_IF_ERROR(out_shape == dims ? ctx.SetOutput(0, in)
                                              : ctx.SetOutputReshaped(0, in, out_shape));
    return DoneAtOnce(done);
  }
  CFX_SDK_ASSIGN_OR_RETURN(StridedCopyPlan plan,
                           PlanSlice(dims, begin, stride, size, ctx.node_name()));
  return EnqueueStridedCopy(ctx, done, out_shape, plan);
}

// Slice(input, begin, size): size[i] elements from begin[i]; size -1 takes the rest.
class SliceKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    Dims begin, size, out;
    CFX_SDK_RETURN_IF_ERROR(ReadVector(ctx, 1, "begin", &begin));
    CFX_SDK_RETURN_IF_ERROR(ReadVector(ctx, 2, "size", &size));
    CFX_SDK_RETURN_IF_ERROR(
        sdk::RuleStatus(shape_rules::SliceShape(ctx.input(0).shape(), begin, size, &out)));
    return SliceOutput(ctx, done, begin, Dims(begin.size(), 1), out, out);
  }
};

// StridedSlice(input, begin, end, strides) with TensorFlow's masks (shape_rules::
// StridedSliceShape): negative strides, ellipsis, new and shrunk axes.
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
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    shape_rules::StridedSliceSpec spec = spec_;
    CFX_SDK_RETURN_IF_ERROR(ReadVector(ctx, 1, "begin", &spec.begin));
    CFX_SDK_RETURN_IF_ERROR(ReadVector(ctx, 2, "end", &spec.end));
    CFX_SDK_RETURN_IF_ERROR(ReadVector(ctx, 3, "strides", &spec.strides));
    shape_rules::StridedSliceDense dense;
    Dims out;
    CFX_SDK_RETURN_IF_ERROR(
        sdk::RuleStatus(shape_rules::StridedSliceShape(ctx.input(0).shape(), spec, &dense, &out)));
    return SliceOutput(ctx, done, dense.begin, dense.stride, dense.size, out);
  }

 private:
  shape_rules::StridedSliceSpec spec_;  // masks only; begin/end/strides come per step
};

// ---- Joins and cuts ------------------------------------------------------------------------

// ConcatV2(values..., axis): the inputs joined along `axis`.
class ConcatV2Kernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const int n = ctx.num_inputs() - 1;
    int64_t axis = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalar(ctx, n, "axis", &axis));
    std::vector<Dims> shapes;
    for (int k = 0; k < n; ++k) shapes.push_back(ctx.input(k).shape());
    Dims out_shape;
    CFX_SDK_RETURN_IF_ERROR(sdk::RuleStatus(shape_rules::ConcatShape(shapes, &axis, &out_shape)));
    return JoinInputs(ctx, done, n, out_shape, static_cast<size_t>(axis));
  }
};

// Pack(values...): the N inputs, all of one shape, stacked along a new dimension `axis`.
class PackKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return init.attrs().Get("axis", &axis_); }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const int n = ctx.num_inputs();
    std::vector<Dims> shapes;
    for (int k = 0; k < n; ++k) shapes.push_back(ctx.input(k).shape());
    int64_t axis = axis_;
    Dims out_shape;
    CFX_SDK_RETURN_IF_ERROR(sdk::RuleStatus(shape_rules::PackShape(shapes, n, &axis, &out_shape)));
    // Around the new dimension an input's row is all of its dims from `axis` on.
    return JoinInputs(ctx, done, n, out_shape, static_cast<size_t>(axis));
  }

 private:
  int64_t axis_ = 0;
};

// Split(split_dim, value): num_split equal pieces of `value` along split_dim.
class SplitKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    int64_t axis = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalar(ctx, 0, "split_dim", &axis));
    const sdk::Tensor in = ctx.input(1);
    Dims piece;
    CFX_SDK_RETURN_IF_ERROR(
        sdk::RuleStatus(shape_rules::SplitShape(in.shape(), &axis, ctx.num_outputs(), &piece)));
    if (ctx.num_outputs() == 1) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutput(0, in));
      return DoneAtOnce(done);
    }
    return CutInput(ctx, done, in, piece, static_cast<size_t>(axis));
  }
};

// Unpack(value): the `num` slices of `value` along `axis`, that dimension removed.
class UnpackKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return init.attrs().Get("axis", &axis_); }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor in = ctx.input(0);
    int64_t axis = axis_;
    Dims piece;
    CFX_SDK_RETURN_IF_ERROR(
        sdk::RuleStatus(shape_rules::UnpackShape(in.shape(), &axis, ctx.num_outputs(), &piece)));
    if (ctx.num_outputs() == 1) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutputReshaped(0, in, piece));
      return DoneAtOnce(done);
    }
    // Around `axis` an output's row is the input's dims after `axis`.
    return CutInput(ctx, done, in, piece, static_cast<size_t>(axis));
  }

 private:
  int64_t axis_ = 0;
};

// ---- GatherV2 ------------------------------------------------------------------------------

// Completes a kernel whose launches wrote a Check struct into device memory (`check`, inside
// `scratch`): once the work enqueued so far has run, the struct comes back through pinned memory
// and done(verdict(result)) runs, so that a bad index found on the device fails the node.
template <typename Check, typename Verdict>
sdk::Status CompleteAfterCheck(sdk::KernelContext& ctx, const Check* check, sdk::TensorRef scratch,
                               const char* what, sdk::AsyncDone done, Verdict verdict) {
  cfx_device* dev = ctx.device();
  const cudaStream_t stream = Stream(ctx);
  CFX_SDK_ASSIGN_OR_RETURN(void* host, dev->pinned->Allocate(sizeof(Check)));
  sdk::Status s = CudaCheck(
      cudaMemcpyAsync(host, check, sizeof(Check), cudaMemcpyDeviceToHost, stream), dev->name,
      std::string("cudaMemcpyAsync of the ") + what + " of " + ctx.node_name());
  if (s.ok())
    s = WhenComplete(dev, stream, [dev, host, scratch, done, verdict](const sdk::Status& ran) {
      Check result;
      std::memcpy(&result, host, sizeof(result));
      dev->pinned->Free(host);
      if (!ran.ok()) return done(ran);
      done(verdict(result));
    });
  if (!s.ok()) {
    // Work already enqueued may still write `host`: let it finish before the block goes back.
    cudaStreamSynchronize(stream);
    dev->pinned->Free(host);
  }
  return s;
}

// GatherV2(params, indices, axis) with batch_dims. The indices stay on the device: the kernel
// checks them there and the call completes once the check's result is back on the host, failing
// with the first bad index as the CPU kernel words it.
class GatherV2Kernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return init.attrs().GetOr("batch_dims", &batch_dims_, int64_t{0});
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor params = ctx.input(0), indices = ctx.input(1);
    int64_t axis = 0, batch_dims = batch_dims_;
    CFX_SDK_RETURN_IF_ERROR(ReadScalar(ctx, 2, "axis", &axis));
    const Dims indices_shape = indices.shape();
    Dims out_shape;
    shape_rules::GatherSizes sizes;
    CFX_SDK_RETURN_IF_ERROR(sdk::RuleStatus(shape_rules::GatherShape(
        params.shape(), indices_shape, &axis, &batch_dims, &out_shape, &sizes)));
    const size_t index_size = sdk::DTypeSize(indices.dtype());
    if (indices.dtype() != CFX_INT32 && indices.dtype() != CFX_INT64)
      return sdk::InvalidArgument("indices must be int32 or int64 on GPU, got ",
                                  sdk::DTypeName(indices.dtype()));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    if (indices.num_elements() == 0) return DoneAtOnce(done);  // nothing to check or copy

    cfx_device* dev = ctx.device();
    CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef scratch,  // a GatherCheck in device memory
                             ctx.AllocateTemp(CFX_INT64, {2}));
    auto* check = static_cast<GatherCheck*>(scratch.view().raw_data());
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchGather(params.raw_data(), indices.raw_data(), index_size, out.raw_data(),
                               sdk::DTypeSize(params.dtype()), LayoutOf(sizes), check, Stream(ctx)),
                  dev->name, "launch of the gather of " + ctx.node_name()));
    return CompleteAfterCheck(ctx, check, scratch, "index check", done,
                              [indices_shape, sizes](const GatherCheck& result) -> sdk::Status {
                                if (result.first_bad == kNoBadIndex) return sdk::Status();
                                return sdk::InvalidArgument(BadIndexMessage(
                                    indices_shape, static_cast<int64_t>(result.first_bad),
                                    result.value, sizes.axis_size));
                              });
  }

 private:
  int64_t batch_dims_ = 0;
};

// ---- UnsortedSegmentSum (GatherV2's gradient) ---------------------------------------------

// UnsortedSegmentSum(data, segment_ids, num_segments): the CPU kernel's sums in its order
// (kernels/segment_sum_launch.h), negative ids dropped; an id at or above num_segments fails the
// node with the CPU's message once the device's check is back.
class UnsortedSegmentSumKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor data = ctx.input(0), ids = ctx.input(1);
    int64_t num_segments = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalar(ctx, 2, "num_segments", &num_segments));
    if (num_segments < 0)
      return sdk::InvalidArgument("num_segments = ", num_segments, " must be >= 0");
    Dims out_shape;
    CFX_SDK_RETURN_IF_ERROR(sdk::RuleStatus(
        shape_rules::UnsortedSegmentShape(data.shape(), ids.shape(), num_segments, &out_shape)));
    if (ids.dtype() != CFX_INT32 && ids.dtype() != CFX_INT64)
      return sdk::InvalidArgument("segment_ids must be int32 or int64, got ",
                                  sdk::DTypeName(ids.dtype()));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    const int64_t rows = ids.num_elements();
    const int64_t row_size = rows == 0 ? 0 : data.num_elements() / rows;
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    const cudaStream_t stream = Stream(ctx);
    if (rows == 0) {  // nothing to add or check
      if (out.byte_size() > 0)
        CFX_SDK_RETURN_IF_ERROR(
            CudaCheck(cudaMemsetAsync(out.raw_data(), 0, out.byte_size(), stream), dev->name,
                      "cudaMemsetAsync of " + ctx.node_name()));
      return CompleteAsync(ctx, done);
    }
    if (rows > kMaxSegmentRows)
      return sdk::Unimplemented("UnsortedSegmentSum on GPU takes at most ", kMaxSegmentRows,
                                " segment ids, got ", rows);
    const size_t scratch_bytes = SegmentSumScratchBytes(rows);
    CFX_SDK_ASSIGN_OR_RETURN(
        sdk::TensorRef scratch,  // the sort's arrays, CUB's scratch, then the check
        ctx.AllocateTemp(CFX_INT64, {static_cast<int64_t>(scratch_bytes / 8 + 2)}));
    char* base = static_cast<char*>(scratch.view().raw_data());
    auto* check = reinterpret_cast<SegmentCheck*>(base + scratch_bytes);
    SegmentSumArgs a;
    a.dtype = data.dtype();
    a.data = data.raw_data();
    a.ids = ids.raw_data();
    a.id_size = sdk::DTypeSize(ids.dtype());
    a.rows = rows;
    a.row_size = row_size;
    a.num_segments = num_segments;
    a.out = out.raw_data();
    a.scratch = base;
    a.check = check;
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(LaunchUnsortedSegmentSum(a, stream), dev->name,
                                      "launch of the segment sum of " + ctx.node_name()));
    return CompleteAfterCheck(ctx, check, scratch, "segment id check", done,
                              [num_segments](const SegmentCheck& result) -> sdk::Status {
                                if (result.first_bad == kNoBadSegment) return sdk::Status();
                                return sdk::InvalidArgument(
                                    "segment_ids[", result.first_bad, "] = ", result.value,
                                    " is out of range [0, ", num_segments, ")");
                              });
  }
};

// ---- Fills, Select, shape queries ----------------------------------------------------------

// ZerosLike (kOne = false) and OnesLike (kOne = true): output 0 of input 0's shape, filled.
template <bool kOne>
class FillLikeKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor in = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, in.shape()));
    const int64_t n = out.num_elements();
    if (n == 0) return DoneAtOnce(done);
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    const size_t size = sdk::DTypeSize(in.dtype());
    cudaError_t err;
    if (!kOne || size == 1) {  // all-zero bytes are 0 in every dtype; a bool 1 is one byte
      err = cudaMemsetAsync(out.raw_data(), kOne ? 1 : 0, out.byte_size(), Stream(ctx));
    } else {
      unsigned char one[8];
      const float one_f = 1.0f;
      const int32_t one_i32 = 1;
      const int64_t one_i64 = 1;
      switch (in.dtype()) {
        case CFX_FLOAT:
          std::memcpy(one, &one_f, 4);
          break;
        case CFX_INT32:
          std::memcpy(one, &one_i32, 4);
          break;
        case CFX_INT64:
          std::memcpy(one, &one_i64, 8);
          break;
        default:
          return sdk::Unimplemented("OnesLike on GPU does not support ",
                                    sdk::DTypeName(in.dtype()));
      }
      err = LaunchFill(one, size, out.raw_data(), n, Stream(ctx));
    }
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(err, dev->name, "fill of " + ctx.node_name()));
    return CompleteAsync(ctx, done);
  }
};

// Select (kV2 = false) and SelectV2 (kV2 = true): condition ? t : e.
template <bool kV2>
class SelectKernel {
 public:
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const sdk::Tensor condition = ctx.input(0), t = ctx.input(1), e = ctx.input(2);
    CFX_SDK_ASSIGN_OR_RETURN(DeviceBroadcast b,
                             PlanSelect(condition.shape(), t.shape(), e.shape(), kV2));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out,
                             ctx.ForwardOrAllocateOutput({1, 2}, 0, b.output_shape));
    if (b.num_elements == 0) return DoneAtOnce(done);
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(LaunchSelect(condition.data<bool>(), t.raw_data(), e.raw_data(), out.raw_data(),
                               sdk::DTypeSize(t.dtype()), b.index, b.num_elements, Stream(ctx)),
                  dev->name, "launch of the select of " + ctx.node_name()));
    return CompleteAsync(ctx, done);
  }
};

// Registers K for `op` once per data dtype of `type_attr`, with `host` arguments in host memory.
template <typename K>
void Register(sdk::Plugin& p, const char* op, std::initializer_list<const char*> host = {},
              const char* type_attr = "T") {
  for (cfx_dtype t : kTypes) {
    auto b = p.AsyncKernel<K>(op, kDeviceType);
    b.TypeConstraint(type_attr, t).Inexpensive();  // only enqueues
    for (const char* h : host) b.HostMemory(h);
  }
}

// Shape queries read only the shape: they run on the host, their output in host memory.
template <typename K>
void RegisterShapeQuery(sdk::Plugin& p, const char* op) {
  for (cfx_dtype t : kTypes)
    p.Kernel<K>(op, kDeviceType).TypeConstraint("T", t).HostMemory("output").Inexpensive();
}

}  // namespace

void RegisterArrayKernels(sdk::Plugin& p) {
  Register<TransposeKernel>(p, "Transpose", {"perm"});
  Register<TileKernel>(p, "Tile", {"multiples"});
  Register<BroadcastToKernel>(p, "BroadcastTo", {"shape"});
  Register<SliceKernel>(p, "Slice", {"begin", "size"});
  Register<StridedSliceKernel>(p, "StridedSlice", {"begin", "end", "strides"});
  Register<ConcatV2Kernel>(p, "ConcatV2", {"axis"});
  Register<PackKernel>(p, "Pack");
  Register<SplitKernel>(p, "Split", {"split_dim"});
  Register<UnpackKernel>(p, "Unpack");
  for (cfx_dtype t : kTypes)
    for (cfx_dtype index : {CFX_INT32, CFX_INT64})
      p.AsyncKernel<GatherV2Kernel>("GatherV2", kDeviceType)
          .TypeConstraint("Tparams", t)
          .TypeConstraint("Tindices", index)
          .HostMemory("axis")
          .Inexpensive();
  for (cfx_dtype t : {CFX_FLOAT, CFX_DOUBLE, CFX_INT32, CFX_INT64})
    for (cfx_dtype index : {CFX_INT32, CFX_INT64})
      p.AsyncKernel<UnsortedSegmentSumKernel>("UnsortedSegmentSum", kDeviceType)
          .TypeConstraint("T", t)
          .TypeConstraint("Tindices", index)
          .HostMemory("num_segments");
  Register<FillLikeKernel<false>>(p, "ZerosLike");
  Register<FillLikeKernel<true>>(p, "OnesLike");
  Register<SelectKernel<false>>(p, "Select");
  Register<SelectKernel<true>>(p, "SelectV2");
  RegisterShapeQuery<sdk::ShapeKernel>(p, "Shape");
  RegisterShapeQuery<sdk::ShapeNKernel>(p, "ShapeN");
  RegisterShapeQuery<sdk::SizeKernel>(p, "Size");
  RegisterShapeQuery<sdk::RankKernel>(p, "Rank");
}

}  // namespace cfx::cuda
