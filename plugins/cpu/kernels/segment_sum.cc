// Segment reductions on CPU. UnsortedSegmentSum, UnsortedSegmentProd, UnsortedSegmentMax and
// UnsortedSegmentMin for float, double, int32 and int64 data with int32 or int64 segment_ids and
// num_segments: output[s, ...] reduces data[j..., ...] over the index tuples j... with
// segment_ids[j...] == s; negative ids are dropped (TensorFlow's rule), ids at or above
// num_segments are an error; an empty segment holds the reduction's identity (0, 1, the type's
// lowest, its highest). SegmentSum, SegmentMean, SegmentProd, SegmentMax and SegmentMin: sorted,
// non-negative ids along data's first dimension, one output row per id up to the last; an empty
// segment holds 0 (1 for SegmentProd), as TensorFlow's. Max and Min take each next element unless
// the running value beats it, as TensorFlow's reducers do: a NaN replaces the running value and
// the next number replaces the NaN. Integer sums and
// products wrap around; an integer mean divides toward zero.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "conflux/sdk/gradient_shape_rules.h"
#include "conflux/sdk/wrapping_arithmetic.h"
#include "kernels/array_util.h"
#include "kernels/broadcast.h"
#include "kernels/kernels.h"

namespace cfx::cpu {
namespace {

struct SumReducer {
  template <typename T>
  static T Identity() {
    return T(0);
  }
  template <typename T>
  static T Apply(T a, T b) {
    return sdk::WrappingAdd(a, b);
  }
};
struct ProdReducer {
  template <typename T>
  static T Identity() {
    return T(1);
  }
  template <typename T>
  static T Apply(T a, T b) {
    return sdk::WrappingMultiply(a, b);
  }
};
struct MaxReducer {
  template <typename T>
  static T Identity() {
    return std::numeric_limits<T>::lowest();
  }
  // The running value a, the next element b: b unless b < a, so that a NaN element replaces
  // the running value and a number after it replaces the NaN, as TensorFlow's reducers do.
  template <typename T>
  static T Apply(T a, T b) {
    return b < a ? a : b;
  }
};
struct MinReducer {
  template <typename T>
  static T Identity() {
    return std::numeric_limits<T>::max();
  }
  template <typename T>
  static T Apply(T a, T b) {
    return a < b ? a : b;
  }
};

sdk::Status CheckDataType(const sdk::Tensor& data, cfx_dtype expected) {
  if (data.dtype() == expected) return sdk::Status();
  return sdk::InvalidArgument("data is ", sdk::DTypeName(data.dtype()), "; expected ",
                              sdk::DTypeName(expected));
}

template <typename R>
struct Unsorted {
  template <typename T>
  class Kernel {
   public:
    sdk::Status Compute(sdk::KernelContext& ctx) {
      sdk::Tensor data = ctx.input(0), segment_ids = ctx.input(1);
      CFX_SDK_RETURN_IF_ERROR(CheckDataType(data, sdk::kDType<T>));
      int64_t num_segments = 0;
      CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 2, "num_segments", &num_segments));
      if (num_segments < 0)
        return sdk::InvalidArgument("num_segments = ", num_segments, " must be >= 0");
      shape_rules::Dims out_shape;
      CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::UnsortedSegmentShape(
          data.shape(), segment_ids.shape(), num_segments, &out_shape)));
      std::vector<int64_t> ids;
      CFX_SDK_RETURN_IF_ERROR(ReadIndexVector(segment_ids, "segment_ids", &ids));
      for (size_t j = 0; j < ids.size(); ++j) {
        if (ids[j] >= num_segments)
          return sdk::InvalidArgument("segment_ids[", j, "] = ", ids[j], " is out of range [0, ",
                                      num_segments, ")");
      }
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
      T* dst = out.data<T>();
      std::fill(dst, dst + out.num_elements(), R::template Identity<T>());
      // Nothing to reduce (rows of 2^62 columns of an empty output are no work).
      if (out.num_elements() == 0 || ids.empty()) return sdk::Status();
      // Each row of data (one segment id) reduces into one row of the output; threads take
      // disjoint ranges of columns, so no two write the same element.
      int64_t row_size = 1;
      for (size_t d = 1; d < out_shape.size(); ++d) row_size *= out_shape[d];
      const T* src = data.data<T>();
      const int64_t rows = static_cast<int64_t>(ids.size());
      ctx.ParallelFor(row_size, std::max<int64_t>(rows, 1), [&](int64_t begin, int64_t end) {
        for (int64_t j = 0; j < rows; ++j) {
          if (ids[j] < 0) continue;
          T* to = dst + ids[j] * row_size;
          const T* from = src + j * row_size;
          for (int64_t k = begin; k < end; ++k) to[k] = R::Apply(to[k], from[k]);
        }
      });
      return sdk::Status();
    }
  };
};

// The sorted forms: kMean divides each segment's sum by its length.
template <typename R, bool kMean = false>
struct Sorted {
  template <typename T>
  class Kernel {
   public:
    sdk::Status Compute(sdk::KernelContext& ctx) {
      sdk::Tensor data = ctx.input(0), segment_ids = ctx.input(1);
      CFX_SDK_RETURN_IF_ERROR(CheckDataType(data, sdk::kDType<T>));
      if (segment_ids.rank() != 1)
        return sdk::InvalidArgument("segment_ids must be a vector, got shape ",
                                    sdk::ShapeString(segment_ids.shape()));
      if (data.rank() < 1 || data.shape()[0] != segment_ids.num_elements())
        return sdk::InvalidArgument("segment_ids should be the same size as dimension 0 of data: ",
                                    segment_ids.num_elements(), " ids for data of shape ",
                                    sdk::ShapeString(data.shape()));
      std::vector<int64_t> ids;
      CFX_SDK_RETURN_IF_ERROR(ReadIndexVector(segment_ids, "segment_ids", &ids));
      for (size_t j = 0; j < ids.size(); ++j) {
        if (ids[j] < 0)
          return sdk::InvalidArgument("segment_ids[", j, "] = ", ids[j], " must be >= 0");
        if (j > 0 && ids[j] < ids[j - 1])
          return sdk::InvalidArgument("segment_ids are not increasing: segment_ids[", j - 1,
                                      "] = ", ids[j - 1], " > segment_ids[", j, "] = ", ids[j]);
      }
      if (!ids.empty() && ids.back() >= (int64_t{1} << 62))
        return sdk::InvalidArgument("segment_ids[", ids.size() - 1, "] = ", ids.back(),
                                    " asks for more than 2^62 segments");
      shape_rules::Dims out_shape = data.shape();
      out_shape[0] = ids.empty() ? 0 : ids.back() + 1;
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
      T* dst = out.data<T>();
      // Empty segments hold 0 (1 for products), TensorFlow's default for the sorted forms.
      std::fill(dst, dst + out.num_elements(), std::is_same_v<R, ProdReducer> ? T(1) : T(0));
      if (out.num_elements() == 0) return sdk::Status();
      int64_t row_size = 1;
      for (size_t d = 1; d < out_shape.size(); ++d) row_size *= out_shape[d];
      const T* src = data.data<T>();
      const int64_t rows = static_cast<int64_t>(ids.size());
      ctx.ParallelFor(row_size, std::max<int64_t>(rows, 1), [&](int64_t begin, int64_t end) {
        int64_t first = 0;  // the first row of the current segment
        while (first < rows) {
          int64_t last = first;
          while (last + 1 < rows && ids[last + 1] == ids[first]) ++last;
          T* to = dst + ids[first] * row_size;
          for (int64_t k = begin; k < end; ++k) {
            T acc = src[first * row_size + k];
            for (int64_t j = first + 1; j <= last; ++j) acc = R::Apply(acc, src[j * row_size + k]);
            if constexpr (kMean) acc = static_cast<T>(acc / static_cast<T>(last - first + 1));
            to[k] = acc;
          }
          first = last + 1;
        }
      });
      return sdk::Status();
    }
  };
};

}  // namespace

void RegisterSegmentKernels(sdk::Plugin& p) {
  RegisterForTypes<Unsorted<SumReducer>::Kernel, float, double, int32_t, int64_t>(
      p, "UnsortedSegmentSum", "T", /*inexpensive=*/false, /*host_memory_arg=*/"num_segments");
  RegisterForTypes<Unsorted<ProdReducer>::Kernel, float, double, int32_t, int64_t>(
      p, "UnsortedSegmentProd", "T", /*inexpensive=*/false, /*host_memory_arg=*/"num_segments");
  RegisterForTypes<Unsorted<MaxReducer>::Kernel, float, double, int32_t, int64_t>(
      p, "UnsortedSegmentMax", "T", /*inexpensive=*/false, /*host_memory_arg=*/"num_segments");
  RegisterForTypes<Unsorted<MinReducer>::Kernel, float, double, int32_t, int64_t>(
      p, "UnsortedSegmentMin", "T", /*inexpensive=*/false, /*host_memory_arg=*/"num_segments");
  RegisterForTypes<Sorted<SumReducer>::Kernel, float, double, int32_t, int64_t>(p, "SegmentSum");
  RegisterForTypes<Sorted<SumReducer, true>::Kernel, float, double, int32_t, int64_t>(
      p, "SegmentMean");
  RegisterForTypes<Sorted<ProdReducer>::Kernel, float, double, int32_t, int64_t>(p, "SegmentProd");
  RegisterForTypes<Sorted<MaxReducer>::Kernel, float, double, int32_t, int64_t>(p, "SegmentMax");
  RegisterForTypes<Sorted<MinReducer>::Kernel, float, double, int32_t, int64_t>(p, "SegmentMin");
}

}  // namespace cfx::cpu
