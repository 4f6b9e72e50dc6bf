// The worker service (whitepaper §3.2.2, Fig. 3): what a task other than the chief does. It
// serves the chief's control messages in order — Open (create a Runtime for this task under the
// chief's config and report its devices), Register (build executors for this task's partitions
// of one signature), Run (run them for one step, with the step's remote rendezvous, and answer
// when done), Abort, Deregister, Ping, Close — until the chief process exits.
#ifndef CONFLUX_CORE_SRC_DISTRIBUTED_WORKER_H_
#define CONFLUX_CORE_SRC_DISTRIBUTED_WORKER_H_

#include <functional>
#include <memory>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "distributed/cluster.h"

namespace cfx::internal {

// Creates this task's Runtime (devices named after the task) for a config.
using TaskRuntimeFactory = std::function<StatusOr<std::unique_ptr<Runtime>>(const Config&)>;

// Serves until the chief sends Exit (returns OK) or the control channel fails (returns why).
// `own_config` is used when the chief's config came without its YAML text.
Status ServeWorker(ProcessGroup* group, const Config& own_config,
                   const TaskRuntimeFactory& make_runtime);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_DISTRIBUTED_WORKER_H_
