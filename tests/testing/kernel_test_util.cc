// Test helpers.
#include "kernel_test_util.h"

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "conflux/config.h"

namespace cfx::test {

std::string BuildPluginDir() { return CONFLUX_BUILD_PLUGIN_DIR; }
std::string FixturePluginDir() { return CONFLUX_FIXTURE_PLUGIN_DIR; }

StatusOr<std::unique_ptr<Runtime>> RuntimeWithFixtures(const std::vector<std::string>& names) {
  Config config = Config::Default();
  config.plugin_paths.insert(config.plugin_paths.begin(), BuildPluginDir());
  for (const std::string& name : names) {
    PluginSpec fixture;
    fixture.path = FixturePluginDir() + "/libconflux_fixture_" + name + ".so";
    config.plugins.push_back(fixture);
  }
  return Runtime::Create(config);
}

Runtime& TestRuntime() {
  static Runtime* runtime = [] {
    Config config = Config::Default();
    config.plugin_paths.insert(config.plugin_paths.begin(), BuildPluginDir());
    auto rt = Runtime::Create(config);
    if (!rt.ok()) {
      ADD_FAILURE() << "cannot create the test runtime: " << rt.status();
      std::abort();
    }
    return std::move(rt).value().release();
  }();
  return *runtime;
}

Runtime& DefaultConfigRuntime() {
  static Runtime* runtime = [] {
    auto rt = RuntimeWithFixtures({});
    if (!rt.ok()) {
      ADD_FAILURE() << "cannot create the default-config runtime: " << rt.status();
      std::abort();
    }
    return std::move(rt).value().release();
  }();
  return *runtime;
}

Runtime& TestRuntimeWith(int inter_op_threads, int cpu_devices) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, std::unique_ptr<Runtime>> runtimes;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<Runtime>& rt = runtimes[{inter_op_threads, cpu_devices}];
  if (rt == nullptr) {
    Config config = Config::Default();
    config.plugin_paths.insert(config.plugin_paths.begin(), BuildPluginDir());
    config.inter_op_threads = inter_op_threads;
    config.devices["CPU"].count = cpu_devices;
    auto created = Runtime::Create(config);
    if (!created.ok()) {
      ADD_FAILURE() << "cannot create the test runtime: " << created.status();
      std::abort();
    }
    rt = std::move(created).value();
  }
  return *rt;
}

std::unique_ptr<Session> NewTestSession(const GraphDef& g, Runtime* rt) {
  auto s = Session::Create(rt, g);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(s).value() : nullptr;
}

const NodeDef* FindNode(const GraphDef& g, const std::string& name) {
  for (const NodeDef& n : g.node)
    if (n.name == name) return &n;
  return nullptr;
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << "cannot open " << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

NodeDef NodeOf(const std::string& name, const std::string& op, std::vector<std::string> inputs,
               AttrMap attrs, const std::string& device) {
  NodeDef n;
  n.name = name;
  n.op = op;
  n.input = std::move(inputs);
  n.attr = std::move(attrs);
  n.device = device;
  return n;
}

NodeDef MakeNode(const std::string& op, int num_inputs,
                 std::initializer_list<std::pair<const std::string, AttrValue>> attrs) {
  NodeDef n;
  n.name = "node";
  n.op = op;
  for (int i = 0; i < num_inputs; ++i) n.input.push_back("in" + std::to_string(i));
  n.attr = AttrMap(attrs);
  return n;
}

StatusOr<std::vector<Tensor>> RunNode(const NodeDef& node, const std::vector<Tensor>& inputs,
                                      const std::string& device) {
  Runtime& rt = TestRuntime();
  CFX_ASSIGN_OR_RETURN(Device * dev, rt.FindDevice(device));
  return RunKernelOnce(rt, dev, node, inputs);
}

StatusOr<std::vector<Tensor>> RunKernelOnly(const NodeDef& node, const std::vector<Tensor>& inputs,
                                            const std::string& device) {
  Runtime& rt = TestRuntime();
  CFX_ASSIGN_OR_RETURN(Device * dev, rt.FindDevice(device));
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<KernelRunner> runner, KernelRunner::Create(rt, dev, node));
  return runner->RunOnDevice(inputs);
}

Tensor RunNodeOk(const NodeDef& node, const std::vector<Tensor>& inputs,
                 const std::string& device) {
  auto out = RunNode(node, inputs, device);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return Tensor();
  EXPECT_EQ(out->size(), 1u);
  return out->empty() ? Tensor() : (*out)[0];
}

Tensor MakeStringTensor(const TensorShape& shape, const std::vector<std::string>& values) {
  Tensor t(DT_STRING, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.num_elements())
      << "MakeStringTensor: size mismatch";
  for (int64_t i = 0; i < t.num_elements() && i < static_cast<int64_t>(values.size()); ++i)
    t.data<std::string>()[i] = values[i];
  return t;
}

std::vector<std::string> StringValues(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DT_STRING);
  if (t.dtype() != DT_STRING) return {};
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.num_elements());
}

namespace {

template <typename T>
void CompareValues(const Tensor& e, const Tensor& a, double atol, double rtol, bool exact) {
  for (int64_t i = 0; i < e.num_elements(); ++i) {
    T x = e.data<T>()[i], y = a.data<T>()[i];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x) && std::isnan(y)) continue;
      if (exact) {
        EXPECT_EQ(x, y) << "element " << i;
      } else if (std::isinf(x) || std::isinf(y)) {
        EXPECT_EQ(x, y) << "element " << i;
      } else {
        EXPECT_NEAR(x, y, atol + rtol * std::fabs(x)) << "element " << i;
      }
    } else {
      EXPECT_EQ(x, y) << "element " << i;
    }
  }
}

void Compare(const Tensor& e, const Tensor& a, double atol, double rtol, bool exact) {
  ASSERT_EQ(e.dtype(), a.dtype()) << DataTypeString(e.dtype()) << " vs "
                                  << DataTypeString(a.dtype());
  ASSERT_EQ(e.shape(), a.shape()) << e.shape().ToString() << " vs " << a.shape().ToString();
  switch (e.dtype()) {
    case DT_FLOAT:
      return CompareValues<float>(e, a, atol, rtol, exact);
    case DT_DOUBLE:
      return CompareValues<double>(e, a, atol, rtol, exact);
    case DT_INT32:
      return CompareValues<int32_t>(e, a, atol, rtol, exact);
    case DT_INT64:
      return CompareValues<int64_t>(e, a, atol, rtol, exact);
    case DT_BOOL:
      return CompareValues<bool>(e, a, atol, rtol, exact);
    case DT_UINT8:
      return CompareValues<uint8_t>(e, a, atol, rtol, exact);
    case DT_INT8:
      return CompareValues<int8_t>(e, a, atol, rtol, exact);
    case DT_INT16:
      return CompareValues<int16_t>(e, a, atol, rtol, exact);
    case DT_UINT16:
      return CompareValues<uint16_t>(e, a, atol, rtol, exact);
    default:
      EXPECT_TRUE(e.Equals(a)) << e.DebugString() << " vs " << a.DebugString();
  }
}

}  // namespace

void ExpectTensorEqual(const Tensor& expected, const Tensor& actual) {
  Compare(expected, actual, 0, 0, true);
}

void ExpectTensorNear(const Tensor& expected, const Tensor& actual, double atol, double rtol) {
  Compare(expected, actual, atol, rtol, false);
}

void ExpectError(const StatusOr<std::vector<Tensor>>& result, Code code,
                 const std::string& substring) {
  ASSERT_FALSE(result.ok()) << "expected an error " << CodeName(code);
  EXPECT_EQ(result.status().code(), code) << result.status();
  EXPECT_NE(result.status().message().find(substring), std::string::npos)
      << "message \"" << result.status().message() << "\" lacks \"" << substring << "\"";
}

}  // namespace cfx::test
