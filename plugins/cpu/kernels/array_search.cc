// Where, Unique, Roll and Bucketize on CPU, as TensorFlow's kernels compute them:
//   Where(input)            the coordinates of the non-zero (true) elements, in row-major order,
//                           an int64 matrix [count, rank]; NaN counts as non-zero.
//   Unique(x)               the distinct values of a vector in the order they first appear, and
//                           for each element the index of its value; -0 equals 0, NaN equals
//                           nothing (each NaN is a value of its own).
//   Roll(input, shift, axis) elements moved by shift[i] along axis[i] (cyclically); an axis given
//                           twice moves by the sum.
//   Bucketize(input)        for each element the number of boundaries <= it (upper_bound).
// Where, Unique and Roll take the dtypes DispatchDType knows (Roll any fixed-size one, moving
// bytes); Bucketize int32, int64, float and double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kernels/array_util.h"
#include "kernels/kernels.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

class WhereNonZeroKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    if (in.rank() == 0)  // as TensorFlow's WhereOp, which takes no scalars
      return sdk::InvalidArgument("input must have rank >= 1, got a scalar");
    return DispatchDType(in.dtype(), "input", [&](auto zero) -> sdk::Status {
      using T = decltype(zero);
      const T* x = in.data<T>();
      const int64_t n = in.num_elements();
      std::vector<int64_t> hits;
      for (int64_t i = 0; i < n; ++i)
        if (x[i] != T(0)) hits.push_back(i);
      const shape_rules::Dims dims = in.shape();
      const int64_t rank = static_cast<int64_t>(dims.size());
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out,
                               ctx.AllocateOutput(0, {static_cast<int64_t>(hits.size()), rank}));
      int64_t* coords = out.data<int64_t>();
      for (size_t h = 0; h < hits.size(); ++h) {
        int64_t rest = hits[h];
        for (int64_t d = rank; d-- > 0;) {
          coords[static_cast<int64_t>(h) * rank + d] = rest % dims[static_cast<size_t>(d)];
          rest /= dims[static_cast<size_t>(d)];
        }
      }
      return sdk::Status();
    });
  }
};

// Hashes -0 as 0 (they compare equal), so that both land in one bucket.
struct ValueHash {
  template <typename T>
  size_t operator()(T v) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (v == T(0)) v = T(0);
    }
    return std::hash<T>()(v);
  }
};

class UniqueValuesKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor x = ctx.input(0);
    if (x.rank() != 1)
      return sdk::InvalidArgument("x must be a vector, got shape ", sdk::ShapeString(x.shape()));
    return DispatchDType(x.dtype(), "x", [&](auto zero) -> sdk::Status {
      using T = decltype(zero);
      const T* v = x.data<T>();
      const int64_t n = x.num_elements();
      std::unordered_map<T, int64_t, ValueHash> index;
      std::vector<T> values;
      std::vector<int64_t> idx(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        auto [it, fresh] = index.emplace(v[i], static_cast<int64_t>(values.size()));
        if (fresh) values.push_back(v[i]);
        idx[static_cast<size_t>(i)] = it->second;
      }
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y,
                               ctx.AllocateOutput(0, {static_cast<int64_t>(values.size())}));
      std::copy(values.begin(), values.end(), y.data<T>());
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out_idx, ctx.AllocateOutput(1, {n}));
      if (out_idx.dtype() == CFX_INT64) {
        std::copy(idx.begin(), idx.end(), out_idx.data<int64_t>());
        return sdk::Status();
      }
      if (values.size() > static_cast<size_t>(INT32_MAX))
        return sdk::InvalidArgument(values.size(), " unique values do not fit out_idx int32");
      for (int64_t i = 0; i < n; ++i)
        out_idx.data<int32_t>()[i] = static_cast<int32_t>(idx[static_cast<size_t>(i)]);
      return sdk::Status();
    });
  }
};

class RollKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0), shift_t = ctx.input(1), axis_t = ctx.input(2);
    if (shift_t.rank() > 1 || axis_t.rank() > 1)
      return sdk::InvalidArgument("shift and axis must be scalars or vectors, got shapes ",
                                  sdk::ShapeString(shift_t.shape()), " and ",
                                  sdk::ShapeString(axis_t.shape()));
    std::vector<int64_t> shift, axis;
    CFX_SDK_RETURN_IF_ERROR(ReadIndexVector(shift_t, "shift", &shift));
    CFX_SDK_RETURN_IF_ERROR(ReadIndexVector(axis_t, "axis", &axis));
    if (shift.size() != axis.size())
      return sdk::InvalidArgument("shift and axis must have the same size, got ", shift.size(),
                                  " and ", axis.size());
    const shape_rules::Dims dims = in.shape();
    const int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<int64_t> total(dims.size(), 0);  // the shift of each dimension, in [0, dim)
    for (size_t i = 0; i < axis.size(); ++i) {
      int64_t a = axis[i];
      if (a < -rank || a >= rank)
        return sdk::InvalidArgument("axis[", i, "] = ", a, " is out of range for an input of rank ",
                                    rank);
      if (a < 0) a += rank;
      const int64_t d = dims[static_cast<size_t>(a)];
      if (d == 0) continue;
      int64_t& t = total[static_cast<size_t>(a)];
      t = ((t + shift[i] % d) % d + d) % d;
    }
    CFX_SDK_ASSIGN_OR_RETURN(size_t elem, ElementSize(in));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, dims));
    const int64_t n = in.num_elements();
    if (n == 0) return sdk::Status();
    std::vector<int64_t> strides(dims.size(), 1);
    for (int64_t d = rank - 1; d > 0; --d)
      strides[static_cast<size_t>(d - 1)] =
          strides[static_cast<size_t>(d)] * dims[static_cast<size_t>(d)];
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    // Each output row of the last dimension is two contiguous runs of the input row.
    const int64_t last = rank == 0 ? 1 : dims.back();
    const int64_t last_shift = rank == 0 ? 0 : total.back();
    const int64_t rows = n / last;
    ctx.ParallelFor(rows, last * 2, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        // The source row: each leading coordinate moved back by its shift.
        int64_t rest = r, from = 0;
        for (int64_t d = rank - 2; d >= 0; --d) {
          const size_t du = static_cast<size_t>(d);
          const int64_t c = rest % dims[du];
          rest /= dims[du];
          from += ((c - total[du] + dims[du]) % dims[du]) * strides[du];
        }
        char* to = dst + r * last * static_cast<int64_t>(elem);
        const char* row = src + from * static_cast<int64_t>(elem);
        const size_t head = static_cast<size_t>(last - last_shift) * elem;
        const size_t tail = static_cast<size_t>(last_shift) * elem;
        std::memcpy(to + tail, row, head);
        std::memcpy(to, row + head, tail);
      }
    });
    return sdk::Status();
  }
};

template <typename T>
class BucketizeKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("boundaries", &boundaries_));
    if (!std::is_sorted(boundaries_.begin(), boundaries_.end()))
      return sdk::InvalidArgument("Expected sorted boundaries");
    return sdk::Status();
  }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    if (in.dtype() != sdk::kDType<T>)
      return sdk::InvalidArgument("input is ", sdk::DTypeName(in.dtype()), "; expected ",
                                  sdk::DTypeName(sdk::kDType<T>));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, in.shape()));
    const T* x = in.data<T>();
    int32_t* y = out.data<int32_t>();
    ctx.ParallelFor(in.num_elements(), 20, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        y[i] = static_cast<int32_t>(
            std::upper_bound(boundaries_.begin(), boundaries_.end(), x[i]) - boundaries_.begin());
    });
    return sdk::Status();
  }

 private:
  std::vector<float> boundaries_;
};

constexpr cfx_dtype kDispatchTypes[] = {CFX_FLOAT, CFX_DOUBLE, CFX_INT32, CFX_INT64, CFX_BOOL,
                                        CFX_UINT8, CFX_INT8,   CFX_INT16, CFX_UINT16};

}  // namespace

void RegisterSearchKernels(sdk::Plugin& p) {
  RegisterTypeAgnostic<WhereNonZeroKernel>(p, "Where", "T", kDispatchTypes);
  for (cfx_dtype t : kDispatchTypes)
    for (cfx_dtype index : {CFX_INT32, CFX_INT64})
      p.Kernel<UniqueValuesKernel>("Unique", "CPU").TypeConstraint("T", t).TypeConstraint(
          "out_idx", index);
  for (cfx_dtype t : kFixedSizeTypes)
    p.Kernel<RollKernel>("Roll", "CPU").TypeConstraint("T", t).HostMemory("shift").HostMemory(
        "axis");
  RegisterForTypes<BucketizeKernel, int32_t, int64_t, float, double>(p, "Bucketize");
}

}  // namespace cfx::cpu
