// The control-flow primitives of EuroSys 2018 §3: Switch, Merge, Enter, Exit, NextIteration,
// their Ref variants, LoopCond and ControlTrigger. Their evaluation rules (dead tensors, frames,
// iterations) live in the executor; the kernels only move values.
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {

namespace {

// Switch: both outputs have the data's shape; the predicate is a scalar.
Status SwitchShapeFn(InferenceContext& c) {
  if (c.input(1).rank() > 0)
    return c.Error("the predicate must be a scalar, got shape " + c.input(1).ToString());
  c.set_output(0, c.input(0));
  c.set_output(1, c.input(0));
  return Status();
}

// Merge: the inputs' common shape, with dimensions that differ unknown (an input that is not
// known yet, such as the back edge of a loop, makes the result unknown); value_index a scalar.
Status MergeShapeFn(InferenceContext& c) {
  PartialTensorShape out = c.input(0);
  for (int i = 1; i < c.num_inputs() && !out.unknown_rank(); ++i) {
    const PartialTensorShape& in = c.input(i);
    if (in.unknown_rank() || in.rank() != out.rank()) {
      out = PartialTensorShape();
      break;
    }
    std::vector<int64_t> dims = out.dims();
    for (int d = 0; d < out.rank(); ++d)
      if (dims[d] != in.dim(d)) dims[d] = -1;
    out = PartialTensorShape(dims);
  }
  c.set_output(0, out);
  c.set_output(1, PartialTensorShape(std::vector<int64_t>{}));
  return Status();
}

}  // namespace

void RegisterControlFlowOps(OpRegistry* r) {
  for (const bool ref : {false, true}) {
    const std::string t = ref ? "Ref(T)" : "T";
    const std::string p = ref ? "Ref" : "";
    r->RegisterOrDie(OpDefBuilder(p + "Switch")
                         .Input("data: " + t)
                         .Input("pred: bool")
                         .Output("output_false: " + t)
                         .Output("output_true: " + t)
                         .Attr("T: type")
                         .SetAllowsUninitializedInput(ref)
                         .SetShapeFn(SwitchShapeFn)
                         .Summary("Forwards `data` to output_true if `pred`, else to "
                                  "output_false; the other output is dead."));
    r->RegisterOrDie(OpDefBuilder(p + "Merge")
                         .Input(ref ? "inputs: Ref(N * T)" : "inputs: N * T")
                         .Output("output: " + t)
                         .Output("value_index: int32")
                         .Attr("T: type")
                         .Attr("N: int >= 1")
                         .SetShapeFn(MergeShapeFn)
                         .Summary("Forwards the first live input and its index; dead when "
                                  "every input is dead."));
    r->RegisterOrDie(OpDefBuilder(p + "Enter")
                         .Input("data: " + t)
                         .Output("output: " + t)
                         .Attr("T: type")
                         .Attr("frame_name: string")
                         .Attr("is_constant: bool = false")
                         .Attr("parallel_iterations: int = 10")
                         .SetShapeFn(UnchangedShape)
                         .Summary("Makes `data` available in the child frame `frame_name` (to "
                                  "every iteration when is_constant)."));
    r->RegisterOrDie(OpDefBuilder(p + "Exit")
                         .Input("data: " + t)
                         .Output("output: " + t)
                         .Attr("T: type")
                         .SetShapeFn(UnchangedShape)
                         .Summary("Returns `data` from a loop frame to its parent frame."));
    r->RegisterOrDie(OpDefBuilder(p + "NextIteration")
                         .Input("data: " + t)
                         .Output("output: " + t)
                         .Attr("T: type")
                         .SetShapeFn(UnchangedShape)
                         .Summary("Makes `data` available to the next iteration of its loop."));
  }
  r->RegisterOrDie(OpDefBuilder("LoopCond")
                       .Input("input: bool")
                       .Output("output: bool")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape s, c.WithRank(0, 0));
                         c.set_output(0, s);
                         return Status();
                       })
                       .Summary("The loop-termination predicate of a while loop: forwards "
                                "`input`."));
  r->RegisterOrDie(OpDefBuilder("ControlTrigger")
                       .Summary("Does nothing; live even when its control inputs are dead (a "
                                "scheduling point in loops)."));
}

}  // namespace cfx::internal
