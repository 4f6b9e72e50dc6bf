// A Session from C++: a graph with a variable, a queue and a checkpoint, run step by step.
//
//   build/bin/session_example [checkpoint_dir]
//
// Builds the graph as a GraphDef (TensorFlow's op names and attrs), then: initializes the
// variable, feeds three numbers through a FIFO queue, adds each to the variable, saves it with
// SaveV2, and prints a traced step's per-node timings.
#include <cstdio>
#include <string>

#include "conflux/runtime.h"
#include "conflux/session.h"

using cfx::AttrValue;
using cfx::DataType;
using cfx::NodeDef;
using cfx::Tensor;
using cfx::TensorShape;

namespace {

NodeDef Node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
             std::vector<std::pair<std::string, AttrValue>> attrs) {
  NodeDef n;
  n.name = name;
  n.op = op;
  n.input = std::move(inputs);
  for (auto& [k, v] : attrs) n.attr[k] = std::move(v);
  return n;
}

Tensor Scalar(float v) { return Tensor::Scalar<float>(cfx::DT_FLOAT, v); }

Tensor String(const std::string& s) {
  Tensor t(cfx::DT_STRING, TensorShape());
  t.data<std::string>()[0] = s;
  return t;
}

int Fail(const cfx::Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/tmp";
  const AttrValue f = AttrValue::Type(cfx::DT_FLOAT);
  const AttrValue floats = AttrValue::TypeList({cfx::DT_FLOAT});
  Tensor names(cfx::DT_STRING, TensorShape({1})), slices(cfx::DT_STRING, TensorShape({1}));
  names.data<std::string>()[0] = "total";

  cfx::GraphDef g;
  g.node = {
      // total = 0; total += x for each x dequeued.
      Node("total", "VariableV2", {}, {{"dtype", f}, {"shape", AttrValue::Shape(cfx::PartialTensorShape(std::vector<int64_t>{}))}}),
      Node("zero", "Const", {}, {{"dtype", f}, {"value", AttrValue::TensorValue(Scalar(0))}}),
      Node("init", "Assign", {"total", "zero"}, {{"T", f}}),
      Node("queue", "FIFOQueueV2", {}, {{"component_types", floats}, {"capacity", AttrValue::Int(8)}}),
      Node("x", "Placeholder", {}, {{"dtype", f}}),
      Node("enqueue", "QueueEnqueueV2", {"queue", "x"}, {{"Tcomponents", floats}}),
      Node("dequeue", "QueueDequeueV2", {"queue"}, {{"component_types", floats}}),
      Node("add", "AssignAdd", {"total", "dequeue"}, {{"T", f}}),
      // Save the variable: SaveV2(prefix, tensor_names, shape_and_slices, tensors).
      Node("prefix", "Const", {},
           {{"dtype", AttrValue::Type(cfx::DT_STRING)},
            {"value", AttrValue::TensorValue(String(dir + "/session_example"))}}),
      Node("names", "Const", {},
           {{"dtype", AttrValue::Type(cfx::DT_STRING)}, {"value", AttrValue::TensorValue(names)}}),
      Node("slices", "Const", {},
           {{"dtype", AttrValue::Type(cfx::DT_STRING)}, {"value", AttrValue::TensorValue(slices)}}),
      Node("save", "SaveV2", {"prefix", "names", "slices", "total"}, {{"dtypes", floats}}),
  };

  auto runtime = cfx::Runtime::Create(cfx::Config::Default());  // config/local.yaml
  if (!runtime.ok()) return Fail(runtime.status());
  auto session = cfx::Session::Create(runtime->get(), g);
  if (!session.ok()) return Fail(session.status());
  cfx::Session& s = **session;

  std::vector<Tensor> out;
  if (auto st = s.Run({}, {}, {"init"}, nullptr); !st.ok()) return Fail(st);
  for (float v : {1.5f, 2.0f, 4.25f})
    if (auto st = s.Run({{"x", Scalar(v)}}, {}, {"enqueue"}, nullptr); !st.ok()) return Fail(st);
  for (int i = 0; i < 3; ++i)
    if (auto st = s.Run({}, {"add:0"}, {}, &out); !st.ok()) return Fail(st);
  std::printf("total = %g\n", out[0].at<float>(0));

  cfx::RunOptions options;
  options.trace = true;  // per-node step stats
  cfx::RunMetadata meta;
  if (auto st = s.Run(options, {}, {}, {"save"}, nullptr, &meta); !st.ok()) return Fail(st);
  std::printf("saved %s/session_example (.index, .data-00000-of-00001); the step ran:\n", dir.c_str());
  for (const auto& device : meta.step_stats.devices)
    for (const auto& n : device.nodes)
      std::printf("  %-8s %-8s %lld us on %s\n", n.node_name.c_str(), n.op.c_str(),
                  static_cast<long long>(n.end_us - n.start_us), device.device.c_str());
  return 0;
}
