// _FusedMatMul for float on CPU: TensorFlow's MatMul + BiasAdd (+ activation: Relu, Relu6, Elu,
// LeakyRelu, GeluExact, GeluApproximate), written by its grappler and by the core's remapper pass.
// The product rows start as copies of the bias and dnnl_sgemm adds op(A) op(B) into them (beta 1);
// the activation then runs in place. GeluExact computes what TensorFlow's unfused GELU ops do, in
// their order and with the Erfc kernel's vectorized erfc; GeluApproximate likewise with the Tanh
// kernel's vectorized tanh (and x * x * x for Pow(x, 3), sdk::GeluTanh).
//
// Why sgemm and not a oneDNN matmul primitive with the bias and an eltwise post-op: the
// primitive (brgemm with plain-layout weights, as a graph's weights are) took 486 ms for VGG16's
// 1 x 25088 x 4096 layer against sgemm's few tens of ms (ONEDNN_VERBOSE on
// `conflux bench` of Keras' VGG16), and for the sizes where both are fast they run the same JIT
// GEMM (matmul_onednn.cc says why MatMul uses sgemm). Stateless: Compute may run concurrently.
#include <algorithm>
#include <cstring>

#include "conflux/sdk/fused_ops.h"
#include "kernels/matmul.h"
#include "kernels/vector_math.h"

namespace cfx::cpu {
namespace {

// v[i] = outer(v[i], f(inner(v[i]))) for i in [0, n), with f one of the vectorized functions,
// a chunk at a time.
template <typename Inner, typename Outer>
void ThroughVectorFunction(VectorFunction f, float* v, int64_t n, Inner inner, Outer outer) {
  constexpr int64_t kChunk = 1024;
  float t[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t len = std::min(kChunk, n - i);
    for (int64_t j = 0; j < len; ++j) t[j] = inner(v[i + j]);
    VectorSpan(f, t, t, len);
    for (int64_t j = 0; j < len; ++j) v[i + j] = outer(v[i + j], t[j]);
  }
}

// v[i] = activation(v[i]) for i in [0, n), with the activation chosen once outside the loop.
void Activate(const sdk::FusedEpilogue& e, float* v, int64_t n) {
  using sdk::FusedActivation;
  auto each = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) v[i] = f(v[i]);
  };
  switch (e.activation) {
    case FusedActivation::kNone:
      return;
    case FusedActivation::kRelu:
      return each([](float x) { return x < 0.0f ? 0.0f : x; });
    case FusedActivation::kRelu6:
      return each([](float x) { return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x); });
    case FusedActivation::kElu:
    case FusedActivation::kLeakyRelu:
      return each([&e](float x) { return sdk::ApplyFusedActivation(e, x); });
    case FusedActivation::kGeluExact:
      // Mul(0.5, x) * Erfc(Mul(Neg(x), 1/sqrt(2))).
      return ThroughVectorFunction(
          VectorFunction::kErfc, v, n, [](float x) { return -x * sdk::kGeluErfcScale; },
          [](float x, float erfc) { return 0.5f * x * erfc; });
    case FusedActivation::kGeluApproximate:
      // Mul(Mul(0.5, x), AddV2(1, Tanh(Mul(a, AddV2(x, Mul(b, x^3)))))).
      return ThroughVectorFunction(
          VectorFunction::kTanh, v, n,
          [](float x) { return sdk::kGeluTanhScale * (x + sdk::kGeluTanhCubic * (x * x * x)); },
          [](float x, float tanh) { return 0.5f * x * (1.0f + tanh); });
  }
}

class FusedMatMulKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(attrs_.Read(init));
    CFX_SDK_ASSIGN_OR_RETURN(epilogue_, sdk::ReadFusedEpilogue(init.attrs(), {.gelu = true}));
    return sdk::Status();
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_ASSIGN_OR_RETURN(MatMulCall call, BeginMatMul(ctx, attrs_));
    const MatMulDims& d = call.dims;
    sdk::Tensor bias = ctx.input(2);
    if (bias.dtype() != CFX_FLOAT || bias.shape() != sdk::Shape{d.n})
      return sdk::InvalidArgument("the bias (args[0]) must be a float vector of the ", d.n,
                                  " product columns, got shape ", sdk::ShapeString(bias.shape()));
    float* out = call.product.data<float>();
    for (int64_t r = 0; r < d.m && d.n > 0; ++r)
      std::memcpy(out + r * d.n, bias.data<float>(), static_cast<size_t>(d.n) * sizeof(float));
    // call.done: empty, or k == 0: the bias alone goes through the activation.
    if (!call.done) CFX_SDK_RETURN_IF_ERROR(SgemmInto(ctx, call, 1.0f));
    ctx.ParallelFor(d.m, d.n, [&](int64_t begin, int64_t end) {
      Activate(epilogue_, out + begin * d.n, (end - begin) * d.n);
    });
    return sdk::Status();
  }

 private:
  MatMulAttrs attrs_;
  sdk::FusedEpilogue epilogue_;
};

}  // namespace

void RegisterFusedMatMulKernel(sdk::Plugin& p) {
  p.Kernel<FusedMatMulKernel>("_FusedMatMul", "CPU").TypeConstraint<float>("T");
}

}  // namespace cfx::cpu
