// InTopKV2(predictions float [batch, classes], targets T [batch], k T scalar) -> bool [batch],
// with TensorFlow's op definition and CPU semantics: precision[i] says whether fewer than k
// classes score strictly higher than the target class, so ties with the target count in its
// favour (with k = 1 every class tied for the top is "in the top 1"). A target outside
// [0, classes), or a row holding a non-finite prediction (NaN or infinity, anywhere in the row),
// gives false rather than an error.
//
// Rows are independent and spread over the device's intra-op pool. Stateless: Compute may run
// concurrently.
#include <cmath>

#include "conflux/sdk/shape_rules.h"
#include "nn_ops.h"
#include "partial_shapes.h"

namespace cfx::nn {
namespace {

using shape_rules::ShapeStr;

sdk::Status InTopKShape(sdk::ShapeContext& c) {
  sdk::PartialShape predictions, targets, k;
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(0), 2, "predictions", &predictions));
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(1), 1, "targets", &targets));
  CFX_SDK_RETURN_IF_ERROR(WithRank(c.input(2), 0, "k", &k));
  int64_t batch;
  if (!MergeDim(predictions.dims[0], targets.dims[0], &batch))
    return sdk::InvalidArgument("predictions (shape ", ShapeStr(predictions.dims),
                                ") and targets (shape ", ShapeStr(targets.dims),
                                ") must have the same first dimension");
  c.set_output(0, KnownShape({batch}));
  return sdk::Status();
}

// Whether `target` is among the top k of the `n` predictions of one row.
bool InTopK(const float* row, int64_t n, int64_t target, int64_t k) {
  if (target < 0 || target >= n || !std::isfinite(row[target])) return false;
  const float score = row[target];
  int64_t higher = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (!std::isfinite(row[j])) return false;
    if (row[j] > score) ++higher;
  }
  return higher < k;
}

template <typename T>
class InTopKKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor predictions = ctx.input(0), targets = ctx.input(1), k_tensor = ctx.input(2);
    const sdk::Shape ps = predictions.shape(), ts = targets.shape();
    if (ps.size() != 2)
      return sdk::InvalidArgument("predictions must have rank 2 ([batch, classes]), got shape ",
                                  ShapeStr(ps));
    if (ts.size() != 1)
      return sdk::InvalidArgument("targets must have rank 1 ([batch]), got shape ", ShapeStr(ts));
    if (ts[0] != ps[0])
      return sdk::InvalidArgument("predictions (shape ", ShapeStr(ps), ") and targets (shape ",
                                  ShapeStr(ts), ") must have the same first dimension");
    if (k_tensor.rank() != 0)
      return sdk::InvalidArgument("k must be a scalar, got shape ", ShapeStr(k_tensor.shape()));
    const int64_t k = static_cast<int64_t>(k_tensor.data<T>()[0]);
    const int64_t rows = ps[0], n = ps[1];
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, {rows}));
    const float* p = predictions.data<float>();
    const T* target = targets.data<T>();
    bool* o = out.data<bool>();
    ctx.ParallelFor(rows, 2 * n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        o[r] = InTopK(p + r * n, n, static_cast<int64_t>(target[r]), k);
    });
    return sdk::Status();
  }
};

}  // namespace

void RegisterInTopKOps(sdk::Plugin& p) {
  p.Op("InTopKV2")
      .Input("predictions: float")
      .Input("targets: T")
      .Input("k: T")
      .Output("precision: bool")
      .Attr("T: {int32, int64} = DT_INT32")
      .ShapeFn<&InTopKShape>();
  p.Kernel<InTopKKernel<int32_t>>("InTopKV2", "CPU").TypeConstraint<int32_t>("T").HostMemory("k");
  p.Kernel<InTopKKernel<int64_t>>("InTopKV2", "CPU").TypeConstraint<int64_t>("T").HostMemory("k");
}

}  // namespace cfx::nn
