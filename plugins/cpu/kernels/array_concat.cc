// Joining and splitting along one dimension on CPU: ConcatV2 and Pack join N inputs, Split,
// SplitV and Unpack cut one input into N outputs.
//
// Seen around the axis, every tensor is [outer, row] with the same `outer` for all: a joined
// tensor's row is the concatenation of the parts' rows. One routine copies rows in either
// direction.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "conflux/sdk/layout_shape_rules.h"
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

// Copies between `joined` ([outer, sum of part_row_bytes] bytes) and `parts` (each
// [outer, part_row_bytes[k]] bytes): into `joined` when `join`, else out of it. Work is split by
// bytes of `joined`, so that one large row still spreads over threads.
void CopyRows(sdk::KernelContext& ctx, char* joined, const std::vector<char*>& parts,
              const std::vector<int64_t>& part_row_bytes, int64_t outer, bool join) {
  std::vector<int64_t> offset(parts.size() + 1, 0);  // of each part within a joined row
  for (size_t k = 0; k < parts.size(); ++k) offset[k + 1] = offset[k] + part_row_bytes[k];
  const int64_t row = offset.back();
  if (row == 0) return;
  ctx.ParallelFor(outer * row, 1, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t r = begin / row, in_row = begin % row;
      // The last part starting at or before in_row (skips empty parts).
      const size_t k = std::upper_bound(offset.begin(), offset.end(), in_row) - offset.begin() - 1;
      const int64_t in_part = in_row - offset[k];
      const int64_t len = std::min(part_row_bytes[k] - in_part, end - begin);
      char* part = parts[k] + r * part_row_bytes[k] + in_part;
      if (join)
        std::memcpy(joined + begin, part, static_cast<size_t>(len));
      else
        std::memcpy(part, joined + begin, static_cast<size_t>(len));
      begin += len;
    }
  });
}

// The parts of a join or a cut: data pointers and row sizes, a part's row being its dimensions
// from `axis` on.
struct Parts {
  std::vector<char*> data;
  std::vector<int64_t> row_bytes;
  void Add(const sdk::Tensor& t, size_t axis, size_t elem_size) {
    data.push_back(static_cast<char*>(t.raw_data()));
    Dims shape = t.shape();
    row_bytes.push_back(Product(shape, axis, shape.size()) * static_cast<int64_t>(elem_size));
  }
};

// Allocates output 0 with `out_shape` and joins inputs [0, n) into it: each input's row is its
// dimensions from `axis` on; the output's row is theirs in order.
sdk::Status JoinInputs(sdk::KernelContext& ctx, int n, const Dims& out_shape, size_t axis) {
  CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(ctx.input(0)));
  CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
  // Nothing to copy; the rows of an empty tensor may hold 2^61 elements of no bytes.
  if (out.num_elements() == 0) return sdk::Status();
  Parts parts;
  for (int k = 0; k < n; ++k) parts.Add(ctx.input(k), axis, elem_size);
  CopyRows(ctx, static_cast<char*>(out.raw_data()), parts.data, parts.row_bytes,
           Product(out_shape, 0, axis), /*join=*/true);
  return sdk::Status();
}

// Allocates output k with `pieces[k]` and cuts `in` into them: each output's row is `in`'s row
// cut at dimension `axis` of its shape.
sdk::Status CutInto(sdk::KernelContext& ctx, const sdk::Tensor& in, const std::vector<Dims>& pieces,
                    size_t axis) {
  CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(in));
  std::vector<sdk::Tensor> outs;
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(k, pieces[k]));
    outs.push_back(std::move(out));
  }
  if (in.num_elements() == 0) return sdk::Status();  // as in JoinInputs
  Parts parts;
  for (const sdk::Tensor& out : outs) parts.Add(out, axis, elem_size);
  Dims in_shape = in.shape();
  CopyRows(ctx, static_cast<char*>(in.raw_data()), parts.data, parts.row_bytes,
           Product(in_shape, 0, axis), /*join=*/false);
  return sdk::Status();
}

// ConcatV2(values..., axis): the inputs joined along `axis`.
class ConcatV2Kernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    const int n = ctx.num_inputs() - 1;
    int64_t axis = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, n, "axis", &axis));
    std::vector<Dims> shapes;
    for (int k = 0; k < n; ++k) shapes.push_back(ctx.input(k).shape());
    Dims out_shape;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::ConcatShape(shapes, &axis, &out_shape)));
    return JoinInputs(ctx, n, out_shape, static_cast<size_t>(axis));
  }
};

// Pack(values...): the N inputs, all of one shape, stacked along a new dimension `axis`.
class PackKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return init.attrs().Get("axis", &axis_); }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    const int n = ctx.num_inputs();
    std::vector<Dims> shapes;
    for (int k = 0; k < n; ++k) shapes.push_back(ctx.input(k).shape());
    int64_t axis = axis_;
    Dims out_shape;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::PackShape(shapes, n, &axis, &out_shape)));
    // Around the new dimension, an input's row is all of it.
    return JoinInputs(ctx, n, out_shape, static_cast<size_t>(axis));
  }

 private:
  int64_t axis_ = 0;
};

// Split(split_dim, value): num_split equal pieces of `value` along split_dim. The pieces' shapes
// are kept from the first split for later ones of the same input shape and split_dim (a loop's
// iterations split alike).
class SplitKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(1);
    const Kept* kept = kept_.get();
    if (kept != nullptr && HasShape(in, kept->input_shape) &&
        HoldsIndices(ctx.input(0), 0, std::span(&kept->split_dim, 1)))
      return Cut(ctx, in, *kept);
    auto fresh = std::make_unique<Kept>();
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 0, "split_dim", &fresh->split_dim));
    fresh->input_shape = in.shape();
    int64_t axis = fresh->split_dim;
    Dims piece;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::SplitShape(fresh->input_shape, &axis, ctx.num_outputs(), &piece)));
    fresh->axis = static_cast<size_t>(axis);
    fresh->pieces.assign(static_cast<size_t>(ctx.num_outputs()), piece);
    const sdk::Status status = Cut(ctx, in, *fresh);
    if (kept == nullptr && status.ok()) kept_.Keep(std::move(fresh));
    return status;
  }

 private:
  struct Kept {
    Dims input_shape;
    int64_t split_dim = 0;  // as given (may be negative)
    size_t axis = 0;
    std::vector<Dims> pieces;
  };
  static sdk::Status Cut(sdk::KernelContext& ctx, const sdk::Tensor& in, const Kept& kept) {
    if (ctx.num_outputs() == 1) return ctx.SetOutput(0, in);
    return CutInto(ctx, in, kept.pieces, kept.axis);
  }

  KeptOnce<Kept> kept_;
};

// SplitV(value, size_splits, split_dim): pieces of `value` of the sizes `size_splits`.
class SplitVKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    int64_t axis = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 2, "split_dim", &axis));
    Dims sizes;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 1, "size_splits", &sizes));
    sdk::Tensor in = ctx.input(0);
    std::vector<Dims> pieces;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::SplitVShape(in.shape(), sizes, &axis, ctx.num_outputs(), &pieces)));
    if (ctx.num_outputs() == 1) return ctx.SetOutput(0, in);
    return CutInto(ctx, in, pieces, static_cast<size_t>(axis));
  }
};

// Unpack(value): the `num` slices of `value` along `axis`, that dimension removed.
class UnpackKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return init.attrs().Get("axis", &axis_); }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    int64_t axis = axis_;
    Dims piece;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::UnpackShape(in.shape(), &axis, ctx.num_outputs(), &piece)));
    // Around `axis`, an output's row is the input's dimensions after `axis`.
    return CutInto(ctx, in, std::vector<Dims>(ctx.num_outputs(), piece), static_cast<size_t>(axis));
  }

 private:
  int64_t axis_ = 0;
};

}  // namespace

void RegisterConcatKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<ConcatV2Kernel>(p, "ConcatV2", "T", {"axis"});
  RegisterTypeAgnostic<PackKernel>(p, "Pack");
  RegisterTypeAgnostic<SplitKernel>(p, "Split", "T", {"split_dim"});
  RegisterTypeAgnostic<SplitVKernel>(p, "SplitV", "T", {"size_splits", "split_dim"});
  RegisterTypeAgnostic<UnpackKernel>(p, "Unpack");
}

}  // namespace cfx::cpu
