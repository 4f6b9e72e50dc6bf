// Losses, with TensorFlow's op definitions:
//   SoftmaxCrossEntropyWithLogits(features, labels) -> loss [batch], backprop [batch, classes]
//       loss = -sum_j labels_j * log_softmax(features)_j, backprop = softmax(features) - labels;
//       features and labels broadcast against each other to a matrix (TensorFlow's BCast rule).
//   SparseSoftmaxCrossEntropyWithLogits(features [batch, classes], labels [batch])
//       the same with one-hot labels; a label outside [0, classes) is an InvalidArgument that
//       names its index and value (TensorFlow's CPU behaviour).
//   L2Loss(t) -> sum(t^2) / 2, a scalar.
//
// Rows are independent and spread over the device's intra-op pool; each row is read from its
// maximum so that exp never overflows (log-sum-exp). L2Loss sums fixed blocks in double and adds
// the block sums in order, so its result does not depend on the thread count. Stateless: Compute
// may run concurrently.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "conflux/sdk/shape_rules.h"
#include "nn_ops.h"
#include "partial_shapes.h"

namespace cfx::nn {
namespace {

using shape_rules::ShapeStr;

// ---- Shapes.

// TensorFlow's broadcast of two shapes (right-aligned; a dimension of 1 stretches). Dimensions
// may be kUnknown (shape inference); false when two known dimensions differ and neither is 1.
bool BroadcastDims(const sdk::Shape& a, const sdk::Shape& b, sdk::Shape* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    int64_t& o = (*out)[i];
    if (x == 1) {
      o = y;
    } else if (y == 1) {
      o = x;
    } else if (x < 0 || y < 0) {
      o = std::max(x, y);  // the known one (the other is it or 1), else unknown
    } else if (x != y) {
      return false;
    } else {
      o = x;
    }
  }
  return true;
}

sdk::Status XentShape(sdk::ShapeContext& c) {
  const sdk::PartialShape features = c.input(0), labels = c.input(1);
  sdk::PartialShape matrix;
  if (features.unknown_rank || labels.unknown_rank) {
    // A known matrix side gives every dimension that the other side cannot stretch (not 1).
    const sdk::PartialShape& known = features.unknown_rank ? labels : features;
    matrix = UnknownDims(2);
    if (!known.unknown_rank && known.dims.size() > 2)
      return sdk::InvalidArgument(features.unknown_rank ? "labels" : "features", " (shape ",
                                  ShapeStr(known.dims), ") must have rank <= 2");
    if (!known.unknown_rank && known.dims.size() == 2)
      for (int d = 0; d < 2; ++d)
        if (known.dims[d] != 1) matrix.dims[d] = known.dims[d];
  } else {
    sdk::Shape dims;
    if (!BroadcastDims(features.dims, labels.dims, &dims))
      return sdk::InvalidArgument("features (shape ", ShapeStr(features.dims),
                                  ") and labels (shape ", ShapeStr(labels.dims),
                                  ") must be broadcastable");
    if (dims.size() != 2)
      return sdk::InvalidArgument("features (shape ", ShapeStr(features.dims),
                                  ") and labels (shape ", ShapeStr(labels.dims),
                                  ") must be matrices, or broadcast to one; they broadcast to ",
                                  ShapeStr(dims));
    matrix = KnownShape(dims);
  }
  c.set_output(0, KnownShape({matrix.dims[0]}));
  c.set_output(1, matrix);
  return sdk::Status();
}

sdk::Status SparseXentShape(sdk::ShapeContext& c) {
  sdk::PartialShape features, labels;
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(0), 2, "features", &features));
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(1), 1, "labels", &labels));
  if (!MergeDim(features.dims[0], labels.dims[0], &features.dims[0]))
    return sdk::InvalidArgument("features (shape ", ShapeStr(features.dims), ") and labels (shape ",
                                ShapeStr(labels.dims), ") must have the same first dimension");
  c.set_output(0, KnownShape({features.dims[0]}));
  c.set_output(1, features);
  return sdk::Status();
}

sdk::Status ScalarShape(sdk::ShapeContext& c) {
  c.set_output(0, sdk::Shape{});
  return sdk::Status();
}

// ---- Row math. Both write the row's backprop and return its loss; `backprop` may alias
// `logits` (a forwarded input): each backprop[k] is written after logits[k] was last read.

// The row's maximum (the shift of log-sum-exp); n >= 1.
template <typename T>
T RowMax(const T* x, int64_t n) {
  T max = x[0];
  for (int64_t k = 1; k < n; ++k) max = std::max(max, x[k]);
  return max;
}

template <typename T>
T DenseRow(const T* logits, const T* labels, T* backprop, int64_t n) {
  const T max = RowMax(logits, n);
  // loss = sum_k l_k (log(sum) - (x_k - max)) = log(sum) * sum_k l_k - sum_k l_k (x_k - max).
  T sum(0), label_sum(0), weighted(0);
  for (int64_t k = 0; k < n; ++k) {
    const T shifted = logits[k] - max;
    label_sum += labels[k];
    weighted += labels[k] * shifted;
    backprop[k] = std::exp(shifted);
    sum += backprop[k];
  }
  const T inv = T(1) / sum;
  for (int64_t k = 0; k < n; ++k) backprop[k] = backprop[k] * inv - labels[k];
  return std::log(sum) * label_sum - weighted;
}

template <typename T>
T SparseRow(const T* logits, int64_t label, T* backprop, int64_t n) {
  const T max = RowMax(logits, n);
  const T label_shifted = logits[label] - max;
  T sum(0);
  for (int64_t k = 0; k < n; ++k) {
    backprop[k] = std::exp(logits[k] - max);
    sum += backprop[k];
  }
  const T inv = T(1) / sum;
  for (int64_t k = 0; k < n; ++k) backprop[k] *= inv;
  backprop[label] -= T(1);
  return std::log(sum) - label_shifted;
}

// ---- Kernels.

// Where row r, column k of a [rows, cols] broadcast operand lies: data[r * row_step + k *
// col_step].
template <typename T>
struct Broadcast2D {
  const T* data;
  int64_t row_step, col_step;

  Broadcast2D(const sdk::Tensor& t, int64_t cols) : data(t.data<T>()) {
    const sdk::Shape s = t.shape();
    const int64_t d0 = s.size() >= 2 ? s[s.size() - 2] : 1, d1 = s.empty() ? 1 : s.back();
    col_step = d1 == 1 && cols != 1 ? 0 : 1;
    row_step = d0 == 1 ? 0 : d1;
  }
  // Row r as a contiguous array: in place, or copied into `scratch` when broadcast along it.
  const T* Row(int64_t r, std::vector<T>& scratch) const {
    const T* row = data + r * row_step;
    if (col_step == 1) return row;
    std::fill(scratch.begin(), scratch.end(), row[0]);
    return scratch.data();
  }
};

template <typename T>
class XentKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor features = ctx.input(0), labels = ctx.input(1);
    const sdk::Shape fs = features.shape(), ls = labels.shape();
    sdk::Shape dims;
    if (!BroadcastDims(fs, ls, &dims))
      return sdk::InvalidArgument("features (shape ", ShapeStr(fs), ") and labels (shape ",
                                  ShapeStr(ls), ") must be broadcastable");
    if (dims.size() != 2)
      return sdk::InvalidArgument(
          "features (shape ", ShapeStr(fs), ") and labels (shape ", ShapeStr(ls),
          ") must be matrices, or broadcast to one; they broadcast to ", ShapeStr(dims));
    const int64_t rows = dims[0], cols = dims[1];
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor loss, ctx.AllocateOutput(0, {rows}));
    // The features' buffer can hold the backprop only when it is the whole [rows, cols] matrix.
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor backprop, features.num_elements() == rows * cols
                                                       ? ctx.ForwardOrAllocateOutput({0}, 1, dims)
                                                       : ctx.AllocateOutput(1, dims));
    T* out = loss.data<T>();
    if (cols == 0) {
      std::fill(out, out + rows, T(0));  // a sum over no classes
      return sdk::Status();
    }
    const Broadcast2D<T> x(features, cols), l(labels, cols);
    T* b = backprop.data<T>();
    ctx.ParallelFor(rows, 30 * cols, [&](int64_t begin, int64_t end) {
      std::vector<T> x_row(x.col_step == 1 ? 0 : cols), l_row(l.col_step == 1 ? 0 : cols);
      for (int64_t r = begin; r < end; ++r)
        out[r] = DenseRow<T>(x.Row(r, x_row), l.Row(r, l_row), b + r * cols, cols);
    });
    return sdk::Status();
  }
};

template <typename T, typename L>
class SparseXentKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor features = ctx.input(0), labels = ctx.input(1);
    const sdk::Shape fs = features.shape(), ls = labels.shape();
    if (fs.size() != 2)
      return sdk::InvalidArgument("features must have rank 2 ([batch, classes]), got shape ",
                                  ShapeStr(fs));
    if (ls.size() != 1)
      return sdk::InvalidArgument("labels must have rank 1 ([batch]), got shape ", ShapeStr(ls));
    const int64_t rows = fs[0], cols = fs[1];
    if (ls[0] != rows)
      return sdk::InvalidArgument("features (shape ", ShapeStr(fs), ") and labels (shape ",
                                  ShapeStr(ls), ") must have the same first dimension");
    if (rows > 0 && cols == 0)
      return sdk::InvalidArgument("features must have at least one class, got shape ",
                                  ShapeStr(fs));
    const L* label = labels.data<L>();
    for (int64_t r = 0; r < rows; ++r)
      if (label[r] < 0 || label[r] >= cols)
        return sdk::InvalidArgument("labels[", r, "] = ", static_cast<int64_t>(label[r]),
                                    " is outside the valid range of classes [0, ", cols, ")");
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor loss, ctx.AllocateOutput(0, {rows}));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor backprop, ctx.ForwardOrAllocateOutput({0}, 1, fs));
    const T* x = features.data<T>();
    T* out = loss.data<T>();
    T* b = backprop.data<T>();
    ctx.ParallelFor(rows, 30 * cols, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        out[r] = SparseRow<T>(x + r * cols, static_cast<int64_t>(label[r]), b + r * cols, cols);
    });
    return sdk::Status();
  }
};

// Sums in double for float so that long sums keep float's precision.
template <typename T>
using SumType = std::conditional_t<std::is_same_v<T, float>, double, T>;

template <typename T>
class L2LossKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor t = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, {}));
    const T* x = t.data<T>();
    const int64_t n = t.num_elements();
    // Fixed blocks, not one per thread: the same sum whatever the pool's size.
    constexpr int64_t kBlock = 1 << 14;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<SumType<T>> partial(static_cast<size_t>(blocks), SumType<T>(0));
    ctx.ParallelFor(blocks, 2 * kBlock, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        // Eight independent sums: a single one would wait on each addition's latency.
        SumType<T> lanes[8] = {};
        const int64_t lo = b * kBlock, hi = std::min(n, lo + kBlock);
        int64_t i = lo;
        for (; i + 8 <= hi; i += 8)
          for (int j = 0; j < 8; ++j) {
            const SumType<T> v = x[i + j];
            lanes[j] += v * v;
          }
        for (; i < hi; ++i) lanes[0] += SumType<T>(x[i]) * SumType<T>(x[i]);
        SumType<T> sum(0);
        for (SumType<T> lane : lanes) sum += lane;
        partial[b] = sum;
      }
    });
    SumType<T> sum(0);
    for (SumType<T> s : partial) sum += s;
    out.data<T>()[0] = static_cast<T>(sum / 2);
    return sdk::Status();
  }
};

}  // namespace

void RegisterLossOps(sdk::Plugin& p) {
  p.Op("SoftmaxCrossEntropyWithLogits")
      .Input("features: T")
      .Input("labels: T")
      .Output("loss: T")
      .Output("backprop: T")
      .Attr("T: {half, bfloat16, float, double}")
      .ShapeFn<&XentShape>();
  p.Op("SparseSoftmaxCrossEntropyWithLogits")
      .Input("features: T")
      .Input("labels: Tlabels")
      .Output("loss: T")
      .Output("backprop: T")
      .Attr("T: {half, bfloat16, float, double}")
      .Attr("Tlabels: {int32, int64} = DT_INT64")
      .ShapeFn<&SparseXentShape>();
  p.Op("L2Loss")
      .Input("t: T")
      .Output("output: T")
      .Attr("T: {half, bfloat16, float, double}")
      .ShapeFn<&ScalarShape>();

  p.Kernel<XentKernel<float>>("SoftmaxCrossEntropyWithLogits", "CPU").TypeConstraint<float>("T");
  p.Kernel<XentKernel<double>>("SoftmaxCrossEntropyWithLogits", "CPU").TypeConstraint<double>("T");
  auto sparse = [&]<typename T, typename L>() {
    p.Kernel<SparseXentKernel<T, L>>("SparseSoftmaxCrossEntropyWithLogits", "CPU")
        .template TypeConstraint<T>("T")
        .template TypeConstraint<L>("Tlabels");
  };
  sparse.operator()<float, int32_t>();
  sparse.operator()<float, int64_t>();
  sparse.operator()<double, int32_t>();
  sparse.operator()<double, int64_t>();
  p.Kernel<L2LossKernel<float>>("L2Loss", "CPU").TypeConstraint<float>("T");
  p.Kernel<L2LossKernel<double>>("L2Loss", "CPU").TypeConstraint<double>("T");
}

}  // namespace cfx::nn
