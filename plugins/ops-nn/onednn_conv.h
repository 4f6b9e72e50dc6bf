// oneDNN convolution primitives shared by Conv2D and DepthwiseConv2dNative (and their backprops):
// a plain or grouped convolution (filter HWIO, [kh, kw, channels / groups, out_channels]) or a
// grouped one whose groups each see one input channel (depthwise, filter [kh, kw, channels,
// multiplier]).
//
// Each kernel keeps the primitives it built per input geometry (the shapes of one node rarely
// change), so a training step pays only for execution. Activations stay in TensorFlow's NHWC
// layout, which oneDNN's direct convolutions read and write natively; the filter (small) is
// reordered to and from the layout oneDNN prefers. Every primitive gets its own scratchpad
// (oneDNN's default shares one library scratchpad between primitives, which breaks when two
// convolutions run at once on different inter-op threads); executions of one cached primitive are
// serialized by its `mu`, different nodes run concurrently.
#ifndef CONFLUX_PLUGINS_OPS_NN_ONEDNN_CONV_H_
#define CONFLUX_PLUGINS_OPS_NN_ONEDNN_CONV_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "conflux/sdk/fused_ops.h"
#include "conflux/sdk/window_geometry.h"
#include "nn_ops.h"

namespace cfx::nn {

const dnnl::engine& ConvEngine();

// How the filter is laid out: Conv2D's HWIO (g.c / g.groups inputs, g.o outputs) or a depthwise
// filter [kh, kw, g.c, g.o / g.c] (one group per input channel).
enum class ConvKind { kPlain, kDepthwise };

enum class ConvPass { kForward, kBackwardData, kBackwardWeights };

// The primitives of one geometry; only those of the pass it was built for are set.
struct ConvPrimitives {
  std::mutex mu;
  std::vector<uint8_t> scratch;  // the user scratchpad of the primitive of this pass
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
  dnnl::convolution_backward_weights bwd_weights;
  // A constant filter (the node's `_filter_const`) in the forward primitive's layout, made on the
  // first step from the buffer at `filter_source` and reused while the input is that buffer.
  dnnl::memory const_filter;
  const void* filter_source = nullptr;
};

// A convolution node's kernel of one kind and pass: its attrs and its cache of primitives per
// geometry. `g.o` is the number of output channels (channels * multiplier when depthwise).
// The forward pass with the attr `_filter_const` (set by the runtime when the filter comes from a
// Const, core/src/passes/const_filter.h) keeps the filter's reordered copy across steps, as
// TensorFlow's oneDNN kernels do with is_filter_const: for a frozen model's weights the reorder
// (every weight read and written) is otherwise paid at every step.
// A forward pass with an epilogue (_FusedConv2D) adds its third input, the bias, in the
// primitive and applies the activation as a oneDNN eltwise post-op, while the output is still
// in cache, instead of two more passes over it. With an addend (fused_ops "BiasAdd", "Add": a
// residual connection's shortcut, the fourth input) of the output's shape, the output starts as
// the addend (its buffer when no other node reads it) and a oneDNN sum post-op adds the
// convolution before the activation; an addend that broadcasts (dims of 1) is added after the primitive, with the
// activation; one that would widen the output is an error.
class ConvKernelBase {
 public:
  ConvKernelBase(ConvKind kind, ConvPass pass) : kind_(kind), pass_(pass) {}
  sdk::Status Init(const sdk::KernelInit& init);
  // Inputs: forward (input, filter; then the bias, and the addend if any, with an epilogue),
  // backward data (input_sizes, filter, out_backprop), backward weights (input, filter_sizes,
  // out_backprop); one output, fully written. Bad shapes or attrs are InvalidArgument, a oneDNN failure Internal.
  sdk::Status Compute(sdk::KernelContext& ctx);

 protected:
  // Makes the forward pass fused with the epilogue that the node's attrs (fused_ops, num_args,
  // epsilon, leakyrelu_alpha) describe; called by the fused op's Init before any Compute.
  // `allow_add`: the op takes an addend (fused_ops "BiasAdd", "Add", ...).
  sdk::Status InitEpilogue(const sdk::KernelInit& init, bool allow_add = false);

 private:
  sdk::Status Geometry(const sdk::Shape& input, const sdk::Shape& filter,
                       sdk::ConvGeometry* g) const;
  sdk::Status CheckOutBackprop(const sdk::Shape& out_backprop, const sdk::Shape& filter,
                               const sdk::ConvGeometry& g) const;
  // The cached primitives of `g`, with `epilogue` in the forward one; a oneDNN failure becomes
  // an Internal error.
  sdk::Result<ConvPrimitives*> Primitives(
      const sdk::ConvGeometry& g, const std::optional<sdk::FusedEpilogue>& epilogue = std::nullopt);
  // The filter (in the kind's layout) as a oneDNN memory of the layout `want`, reordered into a
  // new buffer when it differs.
  dnnl::memory FilterAs(const sdk::ConvGeometry& g, float* data, const dnnl::memory::desc& want,
                        dnnl::stream& s) const;
  dnnl::memory::desc UserFilterDesc(const sdk::ConvGeometry& g) const;
  // `bias` (g.o values) is read only with an epilogue. With an addend, `out` already holds it
  // (the sum post-op adds the convolution) unless it broadcasts: then it is `add_after`, added
  // with the activation after a primitive that adds the bias alone.
  sdk::Status Forward(const sdk::ConvGeometry& g, const float* input, float* filter,
                      const float* bias, const sdk::Tensor* add_after, float* out);
  sdk::Status BackwardData(const sdk::ConvGeometry& g, const float* filter, const float* grad,
                           float* out);
  sdk::Status BackwardWeights(const sdk::ConvGeometry& g, const float* input, const float* grad,
                              float* out);

  const ConvKind kind_;
  const ConvPass pass_;
  sdk::WindowAttrs attrs_;
  bool filter_const_ = false;
  std::optional<sdk::FusedEpilogue> epilogue_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<ConvPrimitives>> cache_;
};

// The kernel class that a plugin registers for one kind and pass.
template <ConvKind kKind, ConvPass kPass>
class ConvKernel : public ConvKernelBase {
 public:
  ConvKernel() : ConvKernelBase(kKind, kPass) {}
};

}  // namespace cfx::nn

#endif  // CONFLUX_PLUGINS_OPS_NN_ONEDNN_CONV_H_
