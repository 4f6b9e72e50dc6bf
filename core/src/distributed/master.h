// The master's side of the partitions that run in other tasks (whitepaper §3.2.2, Fig. 3;
// TensorFlow's RegisterGraph/RunGraph): registered once per signature with each task that has
// some, run for each step with the step's id, aborted everywhere on the first error.
#ifndef CONFLUX_CORE_SRC_DISTRIBUTED_MASTER_H_
#define CONFLUX_CORE_SRC_DISTRIBUTED_MASTER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/step_stats.h"
#include "distributed/cluster.h"

namespace cfx::internal {

class RemoteGraphs {
 public:
  // Partitions by rank: (full device name, partition graph). Registers each task's partitions
  // with it and waits for every answer; the error names the task.
  static StatusOr<std::unique_ptr<RemoteGraphs>> Register(
      Cluster* cluster, const std::map<int, std::vector<std::pair<std::string, GraphDef>>>& parts);
  ~RemoteGraphs();  // deregisters

  using Done = std::function<void(const Status&, std::vector<DeviceStepStats>)>;
  // Starts step `step_id` in every task that has partitions; `done` once each has answered,
  // with the first error (naming its task) and the tasks' stats when `collect_stats`.
  void RunAsync(int64_t step_id, bool collect_stats, Done done);
  // Tells every task of the step to abort it with `why`.
  void Abort(int64_t step_id, const Status& why);
  bool empty() const { return ranks_.empty(); }

 private:
  RemoteGraphs(Cluster* cluster, int64_t handle) : cluster_(cluster), handle_(handle) {}
  Cluster* cluster_;
  int64_t handle_;
  std::vector<int> ranks_;
};

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_DISTRIBUTED_MASTER_H_
