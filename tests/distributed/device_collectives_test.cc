// Collectives per device type (core/src/session/runtime.cc, CreateGroupCollectives): which
// registered providers a process group creates, skips (with the reason) or refuses, and what a
// collective node on a device type without collectives says. Run under mpirun with two ranks
// (ctest distributed.device_collectives): a cluster of one task per rank over the MPI transport,
// with the fixture plugin tests/distributed/fixtures/device_collectives_plugin.cc.
// The tests run in the order written: the first must fail before this process joins a group
// (a process joins one group for its lifetime).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

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

int WorldSize() {
  const char* v = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (v == nullptr) v = std::getenv("PMI_SIZE");
  return v != nullptr ? std::atoi(v) : 1;
}

// A cluster of one task per rank between graphs, with the async fixture device (ASYNC:0, no
// collectives provider) and the collectives fixture with `fixture_options`.
StatusOr<std::unique_ptr<Runtime>> OneTaskRuntime(const std::string& fixture_options) {
  const std::string yaml = std::string("plugin_paths: [\"") + CONFLUX_FIXTURE_PLUGIN_DIR +
                           "\", \"" + CONFLUX_BUILD_PLUGIN_DIR + R"("]
plugins:
  - {name: cpu}
  - {name: transport-mpi}
  - {name: async_device}
  - {name: fixture_device_collectives, options: )" +
                           fixture_options + R"(}
devices:
  CPU: {count: 1}
cluster:
  transport: mpi
  replication: between-graph
  jobs:
    - {name: worker, tasks: )" +
                           std::to_string(WorldSize()) + "}\n";
  CFX_ASSIGN_OR_RETURN(Config config, Config::FromString(yaml, "device_collectives_test.yaml"));
  return Runtime::Create(config);
}

Runtime& SharedRuntime() {
  static Runtime* rt = [] {
    auto r = OneTaskRuntime("{device_type: NOSUCH}");
    if (!r.ok()) {
      ADD_FAILURE() << "cannot create the one-task runtime: " << r.status();
      std::abort();
    }
    return std::move(r).value().release();
  }();
  return *rt;
}

TEST(DeviceCollectives, TwoProvidersForOneDeviceTypeAreRefusedBeforeTheGroupForms) {
  auto rt = OneTaskRuntime("{device_type: ASYNC, second: true}");
  ASSERT_FALSE(rt.ok());
  const std::string m = rt.status().message();
  EXPECT_EQ(rt.status().code(), Code::kFailedPrecondition) << rt.status();
  EXPECT_NE(m.find("two collectives providers for device type ASYNC"), std::string::npos) << m;
  EXPECT_NE(m.find("collectives 'fixture' (ASYNC) of plugin fixture_device_collectives"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("collectives 'fixture2' (ASYNC)"), std::string::npos) << m;
}

TEST(DeviceCollectives, AProviderForADeviceTypeWithoutDevicesIsSkippedWithItsReason) {
  internal::ProcessGroup* group = SharedRuntime().replica_group();
  ASSERT_NE(group, nullptr);
  EXPECT_NE(group->host_collectives(), nullptr);  // the transport's own, as before
  EXPECT_TRUE(group->device_collectives().types().empty());
  std::string why;
  EXPECT_EQ(group->device_collectives().Find("NOSUCH", &why), nullptr);
  EXPECT_NE(why.find("collectives 'fixture' (NOSUCH) of plugin fixture_device_collectives were "
                     "not created: "),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("no loaded plugin provides device type NOSUCH"), std::string::npos) << why;
  // A device type nobody registers collectives for says so.
  EXPECT_EQ(group->device_collectives().Find("ASYNC", &why), nullptr);
  EXPECT_EQ(why, "no loaded plugin registers collectives for device type ASYNC");
}

// The kernels run on every device type; on one without collectives the node fails before any
// transfer, on every member alike. (A group of one passes its value on without collectives.)
// Collective kernels exist only where collectives do: a collective pinned to a device type
// without any is a placement error naming the node and the types, and an unpinned one stays on
// the CPU.
TEST(DeviceCollectives, ACollectiveOnADeviceTypeWithoutProviderIsAPlacementError) {
  if (WorldSize() < 2) GTEST_SKIP() << "a group of one moves nothing: run under mpirun -n 2";
  ASSERT_OK(SharedRuntime().FindDevice("ASYNC:0").status());
  GraphBuilder b;
  b.Const("x", MakeVector<float>({1, 2}));
  b.Const("size", MakeScalar<int32_t>(WorldSize()));
  b.Const("key", MakeScalar<int32_t>(1));
  b.Const("instance", MakeScalar<int32_t>(1));
  b.Op("sum", "CollectiveReduceV2", {"x", "size", "key", "instance"},
       {{"T", Type(DT_FLOAT)},
        {"merge_op", AttrValue::String("Add")},
        {"final_op", AttrValue::String("Id")}},
       "/device:ASYNC:0");
  Status s;
  auto session = Session::Create(&SharedRuntime(), b.graph());
  if (session.ok()) {
    std::vector<Tensor> out;
    s = (*session)->Run({}, {"sum:0"}, {}, &out);
  } else {
    s = session.status();
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("cannot place node 'sum' (op CollectiveReduceV2"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("device types with a kernel for it: CPU; without: ASYNC"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace cfx
