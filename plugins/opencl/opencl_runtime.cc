// The OpenCL plugin's shared machinery (see opencl_runtime.h).
#include "opencl_runtime.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <span>
#include <utility>
#include <vector>

namespace cfx::ocl {

std::string ClErrorName(cl_int err) {
  switch (err) {
#define CFX_CL_ERROR(e) \
  case e:               \
    return #e;
    CFX_CL_ERROR(CL_DEVICE_NOT_FOUND)
    CFX_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    CFX_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    CFX_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    CFX_CL_ERROR(CL_OUT_OF_RESOURCES)
    CFX_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    CFX_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    CFX_CL_ERROR(CL_INVALID_VALUE)
    CFX_CL_ERROR(CL_INVALID_DEVICE)
    CFX_CL_ERROR(CL_INVALID_CONTEXT)
    CFX_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    CFX_CL_ERROR(CL_INVALID_MEM_OBJECT)
    CFX_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    CFX_CL_ERROR(CL_INVALID_PROGRAM)
    CFX_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    CFX_CL_ERROR(CL_INVALID_KERNEL_NAME)
    CFX_CL_ERROR(CL_INVALID_KERNEL)
    CFX_CL_ERROR(CL_INVALID_ARG_INDEX)
    CFX_CL_ERROR(CL_INVALID_ARG_VALUE)
    CFX_CL_ERROR(CL_INVALID_ARG_SIZE)
    CFX_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    CFX_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    CFX_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    CFX_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    CFX_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    CFX_CL_ERROR(CL_INVALID_EVENT)
    CFX_CL_ERROR(CL_INVALID_OPERATION)
    CFX_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    CFX_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef CFX_CL_ERROR
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "CL error " + std::to_string(err);
  }
}

sdk::Status ClError(cl_int err, const std::string& where, const std::string& what) {
  const bool oom = err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY ||
                   err == CL_MEM_OBJECT_ALLOCATION_FAILURE;
  return sdk::Status(oom ? CFX_RESOURCE_EXHAUSTED : CFX_INTERNAL,
                     where + ": " + what + " failed: " + ClErrorName(err));
}

void Log(cfx_log_level level, const std::string& message) {
  if (sdk::Host().core->log != nullptr) sdk::Host().core->log(level, message.c_str());
}

// ---- Completion -------------------------------------------------------------------------------

namespace {

struct PendingCompletion {
  cfx_device* dev;
  std::function<void(const sdk::Status&)> fn;
};

void CL_CALLBACK OnEventComplete(cl_event event, cl_int exec_status, void* arg) {
  auto* p = static_cast<PendingCompletion*>(arg);
  // No OpenCL calls that may block here: hand everything to the dispatcher thread.
  p->dev->dispatcher->Post(
      [p, event, exec_status] {
        clReleaseEvent(event);
        sdk::Status s;
        if (exec_status < 0)
          s = ClError(exec_status, p->dev->name, "a command enqueued before this point");
        p->fn(s);
        delete p;
      },
      /*expected=*/true);
}

}  // namespace

sdk::Status WhenComplete(cfx_device* dev, cl_command_queue queue,
                         std::function<void(const sdk::Status&)> fn) {
  cl_event event = nullptr;
  cl_int err = clEnqueueMarkerWithWaitList(queue, 0, nullptr, &event);
  if (err != CL_SUCCESS) return ClError(err, dev->name, "clEnqueueMarkerWithWaitList");
  auto* pending = new PendingCompletion{dev, std::move(fn)};
  dev->dispatcher->Expect();
  err = clSetEventCallback(event, CL_COMPLETE, &OnEventComplete, pending);
  if (err != CL_SUCCESS) {
    // Nothing will call back: undo the expectation through an empty post.
    dev->dispatcher->Post([] {}, /*expected=*/true);
    delete pending;
    clReleaseEvent(event);
    return ClError(err, dev->name, "clSetEventCallback");
  }
  err = clFlush(queue);
  if (err != CL_SUCCESS) return ClError(err, dev->name, "clFlush");
  return sdk::Status();
}

sdk::Status CompleteAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
  cfx_device* dev = ctx.device();
  cl_command_queue queue = Queue(dev, ctx.stream());
  if (ctx.stream() != nullptr) {
    // The host's compute stream: it orders every later kernel of the device behind this one,
    // and whatever reads the results elsewhere waits for an event recorded on it. So the kernel
    // is done once enqueued; its successors do not wait for a completion callback. (An error
    // of the running kernel surfaces at the next wait on the queue.)
    cl_int err = clFlush(queue);
    if (err != CL_SUCCESS) return ClError(err, dev->name, "clFlush");
    done();
    return sdk::Status();
  }
  // The default queue (a host that gives no stream): done once the work has completed.
  return WhenComplete(dev, queue, [done](const sdk::Status& s) { done(s); });
}

sdk::Status FillBuffer(sdk::KernelContext& ctx, cl_mem mem, const void* pattern,
                       size_t pattern_size, size_t bytes) {
  if (bytes == 0) return sdk::Status();
  cfx_device* dev = ctx.device();
  cl_int err = clEnqueueFillBuffer(Queue(dev, ctx.stream()), mem, pattern, pattern_size, 0, bytes,
                                   0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    return ClError(err, dev->name, "clEnqueueFillBuffer of " + std::to_string(bytes) + " bytes");
  return sdk::Status();
}

// ---- Programs ---------------------------------------------------------------------------------

const char kCommonSource[] = R"CLC(
#define MAX_DIMS 8
typedef struct {
  int rank;
  int dims[MAX_DIMS];
  int strides[3][MAX_DIMS];
} cfx_bcast;

/* Element offsets of operands 0..2 for output element i. */
inline void cfx_bcast_offsets(const cfx_bcast* b, int i, int* o0, int* o1, int* o2) {
  int a = 0, c = 0, d = 0;
  for (int k = b->rank - 1; k >= 0; --k) {
    int n = b->dims[k];
    int q = i % n;
    i /= n;
    a += q * b->strides[0][k];
    c += q * b->strides[1][k];
    d += q * b->strides[2][k];
  }
  *o0 = a;
  *o1 = c;
  *o2 = d;
}
)CLC";

ProgramCache::~ProgramCache() {
  for (auto& [key, p] : programs_) {
    for (auto& [name, k] : p->kernels) clReleaseKernel(k->kernel);
    if (p->program != nullptr) clReleaseProgram(p->program);
  }
}

double ProgramCache::build_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  return build_ms_;
}

int ProgramCache::num_programs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(programs_.size());
}

void ProgramCache::Build(Program* p, const char* source_name, const char* source_text,
                         const std::string& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::string what = "program '" + std::string(source_name) + "'";
  const char* parts[] = {kCommonSource, source_text};
  cl_int err = CL_SUCCESS;
  p->program = clCreateProgramWithSource(context_, 2, parts, nullptr, &err);
  if (err != CL_SUCCESS) {
    p->status = ClError(err, device_name_, "clCreateProgramWithSource for " + what);
    return;
  }
  err = clBuildProgram(p->program, 1, &device_, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t size = 0;
    clGetProgramBuildInfo(p->program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    if (size > 0)
      clGetProgramBuildInfo(p->program, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    p->status = sdk::Internal(device_name_, ": building OpenCL ", what,
                              options.empty() ? "" : " with options '" + options + "'", " failed (",
                              ClErrorName(err), "); build log:\n", log);
    clReleaseProgram(p->program);
    p->program = nullptr;
    return;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    build_ms_ += ms;
  }
  Log(CFX_LOG_INFO, device_name_ + ": built OpenCL " + what + " in " +
                        std::to_string(static_cast<int>(ms)) + " ms");
}

sdk::Result<KernelFunction*> ProgramCache::Get(const char* source_name, const char* source_text,
                                               const std::string& options,
                                               const char* kernel_name) {
  Program* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = programs_[{source_name, options}];
    if (!slot) slot = std::make_unique<Program>();
    p = slot.get();
  }
  std::call_once(p->built, [&] { Build(p, source_name, source_text, options); });
  if (!p->status.ok()) return p->status;
  std::lock_guard<std::mutex> lock(p->mu);
  auto& k = p->kernels[kernel_name];
  if (!k) {
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(p->program, kernel_name, &err);
    if (err != CL_SUCCESS) {
      p->kernels.erase(kernel_name);
      return ClError(err, device_name_,
                     "clCreateKernel for kernel '" + std::string(kernel_name) + "' of program '" +
                         source_name + "'");
    }
    k = std::make_unique<KernelFunction>();
    k->kernel = kernel;
    k->name = kernel_name;
  }
  return k.get();
}

sdk::Result<KernelFunction*> GetKernel(cfx_device* dev, const ProgramSource& source,
                                       const char* kernel_name, const std::string& options) {
  return dev->programs->Get(source.name, source.text, options, kernel_name);
}

sdk::Status Enqueue(cfx_device* dev, cfx_stream* stream, KernelFunction* k, const NDRange& range,
                    const KernelArg* args, size_t num_args) {
  for (cl_uint d = 0; d < range.dims; ++d) {
    if (range.global[d] == 0)
      return sdk::Internal(dev->name, ": kernel '", k->name,
                           "' enqueued with an empty range (skip empty work before enqueueing)");
  }
  bool has_local = false;
  for (cl_uint d = 0; d < range.dims; ++d) has_local |= range.local[d] != 0;
  std::lock_guard<std::mutex> lock(k->mu);
  cl_uint i = 0;
  for (const KernelArg& a : std::span<const KernelArg>(args, num_args)) {
    cl_int err = clSetKernelArg(k->kernel, i, a.size(), a.value());
    if (err != CL_SUCCESS)
      return ClError(err, dev->name,
                     "clSetKernelArg " + std::to_string(i) + " of kernel '" + k->name + "'");
    ++i;
  }
  cl_int err =
      clEnqueueNDRangeKernel(Queue(dev, stream), k->kernel, range.dims, nullptr, range.global,
                             has_local ? range.local : nullptr, 0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    return ClError(err, dev->name, "clEnqueueNDRangeKernel of kernel '" + k->name + "'");
  return sdk::Status();
}

// ---- Broadcasting -----------------------------------------------------------------------------

sdk::Result<Broadcast> MakeBroadcast(std::initializer_list<sdk::BroadcastOperand> operands) {
  if (operands.size() > static_cast<size_t>(kMaxOperands))
    return sdk::Internal("MakeBroadcast got ", operands.size(), " operands; expected 1 to ",
                         kMaxOperands);
  CFX_SDK_ASSIGN_OR_RETURN(sdk::BroadcastPlan plan, sdk::PlanBroadcast(operands));
  Broadcast b;
  b.output_shape = std::move(plan.output_shape);
  b.num_elements = plan.num_elements;
  if (b.num_elements == 0) return b;
  if (b.num_elements > INT32_MAX)
    return sdk::Unimplemented("element-wise ops on OpenCL take at most 2^31-1 elements, got ",
                              b.num_elements, " (shape ", sdk::ShapeString(b.output_shape), ")");
  if (plan.dims.size() > static_cast<size_t>(kMaxDims))
    return sdk::Unimplemented("broadcasting on OpenCL handles at most ", kMaxDims,
                              " dimensions after merging, got ", plan.dims.size());
  // Every dim and stride fits in int32: none exceeds the element count.
  b.index.rank = static_cast<int32_t>(plan.dims.size());
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    b.index.dims[d] = static_cast<int32_t>(plan.dims[d]);
    for (size_t k = 0; k < plan.strides.size(); ++k)
      b.index.strides[k][d] = static_cast<int32_t>(plan.strides[k][d]);
  }
  return b;
}

sdk::Status ExpectInputs(const sdk::KernelContext& ctx, std::initializer_list<cfx_dtype> dtypes) {
  return ExpectInputs(ctx, std::span<const cfx_dtype>(dtypes.begin(), dtypes.size()));
}

sdk::Status ExpectInputs(const sdk::KernelContext& ctx, std::span<const cfx_dtype> dtypes) {
  if (ctx.num_inputs() != static_cast<int>(dtypes.size()))
    return sdk::InvalidArgument("expected ", dtypes.size(), " inputs, got ", ctx.num_inputs());
  int i = 0;
  for (cfx_dtype d : dtypes) {
    cfx_dtype got = ctx.input(i).dtype();
    if (got != d)
      return sdk::InvalidArgument("input ", i, " must be ", sdk::DTypeName(d), ", got ",
                                  sdk::DTypeName(got));
    ++i;
  }
  return sdk::Status();
}

}  // namespace cfx::ocl
