// The OPENCL device type: enumeration, buffers (cl_mem), copies, streams (in-order queues) and
// events (markers whose completion is dispatched on the device's dispatcher thread).
#include "opencl_device.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "opencl_runtime.h"

struct cfx_event {
  cl_event event = nullptr;
};

namespace cfx::ocl {
namespace {

struct FoundDevice {
  cl_platform_id platform;
  cl_device_id device;
  std::string platform_name;
  std::string device_name;
  cl_device_type type;
};

std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetPlatformInfo(p, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string DeviceString(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetDeviceInfo(d, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// Every device of every platform, or an explanation of why there are none.
std::vector<FoundDevice> Enumerate(std::string* why) {
  std::vector<FoundDevice> found;
  cl_uint num_platforms = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (err != CL_SUCCESS || num_platforms == 0) {
    *why = "no OpenCL platform found (" +
           (err != CL_SUCCESS ? ClErrorName(err) : std::string("0 platforms")) +
           "; the ICD loader reads /etc/OpenCL/vendors or OCL_ICD_VENDORS)";
    return found;
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  for (cl_platform_id p : platforms) {
    cl_uint num_devices = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices) != CL_SUCCESS ||
        num_devices == 0)
      continue;
    std::vector<cl_device_id> devices(num_devices);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, num_devices, devices.data(), nullptr);
    for (cl_device_id d : devices) {
      cl_device_type type = 0;
      clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
      found.push_back({p, d, PlatformString(p, CL_PLATFORM_NAME), DeviceString(d, CL_DEVICE_NAME),
                       type});
    }
  }
  if (found.empty())
    *why = std::to_string(num_platforms) + " OpenCL platform(s) but no device on any of them";
  return found;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsIndex(const std::string& s) {
  return !s.empty() && s.size() < 6 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit((unsigned char)c); });
}

// The devices that the options `platform`, `device` and `type` select, in enumeration order.
sdk::Result<std::vector<FoundDevice>> Select(const cfx_host_device_config* config) {
  std::string platform, device, type = "all";
  for (size_t i = 0; i < config->num_options; ++i) {
    std::string key = config->option_keys[i], value = config->option_values[i];
    if (key == "platform") {
      platform = value;
    } else if (key == "device") {
      device = value;
    } else if (key == "type") {
      type = Lower(value);
    } else {
      return sdk::InvalidArgument("devices.OPENCL.options: unknown key '", key,
                                  "' (expected platform, device or type)");
    }
  }
  cl_device_type want = CL_DEVICE_TYPE_ALL;
  if (type == "cpu") {
    want = CL_DEVICE_TYPE_CPU;
  } else if (type == "gpu") {
    want = CL_DEVICE_TYPE_GPU;
  } else if (type == "accelerator") {
    want = CL_DEVICE_TYPE_ACCELERATOR;
  } else if (type != "all") {
    return sdk::InvalidArgument("devices.OPENCL.options.type: expected all, cpu, gpu or "
                                "accelerator, got '",
                                type, "'");
  }
  std::string why;
  std::vector<FoundDevice> all = Enumerate(&why);
  if (all.empty()) return sdk::Status(CFX_UNAVAILABLE, why);
  // Platforms in order of first appearance, for `platform: <index>`.
  std::vector<cl_platform_id> platforms;
  for (const FoundDevice& f : all)
    if (std::find(platforms.begin(), platforms.end(), f.platform) == platforms.end())
      platforms.push_back(f.platform);
  std::vector<FoundDevice> selected;
  for (const FoundDevice& f : all) {
    if (!platform.empty()) {
      if (IsIndex(platform)) {
        size_t idx = static_cast<size_t>(std::atoi(platform.c_str()));
        if (idx >= platforms.size() || platforms[idx] != f.platform) continue;
      } else if (Lower(f.platform_name).find(Lower(platform)) == std::string::npos) {
        continue;
      }
    }
    if (want != CL_DEVICE_TYPE_ALL && (f.type & want) == 0) continue;
    selected.push_back(f);
  }
  if (!device.empty()) {
    std::vector<FoundDevice> by_device;
    if (IsIndex(device)) {
      size_t idx = static_cast<size_t>(std::atoi(device.c_str()));
      if (idx < selected.size()) by_device.push_back(selected[idx]);
    } else {
      for (const FoundDevice& f : selected)
        if (Lower(f.device_name).find(Lower(device)) != std::string::npos) by_device.push_back(f);
    }
    selected = std::move(by_device);
  }
  if (selected.empty()) {
    std::string have;
    for (const FoundDevice& f : all) have += "; '" + f.device_name + "' on '" + f.platform_name + "'";
    return sdk::Status(CFX_NOT_FOUND, "no OpenCL device matches platform='" + platform +
                                          "', device='" + device + "', type='" + type +
                                          "' (found" + have + ")");
  }
  return selected;
}

// ---- Device type functions ---------------------------------------------------------------------

int32_t Count(void*, char* why, size_t why_size) {
  std::string reason;
  std::vector<FoundDevice> all = Enumerate(&reason);
  if (all.empty() && why != nullptr && why_size > 0) std::snprintf(why, why_size, "%s", reason.c_str());
  return static_cast<int32_t>(all.size());
}

cfx_device* CreateDevice(void*, const cfx_host_device_config* config, cfx_status* status) {
  const std::string name = std::string(kDeviceType) + ":" + std::to_string(config->index);
  auto selected = Select(config);
  if (!selected.ok()) {
    selected.status().ExportTo(status);
    return nullptr;
  }
  if (static_cast<size_t>(config->index) >= selected->size()) {
    sdk::Status(CFX_NOT_FOUND, name + ": only " + std::to_string(selected->size()) +
                                   " OpenCL device(s) match the options")
        .ExportTo(status);
    return nullptr;
  }
  const FoundDevice& f = (*selected)[config->index];
  auto dev = std::make_unique<cfx_device>();
  dev->index = config->index;
  dev->name = name;
  dev->platform = f.platform;
  dev->id = f.device;
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(f.platform), 0};
  dev->context = clCreateContext(props, 1, &f.device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) {
    ClError(err, name, "clCreateContext for '" + f.device_name + "'").ExportTo(status);
    return nullptr;
  }
  dev->queue = clCreateCommandQueue(dev->context, f.device, 0, &err);
  if (err != CL_SUCCESS) {
    clReleaseContext(dev->context);
    ClError(err, name, "clCreateCommandQueue").ExportTo(status);
    return nullptr;
  }
  cl_ulong global_mem = 0, max_alloc = 0;
  clGetDeviceInfo(f.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(global_mem), &global_mem, nullptr);
  clGetDeviceInfo(f.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc), &max_alloc, nullptr);
  dev->max_alloc = max_alloc;
  size_t max_group = 0;
  clGetDeviceInfo(f.device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(max_group), &max_group, nullptr);
  if (max_group > 0) dev->work_group = std::min<size_t>(dev->work_group, max_group);
  dev->description = f.device_name + " (" + f.platform_name + ", " +
                     DeviceString(f.device, CL_DEVICE_VERSION) + "), " +
                     std::to_string(global_mem >> 20) + " MiB global memory";
  dev->dispatcher = std::make_unique<sdk::CallbackThread>();
  dev->programs = std::make_unique<ProgramCache>(dev->context, dev->id, name);
  return dev.release();
}

void DestroyDevice(void*, cfx_device* dev) {
  if (dev == nullptr) return;
  clFinish(dev->queue);
  dev->dispatcher.reset();  // waits for the completion callbacks still in flight
  dev->programs.reset();
  clReleaseCommandQueue(dev->queue);
  clReleaseContext(dev->context);
  delete dev;
}

void* Allocate(cfx_device* dev, cfx_memory_kind kind, size_t bytes, size_t alignment,
               cfx_status* status) {
  if (kind == CFX_MEMORY_HOST_PINNED) {
    alignment = std::max<size_t>(alignment, 64);
    size_t rounded = std::max<size_t>((bytes + alignment - 1) / alignment * alignment, alignment);
    void* p = std::aligned_alloc(alignment, rounded);
    if (p == nullptr)
      sdk::ResourceExhausted(dev->name, ": out of host memory allocating ", bytes,
                             " bytes of pinned memory")
          .ExportTo(status);
    return p;
  }
  // A zero-byte request still gets a distinct buffer.
  const size_t size = std::max<size_t>(bytes, 1);
  if (dev->max_alloc > 0 && size > dev->max_alloc) {
    sdk::ResourceExhausted(dev->name, ": cannot allocate ", bytes,
                           " bytes: the device allows at most ", dev->max_alloc,
                           " bytes per buffer")
        .ExportTo(status);
    return nullptr;
  }
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, size, nullptr, &err);
  if (err != CL_SUCCESS || mem == nullptr) {
    sdk::Status s = ClError(err, dev->name, "allocating " + std::to_string(bytes) + " bytes");
    sdk::Status(CFX_RESOURCE_EXHAUSTED, s.message()).ExportTo(status);
    return nullptr;
  }
  return mem;
}

void Deallocate(cfx_device*, cfx_memory_kind kind, void* ptr, size_t) {
  if (ptr == nullptr) return;
  if (kind == CFX_MEMORY_HOST_PINNED) {
    std::free(ptr);
  } else {
    // OpenCL frees the buffer once the commands already enqueued on it have finished.
    clReleaseMemObject(static_cast<cl_mem>(ptr));
  }
}

void CopyHostToDevice(cfx_device* dev, cfx_stream* stream, void* dst, size_t dst_offset,
                      const void* src, size_t bytes, cfx_status* status) {
  if (bytes == 0) return;
  // Blocking: the caller's host buffer is free to change once this returns.
  cl_int err = clEnqueueWriteBuffer(Queue(dev, stream), static_cast<cl_mem>(dst), CL_TRUE,
                                    dst_offset, bytes, src, 0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    ClError(err, dev->name,
            "copying " + std::to_string(bytes) + " bytes to the device at offset " +
                std::to_string(dst_offset))
        .ExportTo(status);
}

void CopyDeviceToHost(cfx_device* dev, cfx_stream* stream, void* dst, const void* src,
                      size_t src_offset, size_t bytes, cfx_status* status) {
  if (bytes == 0) return;
  cl_int err = clEnqueueReadBuffer(Queue(dev, stream), static_cast<cl_mem>(const_cast<void*>(src)),
                                   CL_TRUE, src_offset, bytes, dst, 0, nullptr, nullptr);
  if (err != CL_SUCCESS)
    ClError(err, dev->name,
            "copying " + std::to_string(bytes) + " bytes from the device at offset " +
                std::to_string(src_offset))
        .ExportTo(status);
}

void CopyDeviceToDevice(cfx_device* dev, cfx_stream* stream, void* dst, size_t dst_offset,
                        const void* src, size_t src_offset, size_t bytes, cfx_status* status) {
  if (bytes == 0) return;
  cl_int err = clEnqueueCopyBuffer(Queue(dev, stream), static_cast<cl_mem>(const_cast<void*>(src)),
                                   static_cast<cl_mem>(dst), src_offset, dst_offset, bytes, 0,
                                   nullptr, nullptr);
  if (err != CL_SUCCESS)
    ClError(err, dev->name, "copying " + std::to_string(bytes) + " bytes on the device")
        .ExportTo(status);
}

cfx_stream* StreamCreate(cfx_device* dev, cfx_status* status) {
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(dev->context, dev->id, 0, &err);
  if (err != CL_SUCCESS) {
    ClError(err, dev->name, "clCreateCommandQueue").ExportTo(status);
    return nullptr;
  }
  return new cfx_stream{q};
}

void StreamDestroy(cfx_device*, cfx_stream* stream) {
  if (stream == nullptr) return;
  clFinish(stream->queue);
  clReleaseCommandQueue(stream->queue);
  delete stream;
}

void StreamSynchronize(cfx_device* dev, cfx_stream* stream, cfx_status* status) {
  cl_int err = clFinish(Queue(dev, stream));
  if (err != CL_SUCCESS) ClError(err, dev->name, "clFinish").ExportTo(status);
}

void StreamThen(cfx_device* dev, cfx_stream* stream, cfx_stream_callback_fn cb, void* arg) {
  sdk::Status s = WhenComplete(dev, Queue(dev, stream), [cb, arg](const sdk::Status& st) {
    if (st.ok()) {
      cb(arg, nullptr);
    } else {
      sdk::HostStatus hs;
      st.ExportTo(hs.get());
      cb(arg, hs.get());
    }
  });
  if (!s.ok()) {
    sdk::HostStatus hs;
    s.ExportTo(hs.get());
    cb(arg, hs.get());
  }
}

cfx_event* EventCreate(cfx_device*, cfx_status*) { return new cfx_event{}; }

void EventDestroy(cfx_device*, cfx_event* e) {
  if (e == nullptr) return;
  if (e->event != nullptr) clReleaseEvent(e->event);
  delete e;
}

void EventRecord(cfx_device* dev, cfx_event* e, cfx_stream* stream, cfx_status* status) {
  cl_event ev = nullptr;
  cl_int err = clEnqueueMarkerWithWaitList(Queue(dev, stream), 0, nullptr, &ev);
  if (err != CL_SUCCESS) {
    ClError(err, dev->name, "clEnqueueMarkerWithWaitList").ExportTo(status);
    return;
  }
  clFlush(Queue(dev, stream));
  if (e->event != nullptr) clReleaseEvent(e->event);
  e->event = ev;
}

int EventQuery(cfx_device*, cfx_event* e) {
  if (e->event == nullptr) return 1;
  cl_int st = CL_COMPLETE;
  clGetEventInfo(e->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, nullptr);
  return st == CL_COMPLETE || st < 0 ? 1 : 0;
}

void EventSynchronize(cfx_device* dev, cfx_event* e, cfx_status* status) {
  if (e->event == nullptr) return;
  cl_int err = clWaitForEvents(1, &e->event);
  if (err != CL_SUCCESS) ClError(err, dev->name, "clWaitForEvents").ExportTo(status);
}

void StreamWaitEvent(cfx_device* dev, cfx_stream* stream, cfx_event* e, cfx_status* status) {
  if (e->event == nullptr) return;
  cl_int err = clEnqueueBarrierWithWaitList(Queue(dev, stream), 1, &e->event, nullptr);
  if (err != CL_SUCCESS) ClError(err, dev->name, "clEnqueueBarrierWithWaitList").ExportTo(status);
}

void Describe(cfx_device* dev, char* buf, size_t size) {
  std::snprintf(buf, size, "%s", dev->description.c_str());
}

const cfx_device_funcs kFuncs = [] {
  cfx_device_funcs f{};
  f.struct_size = sizeof(f);
  f.allocate = Allocate;
  f.deallocate = Deallocate;
  f.copy_host_to_device = CopyHostToDevice;
  f.copy_device_to_host = CopyDeviceToHost;
  f.copy_device_to_device = CopyDeviceToDevice;
  f.stream_create = StreamCreate;
  f.stream_destroy = StreamDestroy;
  f.stream_synchronize = StreamSynchronize;
  f.stream_then = StreamThen;
  f.event_create = EventCreate;
  f.event_destroy = EventDestroy;
  f.event_record = EventRecord;
  f.event_query = EventQuery;
  f.event_synchronize = EventSynchronize;
  f.stream_wait_event = StreamWaitEvent;
  f.describe = Describe;
  return f;
}();

const cfx_device_type_desc kDesc = [] {
  cfx_device_type_desc d{};
  d.struct_size = sizeof(d);
  d.type = kDeviceType;
  d.host_addressable = 0;  // even on a CPU platform: buffers are cl_mem handles
  d.count = Count;
  d.create_device = CreateDevice;
  d.destroy_device = DestroyDevice;
  d.funcs = &kFuncs;
  return d;
}();

}  // namespace

const cfx_device_type_desc* OpenClDeviceType() { return &kDesc; }

}  // namespace cfx::ocl
