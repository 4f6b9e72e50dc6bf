// MarkConstantFilters: tells convolution kernels which filters never change.
//
// A Conv2D, _FusedConv2D or DepthwiseConv2dNative whose filter input comes from a Const,
// directly or through Identity nodes, gets the internal attr `_filter_const` = true; its CPU
// kernel then keeps the filter's reordered copy across steps instead of reordering every weight
// at every step (TensorFlow's is_filter_const). A frozen model's weights are such Consts. Runs on a
// signature's graph after constant folding (which turns filters computed from constants into
// Consts). A pure function of the graph.
#ifndef CONFLUX_CORE_SRC_PASSES_CONST_FILTER_H_
#define CONFLUX_CORE_SRC_PASSES_CONST_FILTER_H_

#include "conflux/graph_def.h"

namespace cfx {

// Sets `_filter_const` on the convolutions of `graph` whose filter is a Const; returns how many.
int MarkConstantFilters(GraphDef* graph);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_PASSES_CONST_FILTER_H_
