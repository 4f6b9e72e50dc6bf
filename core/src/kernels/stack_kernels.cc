// Stacks (TensorFlow's StackV2 family): last-in first-out lists of tensors that live for one
// step, in the step's container (StepContext::step_resources); a while loop's gradient pushes
// forward values in one loop and pops them in reverse order in another. Every operation holds
// the stack's mutex, so kernels of concurrent iterations (or of several executors of the step)
// may use one stack at once. Also StepResources (builtin.h), the step container both use.
#include <mutex>
#include <vector>

#include "kernels/builtin.h"

namespace cfx::internal {

StatusOr<ResourceMgr*> StepResources(const KernelContext* c) {
  if (c->step == nullptr || c->step->step_resources == nullptr)
    return errors::FailedPrecondition(
        "this op's resources live for one step and need a Session step to run in");
  return c->step->step_resources;
}

namespace {

class Stack : public ResourceBase {
 public:
  static constexpr const char* kTypeName = "Stack";

  // max_size < 0: unbounded.
  Stack(std::string name, DataType dtype, int64_t max_size)
      : name_(std::move(name)), dtype_(dtype), max_size_(max_size) {}
  std::string DebugString() const override { return "stack " + name_; }

  Status Push(const Tensor& elem) {
    std::lock_guard<std::mutex> lock(mu_);
    CFX_RETURN_IF_ERROR(CheckOpen());
    if (elem.dtype() != dtype_)
      return errors::InvalidArgument("stack ", name_, " holds ", DataTypeString(dtype_),
                                     "; cannot push a ", DataTypeString(elem.dtype()), " element");
    if (max_size_ >= 0 && static_cast<int64_t>(elements_.size()) >= max_size_)
      return errors::InvalidArgument(
          "stack ", name_, " is full: it already holds max_size = ", max_size_, " elements");
    elements_.push_back(elem);
    return Status();
  }

  StatusOr<Tensor> Pop(DataType expected) {
    std::lock_guard<std::mutex> lock(mu_);
    CFX_RETURN_IF_ERROR(CheckOpen());
    if (expected != dtype_)
      return errors::InvalidArgument("stack ", name_, " holds ", DataTypeString(dtype_),
                                     "; this pop expects ", DataTypeString(expected));
    if (elements_.empty())
      return errors::InvalidArgument("stack ", name_, " is empty: nothing to pop");
    Tensor t = std::move(elements_.back());
    elements_.pop_back();
    return t;
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    elements_.clear();
  }

 private:
  Status CheckOpen() const {
    if (closed_) return errors::InvalidArgument("stack ", name_, " has already been closed");
    return Status();
  }

  const std::string name_;
  const DataType dtype_;
  const int64_t max_size_;
  std::mutex mu_;
  bool closed_ = false;
  std::vector<Tensor> elements_;
};

// StackV2: a new stack per run.
class StackKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "elem_type", &dtype_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "stack_name", &base_name_));
    if (base_name_.empty()) base_name_ = node.name;
    return Status();
  }
  void Compute(KernelContext* c) override {
    const Tensor& max_size = c->inputs[0];
    if (max_size.num_elements() != 1) {
      c->status = errors::InvalidArgument("max_size must be an int32 scalar, got shape ",
                                          max_size.shape().ToString());
      return;
    }
    const int64_t max = max_size.at<int32_t>(0);
    auto h = CreateStepResource<Stack>(c, base_name_, &instances_, [&](const std::string& name) {
      return new Stack(name, dtype_, max);
    });
    if (!h.ok()) {
      c->status = h.status();
      return;
    }
    SetOutput(c, 0, MakeResourceTensor(*h));
  }

 private:
  DataType dtype_ = DT_INVALID;
  std::string base_name_;
  std::atomic<int64_t> instances_{0};
};

using StackOpKernel = StepResourceKernel<Stack>;

class StackPushKernel : public StackOpKernel {
  Status Run(KernelContext* c, Stack& stack) override {
    CFX_RETURN_IF_ERROR(stack.Push(c->inputs[1]));
    SetOutput(c, 0, c->inputs[1]);
    return Status();
  }
};

class StackPopKernel : public StackOpKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "elem_type", &dtype_);
  }

 private:
  Status Run(KernelContext* c, Stack& stack) override {
    CFX_ASSIGN_OR_RETURN(Tensor elem, stack.Pop(dtype_));
    SetOutput(c, 0, std::move(elem));
    return Status();
  }
  DataType dtype_ = DT_INVALID;
};

class StackCloseKernel : public StackOpKernel {
  Status Run(KernelContext*, Stack& stack) override {
    stack.Close();
    return Status();
  }
};

}  // namespace

void RegisterStackKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  const uint32_t cheap = kKernelInexpensive;
  reg(BuiltinKernelDef<StackKernel>("StackV2", "CPU", false, cheap, {"handle"}));
  reg(BuiltinKernelDef<StackPushKernel>("StackPushV2", "CPU", false, cheap, {"handle"}));
  reg(BuiltinKernelDef<StackPopKernel>("StackPopV2", "CPU", false, cheap, {"handle"}));
  reg(BuiltinKernelDef<StackCloseKernel>("StackCloseV2", "CPU", false, cheap, {"handle"}));
}

}  // namespace cfx::internal
