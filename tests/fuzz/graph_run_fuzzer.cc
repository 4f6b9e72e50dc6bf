// libFuzzer target: a whole graph from fuzzed bytes, run. The bytes are parsed as a GraphDef
// under the config's limits, a Session is created on a Runtime with the CPU and ops-nn plugins
// and a device memory_limit, and one step runs the whole graph (output 0 of every sink fetched,
// see FetchesAndTargets) with the input's feeds under a step timeout. Every input must end in
// outputs or an error status: never a crash, a hang past the timeout, or an allocation beyond the
// limits.
//
// An input is a binary GraphDef, or (first byte 0xFF, which no GraphDef begins with: wire type 7
// does not exist) a framed one, see ParseInput: a flags byte (bit 0: the graph is protobuf text),
// the graph's length and bytes, then feeds, each a tensor name and a .npy file's bytes.
//
// What a graph writes stays in a scratch directory (the runtime's Env, through which SaveV2 and
// the Saver write, is confined to it); the directory is emptied and every resource container the
// graph names is dropped after each input, so that no input sees what an earlier one left.
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/env.h"
#include "conflux/graph_def.h"
#include "conflux/npy.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "fuzz_runtime.h"
#include "scratch_dir.h"
#include "state/resource_mgr.h"

namespace cfx::fuzz {
namespace {

constexpr int64_t kStepTimeoutMs = 2000;

// Keeps what a fuzzed graph writes inside `root`: a relative path is taken relative to `root`
// (not to the working directory, where libFuzzer keeps its corpus), an absolute one must lie
// inside it; anything else is PermissionDenied naming the path. (Reads, such as RestoreV2's, do
// not go through the Env; they cannot harm the machine.)
class ConfinedEnv : public EnvWrapper {
 public:
  explicit ConfinedEnv(std::string root) : EnvWrapper(Env::Default()), root_(std::move(root)) {}

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    CFX_ASSIGN_OR_RETURN(std::string inside, Inside(path));
    return EnvWrapper::NewWritableFile(inside);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    CFX_ASSIGN_OR_RETURN(std::string inside, Inside(path));
    return EnvWrapper::NewAppendableFile(inside);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    CFX_ASSIGN_OR_RETURN(std::string inside_from, Inside(from));
    CFX_ASSIGN_OR_RETURN(std::string inside_to, Inside(to));
    return EnvWrapper::RenameFile(inside_from, inside_to);
  }
  Status DeleteFile(const std::string& path) override {
    CFX_ASSIGN_OR_RETURN(std::string inside, Inside(path));
    return EnvWrapper::DeleteFile(inside);
  }
  Status CreateDir(const std::string& dir) override {
    CFX_ASSIGN_OR_RETURN(std::string inside, Inside(dir));
    return EnvWrapper::CreateDir(inside);
  }
  Status SyncDir(const std::string& dir) override {
    CFX_ASSIGN_OR_RETURN(std::string inside, Inside(dir));
    return EnvWrapper::SyncDir(inside);
  }

 private:
  StatusOr<std::string> Inside(const std::string& path) const {
    namespace fs = std::filesystem;
    const fs::path p = fs::path(path).is_absolute() ? fs::path(path) : fs::path(root_) / path;
    const std::string normal = p.lexically_normal().string();
    if (normal == root_ || normal.starts_with(root_ + "/")) return normal;
    return errors::PermissionDenied("the fuzzed graph may not write ", path, " (outside ", root_,
                                    ")");
  }
  std::string root_;
};

struct Harness {
  std::unique_ptr<ScratchDir> dir;
  std::unique_ptr<ConfinedEnv> env;
  std::unique_ptr<Runtime> runtime;
};

Harness& TheHarness() {
  static Harness* harness = [] {
    google::protobuf::SetLogHandler(nullptr);  // malformed strings are expected, not news
    auto* h = new Harness;
    h->dir = std::make_unique<ScratchDir>("graph_run");
    h->env = std::make_unique<ConfinedEnv>(h->dir->path());
    Config config = FuzzConfig();
    SetGraphLimits(&config, int64_t{1} << 20, 10000);
    h->runtime = CreateRuntimeOrDie(config, "graph_run_fuzzer");
    h->runtime->set_env(h->env.get());
    return h;
  }();
  return *harness;
}

// The graph's sinks, the nodes no other node consumes, are what the step asks for: output 0 of
// each that has outputs is fetched, the others are targets, and everything upstream runs. (Fetching
// every node's output would make every loop fail: a value inside a while loop's frame cannot be
// fetched, by design, as in TensorFlow.) A sink whose op or attrs do not resolve is a target, for
// the session to report. A graph without sinks (a cycle) fetches output 0 of every node.
void FetchesAndTargets(const Runtime& runtime, const GraphDef& graph,
                       std::vector<std::string>* fetches, std::vector<std::string>* targets) {
  std::set<std::string> consumed;
  for (const NodeDef& node : graph.node)
    for (const std::string& input : node.input) {
      auto id = ParseTensorName(input);
      if (id.ok()) consumed.insert(id->node);
    }
  const bool has_sinks = std::any_of(graph.node.begin(), graph.node.end(),
                                     [&](const NodeDef& n) { return !consumed.contains(n.name); });
  for (const NodeDef& node : graph.node) {
    if (has_sinks && consumed.contains(node.name)) continue;
    const OpRegistration* op = runtime.ops().LookUp(node.op);
    std::vector<DataType> inputs, outputs;
    if (op != nullptr && InOutTypesForNode(node, op->def, &inputs, &outputs).ok() &&
        !outputs.empty()) {
      fetches->push_back(node.name + ":0");
    } else {
      targets->push_back(node.name);
    }
  }
}

// Drops the resources the step may have created: the default container and every container a
// node names.
void DropResources(const Runtime& runtime, const GraphDef& graph) {
  std::set<std::string> containers = {""};
  for (const NodeDef& node : graph.node) {
    auto it = node.attr.find("container");
    if (it != node.attr.end() && it->second.kind == AttrValue::Kind::kString)
      containers.insert(it->second.s);
  }
  for (const auto& device : runtime.devices())
    for (const std::string& c : containers) device->resource_mgr()->Cleanup(c);
}

// A fuzz input: the graph's bytes and format, and the feeds (tensor name -> .npy bytes).
struct Input {
  std::string_view graph;
  GraphFormat format = GraphFormat::kBinary;
  std::vector<std::pair<std::string_view, std::string_view>> feeds;
};

// Framed inputs: 0xFF, flags, u32 graph length (little-endian), the graph, then any number of
// feeds: u8 name length, the name, u32 .npy length, the .npy bytes. A frame that runs past the
// end is cut where it stops (what remains is dropped). Anything else is a binary GraphDef.
Input ParseInput(std::string_view data) {
  Input in;
  if (data.empty() || static_cast<uint8_t>(data[0]) != 0xFF) {
    in.graph = data;
    return in;
  }
  size_t pos = 1;
  auto u32 = [&](uint32_t* v) {
    if (data.size() - pos < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i) *v |= uint32_t{static_cast<uint8_t>(data[pos + i])} << (8 * i);
    pos += 4;
    return true;
  };
  auto bytes = [&](size_t n, std::string_view* out) {
    if (data.size() - pos < n) return false;
    *out = data.substr(pos, n);
    pos += n;
    return true;
  };
  if (pos >= data.size()) return in;
  const uint8_t flags = static_cast<uint8_t>(data[pos++]);
  in.format = (flags & 1) ? GraphFormat::kText : GraphFormat::kBinary;
  uint32_t length = 0;
  if (!u32(&length) || !bytes(length, &in.graph)) return in;
  while (pos < data.size()) {
    const size_t name_length = static_cast<uint8_t>(data[pos++]);
    std::string_view name, npy;
    if (!bytes(name_length, &name) || !u32(&length) || !bytes(length, &npy)) break;
    in.feeds.emplace_back(name, npy);
  }
  return in;
}

}  // namespace
}  // namespace cfx::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)cfx::fuzz::TheHarness();  // loads the plugins before coverage is counted
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cfx;
  fuzz::Harness& h = fuzz::TheHarness();
  // CONFLUX_FUZZ_VERBOSE=1 prints how each input ended, for replaying one by hand.
  static const bool verbose = std::getenv("CONFLUX_FUZZ_VERBOSE") != nullptr;
  const fuzz::Input input =
      fuzz::ParseInput(std::string_view(reinterpret_cast<const char*>(data), size));
  auto graph = ParseGraphDef(input.graph, input.format, h.runtime->config().limits);
  Status status = graph.status();
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [name, npy] : input.feeds) {
    auto t = ParseNpy(npy, "feed.npy");
    if (!t.ok()) {
      status = t.status();
      break;
    }
    feeds.emplace_back(std::string(name), std::move(*t));
  }
  if (graph.ok() && status.ok()) {
    {  // the session closes before its resources go
      auto session = Session::Create(h.runtime.get(), *graph);
      status = session.status();
      if (session.ok()) {
        std::vector<std::string> fetches, targets;
        fuzz::FetchesAndTargets(*h.runtime, *graph, &fetches, &targets);
        RunOptions options;
        options.timeout_ms = fuzz::kStepTimeoutMs;
        std::vector<Tensor> outputs;
        status = (*session)->Run(options, feeds, fetches, targets, &outputs, nullptr);
      }
    }
    fuzz::DropResources(*h.runtime, *graph);
    h.dir->Clear();
  }
  if (verbose) std::fprintf(stderr, "graph_run: %s\n", status.ToString().c_str());
  return 0;
}
