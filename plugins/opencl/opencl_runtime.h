// The OpenCL plugin's shared machinery: the device object, completion dispatch, the program
// cache, kernel launches and NumPy broadcasting as device-side index arithmetic.
//
// Adding a kernel family (e.g. kernels/reduction.cc):
//   1. Write its OpenCL C in one ProgramSource (a C++ raw string): every kernel of the family in
//      one program, because each program is compiled at run time (PoCL: LLVM, ~0.6 s for the
//      ~70 kernels of the element-wise program). Build options (-D...) make variants.
//      The source may use what kCommonSource defines (cfx_bcast, cfx_bcast_offsets, MAX_DIMS).
//   2. In the kernel class (registered with Plugin::AsyncKernel<K>(op, kDeviceType)
//      .TypeConstraint(...).Inexpensive(): a launch only enqueues):
//        sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
//          ... validate inputs, allocate outputs ...
//          if (n == 0) { done(); return sdk::Status(); }           // no zero-size NDRange
//          CFX_SDK_ASSIGN_OR_RETURN(KernelFunction* k,
//                                   GetKernel(ctx.device(), kMySource, "my_kernel_float"));
//          CFX_SDK_RETURN_IF_ERROR(
//              Enqueue(ctx, k, Elementwise1D(ctx.device(), n), {Mem(out), Mem(in), int32_t(n)}));
//          return CompleteAsync(ctx, done);    // done once enqueued on the host's compute stream
//        }
//      Elementwise1D rounds the global size up to whole work-groups of a fixed size, so the
//      kernel checks `if (i >= n) return;` (PoCL compiles a kernel once per work-group size:
//      letting the implementation choose would recompile for every new tensor size).
//      Several Enqueue calls may precede CompleteAsync (they run in order on the stream). An
//      error returned before CompleteAsync fails the kernel at once (the SDK calls done).
//      Scratch buffers come from ctx.AllocateTemp (Mem(temp.view())); dropping the TensorRef
//      right after enqueueing is safe: OpenCL frees a released buffer only once the commands
//      using it have finished. Arguments: cl_mem, int32_t, uint32_t, int64_t, float,
//      LocalMemory{bytes}, KernelArg::Struct(plain struct); Range2D / NDRange for 2-D launches
//      with explicit work-groups.
//   3. Register the family from opencl_plugin.cc (a Register<Family>Kernels(Plugin&) function
//      declared in kernels/kernels.h).
#ifndef CONFLUX_PLUGINS_OPENCL_OPENCL_RUNTIME_H_
#define CONFLUX_PLUGINS_OPENCL_OPENCL_RUNTIME_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "conflux/sdk.h"
#include "conflux/sdk/broadcast_plan.h"
#include "conflux/sdk/callback_thread.h"

namespace cfx::ocl {

inline constexpr const char* kDeviceType = "OPENCL";

// "CL_OUT_OF_RESOURCES" for a known error code, else "CL error -N".
std::string ClErrorName(cl_int err);
// INTERNAL (RESOURCE_EXHAUSTED for out-of-memory codes): "<where>: <what> failed: <CL name>".
sdk::Status ClError(cl_int err, const std::string& where, const std::string& what);

// One kernel function of a built program. Argument setting and enqueueing happen under `mu`
// (cl_kernel objects are not thread-safe; arguments are captured at enqueue time).
struct KernelFunction {
  cl_kernel kernel = nullptr;
  std::string name;
  std::mutex mu;
};

// Programs built on one device, each once per (source, build options). A failed build is kept
// too, so that every later request gets the same error (with the compiler's log) at once.
class ProgramCache {
 public:
  ProgramCache(cl_context context, cl_device_id device, std::string device_name)
      : context_(context), device_(device), device_name_(std::move(device_name)) {}
  ~ProgramCache();
  sdk::Result<KernelFunction*> Get(const char* source_name, const char* source_text,
                                   const std::string& options, const char* kernel_name);
  // Total build time so far and number of programs built, for logs and tests.
  double build_ms() const;
  int num_programs() const;

 private:
  struct Program {
    std::once_flag built;
    cl_program program = nullptr;
    sdk::Status status;
    std::mutex mu;  // guards kernels
    std::map<std::string, std::unique_ptr<KernelFunction>> kernels;
  };
  void Build(Program* p, const char* source_name, const char* source_text,
             const std::string& options);

  cl_context context_;
  cl_device_id device_;
  std::string device_name_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Program>> programs_;
  double build_ms_ = 0;
};

}  // namespace cfx::ocl

// One OpenCL device: its context, default in-order queue, dispatcher and programs.
struct cfx_device {
  int index = 0;
  std::string name;         // "OPENCL:0"
  std::string description;  // model, platform, memory
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;  // the default stream
  uint64_t max_alloc = 0;            // CL_DEVICE_MAX_MEM_ALLOC_SIZE
  size_t work_group = 64;            // the work-group size of 1-D element-wise launches
  std::unique_ptr<cfx::sdk::CallbackThread> dispatcher;  // runs completions
  std::unique_ptr<cfx::ocl::ProgramCache> programs;
};

// A stream: another in-order queue of the device.
struct cfx_stream {
  cl_command_queue queue = nullptr;
};

namespace cfx::ocl {

// The queue of `stream` on `dev` (NULL: the default stream).
inline cl_command_queue Queue(cfx_device* dev, cfx_stream* stream) {
  return stream != nullptr ? stream->queue : dev->queue;
}

// Calls fn(status) on the device's dispatcher thread once everything enqueued on `queue` so far
// has completed; status is an error when a command failed. On an enqueue error returns it and
// never calls fn.
sdk::Status WhenComplete(cfx_device* dev, cl_command_queue queue,
                         std::function<void(const sdk::Status&)> fn);

// ---- Kernels ----------------------------------------------------------------------------------

// Definitions every program gets in front of its own source: MAX_DIMS, cfx_bcast (the device
// mirror of BroadcastIndex) and cfx_bcast_offsets.
extern const char kCommonSource[];

// A program family: a name for logs and the cache key (unique per source text), and its OpenCL C
// text. Define one per family as a namespace-scope constant.
struct ProgramSource {
  const char* name;
  const char* text;
};

// Kernel `kernel_name` of `source` built for `dev` (kCommonSource prepended). A build failure is
// INTERNAL with the compiler's build log; an unknown kernel name is INTERNAL naming it.
sdk::Result<KernelFunction*> GetKernel(cfx_device* dev, const ProgramSource& source,
                                       const char* kernel_name, const std::string& options = "");

// The buffer of a tensor in device memory (its data pointer is the cl_mem).
inline cl_mem Mem(const sdk::Tensor& t) { return static_cast<cl_mem>(t.raw_data()); }

// __local memory of `bytes` for a kernel argument.
struct LocalMemory {
  size_t bytes;
};

// One kernel argument: a buffer, a scalar, a struct passed by value, or __local memory.
class KernelArg {
 public:
  KernelArg(cl_mem m) : size_(sizeof(cl_mem)) { Store(&m, sizeof(m)); }
  KernelArg(int32_t v) : size_(sizeof(v)) { Store(&v, sizeof(v)); }
  KernelArg(uint32_t v) : size_(sizeof(v)) { Store(&v, sizeof(v)); }
  KernelArg(int64_t v) : size_(sizeof(v)) { Store(&v, sizeof(v)); }
  KernelArg(float v) : size_(sizeof(v)) { Store(&v, sizeof(v)); }
  KernelArg(LocalMemory l) : size_(l.bytes), local_(true) {}
  // A struct by value (must match the OpenCL C layout; plain int32 fields are safe).
  template <typename T>
  static KernelArg Struct(const T& v) {
    KernelArg a;
    a.size_ = sizeof(T);
    a.big_ = std::make_shared<std::string>(reinterpret_cast<const char*>(&v), sizeof(T));
    return a;
  }
  size_t size() const { return size_; }
  const void* value() const {
    if (local_) return nullptr;
    return big_ ? static_cast<const void*>(big_->data()) : static_cast<const void*>(small_);
  }

 private:
  KernelArg() = default;
  void Store(const void* p, size_t n) { std::memcpy(small_, p, n); }
  size_t size_ = 0;
  bool local_ = false;
  alignas(8) unsigned char small_[8] = {};
  std::shared_ptr<std::string> big_;
};

// Work sizes: 1 to 3 dimensions; local = 0 lets the implementation choose.
struct NDRange {
  cl_uint dims = 1;
  size_t global[3] = {1, 1, 1};
  size_t local[3] = {0, 0, 0};
};
inline NDRange Range1D(size_t n) {
  NDRange r;
  r.global[0] = n;
  return r;
}
inline NDRange Range2D(size_t rows, size_t cols) {
  NDRange r;
  r.dims = 2;
  r.global[0] = cols;
  r.global[1] = rows;
  return r;
}

// n work-items rounded up to whole work-groups of the device's fixed 1-D size (n > 0); the
// kernel skips the items at and past n.
inline NDRange Elementwise1D(cfx_device* dev, int64_t n) {
  NDRange r;
  r.local[0] = dev->work_group;
  r.global[0] = (static_cast<size_t>(n) + dev->work_group - 1) / dev->work_group * dev->work_group;
  return r;
}

// Sets the arguments and enqueues `k` on the kernel's stream. Every global size must be > 0.
sdk::Status Enqueue(cfx_device* dev, cfx_stream* stream, KernelFunction* k, const NDRange& range,
                    const KernelArg* args, size_t num_args);
inline sdk::Status Enqueue(sdk::KernelContext& ctx, KernelFunction* k, const NDRange& range,
                           std::initializer_list<KernelArg> args) {
  return Enqueue(ctx.device(), ctx.stream(), k, range, args.begin(), args.size());
}
inline sdk::Status Enqueue(sdk::KernelContext& ctx, KernelFunction* k, const NDRange& range,
                           const std::vector<KernelArg>& args) {
  return Enqueue(ctx.device(), ctx.stream(), k, range, args.data(), args.size());
}

// Finishes an asynchronous kernel: `done` runs (on the dispatcher thread) once everything the
// kernel enqueued has completed, with an error if a command failed. Returns an enqueue error
// without calling done (the SDK then fails the kernel).
sdk::Status CompleteAsync(sdk::KernelContext& ctx, sdk::AsyncDone done);

// Fills `bytes` bytes of `mem` with copies of a 1, 2, 4 or 8-byte pattern (clEnqueueFillBuffer).
sdk::Status FillBuffer(sdk::KernelContext& ctx, cl_mem mem, const void* pattern,
                       size_t pattern_size, size_t bytes);

// ---- Broadcasting -----------------------------------------------------------------------------

inline constexpr int kMaxDims = 8;
inline constexpr int kMaxOperands = 3;

// The device-side index plan (same layout as cfx_bcast in kCommonSource): the SDK plan's collapsed
// output dims, row-major, and per operand the element stride along each (0 where it broadcasts).
struct BroadcastIndex {
  int32_t rank = 0;
  int32_t dims[kMaxDims] = {};
  int32_t strides[kMaxOperands][kMaxDims] = {};
};

struct Broadcast {
  sdk::Shape output_shape;
  int64_t num_elements = 0;
  BroadcastIndex index;
};

// NumPy broadcasting of 1 to kMaxOperands operands as the SDK plans it (sdk::PlanBroadcast: its
// InvalidArgument "Incompatible shapes: x [2,3] vs. y [4]" when they disagree), packed for the
// kernels. Unimplemented above 2^31-1 elements or more than kMaxDims collapsed dims.
sdk::Result<Broadcast> MakeBroadcast(std::initializer_list<sdk::BroadcastOperand> operands);

// OK when the kernel got exactly these input dtypes; else InvalidArgument naming the input.
sdk::Status ExpectInputs(const sdk::KernelContext& ctx, std::initializer_list<cfx_dtype> dtypes);
// The same for a count of inputs known only at run time (AddN's N).
sdk::Status ExpectInputs(const sdk::KernelContext& ctx, std::span<const cfx_dtype> dtypes);

// Logs one line through the host.
void Log(cfx_log_level level, const std::string& message);

}  // namespace cfx::ocl

#endif  // CONFLUX_PLUGINS_OPENCL_OPENCL_RUNTIME_H_
