// DataParallel and DistributedOptimizer (see conflux/cc/distributed.h).
#include "conflux/cc/distributed.h"

#include <algorithm>
#include <atomic>
#include <map>

#include "conflux/cc/gradients.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/runtime.h"
#include "gradient_buckets.h"

namespace cfx {
namespace {

// Broadcasts use instance keys from here on; gradient all-reduces count up from 1.
constexpr int32_t kBroadcastInstanceBase = 1 << 24;

PartialTensorShape VarShape(const Output& var) {
  const AttrValue* a = var.node()->attr("shape");
  return a == nullptr ? PartialTensorShape() : a->shape;
}

// The runtime's cluster, or null when it has none.
const ClusterConfig* ClusterOf(const Scope& root) {
  const Runtime* rt = root.runtime();
  return rt != nullptr && rt->config().cluster.enabled ? &rt->config().cluster : nullptr;
}

// "/job:<job>/replica:0/task:<t>" for every task of `job`; none (and an error in the scope that
// names the cluster's jobs, for `who`) when the cluster has no such job.
std::vector<std::string> JobTasks(const Scope& root, const ClusterConfig& cluster,
                                  const std::string& job, const char* who) {
  std::vector<std::string> tasks;
  for (const ClusterJob& j : cluster.jobs) {
    if (j.name != job) continue;
    for (int t = 0; t < j.tasks; ++t)
      tasks.push_back("/job:" + job + "/replica:0/task:" + std::to_string(t));
  }
  if (tasks.empty()) {
    std::string jobs;
    for (const ClusterJob& j : cluster.jobs) jobs += (jobs.empty() ? "" : ", ") + j.name;
    root.UpdateStatus(errors::InvalidArgument(who, ": the cluster (", cluster.source,
                                              ") has no job '", job, "'; its jobs are ", jobs));
  }
  return tasks;
}

}  // namespace

DataParallel::DataParallel(const Scope& root, const std::string& job) : root_(root.Root()) {
  static std::atomic<int32_t> next_group{1};
  group_key_ = next_group.fetch_add(1);
  const ClusterConfig* cluster = ClusterOf(root);
  if (cluster == nullptr) {
    devices_.push_back("");
    return;
  }
  fusion_bytes_ = cluster->fusion_bytes;
  if (cluster->compression == "truncate16") wire_dtype_ = DT_BFLOAT16;
  if (cluster->compression == "half") wire_dtype_ = DT_HALF;
  wire_min_bytes_ = cluster->compression_min_bytes;
  devices_ = JobTasks(root, *cluster, job, "DataParallel");
  if (devices_.empty()) devices_.push_back("");
  group_size_ = static_cast<int32_t>(devices_.size());
  if (!cluster->between_graph()) return;
  // Between graphs: this task's replica; the group is every task of the cluster, and the
  // chief's variables are the ones broadcast.
  if (group_size_ != cluster->num_tasks()) {
    root.UpdateStatus(errors::InvalidArgument(
        "DataParallel: under between-graph replication every task of the cluster (",
        cluster->source, ") is a replica, but job '", job, "' has ", group_size_, " of its ",
        cluster->num_tasks(), " tasks"));
    return;
  }
  devices_ = {root.runtime()->task_name()};
  StatusOr<std::vector<ClusterTask>> tasks = cluster->Resolve();
  StatusOr<int> chief = cluster->ChiefRank();
  broadcast_source_ = tasks.ok() && chief.ok() && (*tasks)[*chief].name() == devices_[0];
}

Scope DataParallel::ReplicaScope(int r) const {
  Scope s = r == 0 ? root_ : root_.NewSubScope("replica_" + std::to_string(r));
  return s.WithDevice(devices_[r]);
}

std::vector<Output> DataParallel::Variables(int r, const std::string& collection) const {
  std::vector<Output> vars;
  for (const Output& v : root_.GetCollection(collection))
    if (devices_.size() == 1 || v.node()->def().device == devices_[r]) vars.push_back(v);
  return vars;
}

Operation DataParallel::BroadcastVariables(const Scope& scope) const {
  Scope s = scope.NewSubScope("broadcast_variables");
  std::vector<Operation> done;
  // Between graphs this task's replica sends (the chief's) or receives; in graph replica 0
  // sends and every other replica receives.
  const bool between = group_size_ > 1 && num_replicas() == 1;
  if ((between || num_replicas() > 1) && scope.ok()) {
    const std::vector<Output> source = Variables(0, kGlobalVariables);
    for (int r = 1; r < num_replicas(); ++r) {
      const size_t count = Variables(r, kGlobalVariables).size();
      if (count != source.size()) {
        scope.UpdateStatus(errors::InvalidArgument("DataParallel: replica ", r, " has ", count,
                                                   " global variables, replica 0 ", source.size(),
                                                   ": every replica must build the same model"));
        return Operation();
      }
    }
    for (size_t i = 0; i < source.size(); ++i) {
      const int32_t instance = kBroadcastInstanceBase + static_cast<int32_t>(i);
      const PartialTensorShape shape = VarShape(source[i]);
      if (!shape.IsFullyDefined()) {
        scope.UpdateStatus(errors::InvalidArgument("DataParallel: variable ",
                                                   source[i].node()->name(),
                                                   " needs a fully defined shape to broadcast"));
        return Operation();
      }
      auto receive = [&](const std::string& device, const Output& target) {
        Scope sr = s.WithDevice(device);
        Output got = ops::CollectiveBcastRecvV2(sr, group_size_, group_key_, instance, shape.dims(),
                                                BaseType(source[i].type()));
        done.push_back(ops::Assign(sr, target, got).op());
      };
      if (!between || broadcast_source_) {
        Scope s0 = s.WithDevice(devices_[0]);
        done.push_back(ops::CollectiveBcastSendV2(s0, ops::Identity(s0, source[i]), group_size_,
                                                  group_key_, instance)
                           .op());
      } else {
        receive(devices_[0], source[i]);
      }
      for (int r = 1; r < num_replicas(); ++r)
        receive(devices_[r], Variables(r, kGlobalVariables)[i]);
    }
  }
  return ops::NoOp(s.WithOpName("broadcast_variables").WithControlDependencies(done));
}

std::vector<std::vector<Output>> DistributedOptimizer::AllReduce(
    const std::vector<std::vector<Output>>& grads, const std::vector<Output>& vars) {
  return Reduce(grads, vars, /*divided=*/false);
}

std::vector<std::vector<Output>> DistributedOptimizer::Reduce(
    const std::vector<std::vector<Output>>& grads, const std::vector<Output>& vars, bool divided) {
  const int n = dp_.num_replicas();
  const int32_t members = dp_.group_size();
  if (members == 1 || !dp_.root().ok()) return grads;
  const size_t count = vars.size();
  std::vector<int64_t> elements(count);
  for (size_t k = 0; k < count; ++k) {
    const PartialTensorShape shape = VarShape(vars[k]);
    if (!shape.IsFullyDefined()) {
      dp_.root().UpdateStatus(errors::InvalidArgument(
          "DistributedOptimizer: variable ", vars[k].node()->name(),
          " needs a fully defined shape"));
      return grads;
    }
    elements[k] = 1;
    for (int64_t d : shape.dims()) elements[k] *= d;
  }
  std::vector<int64_t> grad_bytes(count);
  std::vector<DataType> dtypes(count);
  for (size_t k = 0; k < count; ++k) {
    dtypes[k] = BaseType(vars[k].type());
    grad_bytes[k] = elements[k] * static_cast<int64_t>(DataTypeSize(dtypes[k]));
  }
  const std::vector<std::vector<size_t>> buckets =
      internal::GradientBuckets(grad_bytes, dtypes, dp_.fusion_bytes());
  std::vector<std::vector<Output>> out(n, std::vector<Output>(count));
  // The mean of one tensor of `bytes` over the replicas; float32 travels as wire_dtype when the
  // cluster compresses (cluster.compression) and the tensor is not too small for it.
  const char* final_op = divided ? "Id" : "Div";
  auto mean = [&](const Scope& s, const Output& x, int32_t instance, int64_t bytes) {
    const DataType wire = dp_.wire_dtype();
    if (wire == DT_FLOAT || BaseType(x.type()) != DT_FLOAT || bytes < dp_.wire_min_bytes())
      return ops::CollectiveReduceV2(s, x, members, dp_.group_key(), instance, {}, "Add", final_op);
    Output narrow = ops::CollectiveReduceV2(s, ops::Cast(s, x, wire), members, dp_.group_key(),
                                            instance, {}, "Add", final_op);
    return ops::Cast(s, narrow, DT_FLOAT);
  };
  for (const std::vector<size_t>& bucket : buckets) {
    const int32_t instance = next_instance_++;
    int64_t bucket_bytes = 0;
    for (size_t k : bucket) bucket_bytes += grad_bytes[k];
    for (int r = 0; r < n; ++r) {
      Scope s = dp_.ReplicaScope(r).NewSubScope("allreduce");
      if (bucket.size() == 1) {
        out[r][bucket[0]] = mean(s, grads[r][bucket[0]], instance, bucket_bytes);
        continue;
      }
      InputList flat;
      for (size_t k : bucket) flat.push_back(ops::Reshape(s, grads[r][k], {-1}));
      Output fused = mean(s, ops::ConcatV2(s, flat, 0), instance, bucket_bytes);
      int64_t offset = 0;
      for (size_t k : bucket) {
        Output part = ops::Slice(s, fused, {offset}, {elements[k]});
        out[r][k] = ops::Reshape(s, part, VarShape(vars[k]).dims());
        offset += elements[k];
      }
    }
  }
  return out;
}

Operation DistributedOptimizer::Minimize(const Scope& scope, const std::vector<Output>& losses,
                                         const Output& global_step) {
  if (!scope.ok()) return Operation();
  const int n = dp_.num_replicas();
  if (static_cast<int>(losses.size()) != n) {
    scope.UpdateStatus(errors::InvalidArgument("DistributedOptimizer: ", losses.size(),
                                               " losses for ", n, " replicas"));
    return Operation();
  }
  const int32_t members = dp_.group_size();
  const bool pre_divide = members > 1 && (members & (members - 1)) == 0;
  std::vector<std::vector<Output>> vars(n), grads(n);
  for (int r = 0; r < n; ++r) {
    vars[r] = dp_.Variables(r);
    if (vars[r].empty() || vars[r].size() != vars[0].size()) {
      scope.UpdateStatus(errors::InvalidArgument(
          "DistributedOptimizer: replica ", r, " has ", vars[r].size(),
          " trainable variables, replica 0 has ", vars[0].size(),
          ": every replica must build the same model, with its ops on its own task"));
      return Operation();
    }
    // A group of 2^k members: each replica's gradients come out divided by it, their seed being
    // 2^-k instead of 1, and the all-reduce only sums. Scaling by a power of two is exact and
    // commutes with every rounding of the backward pass (barring subnormals), so the means are
    // the same to the bit as the sums divided, without a pass over every gradient after the
    // reduction (5 % of rank 0's CPU time in bench/scaling_bench's CNN between graphs).
    std::vector<Output> seed;
    if (pre_divide) {
      Scope s = dp_.ReplicaScope(r).NewSubScope("mean_seed");
      seed.push_back(
          ops::Fill(s, ops::Shape(s, losses[r]),
                    ops::Cast(s, ops::Const(s, 1.0 / members), BaseType(losses[r].type()))));
    }
    if (!AddSymbolicGradients(dp_.ReplicaScope(r), {losses[r]}, vars[r], seed, &grads[r]).ok())
      return Operation();
  }
  std::vector<std::vector<Output>> mean = Reduce(grads, vars[0], pre_divide);
  std::vector<std::pair<Output, Output>> pairs;
  for (int r = 0; r < n; ++r)
    for (size_t k = 0; k < vars[r].size(); ++k) pairs.emplace_back(mean[r][k], vars[r][k]);
  return optimizer_->ApplyGradients(scope, pairs, global_step);
}

// The variables of a ParameterServer's replicas: where replica 0 makes them (the ps task with
// the fewest bytes so far), and replica 0's for the other replicas.
struct ParameterServer::Store {
  std::vector<std::string> ps_tasks;
  std::vector<int64_t> bytes;                       // per ps task
  std::map<std::string, std::vector<Output>> made;  // by name within replica 0
  std::vector<Output> order;                        // every one, as made

  // The ps task for a new variable (none without ps tasks: `device` stays the scope's).
  void Place(const PartialTensorShape& shape, DataType dtype, std::string* device) {
    if (ps_tasks.empty()) return;
    int64_t size = static_cast<int64_t>(DataTypeSize(dtype));
    for (int64_t d : shape.dims()) size *= std::max<int64_t>(d, 1);
    const size_t t =
        static_cast<size_t>(std::min_element(bytes.begin(), bytes.end()) - bytes.begin());
    bytes[t] += size;
    *device = ps_tasks[t];
  }
};

// Replica r's VariablePolicy: replica 0 places its variables and records them; replica r > 0
// gets the index-th variable replica 0 made under the same name within the replica.
class ParameterServer::ReplicaVariables final : public VariablePolicy {
 public:
  ReplicaVariables(int replica, std::string prefix, std::shared_ptr<Store> store)
      : replica_(replica), prefix_(std::move(prefix)), store_(std::move(store)) {}

  VariableOutputs Find(const Scope& scope, const std::string& name,
                       const PartialTensorShape& shape, DataType dtype,
                       std::string* device) override {
    if (replica_ == 0) {
      store_->Place(shape, dtype, device);
      return VariableOutputs();
    }
    const std::string key = Within(name);
    const size_t index = seen_[key]++;
    auto made = store_->made.find(key);
    if (made == store_->made.end() || index >= made->second.size()) {
      scope.UpdateStatus(errors::InvalidArgument(
          "ParameterServer: replica ", replica_, " makes variable ", name, " (", index + 1,
          (index == 0 ? "st" : "th"), " of that name), which replica 0 did not make: every "
          "replica must build the same model"));
      return VariableOutputs();
    }
    VariableOutputs v;
    v.var = made->second[index];
    return v;
  }

  void Made(const std::string& name, const VariableOutputs& v) override {
    if (replica_ != 0) return;
    store_->made[Within(name)].push_back(v.var);
    store_->order.push_back(v.var);
  }

 private:
  std::string Within(const std::string& name) const {
    return name.compare(0, prefix_.size(), prefix_) == 0 ? name.substr(prefix_.size()) : name;
  }

  int replica_;
  std::string prefix_;
  std::shared_ptr<Store> store_;
  std::map<std::string, size_t> seen_;
};

ParameterServer::ParameterServer(const Scope& root, const std::string& ps_job,
                                 const std::string& worker_job)
    : root_(root.Root()), store_(std::make_shared<Store>()) {
  const ClusterConfig* cluster = ClusterOf(root);
  if (cluster != nullptr) {
    store_->ps_tasks = JobTasks(root, *cluster, ps_job, "ParameterServer");
    devices_ = JobTasks(root, *cluster, worker_job, "ParameterServer");
  }
  if (devices_.empty()) devices_.push_back("");
  store_->bytes.assign(store_->ps_tasks.size(), 0);
  for (int r = 0; r < static_cast<int>(devices_.size()); ++r) {
    Scope s = r == 0 ? root_ : root_.NewSubScope("replica_" + std::to_string(r));
    auto policy = std::make_shared<ReplicaVariables>(r, s.prefix(), store_);
    replicas_.push_back(s.WithDevice(devices_[r]).WithVariablePolicy(policy));
  }
}

int ParameterServer::num_ps_tasks() const { return static_cast<int>(store_->ps_tasks.size()); }

std::vector<Output> ParameterServer::Variables() const {
  std::vector<Output> vars;
  const std::vector<Output> trainable = root_.GetCollection(kTrainableVariables);
  for (const Output& v : store_->order)
    if (std::find(trainable.begin(), trainable.end(), v) != trainable.end()) vars.push_back(v);
  return vars;
}

bool ParameterServer::Gradients(const std::vector<Output>& losses, std::vector<Output>* vars,
                                std::vector<std::vector<Output>>* grads) const {
  if (!root_.ok()) return false;
  if (static_cast<int>(losses.size()) != num_replicas()) {
    root_.UpdateStatus(errors::InvalidArgument("ParameterServer: ", losses.size(),
                                               " losses for ", num_replicas(), " replicas"));
    return false;
  }
  *vars = Variables();
  if (vars->empty()) {
    root_.UpdateStatus(errors::InvalidArgument(
        "ParameterServer: no trainable variables were made through its replica scopes"));
    return false;
  }
  grads->assign(losses.size(), {});
  for (size_t r = 0; r < losses.size(); ++r)
    if (!AddSymbolicGradients(replicas_[r], {losses[r]}, *vars, &(*grads)[r]).ok()) return false;
  return true;
}

std::vector<Operation> ParameterServer::MinimizeAsync(Optimizer* optimizer,
                                                      const std::vector<Output>& losses,
                                                      const Output& global_step) {
  std::vector<Output> vars;
  std::vector<std::vector<Output>> grads;
  if (!Gradients(losses, &vars, &grads)) return {};
  optimizer->SetUseLocking(true);
  std::vector<Operation> train;
  for (size_t r = 0; r < grads.size(); ++r) {
    std::vector<std::pair<Output, Output>> pairs;
    for (size_t k = 0; k < vars.size(); ++k) pairs.emplace_back(grads[r][k], vars[k]);
    train.push_back(optimizer->ApplyGradients(root_, pairs, global_step));
  }
  return train;
}

Operation ParameterServer::MinimizeSync(Optimizer* optimizer, const std::vector<Output>& losses,
                                        const Output& global_step) {
  std::vector<Output> vars;
  std::vector<std::vector<Output>> grads;
  if (!Gradients(losses, &vars, &grads)) return Operation();
  std::vector<std::pair<Output, Output>> pairs;
  const float n = static_cast<float>(grads.size());
  for (size_t k = 0; k < vars.size(); ++k) {
    if (grads.size() == 1) {
      pairs.emplace_back(grads[0][k], vars[k]);
      continue;
    }
    // The mean where the variable lives: each replica sends its gradient there once.
    Scope s = root_.NewSubScope("sync_mean").WithDevice(vars[k].node()->def().device);
    InputList each;
    for (const std::vector<Output>& g : grads) each.push_back(g[k]);
    Output sum = ops::AddN(s, each);
    pairs.emplace_back(ops::Div(s, sum, ops::Cast(s, ops::Const(s, n), BaseType(sum.type()))),
                       vars[k]);
  }
  return optimizer->ApplyGradients(root_, pairs, global_step);
}

SyncReplicas::Steps SyncReplicas::Minimize(const std::vector<Output>& losses,
                                          const Output& global_step) {
  const Scope& root = ps_.root_;
  std::vector<Output> vars;
  std::vector<std::vector<Output>> grads;
  if (!global_step.valid()) {
    root.UpdateStatus(errors::InvalidArgument("SyncReplicas: Minimize needs a global step"));
    return {};
  }
  if (replicas_to_aggregate_ < 1 || replicas_to_aggregate_ > ps_.num_replicas()) {
    root.UpdateStatus(errors::InvalidArgument(
        "SyncReplicas: replicas_to_aggregate is ", replicas_to_aggregate_, ", expected 1 to ",
        ps_.num_replicas(), " (the replicas)"));
    return {};
  }
  if (!ps_.Gradients(losses, &vars, &grads)) return {};
  const int n = ps_.num_replicas();
  Scope s = root.NewSubScope("sync_replicas");
  // Accumulators and the token queue outlive a session in their tasks' resource managers: a
  // container of this object's own keeps another graph's (a restarted program's) apart.
  static std::atomic<int> next_container{0};
  const std::string container = "sync_replicas_" + std::to_string(next_container.fetch_add(1));
  // One accumulator per variable, beside it (`beside[k]`: variable k's task).
  std::vector<Scope> beside;
  std::vector<Output> accumulators;
  for (const Output& var : vars) {
    beside.push_back(s.WithDevice(var.node()->def().device));
    accumulators.push_back(ops::ConditionalAccumulator(
        beside.back().WithOpName(var.node()->name() + "/grad_accum"), BaseType(var.type()),
        VarShape(var), ops::ConditionalAccumulatorAttrs().Container(container)));
  }
  // The tokens, on the chief: one per replica per update, each the new global step.
  const DataType step_type = BaseType(global_step.type());
  Output tokens = ops::FIFOQueueV2(s.WithOpName("sync_token_queue"), {step_type},
                                   ops::FIFOQueueV2Attrs()
                                       .Shapes({PartialTensorShape({})})
                                       .Container(container));
  Steps steps;
  for (int r = 0; r < n; ++r) {
    // The global step replica r read its variables at: 0, then each token it took.
    Scope rs = root.WithDevice(ps_.device(r)).NewSubScope("sync_replicas_" + std::to_string(r));
    Output local_step = Variable(rs.WithOpName("local_step"), PartialTensorShape({}), step_type,
                                 ops::Const(rs, 0, step_type), /*trainable=*/false)
                            .var;
    // The gradients go to the accumulators' tasks; the token comes from the chief's queue.
    std::vector<Operation> applied;
    for (size_t k = 0; k < vars.size(); ++k)
      applied.push_back(
          ops::AccumulatorApplyGradient(beside[k], accumulators[k], local_step, grads[r][k]));
    auto token = ops::QueueDequeueV2(s.WithControlDependencies(applied), tokens, {step_type});
    Output next = ops::Assign(rs, local_step, token.components[0]);
    steps.replica.push_back(ops::NoOp(rs.WithOpName("step").WithControlDependencies({next.op()})));
  }
  std::vector<std::pair<Output, Output>> means;
  for (size_t k = 0; k < vars.size(); ++k)
    means.emplace_back(ops::AccumulatorTakeGradient(beside[k], accumulators[k],
                                                    replicas_to_aggregate_,
                                                    BaseType(vars[k].type())),
                       vars[k]);
  Operation update = optimizer_->ApplyGradients(root, means, global_step);
  Scope after = s.WithControlDependencies({update});
  Output now = ops::Identity(after, global_step);
  std::vector<Operation> done;
  for (size_t k = 0; k < vars.size(); ++k)
    done.push_back(ops::AccumulatorSetGlobalStep(beside[k], accumulators[k], now));
  Output handed = ops::Fill(s, ops::Const(s, std::vector<int32_t>{n}), now);
  done.push_back(ops::QueueEnqueueManyV2(s.WithControlDependencies(done), tokens, {handed}));
  steps.chief = ops::NoOp(s.WithOpName("chief_step").WithControlDependencies(done));
  steps.accumulators = accumulators;
  return steps;
}

namespace internal {

std::vector<std::vector<size_t>> GradientBuckets(const std::vector<int64_t>& bytes,
                                                 const std::vector<DataType>& dtypes,
                                                 int64_t fusion_bytes) {
  std::vector<std::vector<size_t>> buckets;
  int64_t bucket_bytes = 0;
  bool open = false;  // the last bucket takes more gradients
  for (size_t k = bytes.size(); k-- > 0;) {
    const bool alone = bytes[k] >= kGradientAloneBytes;
    if (alone || !open || dtypes[buckets.back().front()] != dtypes[k] ||
        bucket_bytes + bytes[k] > fusion_bytes) {
      buckets.emplace_back();
      bucket_bytes = 0;
    }
    buckets.back().push_back(k);
    bucket_bytes += bytes[k];
    open = !alone;
  }
  return buckets;
}

}  // namespace internal

}  // namespace cfx
