// ConvKernelBase (onednn_conv.h).
#include "onednn_conv.h"

#include <algorithm>
#include <unordered_map>

#include "partial_shapes.h"

namespace cfx::nn {
namespace {

using dnnl::memory;
using sdk::ConvGeometry;
using Tag = memory::format_tag;

// One group: oihw weights; otherwise goihw, with one input channel per group when depthwise.
memory::dims WeightDims(const ConvGeometry& g, ConvKind kind) {
  if (kind == ConvKind::kDepthwise) return {g.c, g.o / g.c, 1, g.h.kernel, g.w.kernel};
  if (g.groups == 1) return {g.o, g.c, g.h.kernel, g.w.kernel};
  return {g.groups, g.o / g.groups, g.c / g.groups, g.h.kernel, g.w.kernel};
}

// The filter's shape as the op takes it.
sdk::Shape FilterShape(const ConvGeometry& g, ConvKind kind) {
  if (kind == ConvKind::kPlain) return g.filter();
  return {g.h.kernel, g.w.kernel, g.c, g.o / g.c};
}

// The activation of a fused epilogue as a oneDNN eltwise post-op (scale 1); none for kNone.
void AppendActivation(const sdk::FusedEpilogue& e, dnnl::post_ops* ops) {
  using sdk::FusedActivation;
  switch (e.activation) {
    case FusedActivation::kNone:
      return;
    case FusedActivation::kRelu:
      return ops->append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    case FusedActivation::kRelu6:
      return ops->append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, 0.0f, 6.0f);
    case FusedActivation::kElu:
      return ops->append_eltwise(1.0f, dnnl::algorithm::eltwise_elu, 1.0f, 0.0f);
    case FusedActivation::kLeakyRelu:
      return ops->append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, e.leakyrelu_alpha, 0.0f);
    case FusedActivation::kGeluExact:  // not a convolution's epilogue (ReadFusedEpilogue)
    case FusedActivation::kGeluApproximate:
      return;
  }
}

// Whether `addend` broadcasts into `out` (both rank 4) without widening it.
bool AddendFits(const sdk::Shape& addend, const sdk::Shape& out) {
  if (addend.size() != out.size()) return false;
  for (size_t i = 0; i < out.size(); ++i)
    if (addend[i] != out[i] && addend[i] != 1) return false;
  return true;
}

// out = activation(out + addend), the addend broadcast along its dims of 1: the epilogue's last
// steps for an addend that oneDNN does not add in the primitive (one of another shape). With
// `bias`, out = activation(bias + addend) (nothing to convolve), which reads each element of an
// addend that `out` aliases before writing it.
void AddAndActivate(const sdk::FusedEpilogue& e, const sdk::Tensor& addend,
                    const sdk::Shape& out_shape, const float* bias, float* out) {
  const sdk::Shape& a = addend.shape();
  const float* add = addend.data<float>();
  int64_t i = 0;
  for (int64_t n = 0; n < out_shape[0]; ++n)
    for (int64_t h = 0; h < out_shape[1]; ++h)
      for (int64_t w = 0; w < out_shape[2]; ++w)
        for (int64_t c = 0; c < out_shape[3]; ++c, ++i) {
          const int64_t j = (((a[0] == 1 ? 0 : n) * a[1] + (a[1] == 1 ? 0 : h)) * a[2] +
                             (a[2] == 1 ? 0 : w)) * a[3] + (a[3] == 1 ? 0 : c);
          out[i] = sdk::ApplyFusedActivation(e, (bias != nullptr ? bias[c] : out[i]) + add[j]);
        }
}

// `epilogue` (forward only): a bias argument, the addend as a sum post-op (the destination holds
// it before the primitive runs) when the epilogue has one, and the activation as a post-op, for
// inference.
std::unique_ptr<ConvPrimitives> BuildPrimitives(const ConvGeometry& g, ConvKind kind, ConvPass pass,
                                                const std::optional<sdk::FusedEpilogue>& epilogue) {
  auto p = std::make_unique<ConvPrimitives>();
  const memory::dims src = {g.n, g.c, g.h.in, g.w.in}, dst = {g.n, g.o, g.h.out, g.w.out};
  const memory::dims strides = {g.h.stride, g.w.stride};
  const memory::dims dilates = {g.h.dilation - 1, g.w.dilation - 1};
  const memory::dims pad_l = {g.h.pad_before, g.w.pad_before};
  const memory::dims pad_r = {g.h.pad_after, g.w.pad_after};
  const auto f32 = memory::data_type::f32;
  memory::desc src_md(src, f32, Tag::nhwc), dst_md(dst, f32, Tag::nhwc),
      wei_any(WeightDims(g, kind), f32, Tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (epilogue) {
    dnnl::primitive_attr fused_attr = attr;
    dnnl::post_ops ops;
    if (epilogue->add) ops.append_sum(1.0f);
    AppendActivation(*epilogue, &ops);
    fused_attr.set_post_ops(ops);
    memory::desc bias_md({g.o}, f32, Tag::a);
    dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_direct, src_md, wei_any,
                                       bias_md, dst_md, strides, dilates, pad_l, pad_r);
    p->fwd_pd = dnnl::convolution_forward::primitive_desc(fd, fused_attr, ConvEngine());
    p->fwd = dnnl::convolution_forward(p->fwd_pd);
    p->scratch.resize(p->fwd_pd.scratchpad_desc().get_size());
    return p;
  }
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training,
                                     dnnl::algorithm::convolution_direct, src_md, wei_any, dst_md,
                                     strides, dilates, pad_l, pad_r);
  p->fwd_pd = dnnl::convolution_forward::primitive_desc(fd, attr, ConvEngine());
  size_t scratch = p->fwd_pd.scratchpad_desc().get_size();
  if (pass == ConvPass::kForward) p->fwd = dnnl::convolution_forward(p->fwd_pd);
  if (pass == ConvPass::kBackwardData) {
    dnnl::convolution_backward_data::desc bd(dnnl::algorithm::convolution_direct, src_md, wei_any,
                                             dst_md, strides, dilates, pad_l, pad_r);
    p->bwd_data_pd =
        dnnl::convolution_backward_data::primitive_desc(bd, attr, ConvEngine(), p->fwd_pd);
    scratch = p->bwd_data_pd.scratchpad_desc().get_size();
    p->bwd_data = dnnl::convolution_backward_data(p->bwd_data_pd);
  }
  if (pass == ConvPass::kBackwardWeights) {
    dnnl::convolution_backward_weights::desc wd(dnnl::algorithm::convolution_direct, src_md,
                                                wei_any, dst_md, strides, dilates, pad_l, pad_r);
    p->bwd_weights_pd =
        dnnl::convolution_backward_weights::primitive_desc(wd, attr, ConvEngine(), p->fwd_pd);
    scratch = p->bwd_weights_pd.scratchpad_desc().get_size();
    p->bwd_weights = dnnl::convolution_backward_weights(p->bwd_weights_pd);
  }
  p->scratch.resize(scratch);
  return p;
}

// A reorder with its own scratchpad (see the file comment of onednn_conv.h), executed now.
void Reorder(const memory& from, const memory& to, dnnl::stream& s) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(from, to, attr);
  memory scratch(pd.scratchpad_desc(), ConvEngine());
  dnnl::reorder(pd).execute(
      s, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratch}});
}

memory Scratchpad(ConvPrimitives* p, const memory::desc& d) {
  return memory(d, ConvEngine(), p->scratch.data());
}

sdk::Status RunOrError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    return sdk::Internal("oneDNN convolution failed: ", e.what());
  }
  return sdk::Status();
}

}  // namespace

const dnnl::engine& ConvEngine() {
  static const dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

sdk::Status ConvKernelBase::Init(const sdk::KernelInit& init) {
  CFX_SDK_RETURN_IF_ERROR(sdk::ReadWindowAttrs(init.attrs(), /*conv=*/true, &attrs_));
  return init.attrs().GetOr("_filter_const", &filter_const_, false);
}

sdk::Status ConvKernelBase::InitEpilogue(const sdk::KernelInit& init, bool allow_add) {
  CFX_SDK_ASSIGN_OR_RETURN(sdk::FusedEpilogue epilogue,
                           sdk::ReadFusedEpilogue(init.attrs(), {.add = allow_add}));
  epilogue_ = epilogue;
  return sdk::Status();
}

sdk::Status ConvKernelBase::Geometry(const sdk::Shape& input, const sdk::Shape& filter,
                                     ConvGeometry* g) const {
  if (kind_ == ConvKind::kPlain) return sdk::MakeConvGeometry(attrs_, input, filter, g);
  if (filter.size() != 4)
    return sdk::InvalidArgument(
        "filter must have rank 4 ([height, width, in_channels, channel_multiplier]), got shape ",
        shape_rules::ShapeStr(filter));
  if (input.size() == 4 && input[3] != filter[2])
    return sdk::InvalidArgument("input has ", input[3], " channels (shape ",
                                shape_rules::ShapeStr(input), ") but the filter expects ",
                                filter[2], " (shape ", shape_rules::ShapeStr(filter), ")");
  CFX_SDK_RETURN_IF_ERROR(sdk::MakeConvGeometry(attrs_, input, filter, g));
  if (__builtin_mul_overflow(g->c, filter[3], &g->o))
    return sdk::InvalidArgument("in_channels ", g->c, " times channel_multiplier ", filter[3],
                                " does not fit int64");
  return sdk::Status();
}

sdk::Status ConvKernelBase::CheckOutBackprop(const sdk::Shape& out_backprop,
                                             const sdk::Shape& filter,
                                             const ConvGeometry& g) const {
  if (out_backprop == g.output()) return sdk::Status();
  return sdk::InvalidArgument("out_backprop has shape ", shape_rules::ShapeStr(out_backprop),
                              " but the ", kind_ == ConvKind::kPlain ? "" : "depthwise ",
                              "convolution of ", shape_rules::ShapeStr(g.input()), " by ",
                              shape_rules::ShapeStr(filter), " gives ",
                              shape_rules::ShapeStr(g.output()));
}

sdk::Status ConvKernelBase::Compute(sdk::KernelContext& ctx) {
  // The tensors of the three passes: x (or input_sizes), the filter (or filter_sizes), dy.
  sdk::Tensor first = ctx.input(0), second = ctx.input(1);
  sdk::Shape input_shape = first.shape(), filter_shape = second.shape();
  if (pass_ == ConvPass::kBackwardData)
    CFX_SDK_RETURN_IF_ERROR(sdk::ConvSizesFromTensor(first, "input_sizes", &input_shape));
  if (pass_ == ConvPass::kBackwardWeights)
    CFX_SDK_RETURN_IF_ERROR(sdk::ConvSizesFromTensor(second, "filter_sizes", &filter_shape));
  ConvGeometry g;
  CFX_SDK_RETURN_IF_ERROR(Geometry(input_shape, filter_shape, &g));
  sdk::Tensor grad, bias, addend;
  if (epilogue_) {
    bias = ctx.input(2);
    if (bias.dtype() != CFX_FLOAT || bias.shape() != sdk::Shape{g.o})
      return sdk::InvalidArgument("the bias (args[0]) must be a float vector of the ", g.o,
                                  " output channels, got shape ",
                                  shape_rules::ShapeStr(bias.shape()));
  }
  if (epilogue_ && epilogue_->add) {
    if (ctx.num_inputs() < 4)
      return sdk::InvalidArgument("fused_ops with Add take two args (the bias, the addend), the ",
                                  "node has ", ctx.num_inputs() - 2, " (TArgs)");
    addend = ctx.input(3);
    if (addend.dtype() != CFX_FLOAT || !AddendFits(addend.shape(), g.output()))
      return sdk::InvalidArgument(
          "the addend (args[1]) must be a float tensor of the output's shape ",
          shape_rules::ShapeStr(g.output()), " (or broadcast to it by dims of 1), got shape ",
          shape_rules::ShapeStr(addend.shape()));
  }
  if (pass_ != ConvPass::kForward) {
    grad = ctx.input(2);
    CFX_SDK_RETURN_IF_ERROR(CheckOutBackprop(grad.shape(), filter_shape, g));
  }
  const sdk::Shape out_shape = pass_ == ConvPass::kForward        ? g.output()
                               : pass_ == ConvPass::kBackwardData ? input_shape
                                                                  : filter_shape;
  // An addend of the output's shape is summed in place: the output starts as the addend (its
  // buffer, when nothing else reads it; else a copy) and oneDNN adds the convolution to it.
  const bool sum_in_place = epilogue_ && epilogue_->add && addend.shape() == out_shape;
  sdk::Tensor out;
  if (sum_in_place) {
    CFX_SDK_ASSIGN_OR_RETURN(out, ctx.ForwardOrAllocateOutput({3}, 0, out_shape));
    if (out.data<float>() != addend.data<float>())
      std::copy_n(addend.data<float>(), addend.num_elements(), out.data<float>());
  } else {
    CFX_SDK_ASSIGN_OR_RETURN(out, ctx.AllocateOutput(0, out_shape));
  }
  if (out.num_elements() == 0) return sdk::Status();
  // An empty operand of the sum (a zero-sized input, filter or out_backprop) gives zeros.
  const bool empty =
      pass_ == ConvPass::kForward
          ? first.num_elements() == 0 || second.num_elements() == 0
          : grad.num_elements() == 0 ||
                (pass_ == ConvPass::kBackwardData ? second : first).num_elements() == 0;
  if (empty && epilogue_ && epilogue_->add) {
    AddAndActivate(*epilogue_, addend, out_shape, bias.data<float>(), out.data<float>());
    return sdk::Status();
  }
  if (empty && epilogue_) {
    sdk::FillWithActivatedBias(*epilogue_, bias.data<float>(), g.o, out.num_elements() / g.o,
                               out.data<float>());
    return sdk::Status();
  }
  if (empty) {
    std::fill_n(out.data<float>(), out.num_elements(), 0.0f);
    return sdk::Status();
  }
  switch (pass_) {
    case ConvPass::kForward:
      return Forward(g, first.data<float>(), second.data<float>(),
                     epilogue_ ? bias.data<float>() : nullptr,
                     epilogue_ && epilogue_->add && !sum_in_place ? &addend : nullptr,
                     out.data<float>());
    case ConvPass::kBackwardData:
      return BackwardData(g, second.data<float>(), grad.data<float>(), out.data<float>());
    case ConvPass::kBackwardWeights:
      break;
  }
  return BackwardWeights(g, first.data<float>(), grad.data<float>(), out.data<float>());
}

sdk::Result<ConvPrimitives*> ConvKernelBase::Primitives(
    const ConvGeometry& g, const std::optional<sdk::FusedEpilogue>& epilogue) {
  std::vector<int64_t> key = g.Key();
  // The fused forward pass has two primitives per geometry: with the whole epilogue, and with
  // the bias alone (an addend that oneDNN does not add, see Forward).
  if (epilogue) key.push_back(epilogue->add || epilogue->activation != sdk::FusedActivation::kNone);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second.get();
  try {
    auto p = BuildPrimitives(g, kind_, pass_, epilogue);
    ConvPrimitives* raw = p.get();
    cache_.emplace(std::move(key), std::move(p));
    return raw;
  } catch (const dnnl::error& e) {
    return sdk::Internal("oneDNN cannot build a convolution for input ",
                         shape_rules::ShapeStr(g.input()), " and filter ",
                         shape_rules::ShapeStr(FilterShape(g, kind_)), ": ", e.what());
  }
}

memory::desc ConvKernelBase::UserFilterDesc(const ConvGeometry& g) const {
  // A depthwise filter [kh, kw, c, m] is goihw [c, m, 1, kh, kw] stored h, w, i, g, o; so is a
  // grouped one, [kh, kw, c / groups, o] as [groups, o / groups, c / groups, kh, kw].
  if (kind_ == ConvKind::kDepthwise || g.groups != 1)
    return memory::desc(WeightDims(g, kind_), memory::data_type::f32, Tag::hwigo);
  return memory::desc(WeightDims(g, kind_), memory::data_type::f32, Tag::hwio);
}

memory ConvKernelBase::FilterAs(const ConvGeometry& g, float* data, const memory::desc& want,
                                dnnl::stream& s) const {
  memory user(UserFilterDesc(g), ConvEngine(), data);
  if (want == user.get_desc()) return user;
  memory m(want, ConvEngine());
  Reorder(user, m, s);
  return m;
}

sdk::Status ConvKernelBase::Forward(const ConvGeometry& g, const float* input, float* filter,
                                    const float* bias, const sdk::Tensor* add_after, float* out) {
  std::optional<sdk::FusedEpilogue> in_primitive = epilogue_;
  if (add_after != nullptr) in_primitive = sdk::FusedEpilogue();
  CFX_SDK_ASSIGN_OR_RETURN(ConvPrimitives * p, Primitives(g, in_primitive));
  const sdk::Status run = RunOrError([&] {
    std::lock_guard<std::mutex> lock(p->mu);
    dnnl::stream s(ConvEngine());
    memory src(p->fwd_pd.src_desc(), ConvEngine(), const_cast<float*>(input));
    memory dst(p->fwd_pd.dst_desc(), ConvEngine(), out);
    memory wei;
    if (filter_const_ && p->filter_source == filter) {
      wei = p->const_filter;
    } else {
      wei = FilterAs(g, filter, p->fwd_pd.weights_desc(), s);
      if (filter_const_) {
        p->const_filter = wei;
        p->filter_source = filter;
      }
    }
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src},
        {DNNL_ARG_WEIGHTS, wei},
        {DNNL_ARG_DST, dst},
        {DNNL_ARG_SCRATCHPAD, Scratchpad(p, p->fwd_pd.scratchpad_desc())}};
    if (epilogue_)
      args[DNNL_ARG_BIAS] = memory(p->fwd_pd.bias_desc(), ConvEngine(), const_cast<float*>(bias));
    p->fwd.execute(s, args);
    s.wait();
  });
  if (!run.ok()) return run;
  if (add_after != nullptr) AddAndActivate(*epilogue_, *add_after, g.output(), nullptr, out);
  return sdk::Status();
}

sdk::Status ConvKernelBase::BackwardData(const ConvGeometry& g, const float* filter,
                                         const float* grad, float* out) {
  CFX_SDK_ASSIGN_OR_RETURN(ConvPrimitives * p, Primitives(g));
  return RunOrError([&] {
    std::lock_guard<std::mutex> lock(p->mu);
    dnnl::stream s(ConvEngine());
    memory dsrc(p->bwd_data_pd.diff_src_desc(), ConvEngine(), out);
    memory ddst(p->bwd_data_pd.diff_dst_desc(), ConvEngine(), const_cast<float*>(grad));
    memory wei = FilterAs(g, const_cast<float*>(filter), p->bwd_data_pd.weights_desc(), s);
    p->bwd_data.execute(s,
                        {{DNNL_ARG_DIFF_SRC, dsrc},
                         {DNNL_ARG_WEIGHTS, wei},
                         {DNNL_ARG_DIFF_DST, ddst},
                         {DNNL_ARG_SCRATCHPAD, Scratchpad(p, p->bwd_data_pd.scratchpad_desc())}});
    s.wait();
  });
}

sdk::Status ConvKernelBase::BackwardWeights(const ConvGeometry& g, const float* input,
                                            const float* grad, float* out) {
  CFX_SDK_ASSIGN_OR_RETURN(ConvPrimitives * p, Primitives(g));
  return RunOrError([&] {
    std::lock_guard<std::mutex> lock(p->mu);
    dnnl::stream s(ConvEngine());
    memory src(p->bwd_weights_pd.src_desc(), ConvEngine(), const_cast<float*>(input));
    memory ddst(p->bwd_weights_pd.diff_dst_desc(), ConvEngine(), const_cast<float*>(grad));
    memory user(UserFilterDesc(g), ConvEngine(), out);
    const memory::desc want = p->bwd_weights_pd.diff_weights_desc();
    memory dwei = want == user.get_desc() ? user : memory(want, ConvEngine());
    p->bwd_weights.execute(
        s, {{DNNL_ARG_SRC, src},
            {DNNL_ARG_DIFF_DST, ddst},
            {DNNL_ARG_DIFF_WEIGHTS, dwei},
            {DNNL_ARG_SCRATCHPAD, Scratchpad(p, p->bwd_weights_pd.scratchpad_desc())}});
    if (!(want == user.get_desc())) Reorder(dwei, user, s);
    s.wait();
  });
}

}  // namespace cfx::nn
