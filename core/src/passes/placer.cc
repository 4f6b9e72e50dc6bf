// PlaceGraph: feasible sets, colocation groups, greedy simulated execution.
#include "passes/placer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "graph/control_flow_info.h"

namespace cfx {

namespace {

std::string ShortName(const Device& d) { return d.type() + ":" + std::to_string(d.name().id); }

std::string JoinStrings(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// "T=float, Tidx=int32" for the node's type attrs.
std::string DtypeAttrs(const Node& node) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : node.def().attr) {
    if (value.kind == AttrValue::Kind::kType)
      parts.push_back(name + "=" + DataTypeString(value.type));
  }
  return parts.empty() ? "no dtype attrs" : JoinStrings(parts, ", ");
}

std::string RequestText(const Node& node) {
  return node.def().device.empty() ? "no device request" : "requests '" + node.def().device + "'";
}

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  // The smaller id becomes the root, so roots do not depend on the order of unions.
  void Union(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    parent_[b] = a;
  }

 private:
  std::vector<int> parent_;
};

// Everything the placer knows about which devices can run what.
class Placer {
 public:
  Placer(const Graph& graph, const std::vector<Device*>& devices, const KernelRegistry& kernels,
         const CostModel& costs, const DeviceName* default_task)
      : graph_(graph),
        devices_(devices),
        kernels_(kernels),
        costs_(costs),
        default_task_(default_task),
        groups_(graph.num_nodes()) {}

  StatusOr<PlacementResult> Run();

 private:
  using DeviceSet = std::vector<bool>;  // by device index

  Status ComputeFeasible();
  Status FeasibleError(const Node& node, const std::optional<DeviceName>& request) const;
  Status Colocate();
  Status ColocationError(int root) const;
  // Keeps each group that names no job or task in its requests on the default task's devices,
  // where they can run it.
  void PreferDefaultTask();
  // Marks "generators" (no inputs, stateless, every output edge into one node, e.g. a Const) to
  // follow their consumer: placed with it when it is placed, timed just before it.
  void AttachGenerators();
  // Simulated finish of the group's members (in topological order) on device `d`.
  double GroupFinish(const std::vector<Node*>& members, int d) const;
  // When `node`'s inputs are usable on device `d`; inputs not yet placed are ignored.
  double ReadyTime(const Node& node, int d, const std::map<int, double>& tentative) const;
  double Compute(const Node& node, int d) const;
  bool InputsTimed(const Node& node) const;
  // Schedules a placed node on its device after its inputs and what the device already runs.
  void Time(const Node& node);
  bool HasKernelOnType(const Node& node, const std::string& type) const;

  const Graph& graph_;
  const std::vector<Device*>& devices_;
  const KernelRegistry& kernels_;
  const CostModel& costs_;
  const DeviceName* default_task_;
  mutable UnionFind groups_;                 // Find compresses paths
  std::vector<DeviceSet> feasible_;          // by node id
  std::map<int, DeviceSet> group_feasible_;  // by group root
  std::vector<std::string> reasons_;         // why nodes were colocated, "b: _class loc:@a"
  std::vector<std::pair<int, int>> reason_nodes_;
  std::vector<NodeShapes> shapes_;
  std::vector<int> follows_;  // by node id: the consumer a generator follows, or -1
  // Filled by the simulation.
  std::vector<int> device_;  // -1 until placed
  std::vector<double> start_, finish_;
  std::vector<bool> timed_;
  std::vector<double> available_;  // by device
};

bool Placer::HasKernelOnType(const Node& node, const std::string& type) const {
  return kernels_.HasKernel(node.def(), node.op_registration().def, type);
}

Status Placer::FeasibleError(const Node& node, const std::optional<DeviceName>& request) const {
  std::set<std::string> with, without;
  for (Device* d : devices_) (HasKernelOnType(node, d->type()) ? with : without).insert(d->type());
  std::string types_text =
      "device types with a kernel for it: " +
      (with.empty() ? std::string("none")
                    : JoinStrings(std::vector<std::string>(with.begin(), with.end()), ", ")) +
      "; without: " +
      (without.empty()
           ? std::string("none")
           : JoinStrings(std::vector<std::string>(without.begin(), without.end()), ", "));
  std::string head = StrCat("cannot place node '", node.name(), "' (op ", node.op(), ", ",
                            DtypeAttrs(node), "): ");
  if (devices_.empty()) return errors::InvalidArgument(head, "there are no devices");
  if (request) {
    std::vector<std::string> matching, all;
    for (Device* d : devices_) {
      all.push_back(ShortName(*d));
      if (request->Matches(d->name())) matching.push_back(ShortName(*d));
    }
    if (matching.empty())
      return errors::InvalidArgument(head, "it requests device '", node.def().device,
                                     "', which matches none of the devices (",
                                     JoinStrings(all, ", "), "); ", types_text);
    return errors::InvalidArgument(head, "it requests device '", node.def().device,
                                   "', which matches ", JoinStrings(matching, ", "),
                                   ", but no kernel for it exists there; ", types_text);
  }
  return errors::InvalidArgument(head, "no device has a kernel for it; ", types_text);
}

Status Placer::ComputeFeasible() {
  feasible_.assign(graph_.num_nodes(), DeviceSet(devices_.size(), false));
  for (const auto& n : graph_.nodes()) {
    std::optional<DeviceName> request;
    if (!n->def().device.empty()) {
      auto parsed = DeviceName::Parse(n->def().device);
      if (!parsed.ok())
        return parsed.status().WithPrefix("node '" + n->name() + "' (op " + n->op() + "): ");
      request = *parsed;
    }
    std::map<std::string, bool> has_kernel;  // by device type
    bool any = false;
    for (size_t d = 0; d < devices_.size(); ++d) {
      const Device& dev = *devices_[d];
      if (request && !request->Matches(dev.name())) continue;
      auto it = has_kernel.find(dev.type());
      if (it == has_kernel.end())
        it = has_kernel.emplace(dev.type(), HasKernelOnType(*n, dev.type())).first;
      feasible_[n->id()][d] = it->second;
      any = any || it->second;
    }
    if (!any) return FeasibleError(*n, request);
  }
  return Status();
}

Status Placer::Colocate() {
  auto add = [&](const Node& a, const Node& b, std::string why) {
    groups_.Union(a.id(), b.id());
    reasons_.push_back(std::move(why));
    reason_nodes_.push_back({a.id(), b.id()});
  };
  for (const auto& n : graph_.nodes()) {
    const AttrValue* cls = n->attr("_class");
    if (cls != nullptr && cls->kind == AttrValue::Kind::kList) {
      for (const std::string& entry : cls->list.s) {
        if (!entry.starts_with("loc:@")) continue;
        // A constraint naming a node that is not in the graph (pruned away) binds nothing.
        const Node* other = graph_.FindNode(entry.substr(5));
        if (other != nullptr && other != n.get()) add(*other, *n, n->name() + ": _class " + entry);
      }
    }
    for (const Edge* e : n->in_data_edges()) {
      if (e == nullptr) continue;
      // A loop's back edge stays on one device: a NextIteration's value goes to iteration n+1,
      // which a _Send/_Recv pair (keyed by one frame and iteration) cannot carry.
      if (IsLoopBackEdge(*e))
        add(*e->src, *n, StrCat(n->name(), ": the loop back edge from ", e->src->name()));
      // A Merge knows that a dead Enter input makes it dead at once (a loop that does not run)
      // only when it sees the Enter itself, not a _Recv of the Enter's output.
      if (IsMerge(*n) && IsEnter(*e->src))
        add(*e->src, *n, StrCat(n->name(), ": merges loop entry ", e->src->name()));
      DataType t = e->src->output_types()[e->src_output];
      // A reference output binds only consumers that take a reference (Assign, ApplyAdam); one
      // that reads the value (Identity, a fetch) gets it sent (as in TensorFlow's placer).
      const bool takes_ref =
          IsRefType(t) && e->dst_input >= 0 &&
          e->dst_input < static_cast<int>(n->input_types().size()) &&
          IsRefType(n->input_types()[e->dst_input]);
      if (t == DT_RESOURCE || takes_ref)
        add(*e->src, *n,
            StrCat(n->name(), ": reads ", DataTypeString(t), " output ", e->src->name(), ":",
                   e->src_output));
    }
  }
  for (const auto& n : graph_.nodes()) {
    int root = groups_.Find(n->id());
    auto [it, fresh] = group_feasible_.emplace(root, feasible_[n->id()]);
    if (!fresh)
      for (size_t d = 0; d < devices_.size(); ++d)
        it->second[d] = it->second[d] && feasible_[n->id()][d];
  }
  for (const auto& [root, set] : group_feasible_)
    if (std::none_of(set.begin(), set.end(), [](bool b) { return b; }))
      return ColocationError(root);
  return Status();
}

Status Placer::ColocationError(int root) const {
  std::vector<std::string> members, why;
  for (const auto& n : graph_.nodes()) {
    if (groups_.Find(n->id()) != root) continue;
    std::vector<std::string> where;
    for (size_t d = 0; d < devices_.size(); ++d)
      if (HasKernelOnType(*n, devices_[d]->type())) where.push_back(ShortName(*devices_[d]));
    members.push_back(StrCat(n->name(), " (op ", n->op(), "; ", RequestText(*n), "; kernels on ",
                             where.empty() ? "no device" : JoinStrings(where, ", "), ")"));
  }
  for (size_t i = 0; i < reasons_.size(); ++i)
    if (groups_.Find(reason_nodes_[i].first) == root) why.push_back(reasons_[i]);
  return errors::InvalidArgument("cannot colocate nodes ", JoinStrings(members, ", "),
                                 ": no device satisfies all of their device requests and kernels "
                                 "(colocated because ",
                                 JoinStrings(why, "; "), ")");
}

void Placer::PreferDefaultTask() {
  if (default_task_ == nullptr) return;
  std::set<int> pinned;  // groups with a member that names a job or task
  for (const auto& n : graph_.nodes()) {
    if (n->def().device.empty()) continue;
    auto parsed = DeviceName::Parse(n->def().device);
    if (parsed.ok() && (!parsed->job.empty() || parsed->task >= 0))
      pinned.insert(groups_.Find(n->id()));
  }
  for (auto& [root, set] : group_feasible_) {
    if (pinned.count(root)) continue;
    DeviceSet local = set;
    for (size_t d = 0; d < devices_.size(); ++d)
      local[d] = local[d] && default_task_->Matches(devices_[d]->name());
    if (std::any_of(local.begin(), local.end(), [](bool b) { return b; })) set = local;
  }
}

void Placer::AttachGenerators() {
  follows_.assign(graph_.num_nodes(), -1);
  std::map<int, int> group_size;
  for (const auto& n : graph_.nodes()) ++group_size[groups_.Find(n->id())];
  for (const auto& n : graph_.nodes()) {
    if (n->num_inputs() > 0 || !n->in_control_edges().empty() || n->out_edges().empty()) continue;
    if (n->op_registration().def.is_stateful || group_size[groups_.Find(n->id())] != 1) continue;
    if (std::any_of(n->output_types().begin(), n->output_types().end(), IsResourceOrRef)) continue;
    const Node* consumer = nullptr;
    bool single = true, data = false;
    for (const Edge* e : n->out_edges()) {
      if (consumer != nullptr && consumer != e->dst) single = false;
      consumer = e->dst;
      data = data || !e->IsControl();
    }
    if (!single || !data) continue;
    DeviceSet& target = group_feasible_.at(groups_.Find(consumer->id()));
    DeviceSet both = target;
    for (size_t d = 0; d < both.size(); ++d) both[d] = both[d] && feasible_[n->id()][d];
    if (std::none_of(both.begin(), both.end(), [](bool b) { return b; })) continue;
    target = both;
    follows_[n->id()] = consumer->id();
  }
}

double Placer::Compute(const Node& node, int d) const {
  return costs_.ComputeUs(node, devices_[d]->type(), shapes_[node.id()]);
}

double Placer::ReadyTime(const Node& node, int d, const std::map<int, double>& tentative) const {
  double ready = 0;
  const Device& to = *devices_[d];
  for (const Edge* e : node.in_data_edges()) {
    if (e == nullptr) continue;
    int src = e->src->id();
    if (auto t = tentative.find(src); t != tentative.end()) {
      ready = std::max(ready, t->second);  // a member of the same group: same device
    } else if (timed_[src]) {
      int64_t bytes =
          costs_.OutputBytes(*e->src, e->src_output, shapes_[src].outputs[e->src_output]);
      ready = std::max(ready, finish_[src] + costs_.TransferUs(bytes, *devices_[device_[src]], to));
    }
  }
  for (const Edge* e : node.in_control_edges()) {
    int src = e->src->id();
    if (auto t = tentative.find(src); t != tentative.end()) {
      ready = std::max(ready, t->second);
    } else if (timed_[src]) {
      ready = std::max(ready, finish_[src] + costs_.TransferUs(0, *devices_[device_[src]], to));
    }
  }
  return ready;
}

bool Placer::InputsTimed(const Node& node) const {
  for (const Edge* e : node.in_data_edges())
    if (e != nullptr && !timed_[e->src->id()] && follows_[e->src->id()] != node.id()) return false;
  for (const Edge* e : node.in_control_edges())
    if (!timed_[e->src->id()]) return false;
  return true;
}

void Placer::Time(const Node& node) {
  for (const Edge* e : node.in_data_edges())
    if (e != nullptr && !timed_[e->src->id()] && follows_[e->src->id()] == node.id()) Time(*e->src);
  int d = device_[node.id()];
  start_[node.id()] = std::max(available_[d], ReadyTime(node, d, {}));
  finish_[node.id()] = start_[node.id()] + Compute(node, d);
  available_[d] = finish_[node.id()];
  timed_[node.id()] = true;
}

double Placer::GroupFinish(const std::vector<Node*>& members, int d) const {
  std::map<int, double> tentative;
  double available = available_[d], finish = 0;
  for (Node* m : members) {
    for (const Edge* e : m->in_data_edges()) {  // its generators run first, on the same device
      int src = e == nullptr ? -1 : e->src->id();
      if (src >= 0 && !timed_[src] && follows_[src] == m->id() && !tentative.count(src)) {
        available += Compute(*e->src, d);
        tentative[src] = available;
      }
    }
    double start = std::max(available, ReadyTime(*m, d, tentative));
    available = start + Compute(*m, d);
    tentative[m->id()] = available;
    finish = std::max(finish, available);
  }
  return finish;
}

StatusOr<PlacementResult> Placer::Run() {
  CFX_ASSIGN_OR_RETURN(std::vector<Node*> order, graph_.TopologicalOrder());
  CFX_RETURN_IF_ERROR(ComputeFeasible());
  CFX_RETURN_IF_ERROR(Colocate());
  PreferDefaultTask();
  AttachGenerators();
  shapes_ = InferGraphShapes(graph_);

  std::map<int, std::vector<Node*>> members;  // by group root, in topological order
  for (Node* n : order)
    if (follows_[n->id()] < 0) members[groups_.Find(n->id())].push_back(n);

  int num_nodes = graph_.num_nodes();
  device_.assign(num_nodes, -1);
  start_.assign(num_nodes, 0);
  finish_.assign(num_nodes, 0);
  timed_.assign(num_nodes, false);
  available_.assign(devices_.size(), 0);
  std::vector<int> group_device(num_nodes, -1);  // by root
  for (Node* n : order) {
    if (follows_[n->id()] >= 0) continue;  // placed and timed with its consumer
    int root = groups_.Find(n->id());
    if (group_device[root] < 0) {
      const std::vector<Node*>& group = members.at(root);
      bool has_arg =
          std::any_of(group.begin(), group.end(), [](const Node* m) { return m->op() == "_Arg"; });
      const DeviceSet& feasible = group_feasible_.at(root);
      int best = -1;
      double best_finish = std::numeric_limits<double>::infinity();
      for (size_t d = 0; d < devices_.size(); ++d) {
        if (!feasible[d]) continue;
        double f = GroupFinish(group, static_cast<int>(d));
        bool tied = best >= 0 && std::abs(f - best_finish) <= 1e-9 * std::max(1.0, f);
        bool better = best < 0 || (!tied && f < best_finish) ||
                      (tied && has_arg && devices_[d]->host_addressable() &&
                       !devices_[best]->host_addressable());
        if (better) {
          best = static_cast<int>(d);
          best_finish = f;
        }
      }
      group_device[root] = best;
      for (Node* m : group) {
        device_[m->id()] = best;
        for (const Edge* e : m->in_data_edges())
          if (e != nullptr && follows_[e->src->id()] == m->id()) device_[e->src->id()] = best;
      }
      // Book the device for the members that can be timed now, so that groups decided next see
      // it busy; the others are timed when the walk reaches them.
      for (Node* m : group)
        if (InputsTimed(*m)) Time(*m);
    }
    if (!timed_[n->id()]) Time(*n);
  }

  PlacementResult result;
  result.device_of.resize(num_nodes);
  for (int i = 0; i < num_nodes; ++i) result.device_of[i] = devices_[device_[i]];
  result.start_us = start_;
  result.finish_us = finish_;
  for (double f : finish_) result.estimated_makespan_us = std::max(result.estimated_makespan_us, f);
  return result;
}

}  // namespace

std::string PlacementResult::Report(const Graph& graph) const {
  size_t name_width = 4, op_width = 2, device_width = 6;
  for (const auto& n : graph.nodes()) {
    name_width = std::max(name_width, n->name().size());
    op_width = std::max(op_width, n->op().size());
    if (n->id() < static_cast<int>(device_of.size()) && device_of[n->id()] != nullptr)
      device_width = std::max(device_width, device_of[n->id()]->full_name().size());
  }
  std::string out;
  char line[64];
  for (const auto& n : graph.nodes()) {
    int id = n->id();
    std::string device = id < static_cast<int>(device_of.size()) && device_of[id] != nullptr
                             ? device_of[id]->full_name()
                             : "(unplaced)";
    std::string row =
        n->name() + std::string(name_width - n->name().size() + 2, ' ') + n->op() +
        std::string(op_width - n->op().size() + 2, ' ') + device +
        std::string(device_width > device.size() ? device_width - device.size() : 0, ' ');
    double start = id < static_cast<int>(start_us.size()) ? start_us[id] : 0;
    double finish = id < static_cast<int>(finish_us.size()) ? finish_us[id] : 0;
    std::snprintf(line, sizeof(line), "  start %10.1f us  finish %10.1f us\n", start, finish);
    out += row + line;
  }
  return out;
}

StatusOr<PlacementResult> PlaceGraph(const Graph& graph, const std::vector<Device*>& devices,
                                     const KernelRegistry& kernels, const CostModel& costs,
                                     const DeviceName* default_task) {
  return Placer(graph, devices, kernels, costs, default_task).Run();
}

}  // namespace cfx
