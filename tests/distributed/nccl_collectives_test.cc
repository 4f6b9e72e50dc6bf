// The CUDA plugin's NCCL collectives on GPU tensors, under mpirun (ctest distributed.nccl_np1 and
// distributed.nccl_np2): a cluster of one task per rank, between graphs, each task with GPU:0 on
// the CUDA device of its rank's number. Every test skips, with the host's reason, unless the
// process group created the "nccl" collectives for GPU, which takes a GPU on every rank (NCCL
// refuses two ranks on one GPU) and libnccl.so.2.
//
//  - with one rank, a one-member NCCL communicator runs all-reduce, all-gather and broadcast on
//    GPU buffers through the group's collectives (a collective node of a group of one passes its
//    value on without a transfer, so no graph reaches NCCL with one task);
//  - with two ranks, a graph step of every collective kernel on GPU:0 against expected values.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "distributed/cluster.h"
#include "graph_builder.h"
#include "kernel_test_util.h"
#include "runtime/transport.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

Runtime* g_runtime = nullptr;
int g_rank = 0, g_size = 1;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

// The GPUs this machine has (a runtime without a cluster, GPU count left to the plugin).
int LocalGpuCount() {
  auto config = Config::FromString(std::string("plugin_paths: [\"") + CONFLUX_BUILD_PLUGIN_DIR +
                                       "\"]\nplugins:\n  - {name: cpu}\n  - {name: cuda}\n",
                                   "gpu_count.yaml");
  if (!config.ok()) return 0;
  auto rt = Runtime::Create(*config);
  if (!rt.ok()) return 0;
  int n = 0;
  for (const auto& d : (*rt)->devices()) n += d->type() == "GPU";
  return n;
}

std::string ClusterYaml(bool own_gpu) {
  std::string gpu = own_gpu ? "  GPU: {count: 1, options: {visible_devices: \"" +
                                  std::to_string(g_rank) + "\"}}\n"
                            : "  GPU: {count: 0}\n";
  return std::string("plugin_paths: [\"") + CONFLUX_BUILD_PLUGIN_DIR + R"("]
plugins:
  - {name: cpu}
  - {name: cuda}
  - {name: transport-mpi}
devices:
  CPU: {count: 1}
)" + gpu +
         R"(cluster:
  transport: mpi
  replication: between-graph
  jobs:
    - {name: worker, tasks: )" +
         std::to_string(g_size) + "}\n";
}

#define SKIP_WITHOUT_NCCL()                                                               \
  std::string why;                                                                        \
  Collectives* nccl = g_runtime->replica_group()->device_collectives().Find("GPU", &why); \
  if (nccl == nullptr) GTEST_SKIP() << "no NCCL collectives for GPU in this group: " << why

Device* Gpu() {
  auto d = g_runtime->FindDevice("GPU:0");
  return d.ok() ? *d : nullptr;
}

// Runs `start(done)` and waits for its completion, then for the GPU's stream.
Status RunAndWait(const std::function<void(Collectives::Done)>& start) {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  Status result;
  start([&](const Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    result = s;
    finished = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return finished; });
  if (!result.ok()) return result;
  return Gpu()->Synchronize();
}

TEST(NcclCollectives, OneRankRunsAllReduceAllGatherAndBroadcastOnGpuBuffers) {
  if (g_size != 1) GTEST_SKIP() << "the one-rank test runs under mpirun -n 1";
  SKIP_WITHOUT_NCCL();
  Device* gpu = Gpu();
  ASSERT_NE(gpu, nullptr);
  const Tensor host = MakeVector<float>({1.5f, -2, 4});
  auto in = gpu->FromHost(host);
  ASSERT_OK(in.status());
  auto out = Tensor::Allocate(gpu->allocator(), DT_FLOAT, TensorShape({3}));
  ASSERT_OK(out.status());
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kProd}) {
    ASSERT_OK(RunAndWait([&](Collectives::Done done) {
      nccl->AllReduce({}, DT_FLOAT, in->raw_data(), out->raw_data(), 3, op, gpu->compute_stream(),
                      std::move(done));
    }));
    auto back = gpu->ToHost(*out);
    ASSERT_OK(back.status());
    EXPECT_EQ(Values<float>(*back), Values<float>(host)) << "op " << static_cast<int>(op);
  }
  // The other dtypes of the all-reduce (a group of one reduces to its own values; an integer
  // mean takes the sum-then-divide path).
  for (ReduceOp op : {ReduceOp::kMean, ReduceOp::kMin}) {
    auto ints = gpu->FromHost(MakeVector<int32_t>({-7, 9}));
    ASSERT_OK(ints.status());
    ASSERT_OK(RunAndWait([&](Collectives::Done done) {
      nccl->AllReduce({}, DT_INT32, ints->raw_data(), ints->raw_data(), 2, op,
                      gpu->compute_stream(), std::move(done));
    }));
    auto back = gpu->ToHost(*ints);
    ASSERT_OK(back.status());
    EXPECT_EQ(Values<int32_t>(*back), (std::vector<int32_t>{-7, 9})) << static_cast<int>(op);
  }
  auto doubles = gpu->FromHost(MakeVector<double>({0.25, -1e300}));
  ASSERT_OK(doubles.status());
  ASSERT_OK(RunAndWait([&](Collectives::Done done) {
    nccl->AllReduce({}, DT_DOUBLE, doubles->raw_data(), doubles->raw_data(), 2, ReduceOp::kSum,
                    gpu->compute_stream(), std::move(done));
  }));
  auto d = gpu->ToHost(*doubles);
  ASSERT_OK(d.status());
  EXPECT_EQ(Values<double>(*d), (std::vector<double>{0.25, -1e300}));
  auto gathered = Tensor::Allocate(gpu->allocator(), DT_FLOAT, TensorShape({3}));
  ASSERT_OK(gathered.status());
  ASSERT_OK(RunAndWait([&](Collectives::Done done) {
    nccl->AllGather({}, DT_FLOAT, in->raw_data(), 3, gathered->raw_data(), gpu->compute_stream(),
                    std::move(done));
  }));
  auto g = gpu->ToHost(*gathered);
  ASSERT_OK(g.status());
  EXPECT_EQ(Values<float>(*g), Values<float>(host));
  auto ints = gpu->FromHost(MakeVector<int64_t>({7, -8}));
  ASSERT_OK(ints.status());
  ASSERT_OK(RunAndWait([&](Collectives::Done done) {
    nccl->Broadcast({}, DT_INT64, ints->raw_data(), 2, 0, gpu->compute_stream(), std::move(done));
  }));
  auto b = gpu->ToHost(*ints);
  ASSERT_OK(b.status());
  EXPECT_EQ(Values<int64_t>(*b), (std::vector<int64_t>{7, -8}));
  // A dtype NCCL has no type for is refused, naming it.
  Status refused = RunAndWait([&](Collectives::Done done) {
    nccl->AllReduce({}, DT_BOOL, in->raw_data(), out->raw_data(), 1, ReduceOp::kSum,
                    gpu->compute_stream(), std::move(done));
  });
  EXPECT_EQ(refused.code(), Code::kUnimplemented) << refused;
  EXPECT_NE(refused.message().find("NCCL has no type for"), std::string::npos) << refused;
}

void Collective(GraphBuilder* b, const std::string& name, const std::string& op,
                std::vector<std::string> inputs, int instance, DataType t,
                std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
  b->Const(name + "/size", MakeScalar<int32_t>(g_size));
  b->Const(name + "/key", MakeScalar<int32_t>(1));
  b->Const(name + "/instance", MakeScalar<int32_t>(instance));
  for (const char* g : {"/size", "/key", "/instance"}) inputs.push_back(name + g);
  attrs.emplace_back("T", Type(t));
  b->Op(name, op, inputs, attrs, "/device:GPU:0");
}

TEST(NcclCollectives, TwoRanksRunEveryCollectiveKernelOnGpuTensorsInAGraphStep) {
  if (g_size != 2) GTEST_SKIP() << "the graph test runs under mpirun -n 2";
  SKIP_WITHOUT_NCCL();
  const float r = static_cast<float>(g_rank);
  GraphBuilder b;
  b.Const("x", MakeVector<float>({r + 1, -2 * r, 0.5f}));
  b.Const("i", MakeVector<int32_t>({g_rank + 1, 10}));
  auto reduce = [&](const std::string& name, const std::string& input, int instance, DataType t,
                    const char* merge, const char* final_op) {
    Collective(&b, name, "CollectiveReduceV2", {input}, instance, t,
               {{"merge_op", AttrValue::String(merge)}, {"final_op", AttrValue::String(final_op)}});
  };
  reduce("sum", "x", 1, DT_FLOAT, "Add", "Id");
  reduce("mean", "x", 2, DT_FLOAT, "Add", "Div");
  reduce("max", "x", 3, DT_FLOAT, "Max", "Id");
  reduce("isum", "i", 4, DT_INT32, "Add", "Id");
  reduce("imean", "i", 7, DT_INT32, "Add", "Div");  // truncated toward zero, as on the CPU
  Collective(&b, "gather", "CollectiveGatherV2", {"x"}, 5, DT_FLOAT);
  if (g_rank == 1) {
    b.Const("v", MakeVector<double>({7, 8}));
    Collective(&b, "bcast", "CollectiveBcastSendV2", {"v"}, 6, DT_DOUBLE);
  } else {
    b.Const("shape", MakeVector<int32_t>({2}));
    Collective(&b, "bcast", "CollectiveBcastRecvV2", {"shape"}, 6, DT_DOUBLE);
  }
  auto session = Session::Create(g_runtime, b.graph());
  ASSERT_OK(session.status());
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> out;
    ASSERT_OK((*session)->Run(
        {}, {"sum:0", "mean:0", "max:0", "isum:0", "gather:0", "bcast:0", "imean:0"}, {}, &out));
    EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{3, -2, 1}));
    EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{1.5f, -1, 0.5f}));
    EXPECT_EQ(Values<float>(out[2]), (std::vector<float>{2, 0, 0.5f}));
    EXPECT_EQ(Values<int32_t>(out[3]), (std::vector<int32_t>{3, 20}));
    EXPECT_EQ(Values<float>(out[4]), (std::vector<float>{1, 0, 0.5f, 2, -2, 0.5f}));
    EXPECT_EQ(Values<double>(out[5]), (std::vector<double>{7, 8}));
    EXPECT_EQ(Values<int32_t>(out[6]), (std::vector<int32_t>{1, 10}));
  }
}

}  // namespace
}  // namespace cfx

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  cfx::g_rank = cfx::EnvInt("OMPI_COMM_WORLD_RANK", cfx::EnvInt("PMI_RANK", 0));
  cfx::g_size = cfx::EnvInt("OMPI_COMM_WORLD_SIZE", cfx::EnvInt("PMI_SIZE", 1));
  // A GPU of its own per rank, else none (the group then creates no NCCL collectives, and the
  // tests skip with the reason on every rank).
  const bool own_gpu = cfx::g_rank < cfx::LocalGpuCount();
  auto config = cfx::Config::FromString(cfx::ClusterYaml(own_gpu), "nccl_collectives_test.yaml");
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  auto runtime = cfx::Runtime::Create(*config);
  if (!runtime.ok()) {
    std::fprintf(stderr, "%s\n", runtime.status().ToString().c_str());
    return 1;
  }
  cfx::g_runtime = runtime->get();
  const int result = RUN_ALL_TESTS();
  cfx::g_runtime = nullptr;
  runtime->reset();
  return result;
}
