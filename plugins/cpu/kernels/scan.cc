// Cumsum and Cumprod on CPU for float, double, int32, int64, half and bfloat16.
//
// Around the axis the input is [outer, n, inner]; each of the outer * inner lines is scanned in
// order (backwards when `reverse`), so every element is the same chain of operations as
// TensorFlow's: sums and products in the element type, half and bfloat16 rounded after every
// step (in float in between). Integer results wrap around. Work is split by outer index and
// blocks of inner columns; a block walks the axis with the columns innermost, so that the
// loads are contiguous.
#include <algorithm>
#include <cstdint>
#include <string>

#include "conflux/sdk/float16.h"
#include "kernels/array_util.h"
#include "kernels/broadcast.h"
#include "kernels/reduction.h"

namespace cfx::cpu {
namespace {

template <typename T>
using Native = sdk::NativeElement<T>;
using Half = sdk::HalfElement;
using Bfloat16 = sdk::Bfloat16Element;

struct Sum {
  template <typename A>
  static A Identity() {
    return A(0);
  }
  template <typename A>
  static A Apply(A a, A b) {
    return WrappingAdd(a, b);
  }
};
struct Product {
  template <typename A>
  static A Identity() {
    return A(1);
  }
  template <typename A>
  static A Apply(A a, A b) {
    return WrappingMultiply(a, b);
  }
};

// Columns per work unit: a block's running values stay in registers and cache.
constexpr int64_t kBlock = 256;

template <typename Op, typename Type>
void ScanLines(sdk::KernelContext& ctx, const typename Type::Storage* in,
               typename Type::Storage* out, int64_t outer, int64_t n, int64_t inner, bool exclusive,
               bool reverse) {
  using Acc = typename Type::Acc;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  ctx.ParallelFor(outer * blocks, n * kBlock, [&](int64_t first, int64_t last) {
    Acc acc[kBlock];
    for (int64_t unit = first; unit < last; ++unit) {
      const int64_t o = unit / blocks, c0 = unit % blocks * kBlock;
      const int64_t width = std::min(kBlock, inner - c0);
      std::fill(acc, acc + width, Op::template Identity<Acc>());
      for (int64_t step = 0; step < n; ++step) {
        const int64_t j = reverse ? n - 1 - step : step;
        const int64_t at = (o * n + j) * inner + c0;
        for (int64_t c = 0; c < width; ++c) {
          const Acc next = Type::Load(Type::Store(Op::Apply(acc[c], Type::Load(in[at + c]))));
          out[at + c] = Type::Store(exclusive ? acc[c] : next);
          acc[c] = next;
        }
      }
    }
  });
}

// Cumsum(x, axis) and Cumprod(x, axis).
template <typename Op, typename Type>
class ScanKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("exclusive", &exclusive_));
    return init.attrs().Get("reverse", &reverse_);
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    int64_t axis = 0;
    CFX_SDK_RETURN_IF_ERROR(ReadScalarInput(ctx, 1, "axis", &axis));
    const shape_rules::Dims dims = in.shape();
    const std::string error =
        shape_rules::NormalizeAxis(&axis, static_cast<int64_t>(dims.size()), "axis");
    if (!error.empty())
      return sdk::InvalidArgument(error, " for an input of shape ", sdk::ShapeString(dims));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, dims));
    if (out.num_elements() == 0) return sdk::Status();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
    for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
    using S = typename Type::Storage;
    ScanLines<Op, Type>(ctx, in.data<S>(), out.data<S>(), outer, dims[axis], inner, exclusive_,
                        reverse_);
    return sdk::Status();
  }

 private:
  bool exclusive_ = false, reverse_ = false;
};

template <typename Op>
void RegisterScan(sdk::Plugin& p, const char* op) {
  auto add = [&]<typename Type>(cfx_dtype dtype) {
    p.Kernel<ScanKernel<Op, Type>>(op, "CPU").TypeConstraint("T", dtype).HostMemory("axis");
  };
  add.template operator()<Native<float>>(CFX_FLOAT);
  add.template operator()<Native<double>>(CFX_DOUBLE);
  add.template operator()<Native<int32_t>>(CFX_INT32);
  add.template operator()<Native<int64_t>>(CFX_INT64);
  add.template operator()<Half>(CFX_HALF);
  add.template operator()<Bfloat16>(CFX_BFLOAT16);
}

}  // namespace

void RegisterScanKernels(sdk::Plugin& p) {
  RegisterScan<Sum>(p, "Cumsum");
  RegisterScan<Product>(p, "Cumprod");
}

}  // namespace cfx::cpu
