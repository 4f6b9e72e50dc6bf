// The host's reading of plugin-filled structs: the first-release sizes, the load-time size check
// and FieldOr for fields appended later.
#include "plugin/plugin_struct.h"

#include <gtest/gtest.h>

namespace cfx::internal {
namespace {

void Describe(cfx_device*, char*, size_t) {}

TEST(PluginStruct, FirstReleaseSizesAreAbi10Sizes) {
  // Every field these structs have today was in ABI 1.0 (tests/plugin/abi_1_0): the first-release
  // size is the whole struct until a field is appended.
  EXPECT_EQ(PluginStruct<cfx_plugin_info>::kFirstSize, 40u);
  EXPECT_EQ(PluginStruct<cfx_device_type_desc>::kFirstSize, 64u);
  EXPECT_EQ(PluginStruct<cfx_device_funcs>::kFirstSize, 144u);
}

TEST(PluginStruct, CheckStructSizeNamesTheOwnerTheStructAndTheSizes) {
  cfx_device_funcs f{};
  f.struct_size = sizeof(f);
  EXPECT_TRUE(CheckStructSize(&f, "plugin x").ok());
  f.struct_size = sizeof(f) + 64;  // from a later minor: larger is fine
  EXPECT_TRUE(CheckStructSize(&f, "plugin x").ok());
  f.struct_size = 16;
  Status s = CheckStructSize(&f, "plugin x");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  for (const char* part : {"plugin x", "cfx_device_funcs", "struct_size 16", "144 bytes"})
    EXPECT_NE(s.message().find(part), std::string::npos) << s << " lacks " << part;
}

TEST(PluginStruct, FieldOrReadsOnlyWhatTheStructHolds) {
  cfx_device_funcs f{};
  f.describe = Describe;
  f.struct_size = sizeof(f);
  EXPECT_EQ(FieldOr(&f, &cfx_device_funcs::describe, nullptr), &Describe);
  // A struct that ends just before the field: the fallback, without reading the field.
  f.struct_size = offsetof(cfx_device_funcs, describe);
  EXPECT_EQ(FieldOr(&f, &cfx_device_funcs::describe, nullptr), nullptr);
  f.struct_size = offsetof(cfx_device_funcs, describe) + sizeof(f.describe) - 1;
  EXPECT_EQ(FieldOr(&f, &cfx_device_funcs::describe, nullptr), nullptr);
  // Data fields take any fallback.
  cfx_device_type_desc d{};
  d.struct_size = offsetof(cfx_device_type_desc, host_addressable);
  d.host_addressable = 1;
  EXPECT_EQ(FieldOr(&d, &cfx_device_type_desc::host_addressable, -7), -7);
  d.struct_size = sizeof(d);
  EXPECT_EQ(FieldOr(&d, &cfx_device_type_desc::host_addressable, -7), 1);
}

}  // namespace
}  // namespace cfx::internal
