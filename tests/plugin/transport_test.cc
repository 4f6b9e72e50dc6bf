// Transports through the plugin ABI in one process: registration and its checks (unique names,
// descriptors the host cannot use, a host table without transports), the host table of minors 3
// and 4, and the runtime's Transport and Collectives adapters over the loopback transport of
// examples/out-of-tree-transport. tests/transport runs the MPI transport under mpirun.
#include <gtest/gtest.h>

#include <future>

#include "conflux/runtime.h"
#include "kernel_test_util.h"
#include "plugin/abi_types.h"
#include "plugin/plugin_manager.h"
#include "plugin/plugin_transport.h"
#include "transport_test_util.h"

namespace cfx {
namespace {

std::string FixturePath(const std::string& file) {
  return test::FixturePluginDir() + "/libconflux_" + file + ".so";
}

PluginSpec ByPath(const std::string& path) {
  PluginSpec s;
  s.path = path;
  return s;
}

TEST(TransportTable, MinorFourHasTheFunctionsMinorThreeOnlyItsSize) {
  const cfx_host_transport_api* now = internal::HostApiForMinor(CFX_ABI_MINOR)->transport;
  EXPECT_EQ(now->struct_size, sizeof(cfx_host_transport_api));
  EXPECT_NE(now->register_transport, nullptr);
  EXPECT_NE(now->register_collectives, nullptr);
  EXPECT_NE(now->group_rank, nullptr);
  EXPECT_NE(now->group_size, nullptr);
  EXPECT_NE(now->group_broadcast, nullptr);
  for (uint32_t minor : {0u, 2u, 3u}) {
    const cfx_host_transport_api* old = internal::HostApiForMinor(minor)->transport;
    EXPECT_EQ(old->struct_size, sizeof(size_t)) << "minor " << minor;
    EXPECT_FALSE(CFX_HAS_FIELD(old, cfx_host_transport_api, register_transport));
  }
}

class TransportPlugins : public ::testing::Test {
 protected:
  TransportPlugins() : plugins_(&ops_, &kernels_, {}) {}
  OpRegistry ops_;
  KernelRegistry kernels_;
  PluginManager plugins_;
};

TEST_F(TransportPlugins, RegistersTheTransportAndItsCollectives) {
  ASSERT_OK(plugins_.Load(ByPath(FixturePath("example_loopback"))));
  ASSERT_EQ(plugins_.transports().count("loopback"), 1u);
  EXPECT_EQ(plugins_.transports().at("loopback").plugin, "example_loopback");
  ASSERT_EQ(plugins_.collectives().size(), 1u);
  EXPECT_STREQ(plugins_.collectives()[0].desc->name, "loopback");
  EXPECT_STREQ(plugins_.collectives()[0].desc->device_type, "CPU");
  EXPECT_EQ(plugins_.collectives()[0].desc, plugins_.transports().at("loopback").desc->collectives);
  const LoadedPluginInfo info = plugins_.loaded().back();
  EXPECT_EQ(info.transports, std::vector<std::string>{"loopback"});
  EXPECT_EQ(info.collectives, std::vector<std::string>{"loopback (CPU)"});
}

TEST_F(TransportPlugins, ASecondTransportOfTheSameNameNamesBothPlugins) {
  ASSERT_OK(plugins_.Load(ByPath(FixturePath("example_loopback"))));
  Status s = plugins_.Load(ByPath(FixturePath("fixture_dup_transport")));
  EXPECT_EQ(s.code(), Code::kAlreadyExists) << s;
  for (const char* part : {"fixture_dup_transport", "transport 'loopback'", "example_loopback"})
    EXPECT_NE(s.message().find(part), std::string::npos) << s << " lacks " << part;
  EXPECT_EQ(plugins_.transports().at("loopback").plugin, "example_loopback");
}

TEST_F(TransportPlugins, ADescriptorWithoutRecvIsRejected) {
  Status s = plugins_.Load(ByPath(FixturePath("fixture_bad_transport")));
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  for (const char* part : {"transport 'no_recv'", "send and recv"})
    EXPECT_NE(s.message().find(part), std::string::npos) << s << " lacks " << part;
  EXPECT_TRUE(plugins_.transports().empty());
}

TEST_F(TransportPlugins, APluginOfMinorThreeCannotRegisterATransport) {
  Status s = plugins_.Load(ByPath(FixturePath("fixture_minor3")));
  EXPECT_EQ(s.code(), Code::kUnimplemented) << s;
  EXPECT_NE(s.message().find("ABI minor 3 has no transports"), std::string::npos) << s;
  EXPECT_TRUE(plugins_.transports().empty());
}

// The adapters over a real plugin: the loopback transport's sends reach its own receives.
class LoopbackTransport : public TransportPlugins {
 protected:
  void SetUp() override {
    ASSERT_OK(plugins_.Load(ByPath(FixturePath("example_loopback"))));
    auto t = internal::CreatePluginTransport(plugins_.transports().at("loopback").desc,
                                             "example_loopback", {}, 0);
    ASSERT_TRUE(t.ok()) << t.status();
    transport_ = std::move(t).value();
  }
  std::unique_ptr<Transport> transport_;
};

TEST_F(LoopbackTransport, SendsMetadataAndPayloadWhicheverComesFirst) {
  Transport& t = *transport_;
  EXPECT_EQ(t.name(), "loopback");
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.size(), 1);
  EXPECT_EQ(t.DescribePeer(0), "rank 0");
  EXPECT_FALSE(t.DeviceMemory("GPU"));

  const std::string payload = "0123456789";
  test::Outcome sent;
  t.Send(0, "1;first", "meta-1", payload.data(), payload.size(), sent.Callback());
  auto first = std::make_shared<test::Received>();
  test::RecvInto(t, 0, "1;first", first);
  ASSERT_OK(first->outcome.Wait());
  ASSERT_OK(sent.Wait());
  EXPECT_EQ(first->meta, "meta-1");
  EXPECT_EQ(first->payload, payload);

  auto second = std::make_shared<test::Received>();
  test::RecvInto(t, 0, "1;second", second);
  test::Outcome sent_empty;
  t.Send(0, "1;second", "", nullptr, 0, sent_empty.Callback());
  ASSERT_OK(second->outcome.Wait());
  ASSERT_OK(sent_empty.Wait());
  EXPECT_EQ(second->payload, "");
  EXPECT_EQ(second->allocs, 1u);
  EXPECT_EQ(sent.calls() + sent_empty.calls() + first->outcome.calls(), 3);
}

TEST_F(LoopbackTransport, AnAllocErrorFailsOnlyThatReceive) {
  Transport& t = *transport_;
  const std::string payload = "abc";
  test::Outcome sent, refused;
  t.Send(0, "2;x", "", payload.data(), payload.size(), sent.Callback());
  t.Recv(0, "2;x", test::RefusingAlloc(), refused.Callback());
  Status s = refused.Wait();
  EXPECT_EQ(s.code(), Code::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("no room for 3 bytes"), std::string::npos) << s;
  EXPECT_OK(sent.Wait());
  // The transport still works. A loopback send completes once received, so the blocking
  // receive runs on a thread of its own.
  auto after = std::async(std::launch::async, [&t] { return t.RecvSync(0, "2;y"); });
  ASSERT_OK(t.SendSync(0, "2;y", "after"));
  StatusOr<std::string> received = after.get();
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(*received, "after");
}

TEST_F(LoopbackTransport, CancelAndAbortPrefixEndPendingReceives) {
  Transport& t = *transport_;
  auto cancelled = std::make_shared<test::Received>();
  Transport::Request r = test::RecvInto(t, 0, "3;cancel", cancelled);
  EXPECT_NE(r, 0u);
  t.Cancel(r);
  EXPECT_EQ(cancelled->outcome.Wait().code(), Code::kCancelled);

  auto aborted = std::make_shared<test::Received>();
  test::RecvInto(t, 0, "4;a", aborted);
  t.AbortPrefix("4;", errors::Aborted("step 4 failed"));
  Status s = aborted->outcome.Wait();
  EXPECT_EQ(s.code(), Code::kAborted) << s;
  EXPECT_NE(s.message().find("step 4 failed"), std::string::npos) << s;
  // A message sent under the aborted prefix later is dropped: its sender completes.
  test::Outcome late;
  t.Send(0, "4;b", "", "z", 1, late.Callback());
  EXPECT_OK(late.Wait());
  EXPECT_EQ(cancelled->allocs + aborted->allocs, 0u);
}

TEST_F(LoopbackTransport, CollectivesOfOneMemberCopy) {
  ASSERT_EQ(plugins_.collectives().size(), 1u);
  auto c = internal::CreatePluginCollectives(plugins_.collectives()[0].desc, "example_loopback",
                                             transport_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  Collectives& collectives = **c;
  EXPECT_EQ(collectives.name(), "loopback");
  EXPECT_EQ(collectives.device_type(), "CPU");
  std::vector<float> in{1, 2, 3}, out(3);
  test::Outcome reduced;
  collectives.AllReduce({}, DT_FLOAT, in.data(), out.data(), 3, ReduceOp::kSum, nullptr,
                        reduced.Callback());
  ASSERT_OK(reduced.Wait());
  EXPECT_EQ(out, in);
  test::Outcome strings;
  collectives.AllGather({}, DT_STRING, in.data(), 3, out.data(), nullptr, strings.Callback());
  EXPECT_EQ(strings.Wait().code(), Code::kUnimplemented);
}

TEST_F(TransportPlugins, CreateErrorsNameTheTransportAndPlugin) {
  ASSERT_OK(plugins_.Load(ByPath(FixturePath("example_loopback"))));
  auto t = internal::CreatePluginTransport(plugins_.transports().at("loopback").desc,
                                           "example_loopback", {}, 3);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("transport 'loopback' of plugin example_loopback"),
            std::string::npos)
      << t.status();
}

}  // namespace
}  // namespace cfx
