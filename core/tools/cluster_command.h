// `conflux cluster`: the cluster a config describes, resolved: which task and devices each MPI
// rank gets, and the mpirun command line that launches it. Reads only the config: no plugin is
// loaded, so it works where the transport plugin is not installed.
#ifndef CONFLUX_CORE_TOOLS_CLUSTER_COMMAND_H_
#define CONFLUX_CORE_TOOLS_CLUSTER_COMMAND_H_

#include <string>

#include "conflux/config.h"
#include "conflux/status.h"

namespace cfx {

// The report on `config`, read from `config_name` (a path, or how the built-in config is called)
// and launched as `program` (argv[0]), e.g.
//
//   config/examples/cluster-3.yaml:19: a cluster of 3 tasks, transport mpi (chunk_bytes=64MiB)
//     rank 0  /job:worker/replica:0/task:0  (chief)  CPU x1
//     rank 1  /job:ps/replica:0/task:0               CPU x1
//     ...
//   step timeout: 1m; heartbeat: every 1s, a peer is dead after 10s without an answer
//   launch: mpirun -n 3 conflux run GRAPH --config config/examples/cluster-3.yaml
//
// or a line saying that the config describes a single process. Fails only when the cluster does
// not resolve (ClusterConfig::Resolve's error).
StatusOr<std::string> DescribeCluster(const Config& config, const std::string& config_name,
                                      const std::string& program);

}  // namespace cfx

#endif  // CONFLUX_CORE_TOOLS_CLUSTER_COMMAND_H_
