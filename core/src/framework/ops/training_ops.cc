// Training ops: the optimizers' update rules applied to variables in place, TensorFlow's
// definitions. Apply* update reference variables (VariableV2) and output the updated `var`
// reference; ResourceApply* update resource variables (VarHandleOp) and output nothing.
// GradientDescent, Momentum (optionally Nesterov), Adam (optionally Nesterov) and RMSProp.
#include <initializer_list>
#include <string>
#include <vector>

#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {
namespace {

// Where an optimizer's inputs are: `num_variables` variables first (var and its slots), scalar
// hyperparameters at `scalars`, the gradient at `grad`.
struct Layout {
  int num_variables;
  std::vector<int> scalars;
  int grad;
};

// Every scalar input is a scalar; var, its slots and the gradient have one shape, which is the
// output's. For resource variables the inputs are handles, whose values' shapes are not known
// here: only the scalars are checked.
Status ApplyShape(InferenceContext& c, const Layout& layout, bool resource) {
  for (int i : layout.scalars) {
    const PartialTensorShape& s = c.input(i);
    if (!s.unknown_rank() && s.rank() != 0)
      return c.Error(c.op().input_arg[i].name + " must be a scalar, got shape " + s.ToString());
  }
  if (resource) return Status();
  PartialTensorShape shape = c.input(0);
  for (int i = 1; i <= layout.num_variables; ++i) {
    const int input = i < layout.num_variables ? i : layout.grad;
    auto merged = shape.Merge(c.input(input));
    if (!merged.ok())
      return c.Error(c.op().input_arg[0].name + " has shape " + c.input(0).ToString() + " and " +
                     c.op().input_arg[input].name + " has shape " + c.input(input).ToString() +
                     "; they must be equal");
    shape = *merged;
  }
  c.set_output(0, shape);
  return Status();
}

// Registers Apply<name> and ResourceApply<name>: `variables` are the variable inputs (Ref(T) or
// resource), `others` the rest in order (each "name: T"), `attrs` beyond T and use_locking.
void RegisterOptimizer(OpRegistry* r, const std::string& name,
                       std::initializer_list<const char*> variables,
                       std::initializer_list<const char*> others, const Layout& layout,
                       std::initializer_list<const char*> attrs, const std::string& summary) {
  for (bool resource : {false, true}) {
    OpDefBuilder b((resource ? "ResourceApply" : "Apply") + name);
    for (const char* v : variables)
      b.Input(std::string(v) + (resource ? ": resource" : ": Ref(T)"));
    for (const char* input : others) b.Input(input);
    if (!resource) b.Output("out: Ref(T)");
    b.Attr("T: numbertype").Attr("use_locking: bool = false");
    for (const char* attr : attrs) b.Attr(attr);
    if (resource) b.SetIsStateful();
    b.SetShapeFn(
        [layout, resource](InferenceContext& c) { return ApplyShape(c, layout, resource); });
    b.Summary(summary + (resource ? "" : "; out is var."));
    r->RegisterOrDie(b);
  }
}

}  // namespace

void RegisterTrainingOps(OpRegistry* r) {
  RegisterOptimizer(r, "GradientDescent", {"var"}, {"alpha: T", "delta: T"}, {1, {1}, 2}, {},
                    "var -= alpha * delta, in place");
  RegisterOptimizer(r, "Momentum", {"var", "accum"}, {"lr: T", "grad: T", "momentum: T"},
                    {2, {2, 4}, 3}, {"use_nesterov: bool = false"},
                    "accum = accum * momentum + grad; var -= lr * accum (with use_nesterov: "
                    "var -= grad * lr + accum * momentum * lr), in place");
  RegisterOptimizer(r, "Adam", {"var", "m", "v"},
                    {"beta1_power: T", "beta2_power: T", "lr: T", "beta1: T", "beta2: T",
                     "epsilon: T", "grad: T"},
                    {3, {3, 4, 5, 6, 7, 8}, 9}, {"use_nesterov: bool = false"},
                    "lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - m) * "
                    "(1 - beta1); v += (grad^2 - v) * (1 - beta2); var -= lr_t * m / (sqrt(v) + "
                    "epsilon) (with use_nesterov: lr_t * (grad * (1 - beta1) + beta1 * m) in "
                    "the numerator), in place");
  RegisterOptimizer(r, "RMSProp", {"var", "ms", "mom"},
                    {"lr: T", "rho: T", "momentum: T", "epsilon: T", "grad: T"},
                    {3, {3, 4, 5, 6}, 7}, {},
                    "ms += (grad^2 - ms) * (1 - rho); mom = mom * momentum + lr * grad / "
                    "sqrt(ms + epsilon); var -= mom, in place");
}

}  // namespace cfx::internal
