// Loading cuDNN with dlopen (see cudnn_api.h).
#include "cudnn_api.h"

#include <dlfcn.h>

#include <vector>

namespace cfx::cuda {
namespace {

constexpr const char* kSoname = "libcudnn.so.9";

// Everything LoadCudnn found, kept for the life of the process (the library is never closed:
// handles made from it may live until exit).
struct Loaded {
  CudnnApi api;
  std::string why;
  bool ok = false;
};

// Opens `path` and fills `api`; false with the reason in *why.
bool Open(const std::string& path, CudnnApi* api, std::string* why) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    *why = err != nullptr ? err : path + ": cannot be opened";
    return false;
  }
  bool complete = true;
#define CFX_CUDNN_FN(name)                                                                   \
  api->name = reinterpret_cast<decltype(api->name)>(dlsym(lib, #name));                      \
  if (api->name == nullptr && complete) {                                                    \
    *why = path + " has no " #name " (cuDNN " + std::to_string(CUDNN_MAJOR) + " is needed)"; \
    complete = false;                                                                        \
  }
#include "cudnn_functions.inc"
#undef CFX_CUDNN_FN
  if (!complete) {
    dlclose(lib);
    return false;
  }
  api->version = api->cudnnGetVersion();
  if (api->version / 10000 != CUDNN_MAJOR) {
    *why = path + " is cuDNN " + std::to_string(api->version) + "; the plugin needs major " +
           std::to_string(CUDNN_MAJOR);
    dlclose(lib);
    return false;
  }
  api->path = path;
  return true;
}

Loaded& State() {
  static Loaded* s = new Loaded;
  return *s;
}

}  // namespace

const CudnnApi* LoadCudnn(const std::string& library, std::string* why) {
  static std::once_flag once;
  std::call_once(once, [&library] {
    Loaded& s = State();
    std::vector<std::string> candidates;
    if (!library.empty()) {
      candidates.push_back(library);
    } else {
      candidates.push_back(kSoname);
#ifdef CONFLUX_CUDNN_DIR
      candidates.push_back(std::string(CONFLUX_CUDNN_DIR) + "/" + kSoname);
#endif
    }
    std::string reasons;
    for (const std::string& path : candidates) {
      std::string reason;
      if (Open(path, &s.api, &reason)) {
        s.ok = true;
        return;
      }
      reasons += (reasons.empty() ? "" : "; ") + reason;
    }
    s.why = "cuDNN not loaded (" + reasons + ")";
  });
  if (!State().ok) {
    if (why != nullptr) *why = State().why;
    return nullptr;
  }
  return &State().api;
}

const CudnnApi& Cudnn() { return State().api; }

sdk::Status CudnnCheck(cudnnStatus_t st, const std::string& where, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return sdk::Status();
  const cfx_code code = st == CUDNN_STATUS_ALLOC_FAILED ? CFX_RESOURCE_EXHAUSTED : CFX_INTERNAL;
  const char* name =
      Cudnn().cudnnGetErrorString != nullptr ? Cudnn().cudnnGetErrorString(st) : "a cuDNN error";
  return sdk::Status(code, where + ": " + what + " failed: " + name + " (status " +
                               std::to_string(static_cast<int>(st)) + ")");
}

sdk::Result<CudnnHandle*> CudnnFor(cfx_device* dev, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(dev->dnn_mu);
  auto it = dev->dnn.find(stream);
  if (it != dev->dnn.end()) return it->second.get();
  CFX_SDK_RETURN_IF_ERROR(DeviceScope(dev));
  cudnnHandle_t h = nullptr;
  CFX_SDK_RETURN_IF_ERROR(CudnnCheck(Cudnn().cudnnCreate(&h), dev->name, "cudnnCreate"));
  std::shared_ptr<CudnnHandle> handle(new CudnnHandle, [](CudnnHandle* p) {
    Cudnn().cudnnDestroy(p->handle);
    delete p;
  });
  handle->handle = h;
  CFX_SDK_RETURN_IF_ERROR(
      CudnnCheck(Cudnn().cudnnSetStream(h, stream), dev->name, "cudnnSetStream"));
  CudnnHandle* raw = handle.get();
  dev->dnn.emplace(stream, std::move(handle));
  return raw;
}

}  // namespace cfx::cuda
