// ops::Const: a constant from a Tensor or a literal (written by hand: the generated wrapper
// would ask for the dtype and the value separately).
//
//   Output a = ops::Const(scope, {1.f, 2.f});     // float [2]
//   Output b = ops::Const(scope, tensor);         // the tensor's dtype and shape
//   Output c = ops::Const(scope, 3, DT_INT64);    // a literal in a chosen dtype
#ifndef CONFLUX_CC_CONST_OP_H_
#define CONFLUX_CC_CONST_OP_H_

#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"

namespace cfx::ops {

Output Const(const Scope& scope, const Input& value);
Output Const(const Scope& scope, const Input& value, DataType dtype);

}  // namespace cfx::ops

#endif  // CONFLUX_CC_CONST_OP_H_
