// ResolveCollectives (session/collectives.h).
#include "session/collectives.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
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

// The value of a scalar int32 input that comes from a Const node, directly or through the
// Identity nodes and loop-invariant Enter nodes that carry it into loops.
StatusOr<int32_t> ConstInput(const Node& n, int index, const char* what) {
  const Edge* e = n.in_data_edges()[index];
  const Node* src = e != nullptr ? e->src : nullptr;
  auto carries = [](const Node& c) {
    const AttrValue* constant = c.attr("is_constant");
    return c.op() == "Identity" || (IsEnter(c) && constant != nullptr && constant->b);
  };
  while (src != nullptr && carries(*src) && !src->in_data_edges().empty() &&
         src->in_data_edges()[0] != nullptr)
    src = src->in_data_edges()[0]->src;
  const AttrValue* value = src != nullptr && src->op() == "Const" ? src->attr("value") : nullptr;
  if (value == nullptr || value->tensor.dtype() != DT_INT32 || value->tensor.num_elements() != 1)
    return errors::InvalidArgument(
        Where(n), ": its ", what, " must be an int32 scalar from a Const node (the session "
        "resolves groups before the step runs), but it comes from ",
        src != nullptr ? Where(*src) : std::string("nowhere"));
  return value->tensor.at<int32_t>(0);
}

// A while loop's Switch: its predicate is the loop's LoopCond.
bool IsLoopSwitch(const Node& n) {
  if (ControlFlowOpOf(n.op()) != ControlFlowOp::kSwitch) return false;
  const auto& in = n.in_data_edges();
  return in.size() > 1 && in[1] != nullptr &&
         ControlFlowOpOf(in[1]->src->op()) == ControlFlowOp::kLoopCond;
}

// A while loop's Merge: one of its inputs comes back from a NextIteration.
bool IsLoopMerge(const Node& n) {
  if (!IsMerge(n)) return false;
  for (const Edge* e : n.in_data_edges())
    if (e != nullptr && IsLoopBackEdge(*e)) return true;
  return false;
}

// The loop frames of a graph that holds collectives, and which nodes of each frame are done
// when the loop ends (its Exit nodes fire), so that calls after the loop can wait for them:
// those a loop variable leads to through the loop's Switch (dead in the test that ends the loop,
// as is the body), and those that compute the loop's predicate (done before the test decides).
// A node that only loop invariants lead to runs in every test, the last one too, and may still
// be running when the loop ends.
struct Loops {
  ControlFlowInfo info;
  std::vector<std::vector<Node*>> enters, exits;  // per frame
  std::vector<char> settled;                      // per node id

  static StatusOr<Loops> Build(const Graph& graph) {
    Loops loops;
    CFX_ASSIGN_OR_RETURN(loops.info, BuildControlFlowInfo(graph));
    const ControlFlowInfo& info = loops.info;
    const int frames = static_cast<int>(info.frames.size());
    loops.enters.resize(frames);
    loops.exits.resize(frames);
    loops.settled.assign(graph.num_nodes(), 0);
    std::vector<std::vector<const Node*>> switches(frames);
    for (const auto& n : graph.nodes()) {
      if (n == nullptr) continue;
      if (info.entered[n->id()] >= 0) loops.enters[info.entered[n->id()]].push_back(n.get());
      if (IsExit(*n)) loops.exits[info.frame_of[n->id()]].push_back(n.get());
      if (IsLoopSwitch(*n)) switches[info.frame_of[n->id()]].push_back(n.get());
      if (info.frame_of[n->id()] == 0) loops.settled[n->id()] = 1;  // once per step
    }
    // Frames come after their parents, so a frame's Enter nodes are classified before it is.
    for (int f = 1; f < frames; ++f) {
      std::deque<const Node*> todo;
      // Settles `n` (reached over `e`, if any) when it is one of frame f's unsettled nodes.
      auto settle = [&](const Edge* e, const Node* n) {
        if ((e != nullptr && IsLoopBackEdge(*e)) || loops.settled[n->id()] || IsExit(*n) ||
            info.frame_of[n->id()] != f)
          return;
        loops.settled[n->id()] = 1;
        todo.push_back(n);
      };
      // Forwards from Switch <- Merge <- Enter: a loop variable that enters from its parent's
      // settled nodes.
      bool entered = false;
      for (const Node* sw : switches[f]) {
        const Edge* merged = sw->in_data_edges()[0];
        if (merged == nullptr || !IsMerge(*merged->src)) continue;
        for (const Edge* e : merged->src->in_data_edges())
          if (e != nullptr && IsEnter(*e->src) && loops.settled[e->src->id()]) {
            settle(nullptr, sw);
            entered = true;
            break;
          }
      }
      for (; !todo.empty(); todo.pop_front())
        for (const Edge* e : todo.front()->out_edges()) settle(e, e->dst);
      // Backwards from the LoopCond: the predicate's computation.
      const Node* loop_cond = info.frames[f].loop_cond;
      if (!entered || loop_cond == nullptr) continue;
      loops.settled[loop_cond->id()] = 1;
      todo.push_back(loop_cond);
      for (; !todo.empty(); todo.pop_front()) {
        for (const Edge* e : todo.front()->in_data_edges())
          if (e != nullptr) settle(e, e->src);
        for (const Edge* e : todo.front()->in_control_edges()) settle(e, e->src);
      }
    }
    return loops;
  }

  // The child of frame `f` whose subtree holds frame `g` (a descendant of f).
  int ChildOf(int f, int g) const {
    while (info.frames[g].parent != f) g = info.frames[g].parent;
    return g;
  }
};

// Collectives must run the same number of times on every member: not in a conditional branch
// (after a Switch on a path that no Merge closes), and inside a loop on its settled nodes (the
// loop's trip count itself must be the same on every member; that is the model's).
Status CheckUnconditional(const Graph& graph, const Loops* loops,
                          const std::vector<Member>& members) {
  if (loops != nullptr)
    for (const Member& m : members)
      if (!loops->settled[m.node->id()])
        return errors::InvalidArgument(
            Where(*m.node), " is inside the while loop '",
            loops->info.frames[loops->info.frame_of[m.node->id()]].name,
            "' but neither runs in its body (after the loop's Switch) nor computes its predicate: "
            "only values from outside the loop lead to it, so it also runs in the test that ends "
            "the loop and may still be running when the loop is done; give it an input or a "
            "control input from the loop's body");
  std::vector<char> conditional(graph.num_nodes(), 0);
  std::deque<const Node*> todo;
  for (const auto& n : graph.nodes())
    if (n != nullptr && ControlFlowOpOf(n->op()) == ControlFlowOp::kSwitch && !IsLoopSwitch(*n))
      todo.push_back(n.get());
  while (!todo.empty()) {
    const Node* n = todo.front();
    todo.pop_front();
    for (const Edge* e : n->out_edges()) {
      const Node* d = e->dst;
      if (conditional[d->id()] || IsLoopBackEdge(*e) || (IsMerge(*d) && !IsLoopMerge(*d))) continue;
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

// Orders one rank's calls on one communicator (`calls`, sorted by key, all inside frame `f`),
// returning their nesting, e.g. "1:1 (1:2 (1:3)) 1:4": the calls that run in f, and each child
// loop holding calls as one block, come one after the other in the order of their first calls,
// by control edges (into a loop's Enter nodes, out of its Exit nodes). Every loop holding calls
// runs one iteration at a time (parallel_iterations 1), so its calls follow each other too.
StatusOr<std::string> OrderCalls(Graph* graph, const Loops* loops, int f,
                                 const std::vector<const Member*>& calls) {
  std::vector<std::pair<int, std::vector<const Member*>>> units;  // (child frame or -1, calls)
  std::map<int, size_t> unit_of_child;
  for (const Member* m : calls) {
    const int g = loops != nullptr ? loops->info.frame_of[m->node->id()] : 0;
    if (g == f) {
      units.push_back({-1, {m}});
      continue;
    }
    const int child = loops->ChildOf(f, g);
    auto [it, fresh] = unit_of_child.emplace(child, units.size());
    if (fresh) units.push_back({child, {}});
    units[it->second].second.push_back(m);
  }
  std::string nesting;
  std::vector<Node*> previous;  // the nodes that end the previous unit
  for (auto& [child, unit_calls] : units) {
    std::vector<Node*> first, last;
    if (!nesting.empty()) nesting += " ";
    if (child < 0) {
      const Member& m = *unit_calls.front();
      first = last = {m.node};
      nesting += std::to_string(m.group_key) + ":" + std::to_string(m.instance_key);
    } else {
      const std::string& name = loops->info.frames[child].name;
      first = loops->enters[child];
      last = loops->exits[child];
      if (last.empty())
        return errors::InvalidArgument("the while loop '", name, "' holds collectives (e.g. ",
                                       Where(*unit_calls.front()->node),
                                       ") but has no Exit node to order the calls after it by");
      CFX_ASSIGN_OR_RETURN(std::string inner, OrderCalls(graph, loops, child, unit_calls));
      nesting += "(" + inner + ")";
      for (Node* enter : first) graph->SetAttr(enter, "parallel_iterations", AttrValue::Int(1));
    }
    for (Node* p : previous)
      for (Node* n : first) graph->AddControlEdge(p, n);
    previous = std::move(last);
  }
  return nesting;
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
  std::optional<Loops> loops;
  for (const auto& n : graph->nodes())
    if (n != nullptr && IsEnter(*n)) {
      CFX_ASSIGN_OR_RETURN(loops, Loops::Build(*graph));
      break;
    }
  const Loops* in_loops = loops ? &*loops : nullptr;
  CFX_RETURN_IF_ERROR(CheckUnconditional(*graph, in_loops, members));

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
  // The ranks' calls on one communicator must nest alike in loops (in graph, where this graph
  // holds every rank's).
  std::map<std::vector<int64_t>, std::pair<int, std::string>> nesting_of;
  for (auto& [where, calls] : chains) {
    std::sort(calls.begin(), calls.end(), [](const Member* a, const Member* b) {
      return std::make_pair(a->group_key, a->instance_key) <
             std::make_pair(b->group_key, b->instance_key);
    });
    CFX_ASSIGN_OR_RETURN(std::string nesting, OrderCalls(graph, in_loops, 0, calls));
    auto [it, fresh] = nesting_of.emplace(where.first, std::make_pair(where.second, nesting));
    if (!fresh && it->second.second != nesting)
      return errors::InvalidArgument(
          "the tasks' collectives over the same tasks do not sit in the same while loops, so "
          "their calls would not pair up: rank ",
          it->second.first, " makes (group:instance, a loop in parentheses) ", it->second.second,
          " but rank ", where.second, " makes ", nesting);
  }
  // The order must not contradict the data: instance k+1 may not feed instance k.
  auto order = graph->TopologicalOrder();
  if (!order.ok())
    return errors::InvalidArgument(
        "the collectives' (group_key, instance_key) order contradicts their data dependencies (a "
        "collective feeds one with a smaller instance_key in the same group, or with a smaller "
        "group_key in a group of the same tasks, or feeds a while loop whose first collective "
        "comes before it): ",
        order.status().message());
  return Status();
}

}  // namespace cfx
