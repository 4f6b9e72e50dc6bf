// Const, Identity, IdentityN, EnsureShape, NoOp, Placeholder.
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {

void RegisterCoreOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("Const")
                       .Output("output: dtype")
                       .Attr("value: tensor")
                       .Attr("dtype: type")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_ASSIGN_OR_RETURN(const AttrValue* v, c.GetAttr("value"));
                         DataType dtype;
                         CFX_RETURN_IF_ERROR(c.GetAttr("dtype", &dtype));
                         if (v->kind != AttrValue::Kind::kTensor)
                           return c.Error("attr 'value' must be a tensor");
                         if (v->tensor.dtype() != dtype)
                           return c.Error("attr 'value' has dtype " +
                                          DataTypeString(v->tensor.dtype()) + " but 'dtype' is " +
                                          DataTypeString(dtype));
                         c.set_output(0, v->tensor.shape());
                         return Status();
                       })
                       .Summary("A constant tensor."));
  r->RegisterOrDie(OpDefBuilder("Identity")
                       .Input("input: T")
                       .Output("output: T")
                       .Attr("T: type")
                       .SetShapeFn(UnchangedShape)
                       .Summary("Returns its input unchanged (no copy)."));
  r->RegisterOrDie(OpDefBuilder("IdentityN")
                       .Input("input: T")
                       .Output("output: T")
                       .Attr("T: list(type) >= 1")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(i));
                         return Status();
                       })
                       .Summary("Returns its inputs unchanged (no copy)."));
  r->RegisterOrDie(OpDefBuilder("EnsureShape")
                       .Input("input: T")
                       .Output("output: T")
                       .Attr("shape: shape")
                       .Attr("T: type")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         PartialTensorShape shape;
                         CFX_RETURN_IF_ERROR(c.GetAttr("shape", &shape));
                         StatusOr<PartialTensorShape> merged = c.input(0).Merge(shape);
                         if (!merged.ok())
                           return c.Error(StrCat("input shape ", c.input(0).ToString(),
                                                 " is not compatible with the expected shape ",
                                                 shape.ToString()));
                         c.set_output(0, *merged);
                         return Status();
                       })
                       .Summary("Returns its input; an error when its shape does not fit "
                                "`shape`."));
  r->RegisterOrDie(OpDefBuilder("NoOp").Summary("Does nothing; used for control dependencies."));
  r->RegisterOrDie(OpDefBuilder("Placeholder")
                       .Output("output: dtype")
                       .Attr("dtype: type")
                       .Attr("shape: shape = { unknown_rank: true }")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         PartialTensorShape s;
                         CFX_RETURN_IF_ERROR(c.GetAttr("shape", &s));
                         c.set_output(0, s);
                         return Status();
                       })
                       .Summary("A value that must be fed when the graph runs."));
}

}  // namespace cfx::internal
