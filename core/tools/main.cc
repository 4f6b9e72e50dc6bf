// The `conflux` command-line tool.
//
//   conflux plugins [--config F] [--plugin P]...
//   conflux graph show GRAPH [--config F] [--plugin P]...
//   conflux graph eval GRAPH --fetch NODE[:PORT]... [--device D] [--config F] [--plugin P]...
//   conflux run GRAPH [--feed NODE[:PORT]=FILE.npy]... [--fetch NODE[:PORT]]... [--target NODE]...
//               [--out DIR] [--trace FILE.json] [--timeout-ms N] [--config F] [--plugin P]...
//   conflux bench GRAPH --fetch NODE[:PORT]... [--feed NODE[:PORT]=FILE.npy]...
//                 [--input-shape NODE[:PORT]:D1,D2,...]... [--target NODE]... [--runs N]
//                 [--warmup N] [--top N] [--threads N] [--json] [--config F] [--plugin P]...
//   conflux graph place GRAPH [--config F] [--plugin P]...
//   conflux cluster [--config F]
//   conflux checkpoint ls PREFIX
//   conflux show SAVED_MODEL_DIR
//   conflux run SAVED_MODEL_DIR [--tag T[,T]] [--signature S] [--feed KEY=FILE.npy]... [--out DIR]
//   conflux bench SAVED_MODEL_DIR [--tag T] [--signature S] [--feed KEY=FILE.npy]...
//   conflux version
#include <charconv>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench_command.h"
#include "checkpoint/checkpoint_list.h"
#include "cluster_command.h"
#include "conflux/config.h"
#include "conflux/graph.h"
#include "conflux/kernel_runner.h"
#include "conflux/plugin_api.h"
#include "conflux/runtime.h"
#include "conflux/shape_inference.h"
#include "graph/graph_shapes.h"
#include "passes/cost_model.h"
#include "passes/lower_functions.h"
#include "passes/placer.h"
#include "run_command.h"
#include "saved_model_command.h"
#include "conflux/saved_model.h"
#include "runtime/serial_evaluator.h"

namespace cfx {
namespace {

constexpr const char* kUsage = R"(usage:
  conflux plugins [--config FILE] [--plugin NAME|PATH]...
      loaded plugins, devices, ops and the kernels of each device type; what failed to load
  conflux graph show GRAPH.pb|GRAPH.pbtxt [--config FILE] [--plugin NAME|PATH]...
      nodes, ops and inferred output shapes, validated against the op registry
  conflux graph eval GRAPH --fetch NODE[:PORT]... [--device DEVICE] [--config FILE]
      runs what the fetches need on one device (default CPU:0) and prints the results
  conflux run GRAPH.pb|GRAPH.pbtxt [--feed NODE[:PORT]=FILE.npy]... [--fetch NODE[:PORT]]...
              [--target NODE]... [--out DIR] [--trace FILE.json] [--timeout-ms N] [--config FILE]
      runs one step in a session on the config's devices; prints per fetch its dtype, shape,
      min/max/mean and first values; --out writes DIR/<fetch, ':' as '_'>.npy per fetch,
      --trace a Chrome trace (chrome://tracing, Perfetto) of the step; with a config that
      has a cluster: section, run it under mpirun (docs/distributed.md): the step spans the
      cluster and the other ranks serve it
  conflux bench GRAPH.pb|GRAPH.pbtxt --fetch NODE[:PORT]... [--feed NODE[:PORT]=FILE.npy]...
              [--input-shape NODE[:PORT]:D1,D2,...]... [--target NODE]... [--runs 100]
              [--warmup 10] [--top 10] [--threads N] [--json] [--config FILE]
      times --runs steps after --warmup ones (as TensorFlow's benchmark_model): latency min,
      median, p90, p99 and mean, steps per second, each device's peak allocator bytes, and the
      --top op types by time in one traced step; --input-shape feeds a placeholder random
      values of that shape, --threads N gives each op N threads (threads.intra_op N, and
      inter_op as many as fit on the cores), --json prints one JSON object
  conflux graph place GRAPH [--config FILE] [--plugin NAME|PATH]...
      places every node on the config's devices with the static cost model; prints each node's
      device and estimated start and finish, and the estimated step time
  conflux cluster [--config FILE]
      the cluster the config's cluster: section describes: per MPI rank its task, whether it is
      the chief and the devices it creates, and the mpirun command line that launches it
  conflux show SAVED_MODEL_DIR
      a SavedModel's tag sets, signatures (input and output keys, dtypes, shapes) and variables,
      as saved_model_cli show --all
  conflux run SAVED_MODEL_DIR [--tag serve] [--signature serving_default]
              [--feed KEY=FILE.npy]... [--out DIR]
      loads the SavedModel (variables restored, init op run with its assets), calls the
      signature with its inputs by key, prints every output; --out writes DIR/<key>.npy
  conflux bench SAVED_MODEL_DIR [--tag serve] [--signature serving_default]
                [--feed KEY=FILE.npy]... [--input-shape KEY:D1,D2,...]... [--runs 100]
                [--warmup 10] [--json]
      load time, first call, then latency min/median/p90/p99 and calls per second of the
      signature; inputs not fed are random, of the signature's shape (unknown dims 1)
  conflux checkpoint ls PREFIX
      the tensors of a checkpoint (TensorFlow's PREFIX.index + PREFIX.data-*, or PREFIX.cfxckpt):
      name, dtype and shape of each, as tf.train.list_variables
  conflux version
options:
  --config FILE   YAML config (default: the built-in config/local.yaml)
  --plugin P      load one more plugin, by name (libconflux_P.so on the search path) or path
)";

struct Args {
  std::vector<std::string> positional;
  std::string config;
  std::vector<std::string> plugins;
  std::vector<std::string> fetches;
  std::string device = "CPU:0";
  std::vector<std::string> feeds;
  std::vector<std::string> targets;
  std::string out_dir;
  std::string trace_path;
  std::string timeout_ms;
  std::vector<std::string> input_shapes;
  std::string runs = "100", warmup = "10", top = "10", threads;
  bool json = false;
  std::string tags = "serve", signature = "serving_default";
};

StatusOr<Args> ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> StatusOr<std::string> {
      if (i + 1 >= argc) return errors::InvalidArgument(flag, " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--config") {
      CFX_ASSIGN_OR_RETURN(a.config, value("--config"));
    } else if (arg == "--plugin") {
      CFX_ASSIGN_OR_RETURN(std::string p, value("--plugin"));
      a.plugins.push_back(p);
    } else if (arg == "--fetch") {
      CFX_ASSIGN_OR_RETURN(std::string f, value("--fetch"));
      a.fetches.push_back(f);
    } else if (arg == "--device") {
      CFX_ASSIGN_OR_RETURN(a.device, value("--device"));
    } else if (arg == "--feed") {
      CFX_ASSIGN_OR_RETURN(std::string f, value("--feed"));
      a.feeds.push_back(f);
    } else if (arg == "--target") {
      CFX_ASSIGN_OR_RETURN(std::string t, value("--target"));
      a.targets.push_back(t);
    } else if (arg == "--out") {
      CFX_ASSIGN_OR_RETURN(a.out_dir, value("--out"));
    } else if (arg == "--trace") {
      CFX_ASSIGN_OR_RETURN(a.trace_path, value("--trace"));
    } else if (arg == "--timeout-ms") {
      CFX_ASSIGN_OR_RETURN(a.timeout_ms, value("--timeout-ms"));
    } else if (arg == "--input-shape") {
      CFX_ASSIGN_OR_RETURN(std::string v, value("--input-shape"));
      a.input_shapes.push_back(v);
    } else if (arg == "--runs") {
      CFX_ASSIGN_OR_RETURN(a.runs, value("--runs"));
    } else if (arg == "--warmup") {
      CFX_ASSIGN_OR_RETURN(a.warmup, value("--warmup"));
    } else if (arg == "--top") {
      CFX_ASSIGN_OR_RETURN(a.top, value("--top"));
    } else if (arg == "--threads") {
      CFX_ASSIGN_OR_RETURN(a.threads, value("--threads"));
    } else if (arg == "--tag") {
      CFX_ASSIGN_OR_RETURN(a.tags, value("--tag"));
    } else if (arg == "--signature") {
      CFX_ASSIGN_OR_RETURN(a.signature, value("--signature"));
    } else if (arg == "--json") {
      a.json = true;
    } else if (arg == "-h" || arg == "--help") {
      a.positional = {"help"};
      return a;
    } else if (arg.rfind("--", 0) == 0) {
      return errors::InvalidArgument("unknown option ", arg);
    } else {
      a.positional.push_back(arg);
    }
  }
  return a;
}

// --config's file, else the built-in default.
StatusOr<Config> LoadConfig(const Args& a) {
  if (a.config.empty()) return Config::Default();
  return Config::FromFile(a.config);
}

// Only `run` joins a cluster (under mpirun); the other commands look at this process's plugins
// and devices, with or without a `cluster:` section.
StatusOr<std::unique_ptr<Runtime>> MakeRuntime(const Args& a, bool join_cluster) {
  CFX_ASSIGN_OR_RETURN(Config config, LoadConfig(a));
  if (!join_cluster) config.cluster.enabled = false;
  if (!a.threads.empty()) {
    int n = 0;
    auto [end, ec] = std::from_chars(a.threads.data(), a.threads.data() + a.threads.size(), n);
    if (ec != std::errc() || end != a.threads.data() + a.threads.size() || n < 1 || n > 4096)
      return errors::InvalidArgument("bad --threads '", a.threads,
                                     "': expected a whole number in [1, 4096]");
    // N threads in all, as TensorFlow's intra_op_parallelism_threads = N means: N per op, and as
    // many executor threads as such teams fit on the cores (inter_op 0). N inter-op threads
    // each with an OpenMP team of N would run N * N threads.
    config.intra_op_threads = n;
    config.inter_op_threads = 0;
  }
  for (const std::string& p : a.plugins) {
    PluginSpec spec;
    if (p.find('/') != std::string::npos || p.ends_with(".so"))
      spec.path = p;
    else
      spec.name = p;
    spec.source = "--plugin " + p;
    config.plugins.push_back(spec);
  }
  return Runtime::Create(config);
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

int Plugins(const Runtime& rt) {
  std::printf("Plugins:\n");
  for (const LoadedPluginInfo& p : rt.plugins()) {
    std::printf("  %s %s  (ABI %u.%u)  %s\n", p.name.c_str(), p.version.c_str(), p.abi_major,
                p.abi_minor, p.path.c_str());
    std::printf("    device types: %s; ops: %zu; kernels: %d\n",
                p.device_types.empty() ? "-" : Join(p.device_types, ", ").c_str(), p.ops.size(),
                p.num_kernels);
    if (!p.transports.empty() || !p.collectives.empty())
      std::printf("    transports: %s; collectives: %s\n",
                  p.transports.empty() ? "-" : Join(p.transports, ", ").c_str(),
                  p.collectives.empty() ? "-" : Join(p.collectives, ", ").c_str());
  }
  std::printf("Devices:\n");
  for (const auto& d : rt.devices())
    std::printf("  %s  [%s] %s\n", d->full_name().c_str(), d->plugin().c_str(),
                d->description().c_str());
  if (rt.devices().empty()) std::printf("  (none)\n");
  for (const auto& [type, why] : rt.device_type_notes())
    std::printf("  no %s device: %s\n", type.c_str(), why.c_str());
  // Kernels per op and device type, with the dtypes they accept.
  std::map<std::string, std::map<std::string, std::set<std::string>>> kernels;
  for (const KernelDef* k : rt.kernels().All()) {
    auto& types = kernels[k->op][k->device_type];
    if (k->type_constraints.empty()) types.insert("any");
    for (const auto& [attr, dts] : k->type_constraints)
      for (DataType t : dts) types.insert(DataTypeString(t));
  }
  std::vector<std::string> ops = rt.ops().ListOps();
  std::printf("Ops (%zu):\n", ops.size());
  for (const std::string& op : ops) {
    const OpRegistration* reg = rt.ops().LookUp(op);
    std::string line = "  " + op + "  [" + reg->registered_by + "]";
    auto it = kernels.find(op);
    if (it == kernels.end()) {
      line += "  no kernels";
    } else {
      for (const auto& [device, types] : it->second)
        line += "  " + device + "(" +
                Join(std::vector<std::string>(types.begin(), types.end()), ",") + ")";
    }
    std::printf("%s\n", line.c_str());
  }
  if (!rt.plugin_failures().empty()) {
    std::printf("Failed to load:\n");
    for (const PluginFailure& f : rt.plugin_failures())
      std::printf("  %s: %s\n", f.spec.c_str(), f.error.ToString().c_str());
  }
  return 0;
}

StatusOr<std::unique_ptr<Graph>> LoadGraph(const Runtime& rt, const std::string& path) {
  CFX_ASSIGN_OR_RETURN(GraphDef def, ReadGraphDefFile(path, rt.config().limits));
  // As a Session would run it: calls inlined, functional control flow lowered.
  Status lowered = LowerFunctions(rt.ops(), rt.config().limits.max_nodes, &def,
                                  rt.config().limits.max_constant_bytes);
  if (!lowered.ok()) return lowered.WithPrefix(path + ": ");
  auto g = Graph::FromGraphDef(def, &rt.ops());
  if (!g.ok()) return g.status().WithPrefix(path + ": ");
  return g;
}

Status GraphShow(const Runtime& rt, const std::string& path) {
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, LoadGraph(rt, path));
  CFX_ASSIGN_OR_RETURN(std::vector<Node*> order, g->TopologicalOrder());
  // What the shape functions alone infer (not `_output_shapes`); the listing stops at the first
  // node, in order, whose function fails.
  const std::vector<NodeShapes> shapes = InferGraphShapes(*g, {.use_recorded_shapes = false});
  std::printf("%s: %d nodes\n", path.c_str(), g->num_nodes());
  for (Node* n : order) {
    const NodeShapes& s = shapes[n->id()];
    if (!s.error.ok()) return s.error.WithPrefix(path + ": shape inference: ");
    std::vector<std::string> outs;
    for (int i = 0; i < n->num_outputs(); ++i)
      outs.push_back(DataTypeString(n->output_types()[i]) + s.outputs[i].ToString());
    std::vector<std::string> attrs;
    for (const auto& [k, v] : n->def().attr)
      if (k != "value") attrs.push_back(k + "=" + v.DebugString());
    std::printf("  %s = %s(%s)%s%s -> %s\n", n->name().c_str(), n->op().c_str(),
                Join(n->def().input, ", ").c_str(), attrs.empty() ? "" : " ",
                Join(attrs, " ").c_str(), outs.empty() ? "()" : Join(outs, ", ").c_str());
  }
  return Status();
}

Status GraphEval(const Runtime& rt, const Args& a, const std::string& path) {
  if (a.fetches.empty()) return errors::InvalidArgument("graph eval needs at least one --fetch");
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, LoadGraph(rt, path));
  CFX_ASSIGN_OR_RETURN(Device * device, rt.FindDevice(a.device));
  std::vector<std::string> fetches;
  for (const std::string& f : a.fetches) fetches.push_back(f);
  CFX_ASSIGN_OR_RETURN(std::vector<Tensor> out, EvaluateSerially(rt, *g, device, {}, fetches));
  for (size_t i = 0; i < out.size(); ++i)
    std::printf("%s = %s\n", fetches[i].c_str(), out[i].DebugString(64).c_str());
  return Status();
}

Status GraphPlace(const Runtime& rt, const std::string& path) {
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, LoadGraph(rt, path));
  std::vector<Device*> devices;
  for (const auto& d : rt.devices()) devices.push_back(d.get());
  CostModel costs;
  auto placed = PlaceGraph(*g, devices, rt.kernels(), costs);
  if (!placed.ok()) return placed.status().WithPrefix(path + ": ");
  std::printf("%s", placed->Report(*g).c_str());
  std::printf("estimated step time: %.1f us on %zu device(s)\n", placed->estimated_makespan_us,
              devices.size());
  return Status();
}

// `conflux checkpoint ls PREFIX`: one line per tensor, "name  dtype  [dims]", as
// tf.train.list_variables gives them.
Status CheckpointList(const std::string& prefix) {
  CFX_ASSIGN_OR_RETURN(std::vector<internal::CheckpointVariable> vars,
                       internal::ListCheckpoint(prefix));
  size_t width = 4;
  for (const auto& v : vars) width = std::max(width, v.name.size());
  for (const auto& v : vars)
    std::printf("%-*s  %-10s %s\n", static_cast<int>(width), v.name.c_str(),
                DataTypeString(v.dtype).c_str(), v.shape.ToString().c_str());
  return Status();
}

int Fail(const Status& s) {
  std::fprintf(stderr, "conflux: %s\n", s.ToString().c_str());
  return 1;
}

int Main(int argc, char** argv) {
  auto args = ParseArgs(argc, argv);
  if (!args.ok()) {
    std::fprintf(stderr, "conflux: %s\n%s", args.status().message().c_str(), kUsage);
    return 2;
  }
  const auto& pos = args->positional;
  if (pos.empty() || pos[0] == "help") {
    std::printf("%s", kUsage);
    return pos.empty() ? 2 : 0;
  }
  if (pos[0] == "version") {
    std::printf("conflux %s (plugin ABI %d.%d)\n", CONFLUX_VERSION, CFX_ABI_MAJOR, CFX_ABI_MINOR);
    return 0;
  }
  bool plugins = pos[0] == "plugins" && pos.size() == 1;
  bool graph = pos[0] == "graph" && pos.size() == 3 &&
               (pos[1] == "show" || pos[1] == "eval" || pos[1] == "place");
  bool run = pos[0] == "run" && pos.size() == 2;
  bool bench = pos[0] == "bench" && pos.size() == 2;
  if (pos[0] == "show" && pos.size() == 2) {
    Status s = ShowSavedModel(pos[1]);
    return s.ok() ? 0 : Fail(s);
  }
  if ((pos[0] == "run" || pos[0] == "bench") && pos.size() == 2 && IsSavedModelDir(pos[1])) {
    auto rt = MakeRuntime(*args, false);
    if (!rt.ok()) return Fail(rt.status());
    SavedModelRequest r{.dir = pos[1],
                        .tags = args->tags,
                        .signature = args->signature,
                        .feeds = args->feeds,
                        .input_shapes = args->input_shapes,
                        .out_dir = args->out_dir};
    r.json = args->json;
    r.runs = std::atoi(args->runs.c_str());
    r.warmup = std::atoi(args->warmup.c_str());
    if (r.runs < 1 || r.warmup < 0) return Fail(errors::InvalidArgument("bad --runs or --warmup"));
    Status s = pos[0] == "run" ? RunSavedModel(rt->get(), r) : BenchSavedModel(rt->get(), r);
    return s.ok() ? 0 : Fail(OnOneLine(s));
  }
  if (pos[0] == "checkpoint" && pos.size() == 3 && pos[1] == "ls") {
    Status s = CheckpointList(pos[2]);
    return s.ok() ? 0 : Fail(s);
  }
  if (pos[0] == "cluster" && pos.size() == 1) {
    StatusOr<Config> config = LoadConfig(*args);
    if (!config.ok()) return Fail(config.status());
    StatusOr<std::string> report = DescribeCluster(
        *config, args->config.empty() ? "the built-in config/local.yaml" : args->config, argv[0]);
    if (!report.ok()) return Fail(report.status());
    std::printf("%s", report->c_str());
    return 0;
  }
  if (!plugins && !graph && !run && !bench) {
    std::fprintf(stderr, "conflux: unknown command '%s'\n%s", Join(pos, " ").c_str(), kUsage);
    return 2;
  }
  auto rt = MakeRuntime(*args, run);
  if (!rt.ok()) return Fail(rt.status());
  if (plugins) return Plugins(**rt);
  if (bench) {
    BenchRequest r{.graph_path = pos[1],
                   .feeds = args->feeds,
                   .input_shapes = args->input_shapes,
                   .fetches = args->fetches,
                   .targets = args->targets,
                   .runs = args->runs,
                   .warmup = args->warmup,
                   .top = args->top,
                   .json = args->json};
    Status s = BenchCommand(rt->get(), r);
    return s.ok() ? 0 : Fail(s);
  }
  if (run) {
    RunRequest r{.graph_path = pos[1],
                 .feeds = args->feeds,
                 .fetches = args->fetches,
                 .targets = args->targets,
                 .out_dir = args->out_dir,
                 .trace_path = args->trace_path,
                 .timeout_ms = args->timeout_ms};
    Status s = RunCommand(rt->get(), r);
    return s.ok() ? 0 : Fail(s);
  }
  Status s = pos[1] == "show"    ? GraphShow(**rt, pos[2])
             : pos[1] == "place" ? GraphPlace(**rt, pos[2])
                                 : GraphEval(**rt, *args, pos[2]);
  return s.ok() ? 0 : Fail(s);
}

}  // namespace
}  // namespace cfx

int main(int argc, char** argv) { return cfx::Main(argc, argv); }
