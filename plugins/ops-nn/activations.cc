// Activation functions and their gradients, with TensorFlow's op definitions:
//   Relu6(x)    = min(max(x, 0), 6)          Relu6Grad(g, x)    = g * (0 < x < 6)
//   Elu(x)      = x < 0 ? e^x - 1 : x        EluGrad(g, y)      = y < 0 ? g * (y + 1) : g
//   Selu(x)     = s * (x < 0 ? a (e^x - 1) : x)
//                                            SeluGrad(g, y)     = y < 0 ? g * (y + s a) : g * s
//   Softplus(x) = log(1 + e^x)               SoftplusGrad(g, x) = g / (1 + e^-x)
//   LeakyRelu(x) = x > 0 ? x : alpha x       LeakyReluGrad(g, x) = x > 0 ? g : alpha g
//   Softsign(x) = x / (1 + |x|)              SoftsignGrad(g, x) = g / (1 + |x|)^2
// EluGrad and SeluGrad take the forward op's *outputs* y, as in TensorFlow. Relu6 keeps NaN (like
// Relu in the CPU plugin); Relu6Grad multiplies by the 0/1 mask as TensorFlow does, so a NaN or
// infinite gradient outside (0, 6) gives NaN.
//
// Each kernel is one element-wise pass over the device's intra-op pool; the output reuses the
// buffer of an input that the executor holds the only reference to. Stateless: Compute may run
// concurrently.
#include <cmath>
#include <limits>
#include <type_traits>

#include "conflux/sdk/shape_rules.h"
#include "nn_ops.h"
#include "partial_shapes.h"

namespace cfx::nn {
namespace {

using shape_rules::ShapeStr;

// SELU's constants (Klambauer et al., 2017), as TensorFlow defines them.
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

// ---- Element functions: Apply(x) or Apply(gradient, x); kCost in rough cycles per element.
// A function with attrs reads them in ReadAttrs when the kernel is built.

struct Relu6Fn {
  static constexpr int kCost = 2;
  template <typename T>
  static T Apply(T x) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) return x;
    }
    return x < T(0) ? T(0) : (x > T(6) ? T(6) : x);
  }
};

struct Relu6GradFn {
  static constexpr int kCost = 2;
  static constexpr const char* kSecond = "features";
  template <typename T>
  static T Apply(T g, T x) {
    return g * (x > T(0) && x < T(6) ? T(1) : T(0));  // a select of constants vectorises
  }
};

struct EluFn {
  static constexpr int kCost = 25;
  template <typename T>
  static T Apply(T x) {
    return x < T(0) ? std::expm1(x) : x;
  }
};

struct EluGradFn {
  static constexpr int kCost = 2;
  static constexpr const char* kSecond = "outputs";
  template <typename T>
  static T Apply(T g, T y) {
    return y < T(0) ? g * (y + T(1)) : g;
  }
};

struct SeluFn {
  static constexpr int kCost = 25;
  template <typename T>
  static T Apply(T x) {
    return x < T(0) ? static_cast<T>(kSeluScale * kSeluAlpha) * std::expm1(x)
                    : static_cast<T>(kSeluScale) * x;
  }
};

struct SeluGradFn {
  static constexpr int kCost = 2;
  static constexpr const char* kSecond = "outputs";
  template <typename T>
  static T Apply(T g, T y) {
    return y < T(0) ? g * (y + static_cast<T>(kSeluScale * kSeluAlpha))
                    : g * static_cast<T>(kSeluScale);
  }
};

// log(1 + e^x) without overflow or lost digits: above -threshold it equals x, below threshold
// e^x, to within the type's epsilon (TensorFlow's thresholds: log(epsilon) + 2).
struct SoftplusFn {
  static constexpr int kCost = 40;
  template <typename T>
  static T Apply(T x) {
    static const T threshold = std::log(std::numeric_limits<T>::epsilon()) + T(2);
    if (x > -threshold) return x;
    if (x < threshold) return std::exp(x);
    return std::log1p(std::exp(x));
  }
};

struct SoftplusGradFn {
  static constexpr int kCost = 25;
  static constexpr const char* kSecond = "features";
  template <typename T>
  static T Apply(T g, T x) {
    return g / (std::exp(-x) + T(1));  // e^-x = inf for very negative x: exactly 0
  }
};

struct SoftsignFn {
  static constexpr int kCost = 4;
  template <typename T>
  static T Apply(T x) {
    return x / (T(1) + std::fabs(x));
  }
};

struct SoftsignGradFn {
  static constexpr int kCost = 5;
  static constexpr const char* kSecond = "features";
  template <typename T>
  static T Apply(T g, T x) {
    const T d = T(1) + std::fabs(x);
    return g / (d * d);
  }
};

// The slope below zero is the attr alpha (TensorFlow: 0.2 by default); NaN stays NaN.
struct LeakyReluFn {
  static constexpr int kCost = 2;
  float alpha = 0.2f;
  sdk::Status ReadAttrs(const sdk::Attrs& a) { return a.Get("alpha", &alpha); }
  template <typename T>
  T Apply(T x) const {
    return x > T(0) ? x : x * static_cast<T>(alpha);
  }
};

struct LeakyReluGradFn {
  static constexpr int kCost = 2;
  static constexpr const char* kSecond = "features";
  float alpha = 0.2f;
  sdk::Status ReadAttrs(const sdk::Attrs& a) { return a.Get("alpha", &alpha); }
  template <typename T>
  T Apply(T g, T x) const {
    return x > T(0) ? g : g * static_cast<T>(alpha);
  }
};

// ---- Kernels.

// Reads F's attrs, for functions that have some.
template <typename F>
sdk::Status ReadFnAttrs(const sdk::KernelInit& init, F* f) {
  if constexpr (requires { f->ReadAttrs(init.attrs()); }) return f->ReadAttrs(init.attrs());
  return sdk::Status();
}

template <typename T, typename F>
class UnaryKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return ReadFnAttrs(init, &f_); }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor in = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0}, 0, in.shape()));
    const T* x = in.data<T>();
    T* y = out.data<T>();
    ctx.ParallelFor(in.num_elements(), F::kCost, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = f_.template Apply<T>(x[i]);
    });
    return sdk::Status();
  }

 private:
  F f_;
};

// Input 0 is the gradient; input 1 (F::kSecond) the forward op's features or outputs.
template <typename T, typename F>
class GradKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return ReadFnAttrs(init, &f_); }
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor grad = ctx.input(0), second = ctx.input(1);
    const sdk::Shape shape = grad.shape();
    if (shape != second.shape())
      return sdk::InvalidArgument("gradients (shape ", ShapeStr(shape), ") and ", F::kSecond,
                                  " (shape ", ShapeStr(second.shape()),
                                  ") must have the same shape");
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.ForwardOrAllocateOutput({0, 1}, 0, shape));
    const T* g = grad.data<T>();
    const T* v = second.data<T>();
    T* o = out.data<T>();
    ctx.ParallelFor(grad.num_elements(), F::kCost, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = f_.template Apply<T>(g[i], v[i]);
    });
    return sdk::Status();
  }

 private:
  F f_;
};

sdk::Status SameShapeFn(sdk::ShapeContext& c) {
  c.set_output(0, c.input(0));
  return sdk::Status();
}

// The gradient and the forward op's features (or outputs, when kOfOutputs) have one shape.
template <bool kOfOutputs>
sdk::Status GradShapeFn(sdk::ShapeContext& c) {
  sdk::PartialShape out;
  CFX_SDK_RETURN_IF_ERROR(
      MergeShapes(c.input(0), "gradients", c.input(1), kOfOutputs ? "outputs" : "features", &out));
  c.set_output(0, out);
  return sdk::Status();
}

void DefineUnary(sdk::Plugin& p, const char* op, const char* types) {
  p.Op(op).Input("features: T").Output("activations: T").Attr(types).ShapeFn<&SameShapeFn>();
}

// The op's second input is the forward op's outputs when kOfOutputs, else its features.
template <bool kOfOutputs>
void DefineGrad(sdk::Plugin& p, const char* op, const char* types) {
  p.Op(op)
      .Input("gradients: T")
      .Input(kOfOutputs ? "outputs: T" : "features: T")
      .Output("backprops: T")
      .Attr(types)
      .ShapeFn<&GradShapeFn<kOfOutputs>>();
}

template <template <typename, typename> class K, typename F, typename... Ts>
void RegisterCpu(sdk::Plugin& p, const char* op) {
  // One full expression per type: each builder registers when its statement ends.
  ([&] { p.Kernel<K<Ts, F>>(op, "CPU").template TypeConstraint<Ts>("T"); }(), ...);
}

}  // namespace

void RegisterActivationOps(sdk::Plugin& p) {
  const char* real = "T: realnumbertype";
  const char* floats = "T: {half, bfloat16, float, double}";
  DefineUnary(p, "Relu6", real);
  DefineGrad<false>(p, "Relu6Grad", real);
  DefineUnary(p, "Elu", floats);
  DefineGrad<true>(p, "EluGrad", floats);
  DefineUnary(p, "Selu", floats);
  DefineGrad<true>(p, "SeluGrad", floats);
  DefineUnary(p, "Softplus", floats);
  DefineGrad<false>(p, "SoftplusGrad", floats);
  DefineUnary(p, "Softsign", floats);
  DefineGrad<false>(p, "SoftsignGrad", floats);
  p.Op("LeakyRelu")
      .Input("features: T")
      .Output("activations: T")
      .Attr("alpha: float = 0.2")
      .Attr("T: {half, bfloat16, float, double} = DT_FLOAT")
      .ShapeFn<&SameShapeFn>();
  p.Op("LeakyReluGrad")
      .Input("gradients: T")
      .Input("features: T")
      .Output("backprops: T")
      .Attr("alpha: float = 0.2")
      .Attr("T: {half, bfloat16, float, double} = DT_FLOAT")
      .ShapeFn<&GradShapeFn<false>>();

  RegisterCpu<UnaryKernel, Relu6Fn, float, double, int32_t, int64_t>(p, "Relu6");
  RegisterCpu<GradKernel, Relu6GradFn, float, double, int32_t, int64_t>(p, "Relu6Grad");
  RegisterCpu<UnaryKernel, EluFn, float, double>(p, "Elu");
  RegisterCpu<GradKernel, EluGradFn, float, double>(p, "EluGrad");
  RegisterCpu<UnaryKernel, SeluFn, float, double>(p, "Selu");
  RegisterCpu<GradKernel, SeluGradFn, float, double>(p, "SeluGrad");
  RegisterCpu<UnaryKernel, SoftplusFn, float, double>(p, "Softplus");
  RegisterCpu<GradKernel, SoftplusGradFn, float, double>(p, "SoftplusGrad");
  RegisterCpu<UnaryKernel, SoftsignFn, float, double>(p, "Softsign");
  RegisterCpu<GradKernel, SoftsignGradFn, float, double>(p, "SoftsignGrad");
  RegisterCpu<UnaryKernel, LeakyReluFn, float, double>(p, "LeakyRelu");
  RegisterCpu<GradKernel, LeakyReluGradFn, float, double>(p, "LeakyReluGrad");
}

}  // namespace cfx::nn
