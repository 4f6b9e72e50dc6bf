// PruneGraph and PartitionGraph.
#include "session/graph_rewrite.h"

#include <set>

#include "graph/control_flow_info.h"

namespace cfx {
namespace {

std::string Canonical(const TensorId& id) { return id.node + ":" + std::to_string(id.port); }

// "n" and "n:0" name the same output.
std::string CanonicalInput(const std::string& input) {
  if (!input.empty() && input[0] == '^') return input;
  auto id = ParseTensorName(input);
  return id.ok() ? Canonical(*id) : input;
}

std::string SafeName(std::string s) {
  for (char& c : s)
    if (c == ':' || c == '/' || c == '^') c = '_';
  return s;
}

}  // namespace

StatusOr<PrunedGraph> PruneGraph(const GraphDef& graph, const OpRegistry& ops,
                                 const std::vector<std::string>& feeds,
                                 const std::vector<std::string>& fetches,
                                 const std::vector<std::string>& targets) {
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::FromGraphDef(graph, &ops));
  PrunedGraph out;
  out.graph.has_versions = graph.has_versions;
  out.graph.versions = graph.versions;
  out.graph.version = graph.version;
  out.graph.library = graph.library;

  auto resolve = [&](const std::string& what, const std::string& name,
                     TensorId* id) -> StatusOr<DataType> {
    CFX_ASSIGN_OR_RETURN(*id, ParseTensorName(name));
    Node* n = g->FindNode(id->node);
    if (n == nullptr)
      return errors::NotFound(what, " '", name, "' names node '", id->node,
                              "', which is not in the graph");
    if (id->port < 0 || id->port >= n->num_outputs())
      return errors::InvalidArgument(what, " '", name, "': node ", id->node, " (op ", n->op(),
                                     ") has ", n->num_outputs(), " output(s)");
    return BaseType(n->output_types()[id->port]);
  };

  // Fed outputs are replaced by _Arg nodes. A fed Placeholder's control edges move to its
  // _Arg too (as in TensorFlow), so nothing waits on the Placeholder itself.
  std::map<std::string, std::string> replaced;  // "node:port" -> the _Arg that replaces it
  std::vector<NodeDef> added;
  for (size_t i = 0; i < feeds.size(); ++i) {
    TensorId id;
    CFX_ASSIGN_OR_RETURN(DataType type, resolve("feed", feeds[i], &id));
    if (replaced.count(Canonical(id)))
      return errors::InvalidArgument("feed '", feeds[i], "' is fed twice");
    NodeDef arg;
    arg.name = "_arg_" + SafeName(Canonical(id)) + "_" + std::to_string(i);
    arg.op = "_Arg";
    arg.attr["T"] = AttrValue::Type(type);
    arg.attr["index"] = AttrValue::Int(static_cast<int64_t>(i));
    replaced[Canonical(id)] = arg.name;
    out.feed_types.push_back(type);
    PartialTensorShape shape;
    const Node* fed = g->FindNode(id.node);
    if (fed->op() == "Placeholder" && !replaced.count("^" + id.node))
      replaced["^" + id.node] = "^" + arg.name;
    if (fed->op() == "Placeholder")
      if (const AttrValue* s = fed->attr("shape"); s != nullptr) shape = s->shape;
    // The Run checks every fed value against the Placeholder's shape (Session::Run), so the
    // _Arg records it for the passes that read static shapes (the remapper's residual adds).
    if (!shape.unknown_rank()) arg.attr["_output_shapes"] = AttrValue::ShapeList({shape});
    out.feed_shapes.push_back(shape);
    out.arg_nodes.push_back(arg.name);
    added.push_back(std::move(arg));
  }
  for (size_t i = 0; i < fetches.size(); ++i) {
    TensorId id;
    CFX_ASSIGN_OR_RETURN(DataType type, resolve("fetch", fetches[i], &id));
    NodeDef ret;
    ret.name = "_retval_" + SafeName(Canonical(id)) + "_" + std::to_string(i);
    ret.op = "_Retval";
    auto r = replaced.find(Canonical(id));
    ret.input.push_back(r != replaced.end() ? r->second : Canonical(id));
    ret.attr["T"] = AttrValue::Type(type);
    ret.attr["index"] = AttrValue::Int(static_cast<int64_t>(i));
    out.retval_nodes.push_back(ret.name);
    added.push_back(std::move(ret));
  }
  for (const std::string& t : targets)
    if (g->FindNode(t) == nullptr)
      return errors::NotFound("target '", t, "' is not a node of the graph");

  // What the fetches and targets need, stopping at fed outputs.
  std::map<std::string, const NodeDef*> by_name;
  for (const NodeDef& n : graph.node) by_name[n.name] = &n;
  std::set<std::string> keep;
  std::vector<std::string> stack(targets.begin(), targets.end());
  for (const NodeDef& n : added)
    for (const std::string& in : n.input) stack.push_back(ParseTensorName(in)->node);
  while (!stack.empty()) {
    std::string name = stack.back();
    stack.pop_back();
    if (!by_name.count(name) || !keep.insert(name).second) continue;
    for (const std::string& in : by_name[name]->input) {
      if (in.empty()) continue;
      if (in[0] == '^') {
        if (!replaced.count(in)) stack.push_back(in.substr(1));
      } else if (!replaced.count(CanonicalInput(in))) {
        stack.push_back(ParseTensorName(in)->node);
      }
    }
  }
  for (const NodeDef& n : graph.node) {
    if (!keep.count(n.name)) continue;
    if (n.op == "Placeholder") {
      const AttrValue* dtype = n.attr.count("dtype") ? &n.attr.at("dtype") : nullptr;
      const AttrValue* shape = n.attr.count("shape") ? &n.attr.at("shape") : nullptr;
      return errors::InvalidArgument("you must feed a value for placeholder tensor '", n.name,
                                     "' with dtype ", dtype ? DataTypeString(dtype->type) : "?",
                                     shape ? " and shape " + shape->shape.ToString() : "",
                                     " (it is needed by the fetches and targets of this run)");
    }
    NodeDef copy = n;
    for (std::string& in : copy.input) {
      auto r = replaced.find(CanonicalInput(in));
      if (r != replaced.end()) in = r->second;
    }
    out.graph.node.push_back(std::move(copy));
  }
  for (NodeDef& n : added) out.graph.node.push_back(std::move(n));
  // Validates the result and rejects cycles (loops need loop ops).
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> check, Graph::FromGraphDef(out.graph, &ops));
  CFX_RETURN_IF_ERROR(check->TopologicalOrder().status());
  return out;
}

namespace {

// The control loops of one partition (EuroSys 2018 §4.4, Fig. 6): for a loop frame whose nodes
// sit on several devices, each of those devices gets a small loop of its own
//   Enter(dummy) -> Merge -> Switch(·, LoopCond) -> Identity -> NextIteration -> Merge
// driven by the frame's LoopCond (received from the device that computes it). It creates the
// frame's iterations on that device in step with the real loop, so that every _Recv of the frame
// on the device (which has no data input in its partition) runs in the right frame and
// iteration: the _Recv gets a control edge from the control loop's Merge. A nested frame's
// dummy runs in its parent frame through the parent's control loop on the same device.
// Keyed by (frame path, device): frame indices change when control-loop nodes are added.
struct ControlLoops {
  std::map<std::pair<std::string, Device*>, std::string> enter, merge, pivot;
};

// A frame's name with its ancestors': unique in the graph.
std::string FramePath(const ControlFlowInfo& cf, int f) {
  std::string path;
  for (; f > 0; f = cf.frames[f].parent) path = "/" + cf.frames[f].name + path;
  return path;
}

StatusOr<ControlLoops> AddControlLoops(const Graph& graph, const ControlFlowInfo& cf,
                                       const std::vector<Device*>& device_of,
                                       std::vector<NodeDef>* added,
                                       std::vector<Device*>* added_devices) {
  ControlLoops loops;
  const size_t num_frames = cf.frames.size();
  std::vector<std::set<Device*>> devices(num_frames);
  std::vector<const Node*> an_enter(num_frames, nullptr);
  for (const auto& n : graph.nodes()) {
    devices[cf.frame_of[n->id()]].insert(device_of[n->id()]);
    if (const int f = cf.entered[n->id()]; f >= 0) {
      devices[f].insert(device_of[n->id()]);
      an_enter[f] = n.get();
    }
  }
  // A device that runs part of a nested frame must also run its ancestors' frames.
  for (size_t f = num_frames - 1; f > 0; --f)
    if (const int p = cf.frames[f].parent; p > 0)
      devices[p].insert(devices[f].begin(), devices[f].end());
  for (size_t f = 1; f < num_frames; ++f) {
    if (devices[f].size() < 2) continue;
    const ControlFlowInfo::Frame& frame = cf.frames[f];
    if (frame.loop_cond == nullptr)
      return errors::InvalidArgument("loop frame '", frame.name,
                                     "' spans several devices but has no LoopCond");
    const AttrValue* parallel = an_enter[f]->attr("parallel_iterations");
    for (Device* d : devices[f]) {
      const std::string p = "_cloop/" + SafeName(frame.name) + "/" + SafeName(d->full_name()) + "/";
      auto add = [&](const std::string& name, const std::string& op,
                     std::vector<std::string> inputs,
                     std::vector<std::pair<std::string, AttrValue>> attrs) {
        NodeDef n;
        n.name = p + name;
        n.op = op;
        n.input = std::move(inputs);
        n.device = d->full_name();
        for (auto& [k, v] : attrs) n.attr[k] = std::move(v);
        if (op != "Const") n.attr["T"] = AttrValue::Type(DT_FLOAT);
        added->push_back(std::move(n));
        added_devices->push_back(d);
      };
      std::vector<std::string> anchor;
      if (frame.parent > 0)
        anchor.push_back("^" + loops.pivot.at({FramePath(cf, frame.parent), d}));
      add("dummy", "Const", anchor,
          {{"dtype", AttrValue::Type(DT_FLOAT)},
           {"value", AttrValue::TensorValue(Tensor::Scalar<float>(DT_FLOAT, 0.0f))}});
      add("enter", "Enter", {p + "dummy"},
          {{"frame_name", AttrValue::String(frame.name)},
           {"is_constant", AttrValue::Bool(false)},
           {"parallel_iterations", parallel != nullptr ? *parallel : AttrValue::Int(10)}});
      add("merge", "Merge", {p + "enter", p + "next"}, {{"N", AttrValue::Int(2)}});
      add("switch", "Switch", {p + "merge", frame.loop_cond->name()}, {});
      add("exit", "Exit", {p + "switch"}, {});
      add("pivot", "Identity", {p + "switch:1"}, {});
      add("next", "NextIteration", {p + "pivot"}, {});
      loops.enter[{FramePath(cf, static_cast<int>(f)), d}] = p + "enter";
      loops.merge[{FramePath(cf, static_cast<int>(f)), d}] = p + "merge";
      loops.pivot[{FramePath(cf, static_cast<int>(f)), d}] = p + "pivot";
    }
  }
  return loops;
}

}  // namespace

StatusOr<std::map<Device*, GraphDef>> PartitionGraph(const Graph& original,
                                                     const std::vector<Device*>& original_devices) {
  CFX_ASSIGN_OR_RETURN(ControlFlowInfo cf, BuildControlFlowInfo(original));
  std::vector<NodeDef> added;
  std::vector<Device*> device_of = original_devices;
  CFX_ASSIGN_OR_RETURN(ControlLoops loops,
                       AddControlLoops(original, cf, original_devices, &added, &device_of));
  std::unique_ptr<Graph> extended;
  if (!added.empty()) {
    GraphDef def = original.ToGraphDef();
    for (NodeDef& n : added) def.node.push_back(std::move(n));
    CFX_ASSIGN_OR_RETURN(extended, Graph::FromGraphDef(def, &original.registry()));
    CFX_ASSIGN_OR_RETURN(cf, BuildControlFlowInfo(*extended));
  }
  const Graph& graph = extended != nullptr ? *extended : original;

  std::map<Device*, GraphDef> parts;
  GraphDef header = graph.ToGraphDef();
  header.node.clear();
  for (const auto& n : graph.nodes()) parts.emplace(device_of[n->id()], header);
  std::map<std::pair<std::string, Device*>, std::string> recv_of;  // (tensor, dst) -> _Recv
  auto add_pair = [&](const Node* src, int port, Device* dst, DataType type,
                      const std::string& sent_input) -> std::string {
    Device* sdev = device_of[src->id()];
    const std::string tensor =
        port < 0 ? "^" + src->name() : src->name() + ":" + std::to_string(port);
    auto key = std::make_pair(tensor, dst);
    auto it = recv_of.find(key);
    if (it != recv_of.end()) return it->second;
    const std::string base =
        SafeName(tensor) + "_" + SafeName(sdev->full_name()) + "_to_" + SafeName(dst->full_name());
    auto common = [&](NodeDef* n) {
      n->attr["tensor_name"] = AttrValue::String(tensor);
      n->attr["send_device"] = AttrValue::String(sdev->full_name());
      n->attr["recv_device"] = AttrValue::String(dst->full_name());
      n->attr["send_device_incarnation"] =
          AttrValue::Int(static_cast<int64_t>(sdev->incarnation()));
      n->attr["client_terminated"] = AttrValue::Bool(false);
      n->device = "";
    };
    NodeDef send;
    send.name = "_send_" + base;
    send.op = "_Send";
    send.input.push_back(sent_input);
    send.attr["T"] = AttrValue::Type(type);
    common(&send);
    send.device = sdev->full_name();
    parts[sdev].node.push_back(std::move(send));
    NodeDef recv;
    recv.name = "_recv_" + base;
    recv.op = "_Recv";
    recv.attr["tensor_type"] = AttrValue::Type(type);
    common(&recv);
    recv.device = dst->full_name();
    // In a loop frame the _Recv runs as often as its _Send, in the same frame and iterations:
    // once per iteration (after its partition's control-loop Merge), except for the output of
    // an Enter that is not a loop invariant, which only iteration 0 receives (after the control
    // loop's Enter).
    if (const int f = cf.OutputFrame(*src); f > 0) {
      const AttrValue* constant = src->attr("is_constant");
      const bool once = cf.entered[src->id()] >= 0 && !(constant != nullptr && constant->b);
      const auto& anchors = once ? loops.enter : loops.merge;
      recv.input.push_back("^" + anchors.at({FramePath(cf, f), dst}));
    }
    parts[dst].node.push_back(recv);
    recv_of[key] = recv.name;
    return recv.name;
  };

  for (const auto& n : graph.nodes()) {
    Device* dev = device_of[n->id()];
    NodeDef def = n->def();
    def.device = dev->full_name();
    def.input.clear();
    std::vector<std::string> controls;
    // Rebuild the inputs from the node's edges: data inputs in order, then control inputs.
    std::vector<std::string> data(n->num_inputs());
    for (const Edge* e : n->in_data_edges()) {
      Device* sdev = device_of[e->src->id()];
      std::string name = e->src->name() + ":" + std::to_string(e->src_output);
      if (sdev != dev)
        name = add_pair(e->src, e->src_output, dev, BaseType(e->src->output_types()[e->src_output]),
                        name);
      data[e->dst_input] = name;
    }
    for (const Edge* e : n->in_control_edges()) {
      Device* sdev = device_of[e->src->id()];
      if (sdev == dev) {
        controls.push_back("^" + e->src->name());
        continue;
      }
      // A dummy scalar made after the source runs carries the dependency.
      const std::string dummy = "_ctrl_" + SafeName(e->src->name()) + "_" +
                                SafeName(sdev->full_name()) + "_to_" + SafeName(dev->full_name());
      if (!recv_of.count({"^" + e->src->name(), dev})) {
        NodeDef c;
        c.name = dummy;
        c.op = "Const";
        c.device = sdev->full_name();
        c.attr["dtype"] = AttrValue::Type(DT_FLOAT);
        c.attr["value"] = AttrValue::TensorValue(Tensor::Scalar<float>(DT_FLOAT, 0.0f));
        c.input.push_back("^" + e->src->name());
        parts[sdev].node.push_back(std::move(c));
      }
      controls.push_back("^" + add_pair(e->src, -1, dev, DT_FLOAT, dummy + ":0"));
    }
    for (std::string& d : data) def.input.push_back(std::move(d));
    for (std::string& c : controls) def.input.push_back(std::move(c));
    parts[dev].node.push_back(std::move(def));
  }
  return parts;
}

}  // namespace cfx
