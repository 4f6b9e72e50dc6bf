// Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter on CUDA (float, NHWC, filters HWIO)
// through cuDNN, with the CPU's window rules (conflux/sdk/window_geometry.h).
//
// cuDNN reads activations in NHWC as they are; filters go to and from its KRSC layout ([out, kh,
// kw, in], a transpose of HWIO seen as a [kh*kw*in, out] matrix) with cublasSgeam. cuDNN pads
// both sides of a dim equally: the part of TensorFlow's padding that differs between the sides
// (SAME with an even window, EXPLICIT) is made by copying the input into a zero-padded image
// (and cropping the input gradient back), kernels/window.cu.
//
// Each node keeps, per geometry, its cuDNN descriptors and the algorithm chosen on first use:
// measured by cudnnFind*AlgorithmEx (the device option cudnn_autotune, default) or cuDNN's
// heuristic order. Float32 convolutions run with FMA math only (exact float32, as the CPU);
// with the device option allow_tf32 they may use TF32 tensor cores. Workspaces come from the
// device's pool as temporaries, freed in stream order.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conflux/sdk/window_geometry.h"
#include "cuda_common.h"
#include "cudnn_api.h"
#include "kernels/kernels.h"
#include "kernels/window_launch.h"

namespace cfx::cuda {
namespace {

using shape_rules::ShapeStr;

enum class Pass { kForward, kBackwardData, kBackwardFilter };

const char* PassName(Pass p) {
  switch (p) {
    case Pass::kForward:
      return "Conv2D";
    case Pass::kBackwardData:
      return "Conv2DBackpropInput";
    case Pass::kBackwardFilter:
      return "Conv2DBackpropFilter";
  }
  return "";
}

// The largest workspace an algorithm search may use; it halves until the pool can give it.
constexpr size_t kSearchWorkspaceBytes = size_t{1} << 30;

// How a geometry runs on cuDNN: the symmetric padding cuDNN applies, and the zero-padded image
// (`placement`, when `explicit_pad`) that carries the rest.
struct CudnnGeometry {
  sdk::ConvGeometry g;
  int64_t pad_h = 0, pad_w = 0;  // per side, in cuDNN
  bool explicit_pad = false;
  ImagePlacement placement;  // the input inside the padded image
  int64_t in_h() const { return explicit_pad ? placement.big_h : g.h.in; }
  int64_t in_w() const { return explicit_pad ? placement.big_w : g.w.in; }
};

CudnnGeometry Split(const sdk::ConvGeometry& g) {
  CudnnGeometry c;
  c.g = g;
  c.pad_h = std::min(g.h.pad_before, g.h.pad_after);
  c.pad_w = std::min(g.w.pad_before, g.w.pad_after);
  const int64_t top = g.h.pad_before - c.pad_h, left = g.w.pad_before - c.pad_w;
  const int64_t extra_h = top + (g.h.pad_after - c.pad_h);
  const int64_t extra_w = left + (g.w.pad_after - c.pad_w);
  c.explicit_pad = extra_h != 0 || extra_w != 0;
  c.placement = {g.n, g.h.in, g.w.in, g.c, g.h.in + extra_h, g.w.in + extra_w, top, left};
  return c;
}

// cuDNN's 4-d descriptors take int dims and address at most 2^31 - 1 elements.
sdk::Status CheckCudnnSizes(const CudnnGeometry& c) {
  const int64_t limit = (int64_t{1} << 31) - 1;
  const sdk::Shape shapes[] = {{c.g.n, c.in_h(), c.in_w(), c.g.c}, c.g.filter(), c.g.output()};
  for (const sdk::Shape& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n = d > 0 && n > limit / d ? limit + 1 : n * d;
    if (n > limit)
      return sdk::InvalidArgument("a convolution of input ", ShapeStr(c.g.input()), " by filter ",
                                  ShapeStr(c.g.filter()), " has an operand of ", ShapeStr(s),
                                  ": more than cuDNN's 2^31 - 1 elements");
  }
  return sdk::Status();
}

// The descriptors and the chosen algorithm of one geometry and pass.
class Plan {
 public:
  ~Plan() {
    const CudnnApi& api = Cudnn();
    if (x_ != nullptr) api.cudnnDestroyTensorDescriptor(x_);
    if (y_ != nullptr) api.cudnnDestroyTensorDescriptor(y_);
    if (w_ != nullptr) api.cudnnDestroyFilterDescriptor(w_);
    if (conv_ != nullptr) api.cudnnDestroyConvolutionDescriptor(conv_);
  }

  sdk::Status Describe(const CudnnGeometry& c, bool allow_tf32, const std::string& where) {
    const CudnnApi& api = Cudnn();
    auto check = [&](cudnnStatus_t st, const char* what) { return CudnnCheck(st, where, what); };
    auto i = [](int64_t v) { return static_cast<int>(v); };
    CFX_SDK_RETURN_IF_ERROR(
        check(api.cudnnCreateTensorDescriptor(&x_), "cudnnCreateTensorDescriptor"));
    CFX_SDK_RETURN_IF_ERROR(
        check(api.cudnnCreateTensorDescriptor(&y_), "cudnnCreateTensorDescriptor"));
    CFX_SDK_RETURN_IF_ERROR(
        check(api.cudnnCreateFilterDescriptor(&w_), "cudnnCreateFilterDescriptor"));
    CFX_SDK_RETURN_IF_ERROR(
        check(api.cudnnCreateConvolutionDescriptor(&conv_), "cudnnCreateConvolutionDescriptor"));
    const sdk::ConvGeometry& g = c.g;
    CFX_SDK_RETURN_IF_ERROR(
        check(api.cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(g.n),
                                             i(g.c), i(c.in_h()), i(c.in_w())),
              "cudnnSetTensor4dDescriptor (input)"));
    CFX_SDK_RETURN_IF_ERROR(
        check(api.cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(g.n),
                                             i(g.o), i(g.h.out), i(g.w.out)),
              "cudnnSetTensor4dDescriptor (output)"));
    CFX_SDK_RETURN_IF_ERROR(
        check(api.cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, i(g.o),
                                             i(g.c), i(g.h.kernel), i(g.w.kernel)),
              "cudnnSetFilter4dDescriptor"));
    CFX_SDK_RETURN_IF_ERROR(
        check(api.cudnnSetConvolution2dDescriptor(conv_, i(c.pad_h), i(c.pad_w), i(g.h.stride),
                                                  i(g.w.stride), i(g.h.dilation), i(g.w.dilation),
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "cudnnSetConvolution2dDescriptor"));
    math_ = allow_tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    return check(api.cudnnSetConvolutionMathType(conv_, math_), "cudnnSetConvolutionMathType");
  }

  // Chooses the algorithm: the fastest measured one (buffers: the pass's operands, `workspace`
  // of `workspace_bytes` scratch), or with `measure` false cuDNN's first heuristic choice whose
  // workspace fits kSearchWorkspaceBytes. Runs on `h`'s stream and waits for it when measuring.
  sdk::Status Choose(Pass pass, cudnnHandle_t h, bool measure, const void* a, const void* b,
                     void* out, void* workspace, size_t workspace_bytes, const std::string& where) {
    const CudnnApi& api = Cudnn();
    constexpr int kMax = 16;
    int found = 0;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    // The perf structs of the three passes have the same members; copy out what is used.
    struct Choice {
      cudnnStatus_t status;
      int algo;
      size_t memory;
      cudnnMathType_t math;
    } choices[kMax];
    auto keep = [&](const auto* perf) {
      for (int k = 0; k < found; ++k)
        choices[k] = {perf[k].status, static_cast<int>(perf[k].algo), perf[k].memory,
                      perf[k].mathType};
    };
    switch (pass) {
      case Pass::kForward: {
        cudnnConvolutionFwdAlgoPerf_t perf[kMax];
        st = measure ? api.cudnnFindConvolutionForwardAlgorithmEx(h, x_, a, w_, b, conv_, y_, out,
                                                                  kMax, &found, perf, workspace,
                                                                  workspace_bytes)
                     : api.cudnnGetConvolutionForwardAlgorithm_v7(h, x_, w_, conv_, y_, kMax,
                                                                  &found, perf);
        keep(perf);
        break;
      }
      case Pass::kBackwardData: {
        cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
        st = measure ? api.cudnnFindConvolutionBackwardDataAlgorithmEx(h, w_, a, y_, b, conv_, x_,
                                                                       out, kMax, &found, perf,
                                                                       workspace, workspace_bytes)
                     : api.cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w_, y_, conv_, x_, kMax,
                                                                       &found, perf);
        keep(perf);
        break;
      }
      case Pass::kBackwardFilter: {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
        st = measure ? api.cudnnFindConvolutionBackwardFilterAlgorithmEx(h, x_, a, y_, b, conv_, w_,
                                                                         out, kMax, &found, perf,
                                                                         workspace, workspace_bytes)
                     : api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_, y_, conv_, w_, kMax,
                                                                         &found, perf);
        keep(perf);
        break;
      }
    }
    CFX_SDK_RETURN_IF_ERROR(CudnnCheck(
        st, where, measure ? "the algorithm search (FindEx)" : "the algorithm heuristics (_v7)"));
    for (int k = 0; k < found; ++k) {
      const Choice& c = choices[k];
      if (c.status != CUDNN_STATUS_SUCCESS || c.memory > kSearchWorkspaceBytes) continue;
      // Exact float32 unless TF32 is allowed.
      if (math_ == CUDNN_FMA_MATH && c.math != CUDNN_FMA_MATH) continue;
      algo_ = c.algo;
      workspace_ = c.memory;
      CFX_SDK_RETURN_IF_ERROR(CudnnCheck(api.cudnnSetConvolutionMathType(conv_, c.math), where,
                                         "cudnnSetConvolutionMathType"));
      chosen_ = true;
      return sdk::Status();
    }
    return sdk::Unimplemented(where, ": cuDNN has no ", PassName(pass),
                              " algorithm for this "
                              "geometry (",
                              found, " candidates, none usable",
                              math_ == CUDNN_FMA_MATH ? " with exact float32 math" : "", ")");
  }

  // Enqueues the pass with the chosen algorithm.
  sdk::Status Run(Pass pass, cudnnHandle_t h, const void* a, const void* b, void* out,
                  void* workspace, const std::string& where) const {
    const CudnnApi& api = Cudnn();
    const float one = 1.0f, zero = 0.0f;
    switch (pass) {
      case Pass::kForward:
        return CudnnCheck(api.cudnnConvolutionForward(h, &one, x_, a, w_, b, conv_,
                                                      static_cast<cudnnConvolutionFwdAlgo_t>(algo_),
                                                      workspace, workspace_, &zero, y_, out),
                          where, "cudnnConvolutionForward");
      case Pass::kBackwardData:
        return CudnnCheck(
            api.cudnnConvolutionBackwardData(h, &one, w_, a, y_, b, conv_,
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(algo_),
                                             workspace, workspace_, &zero, x_, out),
            where, "cudnnConvolutionBackwardData");
      case Pass::kBackwardFilter:
        return CudnnCheck(
            api.cudnnConvolutionBackwardFilter(h, &one, x_, a, y_, b, conv_,
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo_),
                                               workspace, workspace_, &zero, w_, out),
            where, "cudnnConvolutionBackwardFilter");
    }
    return sdk::Status();
  }

  bool chosen() const { return chosen_; }
  size_t workspace() const { return workspace_; }

 private:
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnMathType_t math_ = CUDNN_FMA_MATH;
  bool chosen_ = false;
  int algo_ = 0;
  size_t workspace_ = 0;
};

// A float device temporary of `shape`.
sdk::Result<sdk::TensorRef> FloatTemp(sdk::KernelContext& ctx, const sdk::Shape& shape) {
  return ctx.AllocateTemp(CFX_FLOAT, shape);
}

// out = the transpose of the row-major [rows, cols] matrix `in` (cuBLAS geam on the stream).
sdk::Status Transpose(sdk::KernelContext& ctx, const float* in, int64_t rows, int64_t cols,
                      float* out) {
  cfx_device* dev = ctx.device();
  CFX_SDK_ASSIGN_OR_RETURN(BlasHandle * blas, BlasFor(dev, Stream(ctx)));
  const float one = 1.0f, zero = 0.0f;
  std::lock_guard<std::mutex> lock(blas->mu);
  // Column-major: `in` is [cols, rows] (ld cols); out = in^T is [rows, cols] (ld rows).
  return BlasCheck(cublasSgeam(blas->handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows),
                               static_cast<int>(cols), &one, in, static_cast<int>(cols), &zero, out,
                               static_cast<int>(rows), out, static_cast<int>(rows)),
                   dev->name, "cublasSgeam (filter transpose)");
}

// The convolution kernels: attrs, and per geometry a Plan.
template <Pass P>
class ConvKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    node_ = init.node_name();
    return sdk::ReadWindowAttrs(init.attrs(), /*conv=*/true, &attrs_);
  }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    // Operands: forward (input, filter), backprop input (input_sizes, filter, out_backprop),
    // backprop filter (input, filter_sizes, out_backprop).
    sdk::Shape input_shape, filter_shape;
    if (P == Pass::kBackwardData) {
      CFX_SDK_RETURN_IF_ERROR(sdk::ConvSizesFromTensor(ctx.input(0), "input_sizes", &input_shape));
    } else {
      input_shape = ctx.input(0).shape();
    }
    if (P == Pass::kBackwardFilter) {
      CFX_SDK_RETURN_IF_ERROR(
          sdk::ConvSizesFromTensor(ctx.input(1), "filter_sizes", &filter_shape));
    } else {
      filter_shape = ctx.input(1).shape();
    }
    sdk::ConvGeometry g;
    CFX_SDK_RETURN_IF_ERROR(sdk::MakeConvGeometry(attrs_, input_shape, filter_shape, &g));
    if (g.groups != 1)
      return sdk::Unimplemented("grouped convolution (", g.groups, " groups of ", g.c / g.groups,
                                " input channels) is not supported on GPU; place the node on "
                                "the CPU");
    if (P != Pass::kForward)
      CFX_SDK_RETURN_IF_ERROR(sdk::CheckOutBackprop(ctx.input(2).shape(), g));
    const sdk::Shape out_shape = P == Pass::kForward        ? g.output()
                                 : P == Pass::kBackwardData ? g.input()
                                                            : g.filter();
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, out_shape));
    cfx_device* dev = ctx.device();
    const cudaStream_t stream = Stream(ctx);
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    if (out.num_elements() == 0) {
      done();
      return sdk::Status();
    }
    if (sdk::NumElements(g.input()) == 0 || sdk::NumElements(g.filter()) == 0 ||
        sdk::NumElements(g.output()) == 0) {  // empty sums
      CFX_SDK_RETURN_IF_ERROR(CudaCheck(cudaMemsetAsync(out.raw_data(), 0, out.byte_size(), stream),
                                        dev->name, "cudaMemsetAsync"));
      return CompleteAsync(ctx, done);
    }
    const CudnnGeometry c = Split(g);
    CFX_SDK_RETURN_IF_ERROR(CheckCudnnSizes(c));
    CFX_SDK_RETURN_IF_ERROR(Enqueue(ctx, c, out));
    return CompleteAsync(ctx, done);
  }

 private:
  sdk::Status Enqueue(sdk::KernelContext& ctx, const CudnnGeometry& c, sdk::Tensor& out) {
    cfx_device* dev = ctx.device();
    const cudaStream_t stream = Stream(ctx);
    const sdk::ConvGeometry& g = c.g;
    const std::string where = dev->name + " " + PassName(P) + " " + node_;
    const int64_t filter_rows = g.h.kernel * g.w.kernel * g.c;  // HWIO as [rows, o]

    // The filter in cuDNN's layout (forward and backprop input), or a buffer for its gradient.
    CFX_SDK_ASSIGN_OR_RETURN(sdk::TensorRef krsc, FloatTemp(ctx, {g.o, filter_rows}));
    float* w = krsc.view().data<float>();
    if (P != Pass::kBackwardFilter)
      CFX_SDK_RETURN_IF_ERROR(Transpose(ctx, ctx.input(1).data<float>(), filter_rows, g.o, w));

    // The input image, zero-padded where cuDNN's symmetric padding is not enough (forward and
    // backprop filter read it; backprop input writes its gradient there, cropped below).
    sdk::TensorRef padded;
    float* x = nullptr;
    if (c.explicit_pad) {
      CFX_SDK_ASSIGN_OR_RETURN(padded, FloatTemp(ctx, {g.n, c.in_h(), c.in_w(), g.c}));
      x = padded.view().data<float>();
      if (P != Pass::kBackwardData)
        CFX_SDK_RETURN_IF_ERROR(
            CudaCheck(LaunchPlaceImages(c.placement, true, ctx.input(0).data<float>(), x, stream),
                      dev->name, "launch of the input padding of " + node_));
    } else {
      x = P == Pass::kBackwardData ? out.data<float>()
                                   : const_cast<float*>(ctx.input(0).data<float>());
    }
    const float* dy = P == Pass::kForward ? nullptr : ctx.input(2).data<float>();

    // (a, b, out) in cuDNN's argument order for the pass.
    const void* a = P == Pass::kForward        ? static_cast<const void*>(x)
                    : P == Pass::kBackwardData ? static_cast<const void*>(w)
                                               : static_cast<const void*>(x);
    const void* b = P == Pass::kForward ? static_cast<const void*>(w) : dy;
    void* result = P == Pass::kForward        ? out.raw_data()
                   : P == Pass::kBackwardData ? static_cast<void*>(x)
                                              : static_cast<void*>(w);

    CFX_SDK_ASSIGN_OR_RETURN(CudnnHandle * dnn, CudnnFor(dev, stream));
    {
      std::lock_guard<std::mutex> lock(dnn->mu);
      CFX_SDK_ASSIGN_OR_RETURN(Plan * plan, PlanFor(ctx, c, dnn->handle, a, b, result, where));
      sdk::TensorRef workspace;
      void* ws = nullptr;
      if (plan->workspace() > 0) {
        CFX_SDK_ASSIGN_OR_RETURN(
            workspace, ctx.AllocateTemp(CFX_UINT8, {static_cast<int64_t>(plan->workspace())}));
        ws = workspace.view().raw_data();
      }
      CFX_SDK_RETURN_IF_ERROR(plan->Run(P, dnn->handle, a, b, result, ws, where));
    }
    if (P == Pass::kBackwardData && c.explicit_pad)
      CFX_SDK_RETURN_IF_ERROR(
          CudaCheck(LaunchPlaceImages(c.placement, false, x, out.data<float>(), stream), dev->name,
                    "launch of the gradient crop of " + node_));
    if (P == Pass::kBackwardFilter)
      CFX_SDK_RETURN_IF_ERROR(Transpose(ctx, w, g.o, filter_rows, out.data<float>()));
    return sdk::Status();
  }

  // The plan of `c`, chosen on first use (the caller holds the cuDNN handle's lock).
  sdk::Result<Plan*> PlanFor(sdk::KernelContext& ctx, const CudnnGeometry& c, cudnnHandle_t h,
                             const void* a, const void* b, void* result, const std::string& where) {
    std::vector<int64_t> key = c.g.Key();
    key.insert(key.end(), {c.g.h.stride, c.g.w.stride, c.g.h.dilation, c.g.w.dilation,
                           c.g.h.pad_before, c.g.h.pad_after, c.g.w.pad_before, c.g.w.pad_after});
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<Plan>& plan = plans_[key];
    if (plan != nullptr && plan->chosen()) return plan.get();
    cfx_device* dev = ctx.device();
    plan = std::make_unique<Plan>();
    CFX_SDK_RETURN_IF_ERROR(plan->Describe(c, dev->allow_tf32, where));
    sdk::TensorRef search;
    size_t bytes = 0;
    if (dev->cudnn_autotune) {
      for (bytes = kSearchWorkspaceBytes; bytes > 0; bytes /= 4) {
        auto t = ctx.AllocateTemp(CFX_UINT8, {static_cast<int64_t>(bytes)});
        if (t.ok()) {
          search = std::move(*t);
          break;
        }
      }
    }
    CFX_SDK_RETURN_IF_ERROR(plan->Choose(P, h, dev->cudnn_autotune, a, b, result,
                                         bytes > 0 ? search.view().raw_data() : nullptr, bytes,
                                         where));
    return plan.get();
  }

  std::string node_;
  sdk::WindowAttrs attrs_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<Plan>> plans_;
};

}  // namespace

void RegisterConvKernels(sdk::Plugin& p) {
  p.AsyncKernel<ConvKernel<Pass::kForward>>("Conv2D", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .Inexpensive();
  p.AsyncKernel<ConvKernel<Pass::kBackwardData>>("Conv2DBackpropInput", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .HostMemory("input_sizes")
      .Inexpensive();
  p.AsyncKernel<ConvKernel<Pass::kBackwardFilter>>("Conv2DBackpropFilter", kDeviceType)
      .TypeConstraint("T", CFX_FLOAT)
      .HostMemory("filter_sizes")
      .Inexpensive();
}

}  // namespace cfx::cuda
