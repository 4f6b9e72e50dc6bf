// GatherNd, ScatterNd, TensorScatterUpdate and TensorScatterAdd/Sub/Max/Min on CPU.
//
// All three see `indices` as [tuples, depth] (shape_rules::NdSizes): index tuple t picks the
// slice data[indices[t, 0], ..., indices[t, depth - 1], ...] of `slice` elements. Every tuple is
// checked before anything is written; a tuple out of range is an error naming it, or, with
// bad_indices_policy "IGNORE", reads zeros (GatherNd) or writes nothing (the scatters).
//
// GatherNd and TensorScatterUpdate move bytes: one kernel serves every fixed-size dtype.
// ScatterNd adds (repeated tuples sum), so it is a template over float, double, int32 and int64;
// TensorScatterUpdate writes the tuples in order, so the last of repeated tuples wins;
// TensorScatterAdd, Sub, Max and Min (float, double, int32, int64) combine them in order.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "conflux/sdk/index_shape_rules.h"
#include "kernels/array_util.h"
#include "kernels/broadcast.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;
using shape_rules::NdSizes;

constexpr int64_t kBadTuple = -1;

// "[1, 0]": index tuple t, as written.
template <typename Index>
std::string TupleString(const Index* idx, int64_t t, int64_t depth) {
  std::string s = "[";
  for (int64_t j = 0; j < depth; ++j)
    s += (j ? ", " : "") + std::to_string(static_cast<int64_t>(idx[t * depth + j]));
  return s + "]";
}

// "indices[2,1]": where tuple t is among the tuples (the indices' dimensions but the last);
// "indices" for the only tuple of a vector.
std::string TupleName(const Dims& indices_shape, int64_t t) {
  Dims position(indices_shape.size() - 1);
  for (size_t d = position.size(); d-- > 0;) {
    position[d] = t % indices_shape[d];
    t /= indices_shape[d];
  }
  if (position.empty()) return "indices";
  std::string s = "indices[";
  for (size_t d = 0; d < position.size(); ++d) s += (d ? "," : "") + std::to_string(position[d]);
  return s + "]";
}

template <typename Index>
sdk::Status TupleSlicesOf(const sdk::Tensor& indices, const Dims& data, const NdSizes& sizes,
                          bool ignore_bad, std::vector<int64_t>* slices) {
  const Index* idx = indices.data<Index>();
  // Slice strides of the first `depth` dimensions of the data.
  Dims stride(static_cast<size_t>(sizes.depth), 1);
  for (int64_t j = sizes.depth - 1; j > 0; --j) stride[j - 1] = stride[j] * data[j];
  slices->assign(static_cast<size_t>(sizes.tuples), 0);
  for (int64_t t = 0; t < sizes.tuples; ++t) {
    int64_t slice = 0;
    for (int64_t j = 0; j < sizes.depth; ++j) {
      const int64_t v = static_cast<int64_t>(idx[t * sizes.depth + j]);
      if (v < 0 || v >= data[j]) {
        if (ignore_bad) {
          slice = kBadTuple;
          break;
        }
        return sdk::InvalidArgument(TupleName(indices.shape(), t), " = ",
                                    TupleString(idx, t, sizes.depth),
                                    " is out of bounds for shape ", sdk::ShapeString(data));
      }
      slice += v * stride[j];
    }
    (*slices)[t] = slice;
  }
  return sdk::Status();
}

// The slice (in units of `sizes.slice` elements) of a tensor of shape `data` that each tuple of
// `indices` picks, or kBadTuple for one out of range when `ignore_bad` (else that is an error).
sdk::Status TupleSlices(const sdk::Tensor& indices, const Dims& data, const NdSizes& sizes,
                        bool ignore_bad, std::vector<int64_t>* slices) {
  switch (indices.dtype()) {
    case CFX_INT16:
      return TupleSlicesOf<int16_t>(indices, data, sizes, ignore_bad, slices);
    case CFX_UINT16:
      return TupleSlicesOf<uint16_t>(indices, data, sizes, ignore_bad, slices);
    case CFX_INT32:
      return TupleSlicesOf<int32_t>(indices, data, sizes, ignore_bad, slices);
    case CFX_INT64:
      return TupleSlicesOf<int64_t>(indices, data, sizes, ignore_bad, slices);
    default:
      return sdk::InvalidArgument("indices must be int16, uint16, int32 or int64, got ",
                                  sdk::DTypeName(indices.dtype()));
  }
}

// The bad_indices_policy attr: whether bad tuples are skipped.
class PolicyKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    std::string policy;
    CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr("bad_indices_policy", &policy, std::string()));
    return RuleStatus(shape_rules::CheckBadIndicesPolicy(policy, &ignore_bad_));
  }

 protected:
  bool ignore_bad_ = false;
};

// GatherNd(params, indices).
class GatherNdKernel : public PolicyKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor params = ctx.input(0), indices = ctx.input(1);
    const Dims data = params.shape();
    Dims out_shape;
    NdSizes sizes;
    bool rank_unknown = false;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(
        shape_rules::GatherNdShape(data, indices.shape(), &out_shape, &sizes, &rank_unknown)));
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(params));
    // The output first: it bounds the tuples (an index depth of 0 makes them as many as the
    // indices' other dimensions say, with no index values behind them).
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    if (out.num_elements() == 0) return sdk::Status();
    std::vector<int64_t> slices;
    CFX_SDK_RETURN_IF_ERROR(TupleSlices(indices, data, sizes, ignore_bad_, &slices));
    const int64_t slice_bytes = sizes.slice * static_cast<int64_t>(elem_size);
    const char* src = static_cast<const char*>(params.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    ctx.ParallelFor(sizes.tuples, CopyCost(slice_bytes), [&](int64_t first, int64_t last) {
      for (int64_t t = first; t < last; ++t) {
        char* to = dst + t * slice_bytes;
        if (slices[t] == kBadTuple)
          std::memset(to, 0, static_cast<size_t>(slice_bytes));
        else
          std::memcpy(to, src + slices[t] * slice_bytes, static_cast<size_t>(slice_bytes));
      }
    });
    return sdk::Status();
  }
};

// TensorScatterAdd, TensorScatterSub, TensorScatterMax and TensorScatterMin(tensor, indices,
// updates): `tensor` with each slice of `updates` combined into the slice its index tuple picks,
// tuple by tuple in order (repeated tuples combine).
struct ScatterAddFn {
  template <typename T>
  static T Apply(T a, T b) {
    return WrappingAdd(a, b);
  }
};
struct ScatterSubFn {
  template <typename T>
  static T Apply(T a, T b) {
    return WrappingSub(a, b);
  }
};
struct ScatterMaxFn {
  template <typename T>
  static T Apply(T a, T b) {
    return a < b ? b : a;
  }
};
struct ScatterMinFn {
  template <typename T>
  static T Apply(T a, T b) {
    return b < a ? b : a;
  }
};

// Combines slice t of `src` into the slice of `dst` that tuple t picks (F::Apply(dst, src)),
// tuple by tuple in order; bad tuples (ignored by the policy) are skipped. Threads take disjoint
// ranges of each slice's elements, so no two write one element.
template <typename F, typename T>
void CombineSlices(sdk::KernelContext& ctx, const NdSizes& sizes,
                   const std::vector<int64_t>& slices, const T* src, T* dst) {
  const int64_t slice = sizes.slice;
  ctx.ParallelFor(slice, std::max<int64_t>(sizes.tuples, 1), [&](int64_t first, int64_t last) {
    for (int64_t t = 0; t < sizes.tuples; ++t) {
      if (slices[t] == kBadTuple) continue;
      T* to = dst + slices[t] * slice;
      const T* from = src + t * slice;
      for (int64_t k = first; k < last; ++k) to[k] = F::Apply(to[k], from[k]);
    }
  });
}

// ScatterNd(indices, updates, shape).
template <typename T>
class ScatterNdKernel : public PolicyKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor indices = ctx.input(0), updates = ctx.input(1);
    Dims shape;
    CFX_SDK_RETURN_IF_ERROR(ReadVectorInput(ctx, 2, "shape", &shape));
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::CheckNonNegative(shape, "shape")));
    NdSizes sizes;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::ScatterNdShape(indices.shape(), updates.shape(), shape, &sizes)));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, shape));
    T* dst = out.data<T>();
    std::memset(dst, 0, out.byte_size());
    if (updates.num_elements() == 0) return sdk::Status();  // bounds the tuples, as in GatherNd
    std::vector<int64_t> slices;
    CFX_SDK_RETURN_IF_ERROR(TupleSlices(indices, shape, sizes, ignore_bad_, &slices));
    CombineSlices<ScatterAddFn>(ctx, sizes, slices, updates.data<T>(), dst);
    return sdk::Status();
  }
};

// TensorScatterUpdate(tensor, indices, updates).
class TensorScatterUpdateKernel : public PolicyKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor tensor = ctx.input(0), indices = ctx.input(1), updates = ctx.input(2);
    const Dims shape = tensor.shape();
    NdSizes sizes;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::ScatterNdShape(indices.shape(), updates.shape(), shape, &sizes)));
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem_size, ElementSize(tensor));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, shape));
    char* dst = static_cast<char*>(out.raw_data());
    if (out.raw_data() != tensor.raw_data() && out.byte_size() > 0)
      std::memcpy(dst, tensor.raw_data(), out.byte_size());
    if (updates.num_elements() == 0) return sdk::Status();  // bounds the tuples, as in GatherNd
    std::vector<int64_t> slices;
    CFX_SDK_RETURN_IF_ERROR(TupleSlices(indices, shape, sizes, ignore_bad_, &slices));
    const int64_t slice_bytes = sizes.slice * static_cast<int64_t>(elem_size);
    const char* src = static_cast<const char*>(updates.raw_data());
    for (int64_t t = 0; t < sizes.tuples; ++t) {
      if (slices[t] == kBadTuple || slice_bytes == 0) continue;
      std::memcpy(dst + slices[t] * slice_bytes, src + t * slice_bytes,
                  static_cast<size_t>(slice_bytes));
    }
    return sdk::Status();
  }
};

template <typename F>
struct TensorScatterOp {
  template <typename T>
  class Kernel : public PolicyKernel {
   public:
    sdk::Status Compute(sdk::KernelContext& ctx) {
      sdk::Tensor tensor = ctx.input(0), indices = ctx.input(1), updates = ctx.input(2);
      if (tensor.dtype() != sdk::kDType<T> || updates.dtype() != sdk::kDType<T>)
        return sdk::InvalidArgument("tensor and updates must be ", sdk::DTypeName(sdk::kDType<T>),
                                    ", got ", sdk::DTypeName(tensor.dtype()), " and ",
                                    sdk::DTypeName(updates.dtype()));
      const Dims shape = tensor.shape();
      NdSizes sizes;
      CFX_SDK_RETURN_IF_ERROR(RuleStatus(
          shape_rules::ScatterNdShape(indices.shape(), updates.shape(), shape, &sizes)));
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, shape));
      T* dst = out.data<T>();
      if (out.raw_data() != tensor.raw_data() && out.byte_size() > 0)
        std::memcpy(dst, tensor.raw_data(), out.byte_size());
      if (updates.num_elements() == 0) return sdk::Status();  // bounds the tuples
      std::vector<int64_t> slices;
      CFX_SDK_RETURN_IF_ERROR(TupleSlices(indices, shape, sizes, ignore_bad_, &slices));
      CombineSlices<F>(ctx, sizes, slices, updates.data<T>(), dst);
      return sdk::Status();
    }
  };
};

template <typename T>
void RegisterScatterNd(sdk::Plugin& p) {
  p.Kernel<ScatterNdKernel<T>>("ScatterNd", "CPU")
      .template TypeConstraint<T>("T")
      .HostMemory("shape");
}

}  // namespace

void RegisterScatterNdKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<GatherNdKernel>(p, "GatherNd", "Tparams");
  RegisterTypeAgnostic<TensorScatterUpdateKernel>(p, "TensorScatterUpdate");
  RegisterScatterNd<float>(p);
  RegisterScatterNd<double>(p);
  RegisterScatterNd<int32_t>(p);
  RegisterScatterNd<int64_t>(p);
  RegisterForTypes<TensorScatterOp<ScatterAddFn>::Kernel, float, double, int32_t, int64_t>(
      p, "TensorScatterAdd");
  RegisterForTypes<TensorScatterOp<ScatterSubFn>::Kernel, float, double, int32_t, int64_t>(
      p, "TensorScatterSub");
  RegisterForTypes<TensorScatterOp<ScatterMaxFn>::Kernel, float, double, int32_t, int64_t>(
      p, "TensorScatterMax");
  RegisterForTypes<TensorScatterOp<ScatterMinFn>::Kernel, float, double, int32_t, int64_t>(
      p, "TensorScatterMin");
}

}  // namespace cfx::cpu
