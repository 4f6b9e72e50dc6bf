// The Runtime of the fuzz targets that run kernels (checkpoint, graph_run): the default config's
// plugins (CPU, ops-nn) from the build tree, one CPU device with a memory_limit, few threads (a
// fuzzer runs one input at a time, and -jobs runs several fuzzers side by side) and quiet logs.
#ifndef CONFLUX_TESTS_FUZZ_FUZZ_RUNTIME_H_
#define CONFLUX_TESTS_FUZZ_FUZZ_RUNTIME_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "conflux/config.h"
#include "conflux/runtime.h"

namespace cfx::fuzz {

// What an input may allocate on the CPU device: beyond it, RESOURCE_EXHAUSTED.
inline constexpr int64_t kMemoryLimit = int64_t{256} << 20;

inline Config FuzzConfig() {
  Config config = Config::Default();
  config.plugin_paths.insert(config.plugin_paths.begin(), CONFLUX_BUILD_PLUGIN_DIR);
  config.devices["CPU"].memory_limit = kMemoryLimit;
  // The graph's constants, decoded before any kernel runs, under the same bound.
  config.limits.max_constant_bytes = kMemoryLimit;
  config.intra_op_threads = 1;
  config.inter_op_threads = 2;
  config.log_level = "error";
  return config;
}

// The graph limits of the targets that run whole graphs: `graph_bytes` and `nodes`, messages
// nested at most 64 deep, lists of at most 65,536.
inline void SetGraphLimits(Config* config, int64_t graph_bytes, int64_t nodes) {
  config->limits.max_graph_bytes = graph_bytes;
  config->limits.max_nodes = nodes;
  config->limits.max_nesting_depth = 64;
  config->limits.max_attr_list_length = 65536;
}

// FuzzConfig with the CPU plugin alone: for targets whose kernels are the core's or the CPU
// plugin's (checkpoint, records).
inline Config CpuOnlyFuzzConfig() {
  Config config = FuzzConfig();
  std::erase_if(config.plugins, [](const PluginSpec& p) { return p.name != "cpu"; });
  return config;
}

// Runtime::Create, or an abort naming `target` and the error: without its runtime a target
// cannot run at all.
inline std::unique_ptr<Runtime> CreateRuntimeOrDie(const Config& config, const char* target) {
  auto runtime = Runtime::Create(config);
  if (!runtime.ok()) {
    std::fprintf(stderr, "%s: cannot create the runtime: %s\n", target,
                 runtime.status().ToString().c_str());
    std::abort();
  }
  return std::move(runtime).value();
}

}  // namespace cfx::fuzz

#endif  // CONFLUX_TESTS_FUZZ_FUZZ_RUNTIME_H_
