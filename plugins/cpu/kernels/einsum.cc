// Einsum on CPU for float, double, int32 and int64: one or two inputs, reduced to a batch of
// matrix products.
//
// Every label of the equation (conflux/sdk/einsum_rules.h) is one of:
//   B  in the output and both inputs (batch),
//   M  in the output and the first input only, N  in the output and the second only,
//   K  not in the output (summed; contracted when both inputs have it).
// x is gathered into [B, M, K] and y into [B, K, N] (CopyWalks, shared with Transpose: a label
// repeated in one input walks its diagonal, an ellipsis dimension of size 1 broadcasts with
// step 0), multiplied per batch into [B, M, N] and gathered into the output's order. A label
// only one input has, summed, is walked by the other with step 0. One input is summed over K
// (or only moved when K is empty).
#include <cstring>
#include <string>
#include <vector>

#include "conflux/sdk/einsum_rules.h"
#include "kernels/array_util.h"
#include "kernels/batch_matmul.h"
#include "kernels/broadcast.h"

namespace cfx::cpu {
namespace {

using shape_rules::Dims;
using shape_rules::EinsumPlan;

// Each label's step in elements through a tensor of shape `dims` whose dimensions carry
// `labels`: the sum of the strides of its dimensions (a diagonal when it has several); 0 for a
// label it lacks or that only names dimensions of size 1 (broadcast).
std::vector<int64_t> LabelSteps(const Dims& dims, const std::vector<int>& labels,
                                size_t num_labels) {
  std::vector<int64_t> steps(num_labels, 0);
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] != 1) steps[labels[d]] += stride;
    stride *= dims[d];
  }
  return steps;
}

// The product of the labels' sizes; false when it does not fit int64.
bool Volume(const std::vector<int>& labels, const EinsumPlan& plan, int64_t* volume) {
  *volume = 1;
  for (int label : labels)
    if (!shape_rules::MultiplyFits(*volume, plan.size[label], volume)) return false;
  return true;
}

std::vector<Walk> WalksOf(const std::vector<std::vector<int>>& groups,
                          const std::vector<int64_t>& steps, const EinsumPlan& plan) {
  std::vector<Walk> walks;
  for (const std::vector<int>& group : groups)
    for (int label : group) walks.push_back({plan.size[label], steps[label]});
  return walks;
}

template <typename T>
class EinsumKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("equation", &equation_));
    int64_t n = 0;
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("N", &n));
    shape_rules::EinsumSubscripts subs;
    return RuleStatus(shape_rules::ParseEinsum(equation_, static_cast<size_t>(n), &subs));
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    const int num_inputs = ctx.num_inputs();
    std::vector<Dims> shapes;
    for (int i = 0; i < num_inputs; ++i) shapes.push_back(ctx.input(i).shape());
    Dims out_shape;
    EinsumPlan plan;
    CFX_SDK_RETURN_IF_ERROR(
        RuleStatus(shape_rules::EinsumShape(equation_, shapes, &out_shape, &plan)));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    if (out.num_elements() == 0) return sdk::Status();

    // Which inputs have each label, and the groups B, M, N (in output order) and K.
    const size_t num_labels = plan.size.size();
    std::vector<std::vector<bool>> has(2, std::vector<bool>(num_labels, false));
    std::vector<bool> in_output(num_labels, false), used(num_labels, false);
    for (int i = 0; i < num_inputs; ++i)
      for (int label : plan.inputs[i]) has[i][label] = used[label] = true;
    for (int label : plan.output) in_output[label] = true;
    std::vector<int> batch, rows, columns, summed;
    for (int label : plan.output) {
      if (has[0][label] && has[1][label])
        batch.push_back(label);
      else if (has[0][label])
        rows.push_back(label);
      else
        columns.push_back(label);
    }
    for (size_t label = 0; label < num_labels; ++label)
      if (used[label] && !in_output[label]) summed.push_back(static_cast<int>(label));
    int64_t b = 0, m = 0, n = 0, k = 0;
    if (!Volume(batch, plan, &b) || !Volume(rows, plan, &m) || !Volume(columns, plan, &n) ||
        !Volume(summed, plan, &k))
      return sdk::InvalidArgument("equation \"", equation_, "\" on these shapes needs more than ",
                                  "2^63-1 elements");
    int64_t bm = 0, bn = 0, x_count = 0, y_count = 0;
    if (!shape_rules::MultiplyFits(b, m, &bm) || !shape_rules::MultiplyFits(bm, k, &x_count) ||
        !shape_rules::MultiplyFits(b, n, &bn) || !shape_rules::MultiplyFits(bn, k, &y_count))
      return sdk::InvalidArgument("equation \"", equation_, "\" would gather more than 2^63-1 ",
                                  "elements of an input");

    sdk::Tensor x = ctx.input(0);
    const std::vector<int64_t> x_steps = LabelSteps(shapes[0], plan.inputs[0], num_labels);
    T* dst = out.data<T>();
    // [B, M, N] laid out as the output when the output lists B, M, N in that order.
    std::vector<int> product_order = batch;
    product_order.insert(product_order.end(), rows.begin(), rows.end());
    product_order.insert(product_order.end(), columns.begin(), columns.end());
    const bool direct = product_order == plan.output;
    if (num_inputs == 1 && k == 1) {
      // A transpose (or a copy): the output reads x in output order.
      CopyWalks(ctx, static_cast<const char*>(x.raw_data()), static_cast<char*>(out.raw_data()),
                sizeof(T), WalksOf({plan.output}, x_steps, plan));
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef xs,
                             Gather(ctx, x, x_steps, {batch, rows, summed}, plan, x_count));
    sdk::TensorRef product;  // [B, M, N] when it is not the output's layout
    if (!direct) {
      CFX_SDK_ASSIGN_OR_RETURN(product, ctx.AllocateTemp(sdk::kDType<T>, {out.num_elements()}));
    }
    T* result = direct ? dst : product.view().data<T>();
    if (num_inputs == 1) {
      SumRows(ctx, xs.view().data<T>(), m, k, result);
    } else {
      sdk::Tensor y = ctx.input(1);
      const std::vector<int64_t> y_steps = LabelSteps(shapes[1], plan.inputs[1], num_labels);
      CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef ys,
                               Gather(ctx, y, y_steps, {batch, summed, columns}, plan, y_count));
      CFX_SDK_RETURN_IF_ERROR(
          MultiplyMatrices<T>(ctx, xs.view().data<T>(), ys.view().data<T>(), result, b, m, k, n));
    }
    if (direct) return sdk::Status();
    // Each output label's step through [B, M, N].
    std::vector<int64_t> steps(num_labels, 0);
    int64_t stride = 1;
    for (size_t i = product_order.size(); i-- > 0;) {
      steps[product_order[i]] = stride;
      stride *= plan.size[product_order[i]];
    }
    CopyWalks(ctx, reinterpret_cast<const char*>(result), static_cast<char*>(out.raw_data()),
              sizeof(T), WalksOf({plan.output}, steps, plan));
    return sdk::Status();
  }

 private:
  // A new contiguous tensor of `count` elements: `t` walked through the label `groups` in order.
  static sdk::Result<sdk::TensorRef> Gather(sdk::KernelContext& ctx, const sdk::Tensor& t,
                                            const std::vector<int64_t>& steps,
                                            const std::vector<std::vector<int>>& groups,
                                            const EinsumPlan& plan, int64_t count) {
    CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef g, ctx.AllocateTemp(sdk::kDType<T>, {count}));
    if (count > 0)
      CopyWalks(ctx, static_cast<const char*>(t.raw_data()),
                static_cast<char*>(g.view().raw_data()), sizeof(T), WalksOf(groups, steps, plan));
    return g;
  }

  // out[r] = the sum of row r of `rows` x `k`, in order.
  static void SumRows(sdk::KernelContext& ctx, const T* in, int64_t rows, int64_t k, T* out) {
    ctx.ParallelFor(rows, k, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        T sum = T(0);
        for (int64_t j = 0; j < k; ++j) sum = WrappingAdd(sum, in[r * k + j]);
        out[r] = sum;
      }
    });
  }

  std::string equation_;
};

}  // namespace

void RegisterEinsumKernels(sdk::Plugin& p) {
  RegisterForTypes<EinsumKernel, float, double, int32_t, int64_t>(p, "Einsum");
}

}  // namespace cfx::cpu
