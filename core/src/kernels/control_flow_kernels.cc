// Kernels of the control-flow primitives, registered for every device type so that placement
// finds them anywhere. Inside an executor these ops never reach their kernels: the executor
// routes their values itself (frames, iterations, dead tensors; runtime/executor.cc). The kernels
// serve single-op evaluation outside a step, where there is no deadness: Switch then fails for
// the untaken output's consumers, and Merge forwards its first input.
#include "kernels/builtin.h"

namespace cfx::internal {
namespace {

class ForwardKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override { SetOutput(c, 0, c->inputs[0]); }
};

class SwitchKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    const Tensor& pred = c->inputs[1];
    if (pred.dtype() != DT_BOOL || pred.num_elements() != 1) {
      c->status =
          errors::InvalidArgument("the predicate must be a bool scalar, got ",
                                  DataTypeString(pred.dtype()), " ", pred.shape().ToString());
      return;
    }
    c->is_output_dead = false;
    SetOutput(c, pred.data<bool>()[0] ? 1 : 0, c->inputs[0]);
    // The untaken output has no value outside an executor; give it an empty tensor of its type.
    const int untaken = pred.data<bool>()[0] ? 0 : 1;
    SetOutput(c, untaken, Tensor());
  }
};

class MergeKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    SetOutput(c, 0, c->inputs[0]);
    auto index = Tensor::Allocate(c->device->host_allocator(), DT_INT32, TensorShape());
    if (!index.ok()) {
      c->status = index.status();
      return;
    }
    index->data<int32_t>()[0] = 0;
    SetOutput(c, 1, *std::move(index));
  }
};

}  // namespace

void RegisterControlFlowKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  constexpr uint32_t kFlags = kKernelInexpensive;
  for (const std::string p : {"", "Ref"}) {
    reg(BuiltinKernelDef<SwitchKernel>(p + "Switch", kAnyDeviceType, false, kFlags, {"pred"}));
    reg(BuiltinKernelDef<MergeKernel>(p + "Merge", kAnyDeviceType, false, kFlags, {"value_index"}));
    for (const char* op : {"Enter", "Exit", "NextIteration"})
      reg(BuiltinKernelDef<ForwardKernel>(p + op, kAnyDeviceType, false, kFlags));
  }
  reg(BuiltinKernelDef<ForwardKernel>("LoopCond", kAnyDeviceType, false, kFlags,
                                      {"input", "output"}));
  reg(BuiltinKernelDef<BuiltinKernel>("ControlTrigger", kAnyDeviceType, false, kFlags));
}

}  // namespace cfx::internal
