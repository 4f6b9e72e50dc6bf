// Synchronous data-parallel training over the tasks of a cluster (whitepaper §7, Fig. 7 top):
// one replica of the model per task, each on its own batches, gradients averaged by all-reduce
// (CollectiveReduceV2 over the cluster transport's collectives) and applied to every replica's
// own copy of the variables, which therefore stay identical. Without a cluster there is one
// replica and no collective.
//
//   DataParallel dp(root);                      // one replica per task of job "worker"
//   AdamOptimizer adam(1e-3f);
//   DistributedOptimizer opt(&adam, dp);        // wraps any Optimizer, as Horovod's does
//   std::vector<Output> losses;
//   for (int r = 0; r < dp.num_replicas(); ++r)
//     losses.push_back(BuildModel(dp.ReplicaScope(r), ...));
//   Operation train = opt.Minimize(root, losses, GlobalStep(root));
//   Operation sync = dp.BroadcastVariables(root);  // run once after initializing or restoring
//
// Gradients are all-reduced in buckets of up to `cluster.fusion_bytes` (tensor fusion: small
// gradients are concatenated into one reduction; one of 1 MiB or more goes alone, reduced in
// place), last layer first: the backward pass produces those first, so their reduction overlaps
// the rest of the backward pass. With
// `cluster.compression` (truncate16 or half) float32 gradients are reduced as bfloat16 or half
// (Horovod's fp16 compression): half the bytes, the same values on every replica.
#ifndef CONFLUX_CC_DISTRIBUTED_H_
#define CONFLUX_CC_DISTRIBUTED_H_

#include <memory>
#include <string>
#include <vector>

#include "conflux/cc/optimizers.h"
#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"
#include "conflux/cc/variables.h"

namespace cfx {

class DataParallel {
 public:
  // One replica per task of `job` in the runtime's cluster (config `cluster.jobs`), or one
  // replica on the default device when the runtime has no cluster. An unknown job is an error of
  // the scope.
  explicit DataParallel(const Scope& root, const std::string& job = "worker");

  // The replicas this graph builds: one per task of the job, or under between-graph replication
  // (cluster.replication) one, this task's, whose program builds it.
  int num_replicas() const { return static_cast<int>(devices_.size()); }
  // The replicas that average their gradients: every task of the job (of the cluster, between
  // graphs).
  int group_size() const { return group_size_; }
  // Whether this process runs the chief's replica: always in graph; between graphs, on the
  // chief's task only. Its variables are the ones BroadcastVariables hands out; it is the one to
  // save checkpoints and write summaries.
  bool is_chief() const { return broadcast_source_; }
  // Replica r's task ("/job:worker/replica:0/task:1"); "" for the one replica without a cluster.
  const std::string& device(int r) const { return devices_[r]; }
  // Builds replica r: its ops go to its task, and for r > 0 their names start with
  // "replica_<r>/" (replica 0 keeps the names of a single-process graph, and its checkpoints).
  Scope ReplicaScope(int r) const;
  // Replica r's variables of a collection (those on its task), in the order they were made.
  std::vector<Output> Variables(int r, const std::string& collection = kTrainableVariables) const;
  // Assigns replica 0's value of every global variable to the other replicas (one broadcast per
  // variable; between graphs, the chief's value to every task's): run it after the initializer
  // or a restore. A NoOp without a cluster.
  Operation BroadcastVariables(const Scope& scope) const;

  int32_t group_key() const { return group_key_; }
  int64_t fusion_bytes() const { return fusion_bytes_; }
  // DT_FLOAT, or the 16-bit type float32 gradients travel as (cluster.compression: truncate16
  // gives DT_BFLOAT16, half DT_HALF).
  DataType wire_dtype() const { return wire_dtype_; }
  // Gradients (buckets) of fewer bytes are all-reduced as float32 (cluster.compression.min_bytes).
  int64_t wire_min_bytes() const { return wire_min_bytes_; }
  const Scope& root() const { return root_; }

 private:
  Scope root_;
  std::vector<std::string> devices_;
  int32_t group_key_ = 0;
  int32_t group_size_ = 1;
  bool broadcast_source_ = true;  // between graphs: this task's variables are broadcast
  int64_t fusion_bytes_ = 0;
  DataType wire_dtype_ = DT_FLOAT;
  int64_t wire_min_bytes_ = 0;
};

class DistributedOptimizer {
 public:
  // `optimizer` applies the averaged gradients; it must outlive this object.
  DistributedOptimizer(Optimizer* optimizer, const DataParallel& dp)
      : optimizer_(optimizer), dp_(dp) {}

  // losses[r] is replica r's loss; every replica has the same trainable variables (in the same
  // order and shapes). Adds each replica's gradients, their all-reduced means and the updates;
  // the result runs every update and then adds 1 to `global_step` when it is valid.
  Operation Minimize(const Scope& scope, const std::vector<Output>& losses,
                     const Output& global_step = Output());
  // The means over the replicas of per-replica gradients (grads[r][i] belongs to replica r's
  // i-th variable; `vars` are replica 0's, whose shapes size the buckets), fused into buckets;
  // each mean is on its replica's task.
  std::vector<std::vector<Output>> AllReduce(const std::vector<std::vector<Output>>& grads,
                                             const std::vector<Output>& vars);

 private:
  // AllReduce's sums, divided by the group's size unless `divided` (the gradients are already).
  std::vector<std::vector<Output>> Reduce(const std::vector<std::vector<Output>>& grads,
                                          const std::vector<Output>& vars, bool divided);
  Optimizer* optimizer_;
  const DataParallel& dp_;
  int32_t next_instance_ = 1;
};

// Parameter-server training (whitepaper §7, Fig. 7): the variables live on the tasks of job "ps"
// (each new one on the task holding the fewest bytes so far, as TensorFlow's
// replica_device_setter with its greedy load-balancing strategy), one model replica per task of
// job "worker" computes on its own batches, reads those shared variables and sends them its
// updates. Replica r's ops run on worker task r; every replica builds the same model, and the
// variables replica r > 0 asks for are replica 0's (matched by name within the replica and
// order; a model that differs is an error of the scope).
//
//   ParameterServer ps(root);
//   std::vector<Output> losses;
//   for (int r = 0; r < ps.num_replicas(); ++r)
//     losses.push_back(BuildModel(ps.ReplicaScope(r), ...));
//   AdamOptimizer adam(1e-3f);
//   // asynchronous (Fig. 7 bottom): replica r runs train[r] from a thread of its own, as
//   // often as it can; its updates do not wait for the other replicas
//   std::vector<Operation> train = ps.MinimizeAsync(&adam, losses, GlobalStep(root));
//   // or synchronous (Fig. 7 top): one op; the replicas' gradients are averaged on the
//   // variables' tasks and applied once
//   Operation step = ps.MinimizeSync(&adam, losses, GlobalStep(root));
//
// Without a cluster there is one replica and the variables go where the scope puts them.
class ParameterServer {
 public:
  friend class SyncReplicas;
  // Variables on the tasks of `ps_job`, replicas on those of `worker_job` (config
  // `cluster.jobs`); a missing job is an error of the scope.
  explicit ParameterServer(const Scope& root, const std::string& ps_job = "ps",
                           const std::string& worker_job = "worker");

  int num_replicas() const { return static_cast<int>(replicas_.size()); }
  int num_ps_tasks() const;
  // Replica r's task ("" for the one replica without a cluster).
  const std::string& device(int r) const { return devices_[r]; }
  // Builds replica r: ops on its task, names under "replica_<r>/" for r > 0 (replica 0 keeps a
  // single-process graph's names, and its checkpoints), variables shared as described above.
  Scope ReplicaScope(int r) const { return replicas_[r]; }
  // The shared trainable variables, in the order replica 0 made them.
  std::vector<Output> Variables() const;

  // One train op per replica: its loss's gradients (on its task) applied by `optimizer` to the
  // shared variables (on the ps tasks) without waiting for other replicas. The optimizer is set
  // to lock its variables (SetUseLocking) as steps overlap; it must outlive the graph's use.
  std::vector<Operation> MinimizeAsync(Optimizer* optimizer, const std::vector<Output>& losses,
                                       const Output& global_step = Output());
  // One op: every replica's gradients, their mean on each variable's ps task, one update.
  Operation MinimizeSync(Optimizer* optimizer, const std::vector<Output>& losses,
                         const Output& global_step = Output());

 private:
  struct Store;
  class ReplicaVariables;
  // Every replica's gradients of its loss w.r.t. Variables(); false (error in the scope) when a
  // replica's model differs.
  bool Gradients(const std::vector<Output>& losses, std::vector<Output>* vars,
                 std::vector<std::vector<Output>>* grads) const;

  Scope root_;
  std::vector<std::string> devices_;
  std::vector<Scope> replicas_;
  std::shared_ptr<Store> store_;
};

// TensorFlow's SyncReplicasOptimizer over a ParameterServer: synchronous updates through
// accumulators, which tolerate stragglers. Replica r's step adds its gradients to one
// ConditionalAccumulator per variable (on the variable's task), tagged with the global step it
// read the variables at, then waits for a token. The chief's step takes from every accumulator
// the mean of `replicas_to_aggregate` gradients (a gradient computed from variables older than
// the last update is dropped: a straggler's work never lands on newer variables), applies it
// with the wrapped optimizer, advances the global step and hands one token per replica out,
// which lets each replica run its next step at the new global step.
//
//   SyncReplicas sync(&adam, ps, /*replicas_to_aggregate=*/ps.num_replicas());
//   SyncReplicas::Steps steps = sync.Minimize(losses, GlobalStep(root));
//   // after the initializer: one thread per replica runs steps.replica[r] (with its feeds),
//   // and one thread runs steps.chief once per global step.
class SyncReplicas {
 public:
  struct Steps {
    std::vector<Operation> replica;  // replica r's step: its gradients in, then its token
    Operation chief;                 // take the means, apply them, hand out the tokens
    std::vector<Output> accumulators;  // one per variable of ParameterServer::Variables()
  };
  // `optimizer` and `ps` must outlive this object. 1 <= replicas_to_aggregate <= replicas.
  SyncReplicas(Optimizer* optimizer, const ParameterServer& ps, int replicas_to_aggregate)
      : optimizer_(optimizer), ps_(ps), replicas_to_aggregate_(replicas_to_aggregate) {}

  // losses[r] is replica r's loss. `global_step` (required) counts the chief's updates.
  Steps Minimize(const std::vector<Output>& losses, const Output& global_step);

 private:
  Optimizer* optimizer_;
  const ParameterServer& ps_;
  int replicas_to_aggregate_;
};

}  // namespace cfx

#endif  // CONFLUX_CC_DISTRIBUTED_H_
