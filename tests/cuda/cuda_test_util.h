// Helpers of the CUDA tests: a Runtime with the CPU and CUDA plugins (devices CPU:0 and, when
// this machine has a GPU, GPU:0), and a skip with the plugin's reason when it has none.
#ifndef CONFLUX_TESTS_CUDA_CUDA_TEST_UTIL_H_
#define CONFLUX_TESTS_CUDA_CUDA_TEST_UTIL_H_

#include <string>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "kernel_test_util.h"

namespace cfx::test {

// A config with the cpu, ops-nn and cuda plugins from the build tree; `gpu_settings` is spliced
// into devices.GPU (e.g. "memory_limit: 1MiB").
inline StatusOr<std::unique_ptr<Runtime>> MakeCudaRuntime(const std::string& gpu_settings = "",
                                                          bool required = false) {
  std::string yaml =
      "plugins:\n  - name: cpu\n  - name: ops-nn\n  - name: cuda\ndevices:\n  CPU:\n    count: 1\n"
      "  GPU:\n    count: 1\n    required: " +
      std::string(required ? "true" : "false") + "\n";
  if (!gpu_settings.empty()) yaml += "    " + gpu_settings + "\n";
  CFX_ASSIGN_OR_RETURN(Config config, Config::FromString(yaml, "cuda_test.yaml"));
  config.plugin_paths.insert(config.plugin_paths.begin(), BuildPluginDir());
  return Runtime::Create(config);
}

// The shared runtime of the CUDA tests (created once; aborts the test when that fails).
inline Runtime& CudaRuntime() {
  static Runtime* rt = [] {
    auto r = MakeCudaRuntime();
    if (!r.ok()) {
      ADD_FAILURE() << "cannot create the CUDA test runtime: " << r.status();
      std::abort();
    }
    return std::move(r).value().release();
  }();
  return *rt;
}

// GPU:0 of the shared runtime, or null when this machine has none.
inline Device* GpuDevice() {
  auto d = CudaRuntime().FindDevice("GPU:0");
  return d.ok() ? *d : nullptr;
}

// Why there is no GPU, from the runtime's notes ("" when there is one).
inline std::string NoGpuReason() {
  for (const auto& [type, why] : CudaRuntime().device_type_notes())
    if (type == "GPU") return why;
  return "";
}

}  // namespace cfx::test

#define SKIP_WITHOUT_GPU()                                           \
  do {                                                               \
    if (::cfx::test::GpuDevice() == nullptr)                         \
      GTEST_SKIP() << "no GPU here: " << ::cfx::test::NoGpuReason(); \
  } while (0)

#endif  // CONFLUX_TESTS_CUDA_CUDA_TEST_UTIL_H_
