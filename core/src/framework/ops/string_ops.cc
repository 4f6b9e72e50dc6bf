// String ops (TensorFlow's string_ops): StringJoin, StringLength, StringLower, StringUpper and
// the regex matchers StaticRegexFullMatch (pattern attr) and RegexFullMatch (pattern input).
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {
namespace {

// TensorFlow's StringJoin shape function: a scalar when every input is one, else the merged
// shapes of the inputs that are not known to be scalars (scalars broadcast).
Status StringJoinShape(InferenceContext& c) {
  bool all_scalars = true;
  for (int i = 0; i < c.num_inputs(); ++i)
    if (c.input(i).rank() != 0) all_scalars = false;
  if (all_scalars) {
    c.set_output(0, PartialTensorShape(std::vector<int64_t>{}));
    return Status();
  }
  PartialTensorShape out = PartialTensorShape::UnknownRank();
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (c.input(i).rank() == 0) continue;
    auto merged = out.Merge(c.input(i));
    if (!merged.ok())
      return c.Error("input " + std::to_string(i) + " has shape " + c.input(i).ToString() +
                     ", which does not match " + out.ToString() + " (only scalars broadcast)");
    out = *merged;
  }
  c.set_output(0, out);
  return Status();
}

}  // namespace

void RegisterStringOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("StringJoin")
                       .Input("inputs: N * string")
                       .Output("output: string")
                       .Attr("N: int >= 0")
                       .Attr("separator: string = ''")
                       .SetShapeFn(StringJoinShape)
                       .Summary("The inputs joined element-wise with `separator` (scalars "
                                "broadcast)."));
  r->RegisterOrDie(OpDefBuilder("StringLength")
                       .Input("input: string")
                       .Output("output: int32")
                       .Attr("unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'")
                       .SetShapeFn(UnchangedShape)
                       .Summary("The length of each string in bytes or UTF-8 characters."));
  r->RegisterOrDie(OpDefBuilder("StringLower")
                       .Input("input: string")
                       .Output("output: string")
                       .Attr("encoding: string = ''")
                       .SetShapeFn(UnchangedShape)
                       .Summary("Each string lower-cased: ASCII only, or all of Unicode with "
                                "encoding 'utf-8'."));
  r->RegisterOrDie(OpDefBuilder("StringUpper")
                       .Input("input: string")
                       .Output("output: string")
                       .Attr("encoding: string = ''")
                       .SetShapeFn(UnchangedShape)
                       .Summary("Each string upper-cased: ASCII only, or all of Unicode with "
                                "encoding 'utf-8'."));
  r->RegisterOrDie(OpDefBuilder("StaticRegexFullMatch")
                       .Input("input: string")
                       .Output("output: bool")
                       .Attr("pattern: string")
                       .SetShapeFn(UnchangedShape)
                       .Summary("Whether each string matches the RE2 `pattern` as a whole."));
  r->RegisterOrDie(OpDefBuilder("RegexFullMatch")
                       .Input("input: string")
                       .Input("pattern: string")
                       .Output("output: bool")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRank(1, 0).status());
                         return UnchangedShape(c);
                       })
                       .Summary("Whether each string matches the RE2 scalar `pattern` as a "
                                "whole."));
}

}  // namespace cfx::internal
