// Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (NHWC, filters HWIO), with TensorFlow's
// op definitions, on oneDNN convolution primitives.
//
// Each kernel keeps the primitives it built per input geometry (the shapes of one node rarely
// change), so a training step pays only for execution. Activations stay in TensorFlow's NHWC
// layout, which oneDNN's direct convolutions read and write natively; the filter (small) is
// reordered to and from the blocked layout oneDNN prefers. Every primitive gets its own
// scratchpad (oneDNN's default shares one library scratchpad between primitives, which breaks
// when two convolutions run at once on different inter-op threads); executions of one cached
// primitive are serialized, different nodes run concurrently.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "nn_ops.h"
#include "partial_shapes.h"
#include "conflux/sdk/window_geometry.h"

namespace cfx::nn {
namespace {

using sdk::ComputeWindows;
using sdk::ConvGeometry;
using sdk::ConvSizesFromTensor;
using sdk::MakeConvGeometry;
using sdk::ReadWindowAttrs;
using sdk::WindowAttrs;
using sdk::WindowDim;

using shape_rules::ShapeStr;
using dnnl::memory;
using Tag = memory::format_tag;

const dnnl::engine& Engine() {
  static const dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

// The primitives of one geometry.
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
  memory const_filter;
  const void* filter_source = nullptr;
};

enum class Pass { kForward, kBackwardData, kBackwardWeights };

std::unique_ptr<ConvPrimitives> BuildPrimitives(const ConvGeometry& g, Pass pass) {
  auto p = std::make_unique<ConvPrimitives>();
  const memory::dims src = {g.n, g.c, g.h.in, g.w.in}, wei = {g.o, g.c, g.h.kernel, g.w.kernel},
                     dst = {g.n, g.o, g.h.out, g.w.out};
  const memory::dims strides = {g.h.stride, g.w.stride};
  const memory::dims dilates = {g.h.dilation - 1, g.w.dilation - 1};
  const memory::dims pad_l = {g.h.pad_before, g.w.pad_before};
  const memory::dims pad_r = {g.h.pad_after, g.w.pad_after};
  const auto f32 = memory::data_type::f32;
  memory::desc src_md(src, f32, Tag::nhwc), dst_md(dst, f32, Tag::nhwc),
      wei_any(wei, f32, Tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training,
                                     dnnl::algorithm::convolution_direct, src_md, wei_any, dst_md,
                                     strides, dilates, pad_l, pad_r);
  p->fwd_pd = dnnl::convolution_forward::primitive_desc(fd, attr, Engine());
  size_t scratch = p->fwd_pd.scratchpad_desc().get_size();
  if (pass == Pass::kForward) p->fwd = dnnl::convolution_forward(p->fwd_pd);
  if (pass == Pass::kBackwardData) {
    dnnl::convolution_backward_data::desc bd(dnnl::algorithm::convolution_direct, src_md,
                                             wei_any, dst_md, strides, dilates, pad_l, pad_r);
    p->bwd_data_pd =
        dnnl::convolution_backward_data::primitive_desc(bd, attr, Engine(), p->fwd_pd);
    scratch = p->bwd_data_pd.scratchpad_desc().get_size();
    p->bwd_data = dnnl::convolution_backward_data(p->bwd_data_pd);
  }
  if (pass == Pass::kBackwardWeights) {
    dnnl::convolution_backward_weights::desc wd(dnnl::algorithm::convolution_direct, src_md,
                                                wei_any, dst_md, strides, dilates, pad_l, pad_r);
    p->bwd_weights_pd =
        dnnl::convolution_backward_weights::primitive_desc(wd, attr, Engine(), p->fwd_pd);
    scratch = p->bwd_weights_pd.scratchpad_desc().get_size();
    p->bwd_weights = dnnl::convolution_backward_weights(p->bwd_weights_pd);
  }
  p->scratch.resize(scratch);
  return p;
}

// The filter tensor (HWIO) as a oneDNN memory of the layout `want`, reordered when it differs.
// A reorder with its own scratchpad (see the file comment), executed now.
void Reorder(const memory& from, const memory& to, dnnl::stream& s) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(from, to, attr);
  memory scratch(pd.scratchpad_desc(), Engine());
  dnnl::reorder(pd).execute(s, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to},
                               {DNNL_ARG_SCRATCHPAD, scratch}});
}

memory FilterAs(const ConvGeometry& g, float* data, const memory::desc& want, dnnl::stream& s) {
  memory user({{g.o, g.c, g.h.kernel, g.w.kernel}, memory::data_type::f32, Tag::hwio}, Engine(),
              data);
  if (want == user.get_desc()) return user;
  memory m(want, Engine());
  Reorder(user, m, s);
  return m;
}

memory Scratchpad(ConvPrimitives* p, const memory::desc& d) {
  return memory(d, Engine(), p->scratch.data());
}

// One convolution node's kernel: its attrs and its cache of primitives per geometry.
class ConvKernelBase {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    return ReadWindowAttrs(init.attrs(), /*conv=*/true, &attrs_);
  }

 protected:
  // The cached primitives of `g` for `pass`; a oneDNN failure becomes an error.
  sdk::Result<ConvPrimitives*> Primitives(const ConvGeometry& g, Pass pass) {
    std::vector<int64_t> key = g.Key();
    key.push_back(static_cast<int64_t>(pass));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second.get();
    try {
      auto p = BuildPrimitives(g, pass);
      ConvPrimitives* raw = p.get();
      cache_.emplace(std::move(key), std::move(p));
      return raw;
    } catch (const dnnl::error& e) {
      return sdk::Internal("oneDNN cannot build a convolution for input ", ShapeStr(g.input()),
                           " and filter ", ShapeStr(g.filter()), ": ", e.what());
    }
  }

  WindowAttrs attrs_;

 private:
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<ConvPrimitives>> cache_;
};

sdk::Status RunOrError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    return sdk::Internal("oneDNN convolution failed: ", e.what());
  }
  return sdk::Status();
}

// Conv2D. With the attr `_filter_const` (set by the runtime when the filter comes from a Const,
// core/src/passes/const_filter.h) the filter's reordered copy is kept across steps, as
// TensorFlow's oneDNN kernels do with is_filter_const: for a frozen model's weights the reorder
// (every weight read and written) is otherwise paid at every step.
class Conv2DKernel : public ConvKernelBase {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(ConvKernelBase::Init(init));
    return init.attrs().GetOr("_filter_const", &filter_const_, false);
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor input = ctx.input(0), filter = ctx.input(1);
    ConvGeometry g;
    CFX_SDK_RETURN_IF_ERROR(MakeConvGeometry(attrs_, input.shape(), filter.shape(), &g));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, g.output()));
    if (out.num_elements() == 0) return sdk::Status();
    if (input.num_elements() == 0 || filter.num_elements() == 0) {
      std::fill_n(out.data<float>(), out.num_elements(), 0.0f);
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(ConvPrimitives * p, Primitives(g, Pass::kForward));
    return RunOrError([&] {
      std::lock_guard<std::mutex> lock(p->mu);
      dnnl::stream s(Engine());
      memory src(p->fwd_pd.src_desc(), Engine(), const_cast<float*>(input.data<float>()));
      memory dst(p->fwd_pd.dst_desc(), Engine(), out.data<float>());
      float* filter_data = filter.data<float>();
      memory wei;
      if (filter_const_ && p->filter_source == filter_data) {
        wei = p->const_filter;
      } else {
        wei = FilterAs(g, filter_data, p->fwd_pd.weights_desc(), s);
        if (filter_const_) {
          p->const_filter = wei;
          p->filter_source = filter_data;
        }
      }
      p->fwd.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst},
                         {DNNL_ARG_SCRATCHPAD, Scratchpad(p, p->fwd_pd.scratchpad_desc())}});
      s.wait();
    });
  }

 private:
  bool filter_const_ = false;
};

class Conv2DBackpropInputKernel : public ConvKernelBase {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor sizes = ctx.input(0), filter = ctx.input(1), grad = ctx.input(2);
    sdk::Shape input_shape;
    CFX_SDK_RETURN_IF_ERROR(ConvSizesFromTensor(sizes, "input_sizes", &input_shape));
    ConvGeometry g;
    CFX_SDK_RETURN_IF_ERROR(MakeConvGeometry(attrs_, input_shape, filter.shape(), &g));
    CFX_SDK_RETURN_IF_ERROR(sdk::CheckOutBackprop(grad.shape(), g));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, input_shape));
    if (out.num_elements() == 0) return sdk::Status();
    if (grad.num_elements() == 0 || filter.num_elements() == 0) {
      std::fill_n(out.data<float>(), out.num_elements(), 0.0f);
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(ConvPrimitives * p, Primitives(g, Pass::kBackwardData));
    return RunOrError([&] {
      std::lock_guard<std::mutex> lock(p->mu);
      dnnl::stream s(Engine());
      memory dsrc(p->bwd_data_pd.diff_src_desc(), Engine(), out.data<float>());
      memory ddst(p->bwd_data_pd.diff_dst_desc(), Engine(), const_cast<float*>(grad.data<float>()));
      memory wei = FilterAs(g, const_cast<float*>(filter.data<float>()),
                            p->bwd_data_pd.weights_desc(), s);
      p->bwd_data.execute(
          s, {{DNNL_ARG_DIFF_SRC, dsrc}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_DST, ddst},
              {DNNL_ARG_SCRATCHPAD, Scratchpad(p, p->bwd_data_pd.scratchpad_desc())}});
      s.wait();
    });
  }
};

class Conv2DBackpropFilterKernel : public ConvKernelBase {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    sdk::Tensor input = ctx.input(0), sizes = ctx.input(1), grad = ctx.input(2);
    sdk::Shape filter_shape;
    CFX_SDK_RETURN_IF_ERROR(ConvSizesFromTensor(sizes, "filter_sizes", &filter_shape));
    ConvGeometry g;
    CFX_SDK_RETURN_IF_ERROR(MakeConvGeometry(attrs_, input.shape(), filter_shape, &g));
    CFX_SDK_RETURN_IF_ERROR(sdk::CheckOutBackprop(grad.shape(), g));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, filter_shape));
    if (out.num_elements() == 0) return sdk::Status();
    if (grad.num_elements() == 0 || input.num_elements() == 0) {
      std::fill_n(out.data<float>(), out.num_elements(), 0.0f);
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(ConvPrimitives * p, Primitives(g, Pass::kBackwardWeights));
    return RunOrError([&] {
      std::lock_guard<std::mutex> lock(p->mu);
      dnnl::stream s(Engine());
      memory src(p->bwd_weights_pd.src_desc(), Engine(), const_cast<float*>(input.data<float>()));
      memory ddst(p->bwd_weights_pd.diff_dst_desc(), Engine(),
                  const_cast<float*>(grad.data<float>()));
      memory user({{g.o, g.c, g.h.kernel, g.w.kernel}, memory::data_type::f32, Tag::hwio},
                  Engine(), out.data<float>());
      const memory::desc want = p->bwd_weights_pd.diff_weights_desc();
      memory dwei = want == user.get_desc() ? user : memory(want, Engine());
      p->bwd_weights.execute(
          s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei},
              {DNNL_ARG_SCRATCHPAD, Scratchpad(p, p->bwd_weights_pd.scratchpad_desc())}});
      if (!(want == user.get_desc())) Reorder(dwei, user, s);
      s.wait();
    });
  }
};

// ---- Shape functions.

sdk::Status ConvOutputShape(sdk::ShapeContext& c, const sdk::PartialShape& input,
                            const sdk::PartialShape& filter) {
  WindowAttrs a;
  CFX_SDK_RETURN_IF_ERROR(ReadWindowAttrs(c.attrs(), true, &a));
  sdk::PartialShape in, f;
  CFX_SDK_RETURN_IF_ERROR(WithRank(input, 4, "input", &in));
  CFX_SDK_RETURN_IF_ERROR(WithRank(filter, 4, "filter", &f));
  if (in.dims[3] >= 0 && f.dims[2] >= 0 && in.dims[3] != f.dims[2])
    return sdk::InvalidArgument("input has ", in.dims[3], " channels (shape ", ShapeStr(in.dims),
                                ") but the filter expects ", f.dims[2], " (shape ",
                                ShapeStr(f.dims), ")");
  WindowDim h, w;
  const int64_t kh = f.dims[0] >= 0 ? f.dims[0] : 1, kw = f.dims[1] >= 0 ? f.dims[1] : 1;
  CFX_SDK_RETURN_IF_ERROR(ComputeWindows(a, in.dims[1], in.dims[2], kh, kw, &h, &w));
  if (f.dims[0] < 0) h.out = sdk::kUnknown;
  if (f.dims[1] < 0) w.out = sdk::kUnknown;
  c.set_output(0, KnownShape({in.dims[0], h.out, w.out, f.dims[3]}));
  return sdk::Status();
}

sdk::Status Conv2DShape(sdk::ShapeContext& c) { return ConvOutputShape(c, c.input(0), c.input(1)); }

// Backprop outputs take the shape given by their *_sizes input when it is a constant.
sdk::Status SizesShape(sdk::ShapeContext& c, int sizes_input) {
  sdk::Tensor t = c.input_tensor(sizes_input);
  if (t.valid()) {
    sdk::Shape s;
    CFX_SDK_RETURN_IF_ERROR(ConvSizesFromTensor(t, sizes_input == 0 ? "input_sizes" : "filter_sizes", &s));
    c.set_output(0, KnownShape(s));
  } else {
    c.set_output(0, UnknownDims(4));
  }
  return sdk::Status();
}

sdk::Status BackpropInputShape(sdk::ShapeContext& c) { return SizesShape(c, 0); }
sdk::Status BackpropFilterShape(sdk::ShapeContext& c) { return SizesShape(c, 1); }

// TensorFlow's types: Conv2D and Conv2DBackpropInput also allow int32, the filter gradient not.
void ConvAttrs(sdk::OpBuilder& b, bool int32 = true) {
  b.Attr(int32 ? "T: {half, bfloat16, float, double, int32}" : "T: {half, bfloat16, float, double}")
      .Attr("strides: list(int)")
      .Attr("use_cudnn_on_gpu: bool = true")
      .Attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
      .Attr("explicit_paddings: list(int) = []")
      .Attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
      .Attr("dilations: list(int) = [1, 1, 1, 1]");
}

}  // namespace

void RegisterConvOps(sdk::Plugin& p) {
  ConvAttrs(p.Op("Conv2D").Input("input: T").Input("filter: T").Output("output: T")
                .ShapeFn<&Conv2DShape>());
  ConvAttrs(p.Op("Conv2DBackpropInput")
                .Input("input_sizes: int32")
                .Input("filter: T")
                .Input("out_backprop: T")
                .Output("output: T")
                .ShapeFn<&BackpropInputShape>());
  ConvAttrs(p.Op("Conv2DBackpropFilter")
                .Input("input: T")
                .Input("filter_sizes: int32")
                .Input("out_backprop: T")
                .Output("output: T")
                .ShapeFn<&BackpropFilterShape>(),
            /*int32=*/false);
  p.Kernel<Conv2DKernel>("Conv2D", "CPU").TypeConstraint<float>("T");
  p.Kernel<Conv2DBackpropInputKernel>("Conv2DBackpropInput", "CPU")
      .TypeConstraint<float>("T")
      .HostMemory("input_sizes");
  p.Kernel<Conv2DBackpropFilterKernel>("Conv2DBackpropFilter", "CPU")
      .TypeConstraint<float>("T")
      .HostMemory("filter_sizes");
}

}  // namespace cfx::nn
