// The TOYDEV kernels: AddV2 (NumPy broadcasting) and Relu, on float.
//
// A kernel checks its inputs and allocates its outputs in Compute, on the calling thread, then
// enqueues its loop on the host's compute stream (ctx.stream()) and returns: for the executor it
// is done once enqueued. That is safe because everything that touches its buffers afterwards is
// ordered behind the loop:
//  - later kernels on this device enqueue on the same in-order stream;
//  - a copy to the host or to another device waits for an event recorded on that stream;
//  - a buffer the executor releases goes back to the device (deallocate) only once the compute
//    stream has passed every kernel enqueued before the release.
// So the loops capture raw pointers and hold no reference to the tensors.
#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "conflux/sdk.h"
#include "toy_device.h"

namespace toydev {
namespace {

using cfx::sdk::KernelContext;
using cfx::sdk::Status;
using cfx::sdk::Tensor;

// Runs `loop` in stream order on the kernel's device.
void Launch(KernelContext& ctx, std::function<void()> loop) {
  cfx_stream* stream = ctx.stream();
  // A host that gives kernels no stream frees their buffers as soon as they return: run now.
  if (stream == nullptr) return loop();
  stream->work.Enqueue(std::move(loop));
}

// z = x + y, broadcasting NumPy-style. The SDK's plan (conflux/sdk/broadcast_plan.h) collapses
// the shapes to a few dims with a stride per operand, so one loop serves every case; it is the
// plan the CPU kernels run, so both devices agree on shapes and errors.
class AddKernel {
 public:
  Status Compute(KernelContext& ctx) {
    Tensor x = ctx.input(0), y = ctx.input(1);
    const cfx::sdk::BroadcastOperand operands[] = {{"x", x.shape()}, {"y", y.shape()}};
    CFX_SDK_ASSIGN_OR_RETURN(cfx::sdk::BroadcastPlan plan, cfx::sdk::PlanBroadcast(operands));
    CFX_SDK_ASSIGN_OR_RETURN(Tensor z, ctx.AllocateOutput(0, plan.output_shape));
    Launch(ctx, [px = x.data<float>(), py = y.data<float>(), pz = z.data<float>(),
                 plan = std::move(plan)] {
      // An odometer over the plan's dims: i walks the output, ix and iy the operands.
      const size_t rank = plan.dims.size();
      std::vector<int64_t> index(rank, 0);
      int64_t ix = 0, iy = 0;
      for (int64_t i = 0; i < plan.num_elements; ++i) {
        pz[i] = px[ix] + py[iy];
        for (size_t d = rank; d-- > 0;) {
          ix += plan.strides[0][d];
          iy += plan.strides[1][d];
          if (++index[d] < plan.dims[d]) break;
          ix -= plan.strides[0][d] * plan.dims[d];
          iy -= plan.strides[1][d] * plan.dims[d];
          index[d] = 0;
        }
      }
    });
    return Status();
  }
};

// y = max(x, 0), NaN staying NaN (as on the CPU). The output may take over the input's buffer
// when nothing else holds it: the loop then runs in place.
class ReluKernel {
 public:
  Status Compute(KernelContext& ctx) {
    Tensor x = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(Tensor y, ctx.ForwardOrAllocateOutput({0}, 0, x.shape()));
    Launch(ctx, [in = x.data<float>(), out = y.data<float>(), n = x.num_elements()] {
      for (int64_t i = 0; i < n; ++i) out[i] = (in[i] > 0 || std::isnan(in[i])) ? in[i] : 0.0f;
    });
    return Status();
  }
};

}  // namespace

void RegisterKernels(cfx::sdk::Plugin& p) {
  p.Kernel<AddKernel>("AddV2", kDeviceType).TypeConstraint<float>("T");
  p.Kernel<ReluKernel>("Relu", kDeviceType).TypeConstraint<float>("T");
}

}  // namespace toydev
