// Summary ops for TensorBoard (ScalarSummary, HistogramSummary, ImageSummary, MergeSummary): each
// outputs a serialized Summary protobuf as a string scalar.
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {

void RegisterSummaryOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("ScalarSummary")
                       .Input("tags: string")
                       .Input("values: T")
                       .Output("summary: string")
                       .Attr("T: realnumbertype")
                       .SetShapeFn(ScalarShape)
                       .Summary("A Summary of scalar values, one per tag."));
  r->RegisterOrDie(OpDefBuilder("HistogramSummary")
                       .Input("tag: string")
                       .Input("values: T")
                       .Output("summary: string")
                       .Attr("T: realnumbertype = DT_FLOAT")
                       .SetShapeFn(ScalarShape)
                       .Summary("A Summary with a histogram of the values."));
  // bad_color's default (opaque red, uint8 [4]) is a tensor, which the spec syntax cannot
  // spell: it is set on the built definition.
  auto image = OpDefBuilder("ImageSummary")
                   .Input("tag: string")
                   .Input("tensor: T")
                   .Output("summary: string")
                   .Attr("max_images: int >= 1 = 3")
                   .Attr("T: {uint8, float, half, double} = DT_FLOAT")
                   .Attr("bad_color: tensor")
                   .SetShapeFn(ScalarShape)
                   .Summary("A Summary with up to max_images PNG images.")
                   .Build();
  CFX_CHECK(image.ok());
  Tensor red(DT_UINT8, TensorShape({4}));
  const uint8_t rgba[4] = {255, 0, 0, 255};
  for (int i = 0; i < 4; ++i) red.at<uint8_t>(i) = rgba[i];
  for (AttrDef& a : image->def.attr)
    if (a.name == "bad_color") a.default_value = AttrValue::TensorValue(red);
  image->registered_by = "core";
  CFX_CHECK(r->Register(*std::move(image)).ok());
  r->RegisterOrDie(OpDefBuilder("MergeSummary")
                       .Input("inputs: N * string")
                       .Output("summary: string")
                       .Attr("N: int >= 1")
                       .SetShapeFn(ScalarShape)
                       .Summary("The union of Summaries (tags must be distinct)."));
}

}  // namespace cfx::internal
