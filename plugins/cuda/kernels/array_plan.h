// Host planning of the array kernels: the strided walks of Transpose, Tile, BroadcastTo, Slice
// and StridedSlice simplified into the device's StridedIndex, the rows that ConcatV2, Pack, Split
// and Unpack copy, Select's broadcast, and GatherV2's layout and error wording. The kernels check
// their inputs with the SDK's shape rules first; these functions take inputs those rules
// accepted. Host logic only, tested without a GPU (tests/cuda/array_plan_test.cc). Pure functions:
// thread-safe.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_ARRAY_PLAN_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_ARRAY_PLAN_H_

#include <string>
#include <vector>

#include "conflux/sdk/shape_rules.h"
#include "kernels/array_launch.h"
#include "kernels/elementwise_plan.h"

namespace cfx::cuda {

using shape_rules::Dims;

// A copy of input elements into a new row-major output, ready for LaunchStridedCopy.
struct StridedCopyPlan {
  StridedIndex index;
  int64_t num_elements = 0;  // of the output; 0: nothing to copy (index unset)
  // The output is input elements [index.base, index.base + num_elements) in order: a memcpy.
  bool contiguous = false;
};

// Element strides of a row-major tensor of `dims`.
inline Dims RowMajorStrides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

// The walk over output `dims` (row-major) reading input element base + sum of coordinate *
// strides[d], simplified: dims of size 1 dropped, and a dim merged into the next inner one when it
// steps exactly over all of it (strides[d] == strides[d + 1] * dims[d + 1]; repeats, stride 0,
// merge too). Unimplemented naming `what` when more than kMaxCopyDims dims remain.
inline sdk::Result<StridedCopyPlan> PlanStridedCopy(const Dims& dims, const Dims& strides,
                                                    int64_t base, const std::string& what) {
  StridedCopyPlan plan;
  plan.num_elements = shape_rules::NumElements(dims);
  if (plan.num_elements == 0) return plan;
  Dims merged_dims, merged_strides;  // innermost first
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] == 1) continue;
    if (!merged_dims.empty() && strides[d] == merged_strides.back() * merged_dims.back()) {
      merged_dims.back() *= dims[d];
    } else {
      merged_dims.push_back(dims[d]);
      merged_strides.push_back(strides[d]);
    }
  }
  const size_t rank = merged_dims.size();
  if (rank > static_cast<size_t>(kMaxCopyDims))
    return sdk::Unimplemented(what, " on GPU: the copy of shape ", shape_rules::ShapeStr(dims),
                              " needs ", rank, " dimensions after merging; at most ", kMaxCopyDims,
                              " are supported");
  plan.index.rank = static_cast<int32_t>(rank);
  plan.index.base = base;
  for (size_t k = 0; k < rank; ++k) {
    plan.index.dims[rank - 1 - k] = merged_dims[k];
    plan.index.strides[rank - 1 - k] = merged_strides[k];
  }
  plan.contiguous = rank == 0 || (rank == 1 && plan.index.strides[0] == 1);
  return plan;
}

// Transpose: output dim i walks input dim perm[i] (perm checked by shape_rules::TransposeShape).
inline sdk::Result<StridedCopyPlan> PlanTranspose(const Dims& input, const Dims& perm) {
  const Dims in_strides = RowMajorStrides(input);
  Dims dims(perm.size()), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = input[perm[i]];
    strides[i] = in_strides[perm[i]];
  }
  return PlanStridedCopy(dims, strides, 0, "Transpose");
}

// Tile: output dim d (multiples[d] * input[d]) seen as [multiples[d], input[d]], the first
// repeating (stride 0), the second walking input dim d.
inline sdk::Result<StridedCopyPlan> PlanTile(const Dims& input, const Dims& multiples) {
  const Dims in_strides = RowMajorStrides(input);
  Dims dims, strides;
  for (size_t d = 0; d < input.size(); ++d) {
    dims.insert(dims.end(), {multiples[d], input[d]});
    strides.insert(strides.end(), {0, in_strides[d]});
  }
  return PlanStridedCopy(dims, strides, 0, "Tile");
}

// BroadcastTo: the input aligned on the right of `out_shape` (checked by
// shape_rules::BroadcastToShape); dims it lacks or has as 1 repeat.
inline sdk::Result<StridedCopyPlan> PlanBroadcastTo(const Dims& input, const Dims& out_shape) {
  const Dims in_strides = RowMajorStrides(input);
  const size_t offset = out_shape.size() - input.size();
  Dims strides(out_shape.size(), 0);
  for (size_t d = offset; d < out_shape.size(); ++d)
    if (input[d - offset] != 1) strides[d] = in_strides[d - offset];
  return PlanStridedCopy(out_shape, strides, 0, "BroadcastTo");
}

// Slice and StridedSlice: in each input dim d, size[d] elements from begin[d], stride[d] apart
// (shape_rules::StridedSliceDense, or Slice's begin and size with stride 1). A dim taking at most
// one element never steps, so its stride (any value the user gave) is not used.
inline sdk::Result<StridedCopyPlan> PlanSlice(const Dims& input, const Dims& begin,
                                              const Dims& stride, const Dims& size,
                                              const std::string& what) {
  if (shape_rules::NumElements(size) == 0) return StridedCopyPlan{};  // begin may be past the end
  const Dims in_strides = RowMajorStrides(input);
  Dims strides(input.size(), 0);
  int64_t base = 0;
  for (size_t d = 0; d < input.size(); ++d) {
    base += begin[d] * in_strides[d];
    if (size[d] > 1) strides[d] = stride[d] * in_strides[d];
  }
  return PlanStridedCopy(size, strides, base, what);
}

// A tensor seen around dim `axis`: `outer` rows (the dims before it), each `bytes` long (the dims
// from it on). ConcatV2 and Pack join their inputs' rows into the output's; Split and Unpack cut
// the input's rows into the outputs'.
struct RowsAround {
  int64_t outer = 1;
  int64_t bytes = 0;
};

inline RowsAround RowsOf(const Dims& dims, size_t axis, size_t elem_size) {
  RowsAround r;
  r.bytes = static_cast<int64_t>(elem_size);
  for (size_t d = 0; d < dims.size(); ++d) (d < axis ? r.outer : r.bytes) *= dims[d];
  return r;
}

// Select (v1: t and e of one shape, condition a scalar, of their shape, or a vector picking rows)
// and SelectV2 (all three broadcast) as one three-operand broadcast; a v1 vector condition is
// seen as [n, 1, ..., 1]. InvalidArgument naming the shapes when they break the op's rules.
inline sdk::Result<DeviceBroadcast> PlanSelect(const sdk::Shape& condition, const sdk::Shape& t,
                                               const sdk::Shape& e, bool v2) {
  if (v2) return PlanDeviceBroadcast({{"condition", condition}, {"t", t}, {"e", e}}, "SelectV2");
  if (t != e)
    return sdk::InvalidArgument("'t' and 'e' must have the same shape, got ", sdk::ShapeString(t),
                                " and ", sdk::ShapeString(e));
  sdk::Shape c_as_t = condition;
  if (condition.size() == 1 && t.size() > 1) {
    if (condition[0] != t[0])
      return sdk::InvalidArgument("'condition' is a vector of ", condition[0],
                                  " elements but 't' has ", t[0], " rows (shape ",
                                  sdk::ShapeString(t), "); they must match");
    c_as_t.assign(t.size(), 1);
    c_as_t[0] = condition[0];
  } else if (!condition.empty() && condition != t) {
    return sdk::InvalidArgument(
        "'condition' must be a scalar, have the shape of 't', or be a vector as long as the "
        "first dimension of 't'; got condition ",
        sdk::ShapeString(condition), " and t ", sdk::ShapeString(t));
  }
  return PlanDeviceBroadcast({{"condition", c_as_t}, {"t", t}, {"e", e}}, "Select");
}

inline GatherLayout LayoutOf(const shape_rules::GatherSizes& s) {
  GatherLayout l;
  l.batch = s.batch;
  l.outer = s.outer;
  l.axis_size = s.axis_size;
  l.inner = s.inner;
  l.per_batch = s.per_batch;
  return l;
}

// GatherV2's refusal of the index at flat position `flat` of indices of shape `indices`, as the
// CPU kernel words it: "indices[1,2] = 7 is not in [0, 5)".
inline std::string BadIndexMessage(const Dims& indices, int64_t flat, int64_t value,
                                   int64_t axis_size) {
  Dims position(indices.size());
  for (size_t d = indices.size(); d-- > 0;) {
    position[d] = flat % indices[d];
    flat /= indices[d];
  }
  return shape_rules::Msg("indices", shape_rules::ListStr(position), " = ", value,
                          " is not in [0, ", axis_size, ")");
}

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_ARRAY_PLAN_H_
