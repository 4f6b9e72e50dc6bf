// Executor through Session: random DAGs against the serial reference (one and four inter-op
// threads), a wide fan-out/fan-in, an error deep inside a graph, and two CPU devices with
// _Send/_Recv pairs checked in the partition graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "conflux/config.h"
#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"
#include "runtime/serial_evaluator.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr int64_t kDim = 3;  // every value is a float [kDim, kDim] matrix

// A runtime with the in-tree CPU plugin, `inter_op` executor threads and `cpus` CPU devices;
// one per combination for the whole process.
// `optimize`: CSE and constant folding on (they rewire edges, which the partition checks below
// compare with the original graph, so those runs turn them off).
Runtime& RuntimeWith(int inter_op, int cpus, bool optimize = true) {
  static std::map<std::tuple<int, int, bool>, std::unique_ptr<Runtime>> runtimes;
  auto& rt = runtimes[{inter_op, cpus, optimize}];
  if (rt == nullptr) {
    Config config = Config::Default();
    config.plugin_paths.insert(config.plugin_paths.begin(), BuildPluginDir());
    config.common_subexpression_elimination = optimize;
    config.constant_folding = optimize;
    config.inter_op_threads = inter_op;
    config.devices["CPU"].count = cpus;
    auto created = Runtime::Create(config);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) std::abort();
    rt = std::move(created).value();
  }
  return *rt;
}

Tensor RandomMatrix(std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
  Tensor t(DT_FLOAT, TensorShape({kDim, kDim}));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// A random DAG of float ops on [kDim, kDim] matrices, what to feed, fetch and target.
struct RandomGraph {
  GraphDef graph;
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  std::vector<std::pair<std::string, Tensor>> FeedList() const {
    return {feeds.begin(), feeds.end()};
  }
};

struct RandomGraphOptions {
  int num_devices = 1;              // >1: node i is pinned to /device:CPU:(i % num_devices)
  bool feed_intermediates = true;   // sometimes feed an op's output instead of computing it
};

RandomGraph MakeRandomGraph(uint32_t seed, const RandomGraphOptions& options = {}) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  static const char* const kUnary[] = {"Neg", "Square", "Relu", "Identity", "Tanh"};
  static const char* const kBinary[] = {"AddV2", "Mul", "Sub", "MatMul"};

  RandomGraph out;
  GraphBuilder b;
  const int n = uniform(20, 300);
  std::vector<std::string> names, ops;
  // Half of the inputs come from the last few nodes, so that the graph is deep as well as wide.
  auto pick_input = [&]() -> const std::string& {
    const int count = static_cast<int>(names.size());
    if (chance(0.5)) return names[uniform(std::max(0, count - 8), count - 1)];
    return names[uniform(0, count - 1)];
  };
  for (int i = 0; i < n; ++i) {
    const std::string name = "n" + std::to_string(i);
    const std::string device =
        options.num_devices > 1 ? "/device:CPU:" + std::to_string(i % options.num_devices) : "";
    NodeDef* node;
    if (i < 2 || chance(0.08)) {
      if (chance(0.6)) {
        node = &b.Const(name, RandomMatrix(rng), device);
      } else {
        node = &b.Placeholder(name, DT_FLOAT, PartialTensorShape({kDim, kDim}));
        node->device = device;
        out.feeds[name] = RandomMatrix(rng);
      }
    } else if (chance(0.5)) {
      const char* op = kUnary[uniform(0, 4)];
      node = &b.Op(name, op, {pick_input()}, {{"T", F()}}, device);
    } else {
      const char* op = kBinary[uniform(0, 3)];
      node = &b.Binary(name, op, pick_input(), pick_input(), DT_FLOAT, device);
    }
    // Control edges from any earlier node; those from a (fed) Placeholder move to its feed.
    if (!names.empty() && chance(0.15)) node->input.push_back("^" + names[uniform(0, i - 1)]);
    names.push_back(name);
    ops.push_back(node->op);
  }
  if (options.feed_intermediates && chance(0.3)) {
    const int i = uniform(2, n - 1);
    if (ops[i] != "Placeholder") out.feeds[names[i] + ":0"] = RandomMatrix(rng);
  }
  // The last node (the deepest, usually) and a few others; "n" and "n:0" both name output 0.
  out.fetches.push_back(names.back() + ":0");
  std::set<int> chosen = {n - 1};
  for (int k = uniform(0, 5); k > 0; --k) {
    const int i = uniform(0, n - 1);
    if (chosen.insert(i).second) out.fetches.push_back(chance(0.5) ? names[i] : names[i] + ":0");
  }
  for (int k = uniform(0, 2); k > 0; --k) {
    const int i = uniform(0, n - 1);
    // A target runs the node itself, so a Placeholder target fails even when fed (as in TF).
    if (!chosen.count(i) && ops[i] != "Placeholder") out.targets.push_back(names[i]);
  }
  // The order of a GraphDef's nodes carries no meaning.
  out.graph = b.graph();
  std::shuffle(out.graph.node.begin(), out.graph.node.end(), rng);
  return out;
}

StatusOr<std::vector<Tensor>> Reference(const RandomGraph& rg) {
  Runtime& rt = TestRuntime();
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(rg.graph, &rt.ops()));
  CFX_ASSIGN_OR_RETURN(Device * cpu, rt.FindDevice("CPU:0"));
  return EvaluateSerially(rt, *graph, cpu, rg.feeds, rg.fetches);
}

void ExpectAllNear(const std::vector<Tensor>& expected, const std::vector<Tensor>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("fetch " + std::to_string(i));
    ExpectTensorNear(expected[i], actual[i], 1e-5, 1e-5);
  }
}

class RandomDagTest : public ::testing::TestWithParam<int> {};

TEST_P(RandomDagTest, MatchesSerialReference) {
  Runtime& rt = RuntimeWith(/*inter_op=*/GetParam(), /*cpus=*/1);
  for (uint32_t seed = 0; seed < 50; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomGraph rg = MakeRandomGraph(seed);
    auto expected = Reference(rg);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto session = Session::Create(&rt, rg.graph);
    ASSERT_TRUE(session.ok()) << session.status();
    // Twice: the second run reuses the cached executors and must not see the first's state.
    for (int run = 0; run < 2; ++run) {
      std::vector<Tensor> out;
      ASSERT_OK((*session)->Run(rg.FeedList(), rg.fetches, rg.targets, &out));
      ExpectAllNear(*expected, out);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(InterOpThreads, RandomDagTest, ::testing::Values(1, 4),
                         [](const auto& info) { return "Threads" + std::to_string(info.param); });

// One source read by many nodes; their results meet in a NoOp (control edges) and in a tree of
// additions; a node behind the NoOp runs last.
TEST(ExecutorTest, WideFanOutFanIn) {
  constexpr int kWidth = 2000;
  std::mt19937 rng(7);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT, PartialTensorShape({kDim, kDim}));
  std::vector<std::string> level;
  NodeDef join;
  for (int i = 0; i < kWidth; ++i) {
    const std::string name = "f" + std::to_string(i);
    static const char* const kOps[] = {"Neg", "Square", "Relu", "Identity", "Tanh"};
    b.Op(name, kOps[i % 5], {"x"}, {{"T", F()}});
    level.push_back(name);
  }
  NodeDef& noop = b.Op("join", "NoOp");
  for (const std::string& name : level) noop.input.push_back("^" + name);
  b.Op("after", "Identity", {"x", "^join"}, {{"T", F()}});
  for (int round = 0; level.size() > 1; ++round) {
    std::vector<std::string> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) {
      next.push_back("s" + std::to_string(round) + "_" + std::to_string(i / 2));
      b.Binary(next.back(), "AddV2", level[i], level[i + 1]);
    }
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = std::move(next);
  }
  RandomGraph rg;
  rg.graph = b.graph();
  rg.feeds["x"] = RandomMatrix(rng);
  rg.fetches = {level[0] + ":0", "after:0", "f1:0"};
  auto expected = Reference(rg);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (int threads : {1, 4}) {
    SCOPED_TRACE("inter-op threads " + std::to_string(threads));
    auto session = Session::Create(&RuntimeWith(threads, 1), rg.graph);
    ASSERT_TRUE(session.ok()) << session.status();
    for (int run = 0; run < 3; ++run) {
      std::vector<Tensor> out;
      ASSERT_OK((*session)->Run(rg.FeedList(), rg.fetches, {"join"}, &out));
      ExpectAllNear(*expected, out);
    }
  }
}

// A Reshape to an impossible shape in the middle of a chain, beside independent branches: the
// step fails with the node's name, every time it is asked for, and the session keeps working for
// the fetches that do not need the node (the error belongs to the step, not to the session).
TEST(ExecutorTest, ErrorDeepInsideNamesTheNodeAndTheSessionStaysUsable) {
  std::mt19937 rng(11);
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT, PartialTensorShape({kDim, kDim}));
  std::string prev = "x";
  for (int i = 0; i < 40; ++i) {
    const std::string name = "c" + std::to_string(i);
    b.Op(name, i % 2 ? "Tanh" : "Neg", {prev}, {{"T", F()}});
    prev = name;
  }
  b.Const("bad_shape", MakeVector<int32_t>({7}));  // 9 elements do not fit in 7
  b.Op("bad", "Reshape", {"c20", "bad_shape"},
       {{"T", F()}, {"Tshape", AttrValue::Type(DT_INT32)}});
  b.Op("after_bad", "Relu", {"bad"}, {{"T", F()}});
  // Independent branches that may still be running when the error happens.
  std::vector<std::string> branch_ends;
  for (int k = 0; k < 8; ++k) {
    std::string p = "x";
    for (int i = 0; i < 30; ++i) {
      const std::string name = "b" + std::to_string(k) + "_" + std::to_string(i);
      b.Binary(name, i % 3 ? "AddV2" : "MatMul", p, "x");
      p = name;
    }
    branch_ends.push_back(p + ":0");
  }
  RandomGraph good;
  good.graph = b.graph();
  good.feeds["x"] = RandomMatrix(rng);
  good.fetches = branch_ends;
  good.fetches.push_back(prev + ":0");
  auto expected = Reference(good);
  ASSERT_TRUE(expected.ok()) << expected.status();

  std::vector<std::string> bad_fetches = branch_ends;
  bad_fetches.push_back("after_bad:0");
  for (int threads : {1, 4}) {
    SCOPED_TRACE("inter-op threads " + std::to_string(threads));
    auto session = Session::Create(&RuntimeWith(threads, 1), good.graph);
    ASSERT_TRUE(session.ok()) << session.status();
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::vector<Tensor> out;
      Status s = (*session)->Run(good.FeedList(), bad_fetches, {}, &out);
      EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
      EXPECT_NE(s.message().find("node bad"), std::string::npos) << s;
      ASSERT_OK((*session)->Run(good.FeedList(), good.fetches, {}, &out));
      ExpectAllNear(*expected, out);
    }
  }
}

std::string StringAttr(const NodeDef& n, const std::string& key) {
  auto it = n.attr.find(key);
  return it == n.attr.end() ? "" : it->second.s;
}

// Checks the partitions of a two-device run: one _Recv per (tensor, destination device), each
// with its _Send on the source device and a consumer beside it, and a pair for every edge of
// the original graph that crosses devices (control edges included). Returns the number of
// cross-device control edges seen.
int CheckPartitions(const RunMetadata& meta, const GraphDef& original) {
  std::map<std::string, const NodeDef*> original_by_name;
  for (const NodeDef& n : original.node) original_by_name[n.name] = &n;
  std::map<std::string, std::string> device_of;  // user node -> partition's device
  std::set<std::pair<std::string, std::string>> recvs, sends;  // (tensor, recv device)
  for (const auto& [device, part] : meta.partition_graphs) {
    std::set<std::string> consumed;
    for (const NodeDef& n : part.node)
      for (const std::string& in : n.input)
        consumed.insert(in.empty() || in[0] != '^' ? ParseTensorName(in)->node : in.substr(1));
    for (const NodeDef& n : part.node) {
      EXPECT_EQ(n.device, device) << n.name;
      if (original_by_name.count(n.name)) device_of[n.name] = device;
      const std::string tensor = StringAttr(n, "tensor_name");
      if (n.op == "_Recv") {
        EXPECT_EQ(StringAttr(n, "recv_device"), device) << n.name;
        EXPECT_TRUE(recvs.insert({tensor, device}).second)
            << "a second _Recv of " << tensor << " on " << device;
        EXPECT_TRUE(consumed.count(n.name)) << n.name << " has no consumer on " << device;
      } else if (n.op == "_Send") {
        EXPECT_EQ(StringAttr(n, "send_device"), device) << n.name;
        EXPECT_TRUE(sends.insert({tensor, StringAttr(n, "recv_device")}).second)
            << "a second _Send of " << tensor << " to " << StringAttr(n, "recv_device");
      }
    }
  }
  EXPECT_EQ(recvs, sends) << "every _Recv needs its _Send and the other way round";
  int control_crossings = 0;
  for (const auto& [name, device] : device_of) {
    for (const std::string& in : original_by_name[name]->input) {
      const bool control = in[0] == '^';
      auto id = ParseTensorName(control ? in.substr(1) : in);
      auto src = device_of.find(id->node);
      // Fed placeholders are not in the partitions; their _Arg replacements are checked by the
      // _Send/_Recv matching above.
      if (src == device_of.end() || src->second == device) continue;
      const std::string tensor =
          control ? "^" + id->node : id->node + ":" + std::to_string(id->port);
      EXPECT_TRUE(recvs.count({tensor, device}))
          << name << " on " << device << " reads " << in << " from " << src->second
          << " without a _Recv";
      control_crossings += control;
    }
  }
  return control_crossings;
}

TEST(ExecutorTest, TwoDevicesMatchOneDevice) {
  Runtime& two = RuntimeWith(4, 2, /*optimize=*/false);
  ASSERT_EQ(two.devices().size(), 2u);
  int control_crossings = 0, recvs = 0;
  for (uint32_t seed = 100; seed < 130; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomGraphOptions options;
    options.num_devices = 2;
    options.feed_intermediates = false;
    RandomGraph rg = MakeRandomGraph(seed, options);
    RandomGraph unpinned = rg;
    for (NodeDef& n : unpinned.graph.node) n.device.clear();

    auto one = Session::Create(&RuntimeWith(4, 1), unpinned.graph);
    ASSERT_TRUE(one.ok()) << one.status();
    std::vector<Tensor> expected;
    ASSERT_OK((*one)->Run(unpinned.FeedList(), unpinned.fetches, unpinned.targets, &expected));
    auto reference = Reference(unpinned);
    ASSERT_TRUE(reference.ok()) << reference.status();
    ExpectAllNear(*reference, expected);

    auto session = Session::Create(&two, rg.graph);
    ASSERT_TRUE(session.ok()) << session.status();
    for (int run = 0; run < 2; ++run) {
      RunMetadata meta;
      std::vector<Tensor> out;
      ASSERT_OK((*session)->Run(RunOptions(), rg.FeedList(), rg.fetches, rg.targets, &out, &meta));
      ASSERT_EQ(out.size(), expected.size());
      for (size_t i = 0; i < out.size(); ++i) ExpectTensorEqual(expected[i], out[i]);
      if (run == 0) {
        control_crossings += CheckPartitions(meta, rg.graph);
        for (const auto& [device, part] : meta.partition_graphs)
          for (const NodeDef& n : part.node) recvs += n.op == "_Recv";
      }
    }
  }
  // The seeds exercise what the test is about.
  EXPECT_GT(recvs, 30);
  EXPECT_GT(control_crossings, 5);
}

#if defined(__x86_64__)
// Kernels run with denormals flushed to zero (MXCSR's FTZ and DAZ), as TensorFlow's executor
// runs them: a product below float's normal range is 0 (on the intra-op threads too, for a
// tensor large enough to be split among them), a denormal input counts as 0, and the calling
// thread's own mode is left as it was.
TEST(ExecutorTest, KernelsFlushDenormalsToZero) {
  constexpr unsigned kMode = 0xFFC0;  // the control bits (FTZ, rounding, masks, DAZ); not flags
  const unsigned before = _mm_getcsr() & kMode;
  GraphBuilder b;
  b.Placeholder("tiny", DT_FLOAT);
  b.Placeholder("denormal", DT_FLOAT);
  b.Placeholder("huge", DT_FLOAT);
  b.Op("square", "Mul", {"tiny", "tiny"}, {{"T", T()}});
  b.Op("scaled", "Mul", {"denormal", "huge"}, {{"T", T()}});
  auto session = NewTestSession(b.graph());
  ASSERT_NE(session, nullptr);
  constexpr int64_t kN = int64_t{1} << 20;
  Tensor tiny(DT_FLOAT, TensorShape({kN}));
  std::fill_n(tiny.data<float>(), kN, 1e-20f);  // squared: 1e-40, a denormal
  std::vector<Tensor> out;
  Status s = session->Run(
      {{"tiny", tiny}, {"denormal", MakeScalar<float>(1e-40f)}, {"huge", MakeScalar<float>(1e30f)}},
      {"square:0", "scaled:0"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  const float* square = out[0].data<float>();
  EXPECT_EQ(std::count(square, square + kN, 0.0f), kN);
  EXPECT_EQ(out[1].at<float>(0), 0.0f);  // 1e-10 if the denormal input were read as such
  EXPECT_EQ(_mm_getcsr() & kMode, before);
  volatile float x = 1e-20f;
  EXPECT_GT(x * x, 0.0f);  // this thread still computes denormals
}
#endif

}  // namespace
}  // namespace cfx
