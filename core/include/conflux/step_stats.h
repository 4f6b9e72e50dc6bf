// StepStats: what each node did in one step, per device (RunMetadata::step_stats when a step
// runs with RunOptions::trace). The executor fills them; the cost model learns from them;
// traces (conflux/trace.h) are written from them.
#ifndef CONFLUX_STEP_STATS_H_
#define CONFLUX_STEP_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace cfx {

// What one node did in one step (times in microseconds since the Unix epoch).
struct NodeExecStats {
  std::string node_name;
  std::string op;
  int64_t start_us = 0;
  int64_t end_us = 0;
  uint64_t thread_id = 0;             // a small stable number per executor thread
  std::vector<int64_t> output_bytes;  // per output; -1 when the output was not produced
  std::vector<std::vector<int64_t>> output_shapes;
};

struct DeviceStepStats {
  std::string device;  // full device name
  std::vector<NodeExecStats> nodes;
};

struct StepStats {
  std::vector<DeviceStepStats> devices;
};

}  // namespace cfx

#endif  // CONFLUX_STEP_STATS_H_
