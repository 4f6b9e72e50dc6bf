// UnsortedSegmentSum on CPU, for float, double, int32 and int64 data with int32 or int64
// segment_ids and num_segments: output[s, ...] is the sum of data[j..., ...] over the index
// tuples j... with segment_ids[j...] == s; negative ids are dropped (TensorFlow's rule), ids at or
// above num_segments are an error. Integer sums wrap around.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "conflux/sdk/gradient_shape_rules.h"
#include "kernels/array_util.h"
#include "kernels/broadcast.h"
#include "kernels/kernels.h"

namespace cfx::cpu {
namespace {

template <typename T>
class UnsortedSegmentSumKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor data = ctx.input(0), segment_ids = ctx.input(1);
    if (data.dtype() != sdk::kDType<T>)
      return sdk::InvalidArgument("data is ", sdk::DTypeName(data.dtype()), "; expected ",
                                  sdk::DTypeName(sdk::kDType<T>));
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
    std::memset(dst, 0, out.byte_size());
    // Nothing to add (rows of 2^62 columns of an empty output are no work).
    if (out.num_elements() == 0 || ids.empty()) return sdk::Status();
    // Each row of data (one segment id) adds into one row of the output; threads take disjoint
    // ranges of columns, so no two write the same element.
    int64_t row_size = 1;
    for (size_t d = 1; d < out_shape.size(); ++d) row_size *= out_shape[d];
    const T* src = data.data<T>();
    const int64_t rows = static_cast<int64_t>(ids.size());
    ctx.ParallelFor(row_size, std::max<int64_t>(rows, 1), [&](int64_t begin, int64_t end) {
      for (int64_t j = 0; j < rows; ++j) {
        if (ids[j] < 0) continue;
        T* to = dst + ids[j] * row_size;
        const T* from = src + j * row_size;
        for (int64_t k = begin; k < end; ++k) to[k] = WrappingAdd(to[k], from[k]);
      }
    });
    return sdk::Status();
  }
};

}  // namespace

void RegisterSegmentKernels(sdk::Plugin& p) {
  RegisterForTypes<UnsortedSegmentSumKernel, float, double, int32_t, int64_t>(
      p, "UnsortedSegmentSum", "T", /*inexpensive=*/false, /*host_memory_arg=*/"num_segments");
}

}  // namespace cfx::cpu
