// Assert, Print, CheckNumerics: TensorFlow's debugging ops.
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {

void RegisterDebugOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("Assert")
                       .Input("condition: bool")
                       .Input("data: T")
                       .Attr("T: list(type) >= 1")
                       .Attr("summarize: int = 3")
                       .SetIsStateful(true)
                       // No outputs; the kernel checks that `condition` is a scalar.
                       .SetShapeFn([](InferenceContext&) { return Status(); })
                       .Summary("Fails the step with InvalidArgument listing `data` when "
                                "`condition` is false."));
  r->RegisterOrDie(OpDefBuilder("Print")
                       .Input("input: T")
                       .Input("data: U")
                       .Output("output: T")
                       .Attr("T: type")
                       .Attr("U: list(type) >= 0")
                       .Attr("message: string = ''")
                       .Attr("first_n: int = -1")
                       .Attr("summarize: int = 3")
                       .SetIsStateful(true)
                       .SetShapeFn(UnchangedShape)
                       .Summary("Returns `input` unchanged and writes `message` and summaries of "
                                "`data` to stderr (at most `first_n` times when >= 0)."));
  r->RegisterOrDie(OpDefBuilder("CheckNumerics")
                       .Input("tensor: T")
                       .Output("output: T")
                       .Attr("T: {bfloat16, half, float, double}")
                       .Attr("message: string")
                       .SetIsStateful(true)
                       .SetShapeFn(UnchangedShape)
                       .Summary("Returns `tensor` unchanged; InvalidArgument when it holds a NaN "
                                "or an Inf."));
}

}  // namespace cfx::internal
