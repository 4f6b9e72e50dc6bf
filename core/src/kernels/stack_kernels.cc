// Stacks (TensorFlow's StackV2 family): last-in first-out lists of tensors that live for one
// step, in the step's container (StepContext::step_resources); a while loop's gradient pushes
// forward values in one loop and pops them in reverse order in another. Every operation holds
// the stack's mutex, so kernels of concurrent iterations (or of several executors of the step)
// may use one stack at once. Also StepResources (builtin.h), the step container both use.
//
// The kernels run on every device type (the handle in host memory, elements where the device
// keeps them), so that a loop on a GPU keeps its values in device memory. Swapping (EuroSys
// 2018 §5.3): a push whose swap_memory attr is set, on a device whose memory is not the host's,
// moves its element to host memory (the device's pinned memory) once the device's memory in use
// passes its swap threshold (devices.<TYPE>.swap_threshold, a fraction of its memory limit). The
// copy runs in the background, after the kernels that produce the element, and the device buffer
// is released when it completes; the push itself does not wait. A pop brings a swapped element
// back, and starts bringing back the element below it, which the backward loop pops next, so
// that its copy overlaps the iteration in between (prefetch).
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/builtin.h"
#include "runtime/copy_tensor.h"

namespace cfx::internal {

StatusOr<ResourceMgr*> StepResources(const KernelContext* c) {
  if (c->step == nullptr || c->step->step_resources == nullptr)
    return errors::FailedPrecondition(
        "this op's resources live for one step and need a Session step to run in");
  return c->step->step_resources;
}

namespace {

// Elements smaller than this stay on the device: their copies would cost more than they free.
constexpr size_t kMinSwapBytes = 2048;

// True when a push of `elem` with swap_memory set moves it to host memory.
bool ShouldSwap(const Device* device, const Tensor& elem) {
  if (device == nullptr || device->host_addressable() || elem.buffer() == nullptr ||
      DeviceOf(elem) != device || elem.TotalBytes() < kMinSwapBytes)
    return false;
  const double threshold = device->swap_threshold();
  if (threshold <= 0) return true;
  const AllocatorStats stats = device->allocator()->stats();
  return stats.bytes_limit > 0 && static_cast<double>(stats.bytes_in_use) >
                                      threshold * static_cast<double>(stats.bytes_limit);
}

using TransferFn = std::function<void(const Status&, const Tensor&)>;

// A value in flight between device and host memory: fn(status, value) for each waiter once the
// copy is done. Shared with the copy's callback, so that it outlives a stack closed meanwhile.
class Transfer {
 public:
  // fn now when done, else once done.
  void WhenDone(TransferFn fn) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!done_) {
      waiters_.push_back(std::move(fn));
      return;
    }
    lock.unlock();
    fn(status_, value_);
  }
  void Finish(const Status& status, Tensor value) {
    std::vector<TransferFn> waiters;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      status_ = status;
      value_ = std::move(value);
      waiters.swap(waiters_);
    }
    for (auto& w : waiters) w(status_, value_);
  }
  // Starts copying `value` from `src` to `dst` (null: host memory) into this transfer. The copy's
  // callback holds `value` until it runs, so a swapped device buffer is released only then.
  static void Start(const std::shared_ptr<Transfer>& transfer, const Device* src, const Device* dst,
                    const Tensor& value) {
    CopyTensor(src, dst, value, {}, [transfer, value](const Status& s, Tensor copy) {
      transfer->Finish(s, std::move(copy));
    });
  }

 private:
  std::mutex mu_;
  bool done_ = false;
  Status status_;
  Tensor value_;
  std::vector<TransferFn> waiters_;
};

class Stack : public ResourceBase {
 public:
  static constexpr const char* kTypeName = "Stack";

  // max_size < 0: unbounded.
  Stack(std::string name, DataType dtype, int64_t max_size)
      : name_(std::move(name)), dtype_(dtype), max_size_(max_size) {}
  std::string DebugString() const override { return "stack " + name_; }

  // Pushes `elem`; with `swap` its copy to host memory starts once the element is in place.
  Status Push(const Tensor& elem, const Device* device, bool swap) {
    std::shared_ptr<Swap> swapped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      CFX_RETURN_IF_ERROR(CheckOpen());
      if (elem.dtype() != dtype_)
        return errors::InvalidArgument("stack ", name_, " holds ", DataTypeString(dtype_),
                                       "; cannot push a ", DataTypeString(elem.dtype()),
                                       " element");
      if (max_size_ >= 0 && static_cast<int64_t>(elements_.size()) >= max_size_)
        return errors::InvalidArgument(
            "stack ", name_, " is full: it already holds max_size = ", max_size_, " elements");
      if (swap) swapped = std::make_shared<Swap>();
      elements_.push_back({swap ? Tensor() : elem, device, swapped});
    }
    if (swapped != nullptr) Transfer::Start(swapped->to_host, device, nullptr, elem);
    return Status();
  }

  // Pops the top element and calls done(status, value) with it in `device`'s memory (inline
  // unless it has to come back from host memory). Starts bringing back the element below.
  void Pop(DataType expected, const Device* device, TransferFn done) {
    Entry entry;
    std::shared_ptr<Swap> next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Status s = CheckOpen();
      if (s.ok() && expected != dtype_)
        s = errors::InvalidArgument("stack ", name_, " holds ", DataTypeString(dtype_),
                                    "; this pop expects ", DataTypeString(expected));
      if (s.ok() && elements_.empty())
        s = errors::InvalidArgument("stack ", name_, " is empty: nothing to pop");
      if (!s.ok()) return done(s, Tensor());
      entry = std::move(elements_.back());
      elements_.pop_back();
      if (!elements_.empty() && elements_.back().swap != nullptr &&
          elements_.back().swap->to_device == nullptr) {
        next = elements_.back().swap;
        next->to_device = std::make_shared<Transfer>();
        next->prefetched_to = device;
      }
    }
    if (next != nullptr) Prefetch(next, device);
    Deliver(entry, device, std::move(done));
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    elements_.clear();
  }

 private:
  // A swapped element: its copy to host memory, and (once a pop prefetches it) its copy back to
  // the device `prefetched_to`.
  struct Swap {
    std::shared_ptr<Transfer> to_host = std::make_shared<Transfer>(), to_device;
    const Device* prefetched_to = nullptr;
  };
  struct Entry {
    Tensor value;                    // the pushed tensor, unless it is swapped
    const Device* device = nullptr;  // the pushing kernel's device
    std::shared_ptr<Swap> swap;      // null: not swapped
  };

  Status CheckOpen() const {
    if (closed_) return errors::InvalidArgument("stack ", name_, " has already been closed");
    return Status();
  }

  // Starts the copy of a swapped element back to `device` once it has reached host memory.
  static void Prefetch(const std::shared_ptr<Swap>& swap, const Device* device) {
    swap->to_host->WhenDone([swap, device](const Status& s, const Tensor& host) {
      if (!s.ok()) return swap->to_device->Finish(s, Tensor());
      Transfer::Start(swap->to_device, nullptr, device, host);
    });
  }

  // done(status, value in `device`'s memory) for a popped entry.
  void Deliver(const Entry& entry, const Device* device, TransferFn done) {
    // Never swapped and popped where it was pushed: the common case, at once.
    if (entry.swap == nullptr && entry.device == device) return done(Status(), entry.value);
    auto named = [name = name_, done](const Status& s, const Tensor& t) {
      if (!s.ok())
        return done(s.WithPrefix("stack " + name + ": bringing an element back: "), Tensor());
      done(s, t);
    };
    if (entry.swap == nullptr)  // a pop on another device copies it over
      return CopyTensor(entry.device, device, entry.value, {},
                        [named](const Status& s, Tensor t) { named(s, t); });
    if (entry.swap->to_device != nullptr && entry.swap->prefetched_to == device)
      return entry.swap->to_device->WhenDone(named);
    entry.swap->to_host->WhenDone([device, named](const Status& s, const Tensor& host) {
      if (!s.ok()) return named(s, Tensor());
      CopyTensor(nullptr, device, host, {}, [named](const Status& s, Tensor t) { named(s, t); });
    });
  }

  const std::string name_;
  const DataType dtype_;
  const int64_t max_size_;
  std::mutex mu_;
  bool closed_ = false;
  std::vector<Entry> elements_;
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
    if (max_size.dtype() != DT_INT32 || max_size.num_elements() != 1) {
      c->status = errors::InvalidArgument("max_size must be an int32 scalar, got ",
                                          DataTypeString(max_size.dtype()), " ",
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

// The stack named by input 0.
StatusOr<RefPtr<Stack>> StackOf(const KernelContext* c) {
  CFX_ASSIGN_OR_RETURN(ResourceHandle h, HandleFromInput(c, 0));
  CFX_ASSIGN_OR_RETURN(ResourceMgr * resources, StepResources(c));
  return resources->Lookup<Stack>(h.container, h.name);
}

class StackPushKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "swap_memory", &swap_memory_);
  }
  void Compute(KernelContext* c) override {
    c->status = [&]() -> Status {
      CFX_ASSIGN_OR_RETURN(RefPtr<Stack> stack, StackOf(c));
      const Tensor& elem = c->inputs[1];
      CFX_RETURN_IF_ERROR(
          stack->Push(elem, c->device, swap_memory_ && ShouldSwap(c->device, elem)));
      SetOutput(c, 0, elem);
      return Status();
    }();
  }

 private:
  bool swap_memory_ = false;
};

class StackPopKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "elem_type", &dtype_);
  }
  void ComputeAsync(KernelContext* c, AsyncDone done) override {
    auto stack = StackOf(c);
    if (!stack.ok()) {
      c->status = stack.status();
      return done();
    }
    (*stack)->Pop(dtype_, c->device, [c, done](const Status& s, const Tensor& elem) {
      if (s.ok())
        SetOutput(c, 0, elem);
      else
        c->SetStatus(s);
      done();
    });
  }

 private:
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
  const char* any = kAnyDeviceType;
  reg(BuiltinKernelDef<StackKernel>("StackV2", any, false, cheap, {"max_size", "handle"}));
  reg(BuiltinKernelDef<StackPushKernel>("StackPushV2", any, false, cheap, {"handle"}));
  reg(BuiltinKernelDef<StackPopKernel>("StackPopV2", any, true, cheap, {"handle"}));
  reg(BuiltinKernelDef<StackCloseKernel>("StackCloseV2", any, false, cheap, {"handle"}));
}

}  // namespace cfx::internal
