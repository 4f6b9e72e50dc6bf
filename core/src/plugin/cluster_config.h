// Resolving the `cluster:` section of a config (conflux/config.h): which task each rank runs.
//
// One resolution serves two callers that name a problem's place differently: the config parser
// (the file's line of the entry at fault) and ClusterConfig::Resolve (the section's source, for
// a ClusterConfig built in code). Stateless; thread-safe.
#ifndef CONFLUX_CORE_SRC_PLUGIN_CLUSTER_CONFIG_H_
#define CONFLUX_CORE_SRC_PLUGIN_CLUSTER_CONFIG_H_

#include <string>
#include <vector>

#include "conflux/config.h"
#include "conflux/status.h"

namespace cfx::internal {

// The part of a `cluster:` section that a problem is about.
struct ClusterSpot {
  enum Kind { kJobs, kJobName, kJobTasks, kChief, kRanks, kRank };
  Kind kind = kJobs;
  int index = 0;  // which job (kJobName, kJobTasks) or entry of `ranks` (kRank)

  // The key path: "cluster.jobs", "cluster.jobs[1].name", "cluster.jobs[1].tasks",
  // "cluster.chief", "cluster.ranks", "cluster.ranks[2]".
  std::string Path() const;
};

struct ResolvedCluster {
  std::vector<ClusterTask> tasks;  // by rank
  int chief_rank = 0;
};

// The tasks of `cluster` by rank (the rule ClusterConfig::ranks states) and the chief's rank.
// On failure: InvalidArgument whose message says what is wrong and what was expected, but not
// where; *spot says where.
StatusOr<ResolvedCluster> ResolveCluster(const ClusterConfig& cluster, ClusterSpot* spot);

// True for a job name as TensorFlow writes them: [a-z][a-z0-9_]*.
bool IsJobName(const std::string& name);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_PLUGIN_CLUSTER_CONFIG_H_
