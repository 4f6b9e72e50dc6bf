// Optimizer updates of variables in place on CPU, for float and double: ApplyGradientDescent,
// ApplyMomentum, ApplyAdam and ApplyRMSProp (reference inputs from VariableV2, updated in the
// variable's own buffer; `out` is the same reference) and their Resource* forms (resource
// variables). Locking and copy on write are sdk::UpdateVariables' (variable_update.h); the
// formulas are TensorFlow's. Each update is one fused pass over its tensors, split across the
// intra-op pool. Kernels hold only their attrs: concurrent Compute calls are safe.
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

// One input of an op, for messages.
using Input = sdk::VariableInput;

// Reads the scalar input `in`. TensorFlow's kernels also take shape [1] ("legacy scalars"), which
// its shape functions and ours reject; the kernels here agree with the shape functions.
template <typename T>
sdk::Status ReadScalar(const sdk::KernelContext& ctx, Input in, T* value) {
  sdk::Tensor t = ctx.input(in.index);
  if (t.dtype() != sdk::kDType<T>)
    return sdk::InvalidArgument(in.name, " is ", sdk::DTypeName(t.dtype()), " but T is ",
                                sdk::DTypeName(sdk::kDType<T>));
  if (t.rank() != 0)
    return sdk::InvalidArgument(in.name, " must be a scalar, got shape ",
                                sdk::ShapeString(t.shape()));
  *value = t.data<T>()[0];
  return sdk::Status();
}

// The variables' values hold T and all have the first one's shape, as has `grad`.
template <typename T>
sdk::Status CheckShapes(std::span<const Input> variables, const std::vector<sdk::Tensor>& values,
                        Input grad_input, const sdk::Tensor& grad) {
  for (size_t k = 0; k < values.size(); ++k) {
    if (values[k].dtype() != sdk::kDType<T>)
      return sdk::InvalidArgument(variables[k].name, ": the variable holds ",
                                  sdk::DTypeName(values[k].dtype()), " but T is ",
                                  sdk::DTypeName(sdk::kDType<T>));
  }
  auto same_shape = [&](Input in, const sdk::Tensor& t) {
    if (t.shape() == values[0].shape()) return sdk::Status();
    return sdk::InvalidArgument(variables[0].name, " has shape ",
                                sdk::ShapeString(values[0].shape()), " and ", in.name,
                                " has shape ", sdk::ShapeString(t.shape()), "; they must be equal");
  };
  for (size_t k = 1; k < values.size(); ++k)
    CFX_SDK_RETURN_IF_ERROR(same_shape(variables[k], values[k]));
  if (grad.dtype() != sdk::kDType<T>)
    return sdk::InvalidArgument(grad_input.name, " is ", sdk::DTypeName(grad.dtype()), " but T is ",
                                sdk::DTypeName(sdk::kDType<T>));
  return same_shape(grad_input, grad);
}

// ---- The update rules. Each names its inputs (variables first, then the scalars, then the
// gradient, as the op lists them) and runs elements [begin, end) of the update. The loops read
// each element once and write it once, and vectorise (the compiler takes the loop-invariant
// `nesterov` test out of the loop; training.cc is built with -fno-math-errno so that sqrt
// vectorises too).

struct GradientDescent {
  static constexpr Input kVariables[] = {{0, "var"}};
  static constexpr Input kScalars[] = {{1, "alpha"}};
  static constexpr Input kGradient = {2, "delta"};
  static constexpr int64_t kCost = 2;
  // var -= alpha * delta
  template <typename T>
  [[gnu::always_inline]] static void Run(const std::array<T*, 1>& v, const T* s, const T* g, bool,
                                         int64_t begin, int64_t end) {
    T* var = v[0];
    const T alpha = s[0];
    for (int64_t i = begin; i < end; ++i) var[i] -= alpha * g[i];
  }
};

struct Momentum {
  static constexpr Input kVariables[] = {{0, "var"}, {1, "accum"}};
  static constexpr Input kScalars[] = {{2, "lr"}, {4, "momentum"}};
  static constexpr Input kGradient = {3, "grad"};
  static constexpr int64_t kCost = 5;
  // accum = accum * momentum + grad;
  // var -= lr * accum, or with Nesterov var -= grad * lr + accum * momentum * lr.
  template <typename T>
  [[gnu::always_inline]] static void Run(const std::array<T*, 2>& v, const T* s, const T* g,
                                         bool nesterov, int64_t begin, int64_t end) {
    T *var = v[0], *accum = v[1];
    const T lr = s[0], momentum = s[1];
    for (int64_t i = begin; i < end; ++i) {
      const T a = accum[i] * momentum + g[i];
      accum[i] = a;
      var[i] -= nesterov ? g[i] * lr + a * momentum * lr : a * lr;
    }
  }
};

struct Adam {
  static constexpr Input kVariables[] = {{0, "var"}, {1, "m"}, {2, "v"}};
  static constexpr Input kScalars[] = {{3, "beta1_power"}, {4, "beta2_power"}, {5, "lr"},
                                       {6, "beta1"},       {7, "beta2"},       {8, "epsilon"}};
  static constexpr Input kGradient = {9, "grad"};
  static constexpr int64_t kCost = 24;
  // lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
  // m += (grad - m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2);
  // var -= m * lr_t / (sqrt(v) + epsilon), or with Nesterov
  // var -= (grad * (1 - beta1) + beta1 * m) * lr_t / (sqrt(v) + epsilon).
  template <typename T>
  [[gnu::always_inline]] static void Run(const std::array<T*, 3>& vars, const T* s, const T* g,
                                         bool nesterov, int64_t begin, int64_t end) {
    T *var = vars[0], *m = vars[1], *v = vars[2];
    const T beta1_power = s[0], beta2_power = s[1], lr = s[2], beta1 = s[3], beta2 = s[4],
            epsilon = s[5];
    const T lr_t = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    const T one_minus_beta1 = T(1) - beta1, one_minus_beta2 = T(1) - beta2;
    for (int64_t i = begin; i < end; ++i) {
      const T grad = g[i];
      const T m_new = m[i] + (grad - m[i]) * one_minus_beta1;
      const T v_new = v[i] + (grad * grad - v[i]) * one_minus_beta2;
      m[i] = m_new;
      v[i] = v_new;
      const T step = nesterov ? grad * one_minus_beta1 + beta1 * m_new : m_new;
      var[i] -= step * lr_t / (std::sqrt(v_new) + epsilon);
    }
  }
};

struct RMSProp {
  static constexpr Input kVariables[] = {{0, "var"}, {1, "ms"}, {2, "mom"}};
  static constexpr Input kScalars[] = {{3, "lr"}, {4, "rho"}, {5, "momentum"}, {6, "epsilon"}};
  static constexpr Input kGradient = {7, "grad"};
  static constexpr int64_t kCost = 24;
  // ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms + epsilon);
  // var -= mom.
  template <typename T>
  [[gnu::always_inline]] static void Run(const std::array<T*, 3>& v, const T* s, const T* g, bool,
                                         int64_t begin, int64_t end) {
    T *var = v[0], *ms = v[1], *mom = v[2];
    const T lr = s[0], rho = s[1], momentum = s[2], epsilon = s[3];
    const T one_minus_rho = T(1) - rho;
    for (int64_t i = begin; i < end; ++i) {
      const T grad = g[i];
      const T ms_new = ms[i] + (grad * grad - ms[i]) * one_minus_rho;
      const T mom_new = mom[i] * momentum + grad * lr / std::sqrt(ms_new + epsilon);
      ms[i] = ms_new;
      mom[i] = mom_new;
      var[i] -= mom_new;
    }
  }
};

// The float updates, compiled for AVX-512, AVX2 and the baseline; the widest the CPU has is
// chosen when the plugin loads (the MLP of bench/scaling_bench trains about 10 % faster with Adam
// on AVX-512 than on the baseline's SSE). Every clone does the same operations in the same order (none of these targets
// brings FMA), so the results do not depend on the CPU.
__attribute__((target_clones("avx512f", "avx2", "default"))) void RunFloat(
    GradientDescent, const std::array<float*, 1>& v, const float* s, const float* g, bool nesterov,
    int64_t begin, int64_t end) {
  GradientDescent::Run<float>(v, s, g, nesterov, begin, end);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void RunFloat(
    Momentum, const std::array<float*, 2>& v, const float* s, const float* g, bool nesterov,
    int64_t begin, int64_t end) {
  Momentum::Run<float>(v, s, g, nesterov, begin, end);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void RunFloat(
    Adam, const std::array<float*, 3>& v, const float* s, const float* g, bool nesterov,
    int64_t begin, int64_t end) {
  Adam::Run<float>(v, s, g, nesterov, begin, end);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void RunFloat(
    RMSProp, const std::array<float*, 3>& v, const float* s, const float* g, bool nesterov,
    int64_t begin, int64_t end) {
  RMSProp::Run<float>(v, s, g, nesterov, begin, end);
}

template <typename Rule>
constexpr bool kHasNesterov = false;
template <>
constexpr bool kHasNesterov<Momentum> = true;
template <>
constexpr bool kHasNesterov<Adam> = true;

// Apply<Rule> and ResourceApply<Rule> on T: both take their variables through UpdateVariables,
// which tells references from resource handles.
template <typename T, typename Rule>
class ApplyKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr("use_locking", &use_locking_, false));
    if constexpr (kHasNesterov<Rule>)
      CFX_SDK_RETURN_IF_ERROR(init.attrs().GetOr("use_nesterov", &use_nesterov_, false));
    return sdk::Status();
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    constexpr size_t kNumVariables = std::size(Rule::kVariables);
    constexpr size_t kNumScalars = std::size(Rule::kScalars);
    T scalars[kNumScalars];
    for (size_t k = 0; k < kNumScalars; ++k)
      CFX_SDK_RETURN_IF_ERROR(ReadScalar<T>(ctx, Rule::kScalars[k], &scalars[k]));
    const sdk::Tensor grad = ctx.input(Rule::kGradient.index);
    return sdk::UpdateVariables(
        ctx, Rule::kVariables, use_locking_,
        [&](const std::vector<sdk::Tensor>& values) -> sdk::Status {
          CFX_SDK_RETURN_IF_ERROR(CheckShapes<T>(Rule::kVariables, values, Rule::kGradient, grad));
          std::array<T*, kNumVariables> v;
          for (size_t k = 0; k < kNumVariables; ++k) v[k] = values[k].template data<T>();
          const T* g = grad.data<T>();
          ctx.ParallelFor(values[0].num_elements(), Rule::kCost, [&](int64_t begin, int64_t end) {
            if constexpr (std::is_same_v<T, float>)
              RunFloat(Rule(), v, scalars, g, use_nesterov_, begin, end);
            else
              Rule::template Run<T>(v, scalars, g, use_nesterov_, begin, end);
          });
          return sdk::Status();
        });
  }

 private:
  bool use_locking_ = false;
  bool use_nesterov_ = false;
};

template <typename Rule>
struct Apply {
  template <typename T>
  using Kernel = ApplyKernel<T, Rule>;
};

// `name` (e.g. "Adam") as ApplyAdam on references and ResourceApplyAdam on resource handles,
// which stay in host memory; for float and double.
template <typename Rule>
void RegisterRule(sdk::Plugin& p, const std::string& name, bool inexpensive_ref_form = false) {
  auto register_type = [&]<typename T>(T) {
    auto ref = p.Kernel<ApplyKernel<T, Rule>>(("Apply" + name).c_str(), "CPU");
    ref.template TypeConstraint<T>("T");
    if (inexpensive_ref_form) ref.Inexpensive();
    auto resource = p.Kernel<ApplyKernel<T, Rule>>(("ResourceApply" + name).c_str(), "CPU");
    resource.template TypeConstraint<T>("T");
    for (const Input& in : Rule::kVariables) resource.HostMemory(in.name);
  };
  register_type(float());
  register_type(double());
}

}  // namespace

void RegisterTrainingKernels(sdk::Plugin& p) {
  RegisterRule<GradientDescent>(p, "GradientDescent", /*inexpensive_ref_form=*/true);
  RegisterRule<Momentum>(p, "Momentum");
  RegisterRule<Adam>(p, "Adam");
  RegisterRule<RMSProp>(p, "RMSProp");
}

}  // namespace cfx::cpu
