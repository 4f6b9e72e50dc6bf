// ops::Const (see conflux/cc/const_op.h).
#include "conflux/cc/const_op.h"

#include "conflux/cc/op_builder.h"

namespace cfx::ops {

Output Const(const Scope& scope, const Input& value, DataType dtype) {
  if (!scope.ok()) return Output();
  if (value.is_output()) {
    scope.UpdateStatus(errors::InvalidArgument("ops::Const takes a value, not the graph output ",
                                               value.output().name()));
    return Output();
  }
  auto tensor = value.ConstantValue(dtype);
  if (!tensor.ok()) {
    scope.UpdateStatus(tensor.status().WithPrefix("ops::Const: "));
    return Output();
  }
  Operation op = OpBuilder(scope, "Const").Attr("dtype", dtype).Attr("value", *tensor).Finish();
  return op.valid() ? op.output(0) : Output();
}

Output Const(const Scope& scope, const Input& value) {
  if (value.is_output()) return Const(scope, value, DT_INVALID);
  return Const(scope, value, value.natural_type());
}

}  // namespace cfx::ops
