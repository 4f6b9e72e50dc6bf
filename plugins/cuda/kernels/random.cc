// Random ops on CUDA (float RandomUniform, RandomStandardNormal and TruncatedNormal; int32 and
// int64 RandomUniformInt), drawing exactly the CPU kernels' numbers for the same node: the same
// Philox stream, block-to-values maps and reservation rule (conflux/sdk/philox.h), and the
// same block for each output group (kernels/random_launch.h). Normals may differ from the CPU's
// in the last bit, CUDA's logf/sinf/cosf not being glibc's.
//
// Each kernel owns its generator on the host (sdk::GuardedPhilox, under its lock): a call
// reserves its blocks there, so concurrent calls get disjoint ranges and successive calls
// continue the stream, and the device computes each group from (key, counter) alone. `shape`
// (and RandomUniformInt's minval and maxval) live in host memory, as in TensorFlow.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "conflux/sdk/random_kernels.h"
#include "cuda_common.h"
#include "kernels/kernels.h"
#include "kernels/random_launch.h"

namespace cfx::cuda {
namespace {

constexpr const char* RandomOpName(RandomDist dist) {
  switch (dist) {
    case RandomDist::kUniformFloat:
      return "RandomUniform";
    case RandomDist::kNormalFloat:
      return "RandomStandardNormal";
    case RandomDist::kTruncatedNormalFloat:
      return "TruncatedNormal";
    case RandomDist::kUniformInt32:
    case RandomDist::kUniformInt64:
      return "RandomUniformInt";
  }
  return "?";
}

template <RandomDist kDist>
class RandomKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return sdk::InitPhiloxFromAttrs(init, &gen_); }

  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    std::vector<int64_t> shape;
    CFX_SDK_RETURN_IF_ERROR(sdk::ReadRandomShape(ctx, &shape));
    RandomFillArgs args;
    args.dist = kDist;
    constexpr bool kInt = kDist == RandomDist::kUniformInt32 || kDist == RandomDist::kUniformInt64;
    if constexpr (kInt) CFX_SDK_RETURN_IF_ERROR(CheckBounds(ctx, false, &args));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, shape));
    args.n = out.num_elements();
    // An empty draw reserves no blocks (as on the CPU) and needs no valid range (as TensorFlow).
    if (args.n == 0) {
      done();
      return sdk::Status();
    }
    if constexpr (kInt) CFX_SDK_RETURN_IF_ERROR(CheckBounds(ctx, true, &args));
    args.out = out.raw_data();
    args.base = gen_.Reserve(RandomBlocksToReserve(kDist, args.n));
    cfx_device* dev = ctx.device();
    CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
    CFX_SDK_RETURN_IF_ERROR(CudaCheck(LaunchRandomFill(args, Stream(ctx)), dev->name,
                                      sdk::StrCat("launch of ", RandomOpName(kDist))));
    return CompleteAsync(ctx, done);
  }

 private:
  // RandomUniformInt's bounds into `args` (lo and range as the output width's unsigned type).
  static sdk::Status CheckBounds(const sdk::KernelContext& ctx, bool check_order,
                                 RandomFillArgs* args) {
    using T = std::conditional_t<kDist == RandomDist::kUniformInt32, int32_t, int64_t>;
    std::make_unsigned_t<T> lo = 0, range = 0;
    CFX_SDK_RETURN_IF_ERROR(sdk::ReadUniformIntBounds<T>(ctx, check_order, &lo, &range));
    args->lo = lo;
    args->range = range;
    return sdk::Status();
  }

  sdk::GuardedPhilox gen_;
};

}  // namespace

void RegisterRandomKernels(sdk::Plugin& p) {
  p.AsyncKernel<RandomKernel<RandomDist::kUniformFloat>>("RandomUniform", kDeviceType)
      .TypeConstraint("dtype", CFX_FLOAT)
      .HostMemory("shape")
      .Inexpensive();
  p.AsyncKernel<RandomKernel<RandomDist::kNormalFloat>>("RandomStandardNormal", kDeviceType)
      .TypeConstraint("dtype", CFX_FLOAT)
      .HostMemory("shape")
      .Inexpensive();
  p.AsyncKernel<RandomKernel<RandomDist::kTruncatedNormalFloat>>("TruncatedNormal", kDeviceType)
      .TypeConstraint("dtype", CFX_FLOAT)
      .HostMemory("shape")
      .Inexpensive();
  p.AsyncKernel<RandomKernel<RandomDist::kUniformInt32>>("RandomUniformInt", kDeviceType)
      .TypeConstraint("Tout", CFX_INT32)
      .HostMemory("shape")
      .HostMemory("minval")
      .HostMemory("maxval")
      .Inexpensive();
  p.AsyncKernel<RandomKernel<RandomDist::kUniformInt64>>("RandomUniformInt", kDeviceType)
      .TypeConstraint("Tout", CFX_INT64)
      .HostMemory("shape")
      .HostMemory("minval")
      .HostMemory("maxval")
      .Inexpensive();
}

}  // namespace cfx::cuda
