// _FusedMatMul for float on CPU: TensorFlow's MatMul + BiasAdd (+ activation), written by its
// grappler and by the core's remapper pass, as one oneDNN matmul primitive with the bias as its
// bias argument and the activation as an eltwise post-op, so the product is written once and
// never read back.
//
// Unlike MatMul (matmul_onednn.cc, dnnl_sgemm), this needs a primitive: sgemm has no epilogue.
// Primitives are cached per (m, k, n) (the transposes are the node's); each has its own user
// scratchpad and a mutex, so concurrent steps of one node take turns and different nodes run
// at once (as the convolutions do, plugins/ops-nn/onednn_conv.h).
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "conflux/sdk/fused_ops.h"
#include "cpu_device.h"
#include "kernels/matmul.h"

namespace cfx::cpu {
namespace {

using dnnl::memory;

const dnnl::engine& Engine() {
  static const dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

struct FusedMatMulPrimitive {
  std::mutex mu;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  std::vector<uint8_t> scratch;
};

// The activation of a fused epilogue as a oneDNN eltwise post-op (scale 1); none for kNone.
// (The ops-nn plugin maps its convolutions' epilogues the same way; plugins share only the SDK,
// which knows nothing of oneDNN.)
dnnl::post_ops PostOps(const sdk::FusedEpilogue& e) {
  using sdk::FusedActivation;
  dnnl::post_ops ops;
  switch (e.activation) {
    case FusedActivation::kNone:
      break;
    case FusedActivation::kRelu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      break;
    case FusedActivation::kRelu6:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, 0.0f, 6.0f);
      break;
    case FusedActivation::kElu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_elu, 1.0f, 0.0f);
      break;
    case FusedActivation::kLeakyRelu:
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, e.leakyrelu_alpha, 0.0f);
      break;
  }
  return ops;
}

class FusedMatMulKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(attrs_.Read(init));
    CFX_SDK_ASSIGN_OR_RETURN(epilogue_, sdk::ReadFusedEpilogue(init.attrs()));
    return sdk::Status();
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    CFX_SDK_ASSIGN_OR_RETURN(MatMulCall call, BeginMatMul(ctx, attrs_));
    const MatMulDims& d = call.dims;
    sdk::Tensor bias = ctx.input(2);
    if (bias.dtype() != CFX_FLOAT || bias.shape() != sdk::Shape{d.n})
      return sdk::InvalidArgument("the bias (args[0]) must be a float vector of the ", d.n,
                                  " product columns, got shape ", sdk::ShapeString(bias.shape()));
    if (call.done) {  // empty, or k == 0: the bias alone goes through the activation
      sdk::FillWithActivatedBias(epilogue_, bias.data<float>(), d.n, d.m,
                                 call.product.data<float>());
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(FusedMatMulPrimitive * p, Primitive(d));
    UseIntraOpThreads(ctx.device());
    try {
      std::lock_guard<std::mutex> lock(p->mu);
      dnnl::stream s(Engine());
      auto wrap = [](const memory::desc& md, const float* data) {
        return memory(md, Engine(), const_cast<float*>(data));
      };
      p->primitive.execute(
          s, {{DNNL_ARG_SRC, wrap(p->pd.src_desc(), call.a.data<float>())},
              {DNNL_ARG_WEIGHTS, wrap(p->pd.weights_desc(), call.b.data<float>())},
              {DNNL_ARG_BIAS, wrap(p->pd.bias_desc(), bias.data<float>())},
              {DNNL_ARG_DST, wrap(p->pd.dst_desc(), call.product.data<float>())},
              {DNNL_ARG_SCRATCHPAD, memory(p->pd.scratchpad_desc(), Engine(), p->scratch.data())}});
      s.wait();
    } catch (const dnnl::error& e) {
      return sdk::Internal("oneDNN fused matmul of [", d.m, ",", d.k, "] x [", d.k, ",", d.n,
                           "] failed: ", e.what());
    }
    return sdk::Status();
  }

 private:
  // The cached primitive of these dimensions; a oneDNN failure becomes an Internal error.
  sdk::Result<FusedMatMulPrimitive*> Primitive(const MatMulDims& d) {
    const std::vector<int64_t> key = {d.m, d.k, d.n};
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second.get();
    try {
      const auto f32 = memory::data_type::f32;
      // A transposed operand is the stored matrix read column by column.
      const memory::desc a({d.m, d.k}, f32,
                           d.transpose_a ? memory::dims{1, d.m} : memory::dims{d.k, 1});
      const memory::desc b({d.k, d.n}, f32,
                           d.transpose_b ? memory::dims{1, d.k} : memory::dims{d.n, 1});
      const memory::desc bias({1, d.n}, f32, memory::dims{d.n, 1});
      const memory::desc product({d.m, d.n}, f32, memory::dims{d.n, 1});
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      attr.set_post_ops(PostOps(epilogue_));
      auto p = std::make_unique<FusedMatMulPrimitive>();
      p->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, product), attr, Engine());
      p->primitive = dnnl::matmul(p->pd);
      p->scratch.resize(p->pd.scratchpad_desc().get_size());
      FusedMatMulPrimitive* raw = p.get();
      cache_.emplace(key, std::move(p));
      return raw;
    } catch (const dnnl::error& e) {
      return sdk::Internal("oneDNN cannot build a fused matmul of [", d.m, ",", d.k, "] x [", d.k,
                           ",", d.n, "]: ", e.what());
    }
  }

  MatMulAttrs attrs_;
  sdk::FusedEpilogue epilogue_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<FusedMatMulPrimitive>> cache_;
};

}  // namespace

void RegisterFusedMatMulKernel(sdk::Plugin& p) {
  p.Kernel<FusedMatMulKernel>("_FusedMatMul", "CPU").TypeConstraint<float>("T");
}

}  // namespace cfx::cpu
