// Writes the seed corpora of the checkpoint, events, graph_run and plugin_file fuzz targets from
// the project's own writers and fixtures, so that every seed is a file Conflux really produces or
// reads:
//
//   build-fuzz/bin/seed_corpus SOURCE_DIR OUT_DIR     e.g. seed_corpus . tests/fuzz/corpus
//
// checkpoint/  checkpoints written by SaveV2 on the CPU plugin (every storable dtype, strings,
//              empty tensors, a small model), each after the fuzzer's mode byte 1 (repair
//              checksums);
// events/      an events file written by SummaryWriter (scalar, histogram, image, graph) and the
//              one TensorBoard wrote (tests/fixtures/events), after the mode byte 1;
// graph_run/   the GraphDef fixtures (tests/fixtures/graphs, tests/fixtures/control_flow) with
//              each fed Placeholder replaced by a Const of its fixture input, and a small
//              network of ops-nn ops with a variable and SaveV2, binary GraphDefs; and the
//              fixtures in the framed form (graph_run_fuzzer.cc), binary and text, with their
//              Placeholders fed from the fixture's .npy; a graph of out-of-range type attrs
//              (also in graphdef/, after the binary-format byte);
// plugin_file/ the smallest ELF shared object the loader's checks accept (two segments, a
//              dynamic section, two section headers) and the first 4 KiB of the CPU plugin.
// Exits non-zero, naming what failed, on any error.
#include <elf.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/kernel_runner.h"
#include "conflux/npy.h"
#include "conflux/runtime.h"
#include "conflux/summary_writer.h"
#include "fuzz_runtime.h"
#include "graph_builder.h"
#include "plugin/elf_check.h"
#include "proto/summary.pb.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Fail(const std::string& what, const Status& status) {
  std::fprintf(stderr, "seed_corpus: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Check(StatusOr<T> value, const std::string& what) {
  if (!value.ok()) Fail(what, value.status());
  return std::move(value).value();
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(path.string(), errors::NotFound("cannot read"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  if (!out) Fail(path.string(), errors::Internal("cannot write"));
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

// A host tensor of `dtype` and `shape` whose elements are distinct small patterns (0 and 1 for
// bool, "s<i>" repeated i times for strings).
Tensor Filled(DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  if (dtype == DT_STRING) {
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      std::string s;
      for (int64_t k = 0; k < i; ++k) s += "s" + std::to_string(i);
      t.at<std::string>(i) = s;
    }
    return t;
  }
  auto* bytes = static_cast<uint8_t*>(t.raw_data());
  const size_t element = DataTypeSize(dtype);
  for (size_t i = 0; i < t.TotalBytes(); ++i)
    bytes[i] = dtype == DT_BOOL ? static_cast<uint8_t>(i % 2)
                                : static_cast<uint8_t>(i / element * 7 + i % element);
  return t;
}

Tensor StringScalar(const std::string& s) {
  Tensor t(DT_STRING, TensorShape());
  t.at<std::string>(0) = s;
  return t;
}

Tensor StringVector(const std::vector<std::string>& values) {
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) t.at<std::string>(i) = values[i];
  return t;
}

// --- checkpoint ---

// Saves `tensors` with SaveV2 to the bundle `<tmp>/<name>` and stores it as a seed (mode 3: a
// bundle, checksums repaired; checkpoint_fuzzer.cc).
void SaveCheckpoint(const Runtime& runtime, const fs::path& tmp, const fs::path& out,
                    const std::string& name,
                    const std::vector<std::pair<std::string, Tensor>>& tensors) {
  Device* cpu = Check(runtime.FindDevice("CPU:0"), "the CPU device");
  std::vector<std::string> names;
  std::vector<DataType> dtypes;
  std::vector<Tensor> inputs = {StringScalar((tmp / name).string())};
  for (const auto& [tensor_name, t] : tensors) {
    names.push_back(tensor_name);
    dtypes.push_back(t.dtype());
  }
  inputs.push_back(StringVector(names));
  inputs.push_back(StringVector(std::vector<std::string>(names.size())));
  std::vector<std::string> arguments = {"prefix", "tensor_names", "shape_and_slices"};
  for (const auto& [tensor_name, t] : tensors) {
    arguments.push_back(tensor_name);
    inputs.push_back(t);
  }
  test::GraphBuilder b;
  const NodeDef& save =
      b.Op("save", "SaveV2", arguments, {{"dtypes", AttrValue::TypeList(dtypes)}});
  Check(RunKernelOnce(runtime, cpu, save, inputs), "SaveV2 of " + name);
  const std::string index = ReadBytes(tmp / (name + ".index"));
  std::string seed = "\x03";
  for (int i = 0; i < 4; ++i) seed.push_back(static_cast<char>((index.size() >> (8 * i)) & 0xFF));
  seed += index + ReadBytes(tmp / (name + ".data-00000-of-00001"));
  WriteBytes(out / (name + ".bundle"), seed);
}

void CheckpointSeeds(const fs::path& out_dir) {
  std::unique_ptr<Runtime> runtime = fuzz::CreateRuntimeOrDie(fuzz::FuzzConfig(), "seed_corpus");
  const fs::path tmp = fs::temp_directory_path() / "conflux-seed-corpus";
  fs::create_directories(tmp);
  const fs::path out = out_dir / "checkpoint";
  fs::create_directories(out);

  std::vector<std::pair<std::string, Tensor>> every_dtype;
  for (DataType d :
       {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING, DT_COMPLEX64,
        DT_INT64, DT_BOOL, DT_BFLOAT16, DT_UINT16, DT_COMPLEX128, DT_HALF, DT_UINT32, DT_UINT64})
    every_dtype.emplace_back(DataTypeString(d), Filled(d, TensorShape({2, 3})));
  SaveCheckpoint(*runtime, tmp, out, "every_dtype", every_dtype);
  SaveCheckpoint(*runtime, tmp, out, "model",
                 {{"dense/bias", Filled(DT_FLOAT, TensorShape({3}))},
                  {"dense/kernel", Filled(DT_FLOAT, TensorShape({4, 3}))},
                  {"global_step", Filled(DT_INT64, TensorShape())}});
  SaveCheckpoint(
      *runtime, tmp, out, "strings",
      {{"vocabulary", Filled(DT_STRING, TensorShape({5}))}, {"word", StringScalar("conflux")}});
  SaveCheckpoint(*runtime, tmp, out, "empty",
                 {{"empty", Filled(DT_FLOAT, TensorShape({0, 3}))},
                  {"no_strings", Filled(DT_STRING, TensorShape({0}))}});
  fs::remove_all(tmp);
}

// --- events ---

void EventSeeds(const fs::path& source_dir, const fs::path& out_dir) {
  const fs::path out = out_dir / "events";
  fs::create_directories(out);
  const fs::path logdir = fs::temp_directory_path() / "conflux-seed-corpus-events";
  fs::remove_all(logdir);
  std::string path;
  {
    auto writer = Check(SummaryWriter::Create(logdir.string()), "SummaryWriter");
    path = writer->path();
    if (Status s = writer->AddScalar("loss", 0.25f, 1); !s.ok()) Fail("AddScalar", s);
    conflux::Summary summary;
    auto* histogram = summary.add_value();
    histogram->set_tag("weights");
    auto* h = histogram->mutable_histo();
    h->set_min(-1);
    h->set_max(2);
    h->set_num(3);
    h->set_sum(1.5);
    h->set_sum_squares(5.25);
    for (double limit : {-1.0, 0.0, 2.0}) h->add_bucket_limit(limit);
    for (int i = 0; i < 3; ++i) h->add_bucket(1);
    auto* image = summary.add_value();
    image->set_tag("input/image");
    image->mutable_image()->set_height(1);
    image->mutable_image()->set_width(1);
    image->mutable_image()->set_colorspace(1);
    image->mutable_image()->set_encoded_image_string("\x89PNG\r\n\x1a\n");
    if (Status s = writer->AddSummary(summary.SerializeAsString(), 2); !s.ok())
      Fail("AddSummary", s);
    test::GraphBuilder graph;
    graph.Const("x", Filled(DT_FLOAT, TensorShape({2})));
    graph.Op("y", "Neg", {"x"}, {{"T", AttrValue::Type(DT_FLOAT)}});
    if (Status s = writer->AddGraph(graph.graph()); !s.ok()) Fail("AddGraph", s);
  }
  WriteBytes(out / "summary_writer.tfevents", "\x01" + ReadBytes(path));
  WriteBytes(out / "tensorboard.tfevents",
             "\x01" + ReadBytes(source_dir / "tests/fixtures/events/tensorboard.tfevents"));
  fs::remove_all(logdir);
}

// --- graph_run ---

// `graph` with each node of `feeds` (node name -> .npy file) replaced by a Const of its value.
GraphDef WithConstInputs(GraphDef graph, const std::map<std::string, fs::path>& feeds) {
  for (NodeDef& node : graph.node) {
    auto it = feeds.find(node.name);
    if (it == feeds.end()) continue;
    test::GraphBuilder b;
    node = b.Const(node.name, Check(ReadNpy(it->second.string()), it->second.string()));
  }
  return graph;
}

void WriteGraph(const fs::path& path, const GraphDef& graph) {
  WriteBytes(path, SerializeGraphDef(graph, GraphFormat::kBinary));
}

// A small network over ops-nn's ops and the state ops: a convolution, bias, activations, pooling
// and softmax, a variable assigned from it and saved (the checkpoint fuzzer covers reading it).
GraphDef NetworkGraph() {
  const AttrValue f32 = AttrValue::Type(DT_FLOAT);
  Tensor flat_shape(DT_INT32, TensorShape({2}));
  flat_shape.at<int32_t>(0) = 1;
  flat_shape.at<int32_t>(1) = -1;
  test::GraphBuilder b;
  b.Const("image", Filled(DT_FLOAT, TensorShape({1, 4, 4, 1})));
  b.Const("filter", Filled(DT_FLOAT, TensorShape({2, 2, 1, 2})));
  b.Const("bias", Filled(DT_FLOAT, TensorShape({2})));
  b.Op("conv", "Conv2D", {"image", "filter"},
       {{"T", f32},
        {"strides", AttrValue::IntList({1, 1, 1, 1})},
        {"padding", AttrValue::String("SAME")}});
  b.Op("biased", "BiasAdd", {"conv", "bias"}, {{"T", f32}});
  b.Op("relu", "Relu", {"biased"}, {{"T", f32}});
  b.Op("pool", "MaxPool", {"relu"},
       {{"T", f32},
        {"ksize", AttrValue::IntList({1, 2, 2, 1})},
        {"strides", AttrValue::IntList({1, 2, 2, 1})},
        {"padding", AttrValue::String("VALID")}});
  b.Const("flat_shape", flat_shape);
  b.Op("flat", "Reshape", {"pool", "flat_shape"},
       {{"T", f32}, {"Tshape", AttrValue::Type(DT_INT32)}});
  b.Op("probabilities", "Softmax", {"flat"}, {{"T", f32}});
  b.Op("weights", "VariableV2", {},
       {{"dtype", f32}, {"shape", AttrValue::Shape(PartialTensorShape({1, 8}))}});
  b.Op("assign", "Assign", {"weights", "probabilities"}, {{"T", f32}});
  b.Const("prefix", StringScalar("model/ckpt"));
  b.Const("names", StringVector({"weights"}));
  b.Const("slices", StringVector({""}));
  b.Op("save", "SaveV2", {"prefix", "names", "slices", "assign"},
       {{"dtypes", AttrValue::TypeList({DT_FLOAT})}});
  return b.graph();
}

// Type attrs no kernel knows, one per graph so that each reaches its own checks: a reference type
// (DT_FLOAT_REF = 101) on a Const, a code past the last dtype on a Cast, a list with both on an
// IdentityN, a negative code on a Neg; for the graph and kernel fuzzers to start from.
std::vector<std::pair<std::string, GraphDef>> EnumAttrGraphs() {
  auto type = [](int code) { return AttrValue::Type(static_cast<DataType>(code)); };
  std::vector<std::pair<std::string, GraphDef>> graphs;
  {
    test::GraphBuilder b;
    b.Const("ref_const", Filled(DT_FLOAT, TensorShape({2}))).attr["dtype"] = type(101);
    graphs.emplace_back("enum_ref_const", b.graph());
  }
  auto with_x = [&](const char* name, const std::string& op, const std::vector<std::string>& in,
                    std::vector<std::pair<std::string, AttrValue>> attrs) {
    test::GraphBuilder b;
    b.Const("x", Filled(DT_FLOAT, TensorShape({2})));
    b.Op("y", op, in, std::move(attrs));
    graphs.emplace_back(name, b.graph());
  };
  with_x("enum_cast", "Cast", {"x"}, {{"SrcT", AttrValue::Type(DT_FLOAT)}, {"DstT", type(300)}});
  with_x("enum_list", "IdentityN", {"x", "x", "x"},
         {{"T", AttrValue::TypeList({DT_FLOAT, static_cast<DataType>(101),
                                     static_cast<DataType>(199)})}});
  with_x("enum_negative", "Neg", {"x"}, {{"T", type(-5)}});
  return graphs;
}

void AppendU32(std::string* out, size_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// graph_run_fuzzer's framed input: 0xFF, flags (1: text), the graph, then each feed.
std::string Framed(const std::string& graph, bool text,
                   const std::vector<std::pair<std::string, std::string>>& feeds) {
  std::string out = "\xFF";
  out.push_back(text ? 1 : 0);
  AppendU32(&out, graph.size());
  out += graph;
  for (const auto& [name, npy] : feeds) {
    out.push_back(static_cast<char>(name.size()));
    out += name;
    AppendU32(&out, npy.size());
    out += npy;
  }
  return out;
}

void GraphSeeds(const fs::path& source_dir, const fs::path& out_dir) {
  const fs::path out = out_dir / "graph_run";
  fs::create_directories(out);
  const fs::path graphs = source_dir / "tests/fixtures/graphs";
  for (const char* name : {"matmul_add", "slice_concat", "while_loop"}) {
    GraphDef g = Check(ReadGraphDefFile((graphs / (std::string(name) + ".pb")).string()), name);
    WriteGraph(out / (std::string(name) + ".pb"),
               WithConstInputs(g, {{"x", graphs / (std::string(name) + ".input.npy")}}));
  }
  for (const char* name : {"matmul_add", "while_loop"}) {
    const fs::path base = graphs / name;
    const std::vector<std::pair<std::string, std::string>> feeds = {
        {"x:0", ReadBytes(base.string() + ".input.npy")}};
    WriteBytes(out / (std::string(name) + ".fed.bin"),
               Framed(ReadBytes(base.string() + ".pb"), false, feeds));
    WriteBytes(out / (std::string(name) + ".fed.txt"),
               Framed(ReadBytes(base.string() + ".pbtxt"), true, feeds));
  }
  WriteGraph(out / "constants.pb",
             Check(ReadGraphDefFile((graphs / "constants.pb").string()), "constants"));

  // One seed per control-flow graph: its first case in manifest.txt
  // ("<case> graph=<file> feed=<node>:0=<file.npy> ... fetch=...").
  const fs::path control_flow = source_dir / "tests/fixtures/control_flow";
  std::istringstream manifest(ReadBytes(control_flow / "manifest.txt"));
  std::map<std::string, bool> done;
  for (std::string line; std::getline(manifest, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string word, graph_file;
    std::map<std::string, fs::path> feeds;
    words >> word;  // the case's name
    while (words >> word) {
      if (word.starts_with("graph=")) graph_file = word.substr(6);
      if (!word.starts_with("feed=")) continue;
      const std::string feed = word.substr(5);  // node:0=file
      feeds[feed.substr(0, feed.find(':'))] = control_flow / feed.substr(feed.find('=') + 1);
    }
    if (graph_file.empty() || done[graph_file]) continue;
    done[graph_file] = true;
    GraphDef g = Check(ReadGraphDefFile((control_flow / graph_file).string()), graph_file);
    WriteGraph(out / graph_file, WithConstInputs(g, feeds));
  }
  WriteGraph(out / "network.pb", NetworkGraph());
  fs::create_directories(out_dir / "graphdef");
  for (const auto& [name, graph] : EnumAttrGraphs()) {
    WriteGraph(out / (name + ".pb"), graph);
    WriteBytes(out_dir / "graphdef" / (name + ".bin"),
               std::string(1, '\0') + SerializeGraphDef(graph, GraphFormat::kBinary));
  }
}

// --- plugin_file ---

template <typename T>
void Append(std::string* out, const T& value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// The smallest file the loader's checks accept, for the machine of `plugin` (an ELF file of this
// process's class): one PT_LOAD over the whole image, a PT_DYNAMIC of two DT_NULL entries, and
// a section header table (the null section and .dynamic) after them.
std::string MinimalSharedObject(const std::string& plugin) {
  Elf64_Ehdr eh;
  if (plugin.size() < sizeof(eh)) Fail("plugin_file", errors::DataLoss("the plugin is short"));
  std::memcpy(&eh, plugin.data(), sizeof(eh));  // identification and machine
  const uint64_t dynamic = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr);
  const uint64_t dynamic_size = 2 * sizeof(Elf64_Dyn);
  const uint64_t image = dynamic + dynamic_size;
  eh.e_type = ET_DYN;
  eh.e_entry = 0;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_shoff = image;
  eh.e_flags = 0;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 2;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 2;
  eh.e_shstrndx = SHN_UNDEF;
  std::string out;
  Append(&out, eh);
  Append(&out, Elf64_Phdr{PT_LOAD, PF_R | PF_W, 0, 0, 0, image, image, 0x1000});
  Append(&out, Elf64_Phdr{PT_DYNAMIC, PF_R | PF_W, dynamic, dynamic, dynamic, dynamic_size,
                          dynamic_size, 8});
  for (int i = 0; i < 2; ++i) Append(&out, Elf64_Dyn{DT_NULL, {0}});
  Append(&out, Elf64_Shdr{});
  Append(&out, Elf64_Shdr{0, SHT_DYNAMIC, SHF_ALLOC | SHF_WRITE, dynamic, dynamic, dynamic_size, 0,
                          0, 8, sizeof(Elf64_Dyn)});
  return out;
}

void PluginFileSeeds(const fs::path& out_dir) {
  const fs::path out = out_dir / "plugin_file";
  fs::create_directories(out);
  const std::string cpu = ReadBytes(fs::path(CONFLUX_BUILD_PLUGIN_DIR) / "libconflux_cpu.so");
  const std::string minimal = MinimalSharedObject(cpu);
  if (Status s = internal::CheckSharedObjectBytes(minimal, "the minimal shared object"); !s.ok())
    Fail("plugin_file", s);
  WriteBytes(out / "minimal.so", minimal);
  WriteBytes(out / "cpu_plugin_head.so", cpu.substr(0, 4096));
}

}  // namespace
}  // namespace cfx

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: seed_corpus SOURCE_DIR OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path source_dir = argv[1], out_dir = argv[2];
  cfx::CheckpointSeeds(out_dir);
  cfx::EventSeeds(source_dir, out_dir);
  cfx::GraphSeeds(source_dir, out_dir);
  cfx::PluginFileSeeds(out_dir);
  return 0;
}
