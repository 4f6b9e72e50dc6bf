// Resolution of a placed graph's collective nodes (CollectiveReduceV2, CollectiveGatherV2,
// CollectiveBcastSendV2/RecvV2) before it is partitioned: each group (group_key) gets its ranks,
// one member per task, and each task's calls on a group get one order, the same on every task.
#ifndef CONFLUX_CORE_SRC_SESSION_COLLECTIVES_H_
#define CONFLUX_CORE_SRC_SESSION_COLLECTIVES_H_

#include <functional>
#include <vector>

#include "conflux/device.h"
#include "conflux/graph.h"

namespace cfx {

// For every collective node of `graph` (`device_of` indexed by Node::id(); `rank_of` gives the
// rank of the process that owns a device):
//  - group_size, group_key and instance_key must come from Const nodes;
//  - the members of a group (the nodes with its group_key) sit on group_size distinct ranks, and
//    each instance (group_key, instance_key) has one member per rank, all of one op (a broadcast:
//    one CollectiveBcastSendV2, the others CollectiveBcastRecvV2), with the same group_size;
//  - collectives are not in a conditional branch, where a member might skip a call that the
//    others make; inside a while loop, each runs in the loop's body (after its Switch) or
//    computes the loop's predicate, so it is done when the loop ends.
// It sets the nodes' _group_ranks (and _root_rank for broadcasts; kernels/collective_attrs.h) and
// chains each rank's members with control edges in (group_key, instance_key) order, across the
// groups of the same ranks (which share the transport's communicator), so that every member
// issues them in the same order. A while loop holding members counts as one block in that order,
// placed at its first member: control edges go into its Enter nodes and out of its Exit nodes,
// and it runs one iteration at a time (its Enter nodes' parallel_iterations becomes 1), as do the
// loops around it. Every member must run the loop as many times (the model's business). Errors
// are InvalidArgument naming the nodes.
//
// Between-graph replication (`replica_tasks` > 0, the number of tasks): the graph is this
// process's own, and the other members are in the other ranks' graphs. Every group then spans
// every task (group_size 1 or `replica_tasks`), the graph holds one member per instance, and a
// broadcast's receivers learn the sender's rank when the step runs.
Status ResolveCollectives(Graph* graph, const std::vector<Device*>& device_of,
                          const std::function<int(const Device*)>& rank_of, int replica_tasks = 0);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_SESSION_COLLECTIVES_H_
