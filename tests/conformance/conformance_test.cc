// Kernel conformance: every kernel a device type registers is run on a device of that type and on
// CPU:0 over the cases of conformance_cases.cc; the outputs must agree within the op's tolerance.
//
// The runtime comes from the YAML config named by $CONFLUX_CONFORMANCE_CONFIG or, by default,
// from the default config plus every in-tree plugin in the build's plugin folder (loaded as
// optional plugins) and two CPU devices. Each non-CPU device type found is checked on its first
// device; when there is none, CPU:1 is checked against CPU:0 so that the harness always runs.
// A device type that a plugin provides but that has no device here (a GPU plugin on a machine
// without a GPU) still gets EveryKernelHasACase; its comparison skips with the plugin's reason.
#include <gtest/gtest-spi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "conflux/config.h"
#include "conflux/kernel_runner.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "conflux/types.h"
#include "conformance_cases.h"
#include "kernel_test_util.h"
#include "runtime/copy_tensor.h"

namespace cfx::conformance {
namespace {

// The runtime under test, built once per process and never destroyed (device plugins may not
// survive being unloaded at exit).
struct World {
  Runtime* runtime = nullptr;
  Status status;
};

StatusOr<Config> ConformanceConfig() {
  if (const char* path = std::getenv("CONFLUX_CONFORMANCE_CONFIG"); path && *path)
    return Config::FromFile(path);
  Config config = Config::Default();
  const std::string dir = test::BuildPluginDir();
  config.plugin_paths.insert(config.plugin_paths.begin(), dir);
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string file = entry.path().filename().string();
    const std::string prefix = "libconflux_", suffix = ".so";
    if (file.size() <= prefix.size() + suffix.size() || !file.starts_with(prefix) ||
        !file.ends_with(suffix))
      continue;
    std::string name = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    if (name != "cpu") names.insert(name);
  }
  for (const std::string& name : names) {
    PluginSpec spec;
    spec.name = name;
    spec.required = false;
    spec.source = "conformance default config";
    config.plugins.push_back(spec);
  }
  config.devices["CPU"].count = 2;
  return config;
}

World& GetWorld() {
  static World* world = [] {
    auto* w = new World;
    StatusOr<Config> config = ConformanceConfig();
    if (!config.ok()) {
      w->status = config.status();
      return w;
    }
    auto rt = Runtime::Create(*config);
    if (!rt.ok()) {
      w->status = rt.status();
      return w;
    }
    w->runtime = std::move(rt).value().release();
    return w;
  }();
  return *world;
}

struct Target {
  std::string type;
  std::string device;   // the device checked against CPU:0; empty when the type has none here
  std::string no_device;  // why the type has no device here
};

void PrintTo(const Target& t, std::ostream* os) { *os << (t.device.empty() ? t.type : t.device); }

std::vector<Target> Targets() {
  std::vector<Target> targets;
  if (Runtime* rt = GetWorld().runtime) {
    std::set<std::string> seen;
    for (const auto& d : rt->devices())
      if (d->type() != "CPU" && seen.insert(d->type()).second)
        targets.push_back({d->type(), d->full_name(), ""});
    if (targets.empty()) targets.push_back({"CPU", "CPU:1", ""});
    for (const auto& [type, why] : rt->device_type_notes())
      if (type != "CPU" && seen.insert(type).second) targets.push_back({type, "", why});
  }
  if (targets.empty()) targets.push_back({"CPU", "CPU:1", ""});
  return targets;
}

// The device's output against the reference's; failures name `what` and the first elements
// that differ.
void ExpectConforms(const Tensor& ref, const Tensor& got, Tolerance tol, const std::string& what) {
  ASSERT_EQ(ref.dtype(), got.dtype()) << what;
  ASSERT_EQ(ref.shape(), got.shape())
      << what << ": shape " << got.shape().ToString() << ", expected " << ref.shape().ToString();
  const int64_t n = ref.num_elements();
  const DataType d = ref.dtype();
  int64_t bad = 0;
  std::ostringstream first;
  if (DataTypeSize(d) == 0) {  // strings: no generator makes them, but a kernel could
    EXPECT_TRUE(ref.Equals(got)) << what << ": " << got.DebugString() << ", expected "
                                 << ref.DebugString();
    return;
  }
  if (!IsFloatingType(d) || tol.exact) {
    if (std::memcmp(ref.raw_data(), got.raw_data(), ref.TotalBytes()) == 0) return;
    const size_t size = DataTypeSize(d);
    const auto* a = static_cast<const uint8_t*>(ref.raw_data());
    const auto* b = static_cast<const uint8_t*>(got.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      if (std::memcmp(a + i * size, b + i * size, size) == 0) continue;
      if (bad++ < 5)
        first << " [" << i << "] " << ElementAsDouble(got, i) << " (expected "
              << ElementAsDouble(ref, i) << ")";
    }
    ADD_FAILURE() << what << ": " << bad << " of " << n << " elements differ (exact);"
                  << first.str();
    return;
  }
  double rtol = tol.rtol, atol = tol.atol;
  if (d == DT_HALF) rtol = std::max(rtol, 1e-3), atol = std::max(atol, 1e-3);
  if (d == DT_BFLOAT16) rtol = std::max(rtol, 1e-2), atol = std::max(atol, 1e-2);
  for (int64_t i = 0; i < n; ++i) {
    double e = ElementAsDouble(ref, i), g = ElementAsDouble(got, i);
    bool ok = (std::isnan(e) && std::isnan(g)) ||
              ((std::isinf(e) || std::isinf(g)) ? e == g
                                                : std::fabs(e - g) <= atol + rtol * std::fabs(e));
    if (ok) continue;
    if (bad++ < 5) first << " [" << i << "] " << g << " (expected " << e << ")";
  }
  if (bad > 0)
    ADD_FAILURE() << what << ": " << bad << " of " << n << " elements outside rtol " << rtol
                  << ", atol " << atol << ";" << first.str();
}

// Runs the conformance cases of every kernel of one device type on `device` and on `reference`.
class Harness {
 public:
  Harness(Runtime* rt, Device* device, Device* reference,
          const std::map<std::string, OpEntry>& table)
      : rt_(rt), type_(device->type()), device_(device), reference_(reference), table_(table) {}
  // For a device type with no device here: only Kernels and MissingCases may be used.
  Harness(Runtime* rt, std::string type, const std::map<std::string, OpEntry>& table)
      : rt_(rt), type_(std::move(type)), table_(table) {}

  // The kernels of the device type under test, by op.
  std::vector<const KernelDef*> Kernels() const {
    std::vector<const KernelDef*> kernels;
    for (const KernelDef* k : rt_->kernels().All())
      if (k->device_type == type_) kernels.push_back(k);
    std::sort(kernels.begin(), kernels.end(), [](const KernelDef* a, const KernelDef* b) {
      return std::pair(a->op, a->DebugString()) < std::pair(b->op, b->DebugString());
    });
    return kernels;
  }

  // The ops with a kernel on the device type and neither a table entry nor a reason that the
  // harness cannot feed them.
  std::set<std::string> MissingCases() const {
    std::set<std::string> missing;
    for (const KernelDef* k : Kernels()) {
      const OpRegistration* reg = rt_->ops().LookUp(k->op);
      if (reg != nullptr && Unfeedable(reg->def).empty() && table_.count(k->op) == 0)
        missing.insert(k->op);
    }
    return missing;
  }

  // Compares every kernel that has cases; failures are reported through GoogleTest.
  void RunAll() {
    for (const KernelDef* k : Kernels()) {
      const OpRegistration* reg = rt_->ops().LookUp(k->op);
      if (reg == nullptr) {
        ADD_FAILURE() << "kernel for unknown op " << k->op;
        continue;
      }
      const OpDef& op = reg->def;
      auto entry = table_.find(k->op);
      std::string why = Unfeedable(op);
      if (why.empty() && entry == table_.end()) why = "no case (see EveryKernelHasACase)";
      if (why.empty()) why = entry->second.skip;
      if (!why.empty()) {
        skipped_[k->op] = why;
        continue;
      }
      const auto start = std::chrono::steady_clock::now();
      for (const auto& types : TypeAssignments(*k, op)) {
        if (RunCases(op, entry->second, types)) {
          checked_.insert(k->op);
        } else {
          skipped_[k->op + " (" + TypesString(types) + ")"] = "CPU:0 has no reference kernel";
        }
      }
      seconds_[k->op] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }

  void PrintSummary() const {
    std::cout << "[conformance] " << device_->full_name() << " against " << reference_->full_name()
              << ": " << checked_.size() << " ops, " << cases_run_ << " cases compared\n";
    for (const auto& [op, why] : skipped_)
      std::cout << "[conformance]   not compared: " << op << ": " << why << "\n";
    std::vector<std::pair<double, std::string>> slowest;
    for (const auto& [op, seconds] : seconds_) slowest.push_back({seconds, op});
    std::sort(slowest.rbegin(), slowest.rend());
    std::cout << "[conformance]   slowest ops (both devices, seconds):";
    for (size_t i = 0; i < slowest.size() && i < 8; ++i)
      std::cout << " " << slowest[i].second << " " << slowest[i].first;
    std::cout << "\n";
  }
  int cases_run() const { return cases_run_; }
  const std::set<std::string>& checked() const { return checked_; }

 private:
  // Runs every case of `entry` for one dtype assignment; false when CPU has no such kernel.
  bool RunCases(const OpDef& op, const OpEntry& entry,
                const std::map<std::string, DataType>& types);

  Runtime* rt_;
  std::string type_;
  Device* device_ = nullptr;
  Device* reference_ = nullptr;
  const std::map<std::string, OpEntry>& table_;
  int cases_run_ = 0;
  std::map<std::string, std::string> skipped_;  // op -> why
  std::set<std::string> checked_;
  std::map<std::string, double> seconds_;  // by op, for the summary
};

bool Harness::RunCases(const OpDef& op, const OpEntry& entry,
                       const std::map<std::string, DataType>& types) {
  Gen gen(&op, types, Fnv1a(op.name + TypesString(types)));
  std::vector<Case> cases = entry.cases(gen);
  // One runner per distinct node (attrs and input count): devices that compile programs build
  // each kernel once, not once per case.
  struct Runners {
    NodeDef node;
    std::unique_ptr<KernelRunner> device, reference;
  };
  std::vector<Runners> runners;
  for (const Case& c : cases) {
    NodeDef node;
    node.name = "conformance";
    node.op = op.name;
    for (size_t i = 0; i < c.inputs.size(); ++i) node.input.push_back("in" + std::to_string(i));
    for (const auto& [attr, d] : types) node.attr[attr] = AttrValue::Type(d);
    for (const auto& [attr, v] : c.attrs) node.attr[attr] = v;
    if (!rt_->kernels().HasKernel(node, op, reference_->type())) return false;
    auto it = std::find_if(runners.begin(), runners.end(), [&](const Runners& r) {
      return r.node.attr == node.attr && r.node.input.size() == node.input.size();
    });
    if (it == runners.end()) {
      auto dev = KernelRunner::Create(*rt_, device_, node);
      auto ref = KernelRunner::Create(*rt_, reference_, node);
      if (!dev.ok() || !ref.ok()) {
        ADD_FAILURE() << op.name << " (" << TypesString(types) << ") case " << c.name
                      << ": cannot build the kernel: " << (dev.ok() ? ref.status() : dev.status());
        continue;
      }
      runners.push_back({node, std::move(dev).value(), std::move(ref).value()});
      it = runners.end() - 1;
    }
    const std::string what = op.name + " (" + TypesString(types) + ") case " + c.name;
    auto expected = it->reference->Run(c.inputs);
    if (!expected.ok()) {
      ADD_FAILURE() << what << ": the CPU reference rejects the case (a bad table entry): "
                    << expected.status();
      continue;
    }
    auto got = it->device->Run(c.inputs);
    ++cases_run_;
    if (!got.ok()) {
      ADD_FAILURE() << what << ": fails on " << device_->full_name() << ": " << got.status();
      continue;
    }
    if (got->size() != expected->size()) {
      ADD_FAILURE() << what << ": " << got->size() << " outputs, expected " << expected->size();
      continue;
    }
    for (size_t i = 0; i < got->size(); ++i)
      ExpectConforms((*expected)[i], (*got)[i], entry.tol, what + " output " + std::to_string(i));
  }
  return true;
}

class KernelConformance : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    World& w = GetWorld();
    ASSERT_NE(w.runtime, nullptr) << "cannot create the conformance runtime: " << w.status;
    if (GetParam().device.empty()) {
      harness_ = std::make_unique<Harness>(w.runtime, GetParam().type, ConformanceTable());
      return;
    }
    auto dev = w.runtime->FindDevice(GetParam().device);
    ASSERT_TRUE(dev.ok()) << dev.status()
                          << " (with no non-CPU device, CPU:1 is checked against CPU:0: the "
                             "config needs two CPU devices)";
    auto ref = w.runtime->FindDevice("CPU:0");
    ASSERT_TRUE(ref.ok()) << ref.status();
    harness_ = std::make_unique<Harness>(w.runtime, *dev, *ref, ConformanceTable());
  }
  std::unique_ptr<Harness> harness_;
};

TEST_P(KernelConformance, EveryKernelHasACase) {
  for (const std::string& op : harness_->MissingCases())
    ADD_FAILURE() << "add a conformance case for op " << op << " (" << GetParam().type
                  << " registers a kernel for it) to tests/conformance/conformance_cases.cc";
}

TEST_P(KernelConformance, MatchesTheCpuReference) {
  if (GetParam().device.empty())
    GTEST_SKIP() << "no " << GetParam().type << " device here: " << GetParam().no_device;
  harness_->RunAll();
  harness_->PrintSummary();
  EXPECT_GT(harness_->cases_run(), 0) << "no kernel of " << GetParam().type << " was compared";
}

INSTANTIATE_TEST_SUITE_P(Devices, KernelConformance, ::testing::ValuesIn(Targets()),
                         [](const ::testing::TestParamInfo<Target>& info) {
                           std::string name = info.param.type;
                           std::erase_if(name, [](char c) { return !std::isalnum(c); });
                           return name;
                         });

// The ops of the device plugins being written must have cases before their kernels land.
TEST(ConformanceTable, CoversTheDevicePluginOps) {
  for (const char* op :
       {"Const",   "Identity",     "Fill",       "ZerosLike", "OnesLike", "Cast",
        "Reshape", "ExpandDims",   "Squeeze",    "Add",       "AddV2",    "Sub",
        "Mul",     "Div",          "RealDiv",    "Maximum",   "Minimum",  "SquaredDifference",
        "Pow",     "Neg",          "Abs",        "Exp",       "Log",      "Sqrt",
        "Rsqrt",   "Square",       "Reciprocal", "Sin",       "Cos",      "Relu",
        "Sigmoid", "Tanh",         "Equal",      "NotEqual",  "Less",     "LessEqual",
        "Greater", "GreaterEqual", "Select",     "SelectV2",  "MatMul",   "Sum",
        "Mean",    "Max",          "BiasAdd",    "Softmax"}) {
    auto it = ConformanceTable().find(op);
    ASSERT_NE(it, ConformanceTable().end()) << op;
    EXPECT_TRUE(it->second.skip.empty()) << op;
    EXPECT_NE(it->second.cases, nullptr) << op;
  }
}

// The comparison itself: exact entries see a one-bit difference, tolerant ones see a relative
// error above their bound but not one below.
TEST(ConformanceCompare, FlagsDifferencesBeyondTheTolerance) {
  Tensor a = test::MakeVector<float>({1.0f, 2.0f, -3.0f});
  Tensor near = test::MakeVector<float>({1.0f, 2.0f * (1 + 4e-6f), -3.0f});
  Tensor far = test::MakeVector<float>({1.0f, 2.0f * (1 + 4e-5f), -3.0f});
  ExpectConforms(a, near, {false, 1e-5, 0}, "near");
  EXPECT_NONFATAL_FAILURE(ExpectConforms(a, far, {false, 1e-5, 0}, "far"), "1 of 3 elements");
  EXPECT_NONFATAL_FAILURE(ExpectConforms(a, near, {true, 0, 0}, "exact"), "differ (exact)");
  Tensor i = test::MakeVector<int32_t>({1, 2, 3});
  EXPECT_NONFATAL_FAILURE(
      ExpectConforms(i, test::MakeVector<int32_t>({1, 2, 4}), {false, 1, 1}, "integers are exact"),
      "[2] 4 (expected 3)");
}

// ---- The harness and KernelRunner on a device with its own memory (the SCRAMBLED fixture) ----

std::unique_ptr<Runtime> ScrambledRuntime(bool broken) {
  Config config = Config::Default();
  config.plugin_paths.insert(config.plugin_paths.begin(), test::BuildPluginDir());
  PluginSpec spec;
  spec.path = test::FixturePluginDir() + "/libconflux_scrambled_device.so";
  if (broken) spec.options.push_back({"broken", "yes"});
  config.plugins.push_back(spec);
  auto rt = Runtime::Create(config);
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

// Inputs reach the kernel in device memory (host-memory arguments stay on the host) and outputs
// come back to the host: with scrambled device memory, a missing copy gives wrong values.
TEST(KernelRunnerOnDeviceMemory, CopiesInputsInAndOutputsBack) {
  auto rt = ScrambledRuntime(false);
  ASSERT_NE(rt, nullptr);
  auto dev = rt->FindDevice("SCRAMBLED:0");
  ASSERT_TRUE(dev.ok()) << dev.status();
  ASSERT_FALSE((*dev)->host_addressable());
  NodeDef neg = test::MakeNode("Neg", 1, {{"T", AttrValue::Type(DT_FLOAT)}});
  auto out = RunKernelOnce(*rt, *dev, neg, {test::MakeVector<float>({1.5f, -2.0f, 0.0f})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(test::Values<float>((*out)[0]), (std::vector<float>{-1.5f, 2.0f, -0.0f}));
  // `shape` is a host-memory argument: the kernel reads it unscrambled.
  NodeDef reshape = test::MakeNode("Reshape", 2, {{"T", AttrValue::Type(DT_INT32)}});
  out = RunKernelOnce(
      *rt, *dev, reshape,
      {test::MakeVector<int32_t>({1, 2, 3, 4, 5, 6}), test::MakeVector<int32_t>({3, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  test::ExpectTensorEqual(test::MakeTensor<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6}), (*out)[0]);
  // RunOnDevice makes no copies: given host tensors, the kernel sees scrambled bytes.
  auto runner = KernelRunner::Create(*rt, *dev, neg);
  ASSERT_TRUE(runner.ok()) << runner.status();
  auto raw = (*runner)->RunOnDevice({test::MakeVector<float>({1.5f})});
  ASSERT_TRUE(raw.ok()) << raw.status();
  auto back = (*dev)->ToHost((*raw)[0]);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_NE(test::Values<float>(*back), (std::vector<float>{-1.5f}));
}

// CopyTensor between host memory, a device with its own memory and the CPU: values survive
// every path, a tensor already readable where it goes is shared, new_buffer always copies, and a
// tensor knows the device that holds it.
TEST(CopyTensorOnDeviceMemory, MovesBetweenMemorySpaces) {
  auto rt = ScrambledRuntime(false);
  ASSERT_NE(rt, nullptr);
  Device* dev = rt->FindDevice("SCRAMBLED:0").value();
  Device* cpu = rt->FindDevice("CPU:0").value();
  const Tensor host = test::MakeVector<float>({1.5f, -2.0f, 3.25f});

  auto on_dev = CopyTensorSync(nullptr, dev, host);
  ASSERT_OK(on_dev.status());
  EXPECT_EQ(DeviceOf(*on_dev), dev);
  EXPECT_NE(test::Values<float>(*on_dev), test::Values<float>(host));  // scrambled bytes

  // Same device: shared unless a new buffer is asked for, which holds the same values.
  auto shared = CopyTensorSync(dev, dev, *on_dev);
  ASSERT_OK(shared.status());
  EXPECT_EQ(shared->buffer(), on_dev->buffer());
  auto fresh = CopyTensorSync(dev, dev, *on_dev, {.new_buffer = true});
  ASSERT_OK(fresh.status());
  EXPECT_NE(fresh->buffer(), on_dev->buffer());
  EXPECT_EQ(DeviceOf(*fresh), dev);

  // Back to host memory and to the CPU device, from either device tensor, source found from
  // the tensor itself.
  for (const Tensor* t : {&*on_dev, &*fresh}) {
    auto back = CopyTensorSync(nullptr, nullptr, *t);
    ASSERT_OK(back.status());
    EXPECT_EQ(test::Values<float>(*back), test::Values<float>(host));
    auto to_cpu = CopyTensorSync(nullptr, cpu, *t);
    ASSERT_OK(to_cpu.status());
    EXPECT_EQ(test::Values<float>(*to_cpu), test::Values<float>(host));
  }

  // Host-readable on both sides: shared; with new_buffer, in the destination's memory.
  auto same = CopyTensorSync(nullptr, cpu, host);
  ASSERT_OK(same.status());
  EXPECT_EQ(same->buffer(), host.buffer());
  auto own = CopyTensorSync(nullptr, cpu, host, {.new_buffer = true});
  ASSERT_OK(own.status());
  EXPECT_NE(own->buffer(), host.buffer());
  EXPECT_EQ(DeviceOf(*own), cpu);
  EXPECT_EQ(test::Values<float>(*own), test::Values<float>(host));
}

// A device tensor fetched from a Session comes back to the host through CopyTensor.
TEST(CopyTensorOnDeviceMemory, SessionFetchesFromDeviceMemory) {
  auto rt = ScrambledRuntime(false);
  ASSERT_NE(rt, nullptr);
  GraphDef g;
  NodeDef x = test::MakeNode("Placeholder", 0, {{"dtype", AttrValue::Type(DT_FLOAT)}});
  x.name = "x";
  NodeDef neg = test::MakeNode("Neg", 1, {{"T", AttrValue::Type(DT_FLOAT)}});
  neg.name = "neg";
  neg.input = {"x"};
  neg.device = "/device:SCRAMBLED:0";
  g.node = {x, neg};
  auto session = Session::Create(rt.get(), g);
  ASSERT_OK(session.status());
  std::vector<Tensor> out;
  ASSERT_OK(
      (*session)->Run({{"x:0", test::MakeVector<float>({2.0f, -1.0f})}}, {"neg:0"}, {}, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].buffer()->allocator()->host_addressable());
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{-2.0f, 1.0f}));
}

TEST(ConformanceHarness, PassesACorrectDeviceAndNamesOpsWithoutCases) {
  auto rt = ScrambledRuntime(false);
  ASSERT_NE(rt, nullptr);
  Device* dev = rt->FindDevice("SCRAMBLED:0").value();
  Device* ref = rt->FindDevice("CPU:0").value();
  Harness harness(rt.get(), dev, ref, ConformanceTable());
  EXPECT_TRUE(harness.MissingCases().empty());
  harness.RunAll();
  EXPECT_EQ(harness.checked(), (std::set<std::string>{"Neg", "Reshape"}));
  EXPECT_GT(harness.cases_run(), 20);
  // Without table entries, both ops are reported as missing.
  const std::map<std::string, OpEntry> empty;
  EXPECT_EQ(Harness(rt.get(), dev, ref, empty).MissingCases(),
            (std::set<std::string>{"Neg", "Reshape"}));
}

TEST(ConformanceHarness, CatchesAKernelThatDisagreesWithTheCpu) {
  auto rt = ScrambledRuntime(true);
  ASSERT_NE(rt, nullptr);
  Harness harness(rt.get(), rt->FindDevice("SCRAMBLED:0").value(), rt->FindDevice("CPU:0").value(),
                  ConformanceTable());
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    harness.RunAll();
  }
  std::string all;
  for (int i = 0; i < failures.size(); ++i) all += failures.GetTestPartResult(i).message();
  EXPECT_NE(all.find("Neg (T=float) case x=[7] output 0: 1 of 7 elements differ (exact); [3]"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("Neg (T=int32) case x=[7] output 0: 1 of 7 elements differ (exact)"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("Reshape"), std::string::npos) << all;
}

}  // namespace
}  // namespace cfx::conformance
