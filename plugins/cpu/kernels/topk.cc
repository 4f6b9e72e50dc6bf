// TopKV2 on CPU: the k largest entries of each row (the last dimension) and their column indices,
// for every real number type (half and bfloat16 compared as floats).
//
// The order is total, so the result does not depend on the sort: larger values first, equal values
// (-0 equals +0) by lower column, and NaN above every number (NaNs by lower column). The output
// is sorted whatever the `sorted` attr says: TensorFlow leaves the order open when it is false,
// and sorted is one of the orders it allows. Rows are independent and run in parallel.
#include <algorithm>
#include <bit>
#include <numeric>
#include <vector>

#include "conflux/sdk/float16.h"
#include "conflux/sdk/index_shape_rules.h"
#include "kernels/array_util.h"

namespace cfx::cpu {
namespace {

// How a dtype's stored elements compare: Key(v) is a number with the same order.
template <typename S>
struct Plain {
  using Storage = S;
  static S Key(S v) { return v; }
};
struct HalfKeys {
  using Storage = uint16_t;
  static float Key(uint16_t v) { return sdk::HalfToFloat(v); }
};
struct Bfloat16Keys {
  using Storage = uint16_t;
  static float Key(uint16_t v) { return sdk::Bfloat16ToFloat(v); }
};

// Fills the k largest of each row of `in` ([rows, columns]) into `values` and their columns into
// `indices` ([rows, k]), Index being the indices' element type.
template <typename Keys, typename Index>
void TopKRows(sdk::KernelContext& ctx, const sdk::Tensor& in, int64_t rows, int64_t columns,
              int64_t k, const sdk::Tensor& values, const sdk::Tensor& indices) {
  using S = typename Keys::Storage;
  using K = decltype(Keys::Key(S{}));
  const S* src = in.data<S>();
  S* value_out = values.data<S>();
  Index* index_out = indices.data<Index>();
  // About log2(columns) comparisons per column of a row.
  const int64_t cost = columns * (8 + 2 * std::bit_width(static_cast<uint64_t>(columns)));
  ctx.ParallelFor(rows, cost, [&](int64_t first, int64_t last) {
    std::vector<K> keys(static_cast<size_t>(columns));
    std::vector<int64_t> order(static_cast<size_t>(columns));
    auto before = [&keys](int64_t a, int64_t b) {
      const K x = keys[a], y = keys[b];
      const bool x_nan = x != x, y_nan = y != y;  // NOLINT: NaN test that also compiles for ints
      if (x_nan || y_nan) return x_nan && y_nan ? a < b : x_nan;
      return x != y ? x > y : a < b;
    };
    for (int64_t r = first; r < last; ++r) {
      const S* row = src + r * columns;
      for (int64_t c = 0; c < columns; ++c) keys[c] = Keys::Key(row[c]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        value_out[r * k + j] = row[order[j]];
        index_out[r * k + j] = static_cast<Index>(order[j]);
      }
    }
  });
}

// TopKV2(input, k) -> (values, indices).
class TopKKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    int64_t k = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 1, "k", &k));
    shape_rules::Dims out_shape;
    CFX_SDK_RETURN_IF_ERROR(RuleStatus(shape_rules::TopKShape(in.shape(), k, &out_shape)));
    const int64_t columns = in.shape().back();
    const cfx_dtype index_type = ctx.output_dtype(1);
    if (index_type == CFX_INT16 && columns > 32768)
      return sdk::InvalidArgument("the input has ", columns,
                                  " columns; int16 indices (index_type) address 32768 at most");
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor values, ctx.AllocateOutput(0, out_shape));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor indices, ctx.AllocateOutput(1, out_shape));
    if (values.num_elements() == 0) return sdk::Status();
    const int64_t rows = values.num_elements() / k;
    switch (in.dtype()) {
      case CFX_FLOAT:
        return Run<Plain<float>>(ctx, in, rows, columns, k, values, indices);
      case CFX_DOUBLE:
        return Run<Plain<double>>(ctx, in, rows, columns, k, values, indices);
      case CFX_INT32:
        return Run<Plain<int32_t>>(ctx, in, rows, columns, k, values, indices);
      case CFX_INT64:
        return Run<Plain<int64_t>>(ctx, in, rows, columns, k, values, indices);
      case CFX_UINT8:
        return Run<Plain<uint8_t>>(ctx, in, rows, columns, k, values, indices);
      case CFX_INT8:
        return Run<Plain<int8_t>>(ctx, in, rows, columns, k, values, indices);
      case CFX_INT16:
        return Run<Plain<int16_t>>(ctx, in, rows, columns, k, values, indices);
      case CFX_UINT16:
        return Run<Plain<uint16_t>>(ctx, in, rows, columns, k, values, indices);
      case CFX_UINT32:
        return Run<Plain<uint32_t>>(ctx, in, rows, columns, k, values, indices);
      case CFX_UINT64:
        return Run<Plain<uint64_t>>(ctx, in, rows, columns, k, values, indices);
      case CFX_HALF:
        return Run<HalfKeys>(ctx, in, rows, columns, k, values, indices);
      case CFX_BFLOAT16:
        return Run<Bfloat16Keys>(ctx, in, rows, columns, k, values, indices);
      default:
        return sdk::Unimplemented("TopKV2 on CPU: dtype ", sdk::DTypeName(in.dtype()),
                                  " is not supported");
    }
  }

 private:
  template <typename Keys>
  static sdk::Status Run(sdk::KernelContext& ctx, const sdk::Tensor& in, int64_t rows,
                         int64_t columns, int64_t k, const sdk::Tensor& values,
                         const sdk::Tensor& indices) {
    switch (indices.dtype()) {
      case CFX_INT16:
        TopKRows<Keys, int16_t>(ctx, in, rows, columns, k, values, indices);
        return sdk::Status();
      case CFX_INT32:
        TopKRows<Keys, int32_t>(ctx, in, rows, columns, k, values, indices);
        return sdk::Status();
      case CFX_INT64:
        TopKRows<Keys, int64_t>(ctx, in, rows, columns, k, values, indices);
        return sdk::Status();
      default:
        return sdk::InvalidArgument("index_type must be int16, int32 or int64, got ",
                                    sdk::DTypeName(indices.dtype()));
    }
  }
};

constexpr cfx_dtype kRealNumberTypes[] = {CFX_FLOAT,  CFX_DOUBLE, CFX_INT32, CFX_INT64,
                                          CFX_UINT8,  CFX_INT8,   CFX_INT16, CFX_UINT16,
                                          CFX_UINT32, CFX_UINT64, CFX_HALF,  CFX_BFLOAT16};

}  // namespace

void RegisterTopKKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<TopKKernel>(p, "TopKV2", "T", kRealNumberTypes, {"k"});
}

}  // namespace cfx::cpu
