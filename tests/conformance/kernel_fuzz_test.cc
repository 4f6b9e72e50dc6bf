// Kernel fuzzing: every kernel of the CPU (the CPU and ops-nn plugins) and, where an OpenCL
// platform exists, of the OPENCL device (PoCL runs it on the CPU) with an entry in the conformance
// table runs on mutations of its op's small conformance cases, in the style of TensorFlow's
// security advisories: an input's dimension made zero, larger or huge, a rank added or dropped,
// integer inputs set to -1, the type's extremes or just out of range, floats set to NaN or
// infinities, an attr set to a negative, zero or huge value, a list attr lengthened or
// shortened, a type attr changed (also to a reference type or a code outside the enum), an input
// dropped. Each run must end in outputs that the op's
// shape function accepts (KernelRunner checks that) or in a clean error: any status but
// INTERNAL or UNKNOWN. A crash, a hang (the ctest TIMEOUT) or a sanitizer report fails the test.
//
// Runs are seeded: CONFLUX_KERNEL_FUZZ_SEED (default 1) and CONFLUX_KERNEL_FUZZ_ROUNDS
// (mutations per kernel and dtype assignment, default 6) choose them, so that a longer search
// is `CONFLUX_KERNEL_FUZZ_ROUNDS=200 CONFLUX_KERNEL_FUZZ_SEED=7 build/bin/conformance_test
// --gtest_filter='*KernelFuzz*'`; CONFLUX_KERNEL_FUZZ_VERBOSE=1 prints each run before it starts
// (the last line names the one that crashed); a run longer than CONFLUX_KERNEL_FUZZ_RUN_SECONDS
// (default 20) aborts naming itself. Both devices have a 1 GiB memory_limit, so a
// mutation that asks for more gets RESOURCE_EXHAUSTED.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "conflux/config.h"
#include "conflux/kernel_runner.h"
#include "conflux/runtime.h"
#include "conformance_cases.h"
#include "kernel_test_util.h"

namespace cfx::conformance {
namespace {

constexpr int kShards = 8;
constexpr int64_t kMemoryLimit = int64_t{1} << 30;
// Cases larger than this are not mutated: the large conformance cases add time, not coverage.
constexpr int64_t kMaxBaseElements = 4096;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoll(v, nullptr, 10) : fallback;
}

Runtime* FuzzRuntime() {
  static Runtime* runtime = [] {
    Config config = Config::Default();
    config.plugin_paths.insert(config.plugin_paths.begin(), test::BuildPluginDir());
    config.devices["CPU"].memory_limit = kMemoryLimit;
    config.devices["OPENCL"].memory_limit = kMemoryLimit;
    PluginSpec opencl;  // its kernels too, where an OpenCL platform exists (PoCL on the CPU)
    opencl.name = "opencl";
    opencl.required = false;
    opencl.source = "kernel fuzzing";
    config.plugins.push_back(opencl);
    config.log_level = "error";
    auto rt = Runtime::Create(config);
    if (!rt.ok()) {
      ADD_FAILURE() << "cannot create the fuzzing runtime: " << rt.status();
      return static_cast<Runtime*>(nullptr);
    }
    return std::move(rt).value().release();  // never destroyed: plugins stay loaded
  }();
  return runtime;
}

// Draws mutations of one case. `what` accumulates a description of each change.
class Mutator {
 public:
  Mutator(const OpDef& op, std::mt19937* rng) : op_(op), rng_(*rng) {}

  void Mutate(Case* c, std::map<std::string, AttrValue>* attrs, std::string* what) {
    switch (Pick(8)) {
      case 0: MutateDim(c, what); break;
      case 1: MutateRank(c, what); break;
      case 2: HugeDim(c, what); break;
      case 3: IntegerValues(c, what); break;
      case 4: FloatValues(c, what); break;
      case 5:
      case 6: MutateAttr(attrs, what); break;
      default: DropInput(c, what); break;
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  template <typename T>
  T PickOf(std::initializer_list<T> values) {
    return *(values.begin() + Pick(static_cast<int>(values.size())));
  }

  // An input with a fixed-size dtype, or -1.
  int PickInput(const Case& c, bool need_rank) {
    std::vector<int> candidates;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (DataTypeSize(c.inputs[i].dtype()) > 0 && (!need_rank || c.inputs[i].shape().rank() > 0))
        candidates.push_back(static_cast<int>(i));
    return candidates.empty() ? -1 : candidates[Pick(static_cast<int>(candidates.size()))];
  }

  // Input `i` rebuilt with `shape`, holding values drawn like the conformance cases' (integers
  // small and mostly valid as indices and axes, so that the kernel gets past its first checks).
  void Reshape(Case* c, int i, const TensorShape& shape) {
    Tensor t(c->inputs[i].dtype(), shape);
    auto* bytes = static_cast<uint8_t*>(t.raw_data());
    const size_t size = DataTypeSize(t.dtype());
    const Tensor& old = c->inputs[i];
    const auto* from = static_cast<const uint8_t*>(old.raw_data());
    for (int64_t e = 0; e < t.num_elements(); ++e) {
      if (old.num_elements() > 0)
        std::memcpy(bytes + e * size, from + (e % old.num_elements()) * size, size);
      else
        std::memset(bytes + e * size, 0, size);
    }
    c->inputs[i] = std::move(t);
  }

  void MutateDim(Case* c, std::string* what) {
    const int i = PickInput(*c, true);
    if (i < 0) return MutateAttr(nullptr, what);
    TensorShape shape = c->inputs[i].shape();
    const int d = Pick(shape.rank());
    const int64_t old = std::min<int64_t>(shape.dim(d), 1 << 20);  // an earlier huge dim
    shape.set_dim(d, PickOf<int64_t>({0, 1, old + 1, old * 2 + 3}));
    const int64_t n = shape.num_elements();
    if (n < 0 || n > 1 << 16) shape.set_dim(d, 0);
    *what += "input " + std::to_string(i) + " reshaped to " + shape.ToString() + "; ";
    Reshape(c, i, shape);
  }

  void MutateRank(Case* c, std::string* what) {
    const int i = PickInput(*c, false);
    if (i < 0) return MutateAttr(nullptr, what);
    std::vector<int64_t> dims = c->inputs[i].shape().dims();
    if (!dims.empty() && Pick(2) == 0) {
      dims.erase(dims.begin() + Pick(static_cast<int>(dims.size())));
    } else {
      dims.insert(dims.begin() + Pick(static_cast<int>(dims.size()) + 1), PickOf<int64_t>({1, 2}));
    }
    TensorShape shape(dims);
    if (shape.num_elements() < 0 || shape.num_elements() > 1 << 16) return;
    *what += "input " + std::to_string(i) + " given rank " + std::to_string(dims.size()) + " " +
             shape.ToString() + "; ";
    Reshape(c, i, shape);
  }

  // A zero-sized input with one huge dimension: element counts stay 0, but products of the
  // other dimensions, strides and output sizes computed from them may overflow.
  void HugeDim(Case* c, std::string* what) {
    const int i = PickInput(*c, false);
    if (i < 0) return MutateAttr(nullptr, what);
    std::vector<int64_t> dims = c->inputs[i].shape().dims();
    if (dims.empty()) dims.push_back(1);
    dims[Pick(static_cast<int>(dims.size()))] =
        PickOf<int64_t>({int64_t{1} << 31, int64_t{1} << 40, int64_t{1} << 62,
                         std::numeric_limits<int64_t>::max()});
    dims.insert(dims.begin() + Pick(static_cast<int>(dims.size()) + 1), 0);
    // A shape is valid only while the product of its nonzero dimensions fits int64 (so that no
    // kernel's product of dimensions overflows); no tensor of any other shape can exist.
    auto valid = TensorShape::Make(dims);
    if (!valid.ok()) return;
    const TensorShape shape = *valid;
    *what += "input " + std::to_string(i) + " reshaped to " + shape.ToString() + "; ";
    Reshape(c, i, shape);
  }

  void IntegerValues(Case* c, std::string* what) {
    std::vector<int> ints;
    for (size_t i = 0; i < c->inputs.size(); ++i)
      if (IsIntegerType(c->inputs[i].dtype()) && c->inputs[i].num_elements() > 0)
        ints.push_back(static_cast<int>(i));
    if (ints.empty()) return FloatValues(c, what);
    const int i = ints[Pick(static_cast<int>(ints.size()))];
    Tensor& t = c->inputs[i];
    const int64_t e = std::uniform_int_distribution<int64_t>(0, t.num_elements() - 1)(rng_);
    const int64_t v =
        PickOf<int64_t>({-1, -2, 64, 1000, std::numeric_limits<int32_t>::max(),
                         std::numeric_limits<int32_t>::min(), std::numeric_limits<int64_t>::max(),
                         std::numeric_limits<int64_t>::min(), int64_t{1} << 40});
    const size_t size = DataTypeSize(t.dtype());
    auto* p = static_cast<uint8_t*>(t.raw_data()) + e * size;
    std::memcpy(p, &v, size);  // little-endian: the low bytes of v, the type's extreme or wrap
    *what += "input " + std::to_string(i) + "[" + std::to_string(e) + "] set from " +
             std::to_string(v) + "; ";
  }

  void FloatValues(Case* c, std::string* what) {
    std::vector<int> floats;
    for (size_t i = 0; i < c->inputs.size(); ++i)
      if ((c->inputs[i].dtype() == DT_FLOAT || c->inputs[i].dtype() == DT_DOUBLE) &&
          c->inputs[i].num_elements() > 0)
        floats.push_back(static_cast<int>(i));
    if (floats.empty()) return MutateAttr(nullptr, what);
    const int i = floats[Pick(static_cast<int>(floats.size()))];
    Tensor& t = c->inputs[i];
    const double v = PickOf<double>({std::nan(""), INFINITY, -INFINITY, 1e-310, -0.0, 1e30});
    const int64_t e = std::uniform_int_distribution<int64_t>(0, t.num_elements() - 1)(rng_);
    if (t.dtype() == DT_FLOAT)
      static_cast<float*>(t.raw_data())[e] = static_cast<float>(v);
    else
      static_cast<double*>(t.raw_data())[e] = v;
    std::ostringstream os;
    os << "input " << i << "[" << e << "] = " << v << "; ";
    *what += os.str();
  }

  void MutateAttr(std::map<std::string, AttrValue>* attrs, std::string* what) {
    if (attrs == nullptr || attrs->empty()) return;
    auto it = attrs->begin();
    std::advance(it, Pick(static_cast<int>(attrs->size())));
    AttrValue& v = it->second;
    const int64_t huge =
        PickOf<int64_t>({-1, 0, -(int64_t{1} << 62), int64_t{1} << 31, int64_t{1} << 62,
                         std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()});
    switch (v.kind) {
      case AttrValue::Kind::kInt: v.i = huge; break;
      case AttrValue::Kind::kFloat: v.f = PickOf<float>({NAN, INFINITY, -1.0f, 0.0f, 1e30f}); break;
      case AttrValue::Kind::kBool: v.b = !v.b; break;
      case AttrValue::Kind::kString: v.s = PickOf<const char*>({"", "BOGUS", "NCHW", "VALID"}); break;
      case AttrValue::Kind::kType:
        // Out of the enum too: a reference type (DT_FLOAT_REF), a code past the last, a negative.
        v.type = PickOf<DataType>({DT_FLOAT, DT_INT32, DT_INT64, DT_BOOL, DT_UINT8, DT_HALF,
                                   DT_DOUBLE, DT_STRING, DT_COMPLEX64, static_cast<DataType>(101),
                                   static_cast<DataType>(250), static_cast<DataType>(-3)});
        break;
      case AttrValue::Kind::kShape:
        v.shape = PickOf<PartialTensorShape>({PartialTensorShape({-1}), PartialTensorShape({0}),
                                              PartialTensorShape({int64_t{1} << 62, 4})});
        break;
      case AttrValue::Kind::kList:
        if (!v.list.i.empty()) {
          if (Pick(2) == 0)
            v.list.i.push_back(huge);
          else
            v.list.i[Pick(static_cast<int>(v.list.i.size()))] = huge;
        } else if (!v.list.f.empty()) {
          v.list.f.pop_back();
        } else if (!v.list.type.empty()) {
          v.list.type.push_back(PickOf<DataType>({DT_STRING, static_cast<DataType>(101),
                                                  static_cast<DataType>(250)}));
        } else {
          v.list.i = {huge, huge};
        }
        break;
      default: return;
    }
    *what += "attr " + it->first + " = " + v.DebugString() + "; ";
  }

  void DropInput(Case* c, std::string* what) {
    if (c->inputs.empty()) return MutateAttr(nullptr, what);
    c->inputs.pop_back();
    *what += "last input dropped; ";
  }

  const OpDef& op_;
  std::mt19937& rng_;
};

// Aborts the process, naming the run, when one run takes longer than `seconds`: a hang then
// fails with the kernel and mutation that caused it instead of the ctest TIMEOUT alone.
class Watchdog {
 public:
  explicit Watchdog(int seconds) : limit_(seconds), thread_([this] { Watch(); }) {}
  ~Watchdog() {
    done_ = true;
    thread_.join();
  }
  void Start(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    what_ = what;
    started_ = std::chrono::steady_clock::now();
    running_ = true;
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
  }

 private:
  void Watch() {
    while (!done_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::lock_guard<std::mutex> lock(mu_);
      if (running_ && std::chrono::steady_clock::now() - started_ > limit_) {
        std::cerr << "[kernel-fuzz] still running after " << limit_.count() << " s: " << what_
                  << std::endl;
        std::abort();
      }
    }
  }
  const std::chrono::seconds limit_;
  std::mutex mu_;
  std::string what_;
  std::chrono::steady_clock::time_point started_;
  bool running_ = false;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

bool IsSmall(const Case& c) {
  int64_t n = 0;
  for (const Tensor& t : c.inputs) n += t.num_elements();
  return n <= kMaxBaseElements;
}

std::string Shard(const std::string& op) { return std::to_string(Fnv1a(op) % kShards); }

// The fuzzed device type and the shard of its ops.
struct FuzzTarget {
  std::string type;
  int shard = 0;
};

void PrintTo(const FuzzTarget& t, std::ostream* os) { *os << t.type << " shard " << t.shard; }

std::vector<FuzzTarget> FuzzTargets() {
  std::vector<FuzzTarget> targets;
  for (const char* type : {"CPU", "OPENCL"})
    for (int shard = 0; shard < kShards; ++shard) targets.push_back({type, shard});
  return targets;
}

class KernelFuzz : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(KernelFuzz, EveryKernelEndsInOutputsOrACleanError) {
  Runtime* rt = FuzzRuntime();
  ASSERT_NE(rt, nullptr);
  const std::string type = GetParam().type;
  const int shard = GetParam().shard;
  auto device = rt->FindDevice(type + ":0");
  if (!device.ok() && type != "CPU") {
    std::string why = "no such device here";
    for (const auto& [t, note] : rt->device_type_notes())
      if (t == type) why = note;
    GTEST_SKIP() << "no " << type << " device: " << why;
  }
  ASSERT_TRUE(device.ok()) << device.status();
  const uint32_t seed = static_cast<uint32_t>(EnvInt("CONFLUX_KERNEL_FUZZ_SEED", 1));
  const int rounds = static_cast<int>(EnvInt("CONFLUX_KERNEL_FUZZ_ROUNDS", 6));
  const bool verbose = EnvInt("CONFLUX_KERNEL_FUZZ_VERBOSE", 0) != 0;
  const auto& table = ConformanceTable();
  int runs = 0, errors = 0, kernels = 0;
  Watchdog watchdog(static_cast<int>(EnvInt("CONFLUX_KERNEL_FUZZ_RUN_SECONDS", 20)));
  for (const KernelDef* k : rt->kernels().All()) {
    if (k->device_type != type || Shard(k->op) != std::to_string(shard)) continue;
    const OpRegistration* reg = rt->ops().LookUp(k->op);
    auto entry = table.find(k->op);
    if (reg == nullptr || entry == table.end() || !entry->second.cases ||
        !Unfeedable(reg->def).empty())
      continue;
    const OpDef& op = reg->def;
    ++kernels;
    for (const auto& types : TypeAssignments(*k, op)) {
      Gen gen(&op, types, Fnv1a(op.name + TypesString(types)));
      gen.ZeroFillAbove(kMaxBaseElements);
      std::vector<Case> cases = entry->second.cases(gen);
      std::erase_if(cases, [](const Case& c) { return !IsSmall(c); });
      if (cases.empty()) continue;
      std::mt19937 rng(seed ^ Fnv1a(op.name + TypesString(types)));
      Mutator mutator(op, &rng);
      for (int round = 0; round < rounds; ++round) {
        Case c = cases[rng() % cases.size()];
        std::map<std::string, AttrValue> attrs;
        for (const AttrDef& a : op.attr)
          if (a.default_value) attrs[a.name] = *a.default_value;
        for (const auto& [name, d] : types) attrs[name] = AttrValue::Type(d);
        for (const auto& [name, v] : c.attrs) attrs[name] = v;
        std::string what;
        const int changes = 1 + static_cast<int>(rng() % 2);
        for (int m = 0; m < changes; ++m) mutator.Mutate(&c, &attrs, &what);
        NodeDef node;
        node.name = "fuzzed";
        node.op = op.name;
        for (size_t i = 0; i < c.inputs.size(); ++i) node.input.push_back("in" + std::to_string(i));
        node.attr = attrs;
        const std::string where =
            op.name + " (" + TypesString(types) + ") case " + c.name + " with " + what;
        if (verbose) std::cerr << "[kernel-fuzz] " << where << std::endl;
        ++runs;
        Status status;
        watchdog.Start(where);
        auto runner = KernelRunner::Create(*rt, *device, node);
        if (!runner.ok()) {
          status = runner.status();
        } else {
          status = (*runner)->Run(c.inputs).status();
        }
        watchdog.Stop();
        if (status.ok()) continue;
        ++errors;
        EXPECT_NE(status.code(), Code::kInternal) << where << ": " << status;
        EXPECT_NE(status.code(), Code::kUnknown) << where << ": " << status;
        EXPECT_FALSE(status.message().empty()) << where;
      }
    }
  }
  std::cout << "[kernel-fuzz] " << type << " shard " << shard << ": " << kernels << " kernels, "
            << runs << " runs, " << errors << " ended in an error\n";
  if (type == "CPU") {
    EXPECT_GT(runs, 0) << "no kernel fell in shard " << shard;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, KernelFuzz, ::testing::ValuesIn(FuzzTargets()),
                         [](const ::testing::TestParamInfo<FuzzTarget>& info) {
                           return info.param.type + "_" + std::to_string(info.param.shard);
                         });

}  // namespace
}  // namespace cfx::conformance
