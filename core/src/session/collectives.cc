// ResolveCollectives (session/collectives.h).
#include "session/collectives.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "graph/control_flow_info.h"
#include "kernels/collective_attrs.h"

namespace cfx {
namespace {

struct Member {
  Node* node = nullptr;
  int rank = 0;
  int32_t group_size = 0, group_key = 0, instance_key = 0;
};

std::string Where(const Node& n) { return "node " + n.name() + " (op " + n.op() + ")"; }

// The value of a scalar int32 input that comes from a Const node.
StatusOr<int32_t> ConstInput(const Node& n, int index, const char* what) {
  const Edge* e = n.in_data_edges()[index];
  const Node* src = e != nullptr ? e->src : nullptr;
  const AttrValue* value = src != nullptr && src->op() == "Const" ? src->attr("value") : nullptr;
  if (value == nullptr || value->tensor.dtype() != DT_INT32 || value->tensor.num_elements() != 1)
    return errors::InvalidArgument(
        Where(n), ": its ", what, " must be an int32 scalar from a Const node (the session "
        "resolves groups before the step runs), but it comes from ",
        src != nullptr ? Where(*src) : std::string("nowhere"));
  return value->tensor.at<int32_t>(0);
}

// Nodes that may not run in every step that runs their graph: inside a while loop, or after a
// Switch on a path that no Merge closes.
Status CheckUnconditional(const Graph& graph, const std::vector<Member>& members) {
  bool loops = false, switches = false;
  for (const auto& n : graph.nodes()) {
    loops |= IsEnter(*n);
    switches |= ControlFlowOpOf(n->op()) == ControlFlowOp::kSwitch;
  }
  if (loops) {
    CFX_ASSIGN_OR_RETURN(ControlFlowInfo info, BuildControlFlowInfo(graph));
    for (const Member& m : members)
      if (info.frame_of[m.node->id()] != 0)
        return errors::InvalidArgument(
            Where(*m.node), " is inside the while loop '", info.frames[info.frame_of[m.node->id()]].name,
            "': collectives must run once per step, outside loops");
  }
  if (!switches) return Status();
  std::vector<char> conditional(graph.num_nodes(), 0);
  std::deque<const Node*> todo;
  for (const auto& n : graph.nodes())
    if (ControlFlowOpOf(n->op()) == ControlFlowOp::kSwitch) todo.push_back(n.get());
  while (!todo.empty()) {
    const Node* n = todo.front();
    todo.pop_front();
    for (const Edge* e : n->out_edges()) {
      const Node* d = e->dst;
      if (conditional[d->id()] || IsMerge(*d) || IsLoopBackEdge(*e)) continue;
      conditional[d->id()] = 1;
      todo.push_back(d);
    }
  }
  for (const Member& m : members)
    if (conditional[m.node->id()])
      return errors::InvalidArgument(
          Where(*m.node), " runs in a conditional branch (after a Switch): a member that skips a "
          "collective would leave the others waiting; run collectives unconditionally");
  return Status();
}

}  // namespace

Status ResolveCollectives(Graph* graph, const std::vector<Device*>& device_of,
                          const std::function<int(const Device*)>& rank_of, int replica_tasks) {
  const bool between = replica_tasks > 0;
  std::vector<Member> members;
  for (const auto& n : graph->nodes()) {
    if (!internal::IsCollectiveOp(n->op())) continue;
    const int first = n->op() == "CollectiveBcastRecvV2" ? 0 : 1;
    Member m;
    m.node = n.get();
    m.rank = rank_of(device_of[n->id()]);
    CFX_ASSIGN_OR_RETURN(m.group_size, ConstInput(*n, first, "group_size"));
    CFX_ASSIGN_OR_RETURN(m.group_key, ConstInput(*n, first + 1, "group_key"));
    CFX_ASSIGN_OR_RETURN(m.instance_key, ConstInput(*n, first + 2, "instance_key"));
    if (m.group_size < 1)
      return errors::InvalidArgument(Where(*n), ": group_size must be at least 1, got ",
                                     m.group_size);
    members.push_back(m);
  }
  if (members.empty()) return Status();
  CFX_RETURN_IF_ERROR(CheckUnconditional(*graph, members));

  std::map<int32_t, std::vector<const Member*>> groups;
  for (const Member& m : members) groups[m.group_key].push_back(&m);
  // Each rank's members in one order per set of ranks (groups of the same ranks share the
  // transport's communicator): ascending (group_key, instance_key).
  std::map<std::pair<std::vector<int64_t>, int>, std::vector<const Member*>> chains;
  for (auto& [key, group] : groups) {
    const Member& first = *group.front();
    std::set<int> ranks;
    std::map<int32_t, std::vector<const Member*>> instances;
    for (const Member* m : group) {
      if (m->group_size != first.group_size)
        return errors::InvalidArgument("group ", key, ": ", Where(*first.node), " has group_size ",
                                       first.group_size, " but ", Where(*m->node), " has ",
                                       m->group_size);
      ranks.insert(m->rank);
      instances[m->instance_key].push_back(m);
    }
    if (between && first.group_size != 1 && first.group_size != replica_tasks)
      return errors::InvalidArgument(
          "group ", key, " has group_size ", first.group_size, " (", Where(*first.node),
          ") but under between-graph replication a group spans every task of the cluster: "
          "group_size must be ",
          replica_tasks, " (or 1)");
    if (!between && static_cast<int>(ranks.size()) != first.group_size)
      return errors::InvalidArgument(
          "group ", key, " has group_size ", first.group_size, " but its members (e.g. ",
          Where(*first.node), ") sit on ", ranks.size(), " task(s): a group has one member per "
          "task (process), so place each member on a task of its own");
    std::vector<int64_t> rank_list(ranks.begin(), ranks.end());
    if (between) {
      rank_list.clear();
      for (int r = 0; r < replica_tasks; ++r) rank_list.push_back(r);
    }
    if (first.group_size > 1)  // a group of one transfers nothing
      for (const Member* m : group) chains[{rank_list, m->rank}].push_back(m);
    for (auto& [instance, calls] : instances) {
      std::map<int, const Member*> by_rank;
      int senders = 0;
      const Member* sender = nullptr;
      for (const Member* m : calls) {
        auto [it, fresh] = by_rank.emplace(m->rank, m);
        if (!fresh)
          return errors::InvalidArgument(
              "group ", key, ", instance ", instance, ": ", Where(*it->second->node), " and ",
              Where(*m->node), " are on the same task; each task makes one call per instance");
        const bool bcast = m->node->op() == "CollectiveBcastSendV2" ||
                           m->node->op() == "CollectiveBcastRecvV2";
        const std::string& front = calls.front()->node->op();
        const bool first_bcast =
            front == "CollectiveBcastSendV2" || front == "CollectiveBcastRecvV2";
        if (m->node->op() != calls.front()->node->op() && !(bcast && first_bcast))
          return errors::InvalidArgument("group ", key, ", instance ", instance, ": ",
                                         Where(*calls.front()->node), " and ", Where(*m->node),
                                         " are different collectives");
        if (m->node->op() == "CollectiveBcastSendV2") {
          ++senders;
          sender = m;
        }
      }
      if (!between && static_cast<int>(calls.size()) != first.group_size)
        return errors::InvalidArgument("group ", key, ", instance ", instance, " has ",
                                       calls.size(), " member(s) (e.g. ", Where(*first.node),
                                       ") but group_size is ", first.group_size);
      const bool is_bcast = calls.front()->node->op() == "CollectiveBcastSendV2" ||
                            calls.front()->node->op() == "CollectiveBcastRecvV2";
      // Between graphs, this process holds the sender or a receiver.
      if (is_bcast && !between && senders != 1)
        return errors::InvalidArgument("group ", key, ", instance ", instance, " is a broadcast "
                                       "with ", senders, " CollectiveBcastSendV2 node(s); it "
                                       "needs exactly one");
      for (const Member* m : calls) {
        if (first.group_size == 1) break;  // a group of one: the kernel passes the value on
        graph->SetAttr(m->node, internal::kGroupRanksAttr, AttrValue::IntList(rank_list));
        // -1: a receiver between graphs learns the sender's rank when the step runs.
        if (is_bcast)
          graph->SetAttr(m->node, internal::kRootRankAttr,
                         AttrValue::Int(sender != nullptr ? sender->rank : -1));
      }
    }
  }
  for (auto& [where, calls] : chains) {
    std::sort(calls.begin(), calls.end(), [](const Member* a, const Member* b) {
      return std::make_pair(a->group_key, a->instance_key) <
             std::make_pair(b->group_key, b->instance_key);
    });
    for (size_t i = 1; i < calls.size(); ++i)
      graph->AddControlEdge(calls[i - 1]->node, calls[i]->node);
  }
  // The order must not contradict the data: instance k+1 may not feed instance k.
  auto order = graph->TopologicalOrder();
  if (!order.ok())
    return errors::InvalidArgument(
        "the collectives' (group_key, instance_key) order contradicts their data dependencies (a "
        "collective feeds one with a smaller instance_key in the same group, or with a smaller "
        "group_key in a group of the same tasks): ",
        order.status().message());
  return Status();
}

}  // namespace cfx
