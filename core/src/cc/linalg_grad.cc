// The gradient of Einsum, as TensorFlow defines it: each input's gradient is an Einsum of the
// incoming gradient with the other input, onto the input's labels; labels that only that input
// has (summed in the forward pass) are broadcast back.
#include <string>
#include <vector>

#include "conflux/cc/ops/standard_ops.h"
#include "conflux/sdk/einsum_rules.h"
#include "grad_helpers.h"

namespace cfx::internal {
namespace {

using Grads = std::vector<Output>;

// True when a letter appears twice in `sub`.
bool RepeatsALetter(const std::string& sub) {
  for (size_t i = 0; i < sub.size(); ++i)
    if (sub.find(sub[i], i + 1) != std::string::npos) return true;
  return false;
}

// The gradient of input `i` (subscript subs.inputs[i]) from dy.
Output InputGradient(const Scope& s, const Operation& op, const shape_rules::EinsumSubscripts& subs,
                     const Output& dy, size_t i) {
  const std::string& sub = subs.inputs[i];
  const bool binary = subs.inputs.size() == 2;
  const std::string other = binary ? subs.inputs[1 - i] : "";
  // The input's labels that dy or the other input has, in the input's order; the rest were
  // summed by the forward pass.
  std::string kept;
  std::vector<int32_t> mask;
  for (char c : sub) {
    const bool keep =
        subs.output.find(c) != std::string::npos || other.find(c) != std::string::npos;
    if (keep) kept += c;
    mask.push_back(keep ? 1 : 0);
  }
  InputList inputs = {dy};
  if (binary) inputs.push_back(op.input(static_cast<int>(1 - i)));
  Output g = ops::Einsum(s, inputs, subs.output + (binary ? "," + other : "") + "->" + kept);
  if (kept == sub) return g;
  // Size 1 where a label was summed, then broadcast to the input's shape.
  Output shape = ops::Shape(s, op.input(static_cast<int>(i)));
  Output dims = ops::AddV2(s, ops::Mul(s, shape, mask), ops::Sub(s, 1, mask));
  return ops::BroadcastTo(s, ops::Reshape(s, g, dims), shape);
}

Status EinsumGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const AttrValue* equation = op.node()->attr("equation");
  shape_rules::EinsumSubscripts subs;
  const std::string error =
      shape_rules::ParseEinsum(equation->s, static_cast<size_t>(op.num_inputs()), &subs);
  if (!error.empty()) return errors::InvalidArgument("node '", op.name(), "': ", error);
  for (const std::string& sub : subs.inputs)
    if (sub.find("...") != std::string::npos || RepeatsALetter(sub))
      return errors::Unimplemented(
          "the gradient of Einsum is defined here for subscripts without \"...\" and without a "
          "letter repeated in one input; node '",
          op.name(), "' has equation \"", equation->s, "\"");
  dx->clear();
  for (size_t i = 0; i < subs.inputs.size(); ++i)
    dx->push_back(InputGradient(s, op, subs, dy[0], i));
  return s.status();
}

}  // namespace

void RegisterLinalgGradients(GradientRegistry* r) { (void)r->Register("Einsum", EinsumGrad); }

}  // namespace cfx::internal
