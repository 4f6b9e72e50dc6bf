// The host function table of minor 3: a root with one table per concept and the frozen flat
// part of minors 0-2 filled with the same functions; negotiation per plugin; the SDK over a
// host of any minor.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "conflux/runtime.h"
#include "conflux/sdk/status.h"
#include "kernel_test_util.h"
#include "plugin/abi_types.h"

namespace cfx {
namespace {

template <typename Table>
void ExpectFull(const Table* table) {
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->struct_size, sizeof(Table));
}

TEST(HostTables, RootPointsToEveryTable) {
  const cfx_host_api* h = internal::HostApi();
  EXPECT_EQ(h->struct_size, sizeof(cfx_host_api));
  EXPECT_EQ(h->abi_minor, static_cast<uint32_t>(CFX_ABI_MINOR));
  ExpectFull(h->core);
  ExpectFull(h->registration);
  ExpectFull(h->attr);
  ExpectFull(h->shape);
  ExpectFull(h->tensor);
  ExpectFull(h->kernel);
  ExpectFull(h->state);
  ExpectFull(h->gradient);
  ExpectFull(h->device);
  ExpectFull(h->transport);
}

TEST(HostTables, EveryFlatFieldIsItsTableFunction) {
  const cfx_host_api* h = internal::HostApi();
#define CFX_EXPECT_SAME(flat, table, field)                 \
  EXPECT_NE(h->flat, nullptr) << #flat;                     \
  EXPECT_EQ(reinterpret_cast<const void*>(h->flat),         \
            reinterpret_cast<const void*>(h->table->field)) \
      << #flat " is not " #table "->" #field;
  CFX_HOST_API_LEGACY_FIELDS(CFX_EXPECT_SAME)
#undef CFX_EXPECT_SAME
}

// The SDK's view of a host: its tables from minor 3 on; over the flat fields before, with NULL
// for what that host's struct does not hold.
TEST(HostTables, SdkReadsAnOlderHostThroughTheFlatFields) {
  const cfx_host_api* h = internal::HostApi();
  sdk::HostTables now = sdk::internal::TablesOf(h);
  EXPECT_EQ(now.kernel, h->kernel);
  EXPECT_EQ(now.tensor, h->tensor);

  cfx_host_api minor1 = *h;  // a host of minor 1: no gradient functions, no tables
  minor1.abi_minor = 1;
  minor1.struct_size = offsetof(cfx_host_api, register_gradient);
  sdk::HostTables old = sdk::internal::TablesOf(&minor1);
  EXPECT_EQ(old.abi_minor, 1u);
  EXPECT_NE(old.kernel, h->kernel);  // the SDK's own tables
  EXPECT_EQ(old.kernel->struct_size, sizeof(cfx_host_kernel_api));
  EXPECT_EQ(old.kernel->allocate_output, h->kernel->allocate_output);
  EXPECT_EQ(old.kernel->set_output_reshaped, h->kernel->set_output_reshaped);
  EXPECT_EQ(old.state->variable_release, h->state->variable_release);
  EXPECT_EQ(old.device->parallel_for, h->device->parallel_for);
  EXPECT_EQ(old.registration->register_gradient, nullptr);
  EXPECT_EQ(old.gradient->node_new, nullptr);
  EXPECT_EQ(old.kernel->step_id, nullptr);  // no flat field: appended to the table in minor 3
  EXPECT_EQ(old.kernel->register_cancellation, nullptr);
  ASSERT_NE(old.transport, nullptr);
  EXPECT_EQ(old.transport->struct_size, sizeof(cfx_host_transport_api));
}

// A plugin built for minor 2 gets minor 2 and runs through the flat fields (the SDK's fallback);
// the one built against the frozen 1.3 headers gets minor 3 (abi13_plugin_test.cc runs it); the
// in-tree plugins get this host's minor.
TEST(HostTables, EachPluginGetsTheSmallerMinor) {
  auto rt = test::RuntimeWithFixtures({"minor2", "abi13"});
  ASSERT_TRUE(rt.ok()) << rt.status();
  const std::map<std::string, uint32_t> built_for = {{"fixture", 2}, {"abi13", 3}};
  ASSERT_EQ((*rt)->plugins().size(), 4u);  // cpu, ops-nn and the two fixtures
  for (const LoadedPluginInfo& p : (*rt)->plugins()) {
    auto it = built_for.find(p.name);
    EXPECT_EQ(p.abi_minor, it != built_for.end() ? it->second : uint32_t{CFX_ABI_MINOR})
        << p.name;
  }
  NodeDef node = test::MakeNode("FixtureScale", 1, {{"scale", AttrValue::Float(3)}});
  auto out = RunKernelOnce(**rt, (*rt)->FindDevice("CPU:0").value(), node,
                           {test::MakeTensor<float>({2}, {1, -2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(test::Values<float>((*out)[0]), (std::vector<float>{3, -6}));
}

}  // namespace
}  // namespace cfx
