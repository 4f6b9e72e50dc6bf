// FuseContractions: TensorFlow's remapper for the CPU. A Conv2D or MatMul followed by BiasAdd,
// and optionally by Relu, Relu6, Elu or LeakyRelu, becomes one `_FusedConv2D` / `_FusedMatMul`
// node (TensorFlow's internal ops and attrs: `fused_ops`, `num_args`, `leakyrelu_alpha`,
// `epsilon`; `TArgs` for the convolution), whose CPU kernel adds the bias and applies the
// activation inside the oneDNN primitive instead of reading and writing the whole output two
// more times. An Add or AddV2 of a float Const that varies only along the contraction's output
// channels ([C] or [1, ..., 1, C], C known from a Const filter) counts as a BiasAdd, as in
// TensorFlow's remapper. A pure function of the graph and of the predicate it is given.
//
// After the contractions, Mul(x, Sigmoid(x)) (swish, as Keras writes it), the Sigmoid read by
// nothing else, becomes TensorFlow's internal `_MklSwish(x)` where the predicate says a CPU runs
// it (the same bits: x times the same sigmoid, rounded once). And GELU as TensorFlow writes it,
// Mul(Mul(0.5, x), Erfc(Mul(Neg(x), 1/sqrt(2)))), after a _FusedMatMul that only adds its bias
// joins it as fused_ops [BiasAdd, GeluExact] (TensorFlow's name; the kernel computes the same
// ops in the same order with the same vectorized erfc); its tanh approximation,
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 Pow(x, 3)))) as tf.nn.gelu(approximate=True) and BERT
// write it, as [BiasAdd, GeluApproximate] (x * x * x for the Pow, within an ulp).
//
// A Dense layer on a rank-3 input (Keras' Tensordot) is MatMul -> Reshape -> BiasAdd (->
// activation): the Reshape moves below the BiasAdd (when its Const shape keeps the MatMul's
// columns as the last dim, which the Const bias spans) and below the activation, under the
// last node's name, so that MatMul, BiasAdd and activation (GELU included) fuse as above.
//
// Before that, a Pad (zeros) of the two spatial dims by a Const, read only by a Conv2D or
// DepthwiseConv2dNative (NHWC, padding VALID or EXPLICIT), becomes that convolution's explicit
// padding (Keras' ZeroPadding2D before a strided convolution), as TensorFlow's oneDNN remapper
// fuses Pad into Conv2D. And, as TensorFlow's constant folding does (FoldMultiplyIntoConv), a float Mul of a
// Conv2D (NHWC), DepthwiseConv2dNative (NHWC) or MatMul by a Const scalar or vector over its
// output channels folds into the contraction's filter when the filter is a Const that only it
// reads: the filter Const's value becomes filter * scale and the contraction takes the Mul's
// name. This applies on any device (it is arithmetic on constants, no predicate). Keras'
// BatchNormalization in inference (x * scale + offset) thus becomes one fused node.
//
// A pattern is fused only when
//   - every intermediate output (the contraction's, the BiasAdd's before an activation) has
//     exactly one consumer, the next node of the pattern, and no control consumer, and no node
//     of the pattern but the last is in `keep` (fetched, fed or targeted nodes);
//   - the nodes agree on dtype `T` and requested device, the convolution is NHWC;
//   - `runs_fused_on_cpu(fused, parts)` says the fused node would run on a CPU (the session's
//     predicate, CpuOnlyPredicate: no other device type could take any of the parts, and a CPU
//     has a kernel for the fused node).
// Then a residual connection: Add(_FusedConv2D with fused_ops [BiasAdd], addend), either order,
// the addend of the convolution's output shape (rank 4, the same known height, width and
// channels, the same batch or both unknown), optionally followed by one of the activations,
// becomes one _FusedConv2D with fused_ops [BiasAdd, Add(, activation)] and num_args 2, as
// TensorFlow's oneDNN remapper writes it; its CPU kernel adds the addend in the primitive.
//
// The fused node takes the last node's name (its consumers are unchanged), the contraction's
// inputs and device and its attrs (internal `_` ones included, so `_filter_const` carries
// over), and every control input of the parts.
#ifndef CONFLUX_CORE_SRC_PASSES_REMAPPER_H_
#define CONFLUX_CORE_SRC_PASSES_REMAPPER_H_

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "conflux/device.h"
#include "conflux/graph_def.h"
#include "conflux/kernel_registry.h"
#include "conflux/op_def.h"
#include "conflux/tensor_shape.h"

namespace cfx {

// Whether `fused`, which replaces `parts` (contraction first), would run on a CPU.
using FusionPredicate =
    std::function<bool(const NodeDef& fused, const std::vector<const NodeDef*>& parts)>;

// The static shape of a tensor of the graph as given to FuseContractions, named as a data input
// names it ("node", "node:1"); nullopt when unknown. The fused nodes keep the names of the
// nodes whose outputs they produce, so these shapes stay true of the remapped graph.
using TensorShapes = std::function<std::optional<PartialTensorShape>(const std::string& tensor)>;

// Folds the scales and fuses the patterns above in `graph`; returns how many scales it folded
// plus how many fused nodes it made. Residual adds are fused only where `shapes` (may be empty:
// none are) proves the addend has the convolution's output shape.
int FuseContractions(GraphDef* graph, const std::set<std::string>& keep,
                     const FusionPredicate& runs_fused_on_cpu, const TensorShapes& shapes = {});

// Static shapes of every tensor of `graph` (from whole-graph shape inference), for
// FuseContractions; a graph that does not build gives no shapes.
TensorShapes InferTensorShapes(const GraphDef& graph, const OpRegistry& ops);

// The session's predicate over `devices` (which, like the registries, must outlive it): true
// when a CPU device that the contraction's requested device matches has a kernel for `fused`
// and no matching device of another type has a kernel for any of the parts.
FusionPredicate CpuOnlyPredicate(const std::vector<Device*>& devices, const OpRegistry& ops,
                                 const KernelRegistry& kernels);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_PASSES_REMAPPER_H_
