// The host logic of the CUDA plugin's NCCL collectives (plugins/cuda/nccl_collectives.h), run
// without a GPU: NCCL's types and reductions for Conflux's, a group's communicator key, the error
// text, the plugin's options. The collectives themselves run in tests/distributed/
// nccl_collectives_test.cc, which needs GPUs.
#include "nccl_collectives.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "cuda_test_util.h"

namespace cfx::cuda::nccl {
namespace {

TEST(NcclCollectivesHost, DtypesMapToNcclTypesAndOthersAreRefused) {
  DataType t;
  ASSERT_TRUE(DataTypeOf(CFX_FLOAT, &t));
  EXPECT_EQ(t, kFloat32);
  ASSERT_TRUE(DataTypeOf(CFX_DOUBLE, &t));
  EXPECT_EQ(t, kFloat64);
  ASSERT_TRUE(DataTypeOf(CFX_INT32, &t));
  EXPECT_EQ(t, kInt32);
  ASSERT_TRUE(DataTypeOf(CFX_INT64, &t));
  EXPECT_EQ(t, kInt64);
  ASSERT_TRUE(DataTypeOf(CFX_HALF, &t));
  EXPECT_EQ(t, kFloat16);
  ASSERT_TRUE(DataTypeOf(CFX_UINT8, &t));  // a broadcast of bool goes as uint8
  EXPECT_EQ(t, kUint8);
  EXPECT_FALSE(DataTypeOf(CFX_BOOL, &t));
  EXPECT_FALSE(DataTypeOf(CFX_COMPLEX64, &t));
}

TEST(NcclCollectivesHost, ReductionsMapToNcclOpsAndAFloatingPointMeanIsAvg) {
  Reduction r;
  ASSERT_TRUE(ReductionOf(CFX_REDUCE_SUM, CFX_FLOAT, &r).ok());
  EXPECT_EQ(r.op, kSum);
  EXPECT_FALSE(r.divide_after);
  ASSERT_TRUE(ReductionOf(CFX_REDUCE_PROD, CFX_INT32, &r).ok());
  EXPECT_EQ(r.op, kProd);
  ASSERT_TRUE(ReductionOf(CFX_REDUCE_MIN, CFX_INT64, &r).ok());
  EXPECT_EQ(r.op, kMin);
  ASSERT_TRUE(ReductionOf(CFX_REDUCE_MAX, CFX_DOUBLE, &r).ok());
  EXPECT_EQ(r.op, kMax);
  for (cfx_dtype t : {CFX_FLOAT, CFX_DOUBLE, CFX_HALF}) {
    ASSERT_TRUE(ReductionOf(CFX_REDUCE_MEAN, t, &r).ok());
    EXPECT_EQ(r.op, kAvg) << sdk::DTypeName(t);
    EXPECT_FALSE(r.divide_after) << sdk::DTypeName(t);
  }
}

TEST(NcclCollectivesHost, AnIntegerMeanIsASumDividedAfterwardsAsOnTheCpu) {
  for (cfx_dtype t : {CFX_INT32, CFX_INT64, CFX_UINT8}) {
    Reduction r{kAvg, false};
    ASSERT_TRUE(ReductionOf(CFX_REDUCE_MEAN, t, &r).ok());
    EXPECT_EQ(r.op, kSum) << sdk::DTypeName(t);
    EXPECT_TRUE(r.divide_after) << sdk::DTypeName(t);
  }
  // A later reduction on the same struct does not divide.
  Reduction r{kSum, true};
  ASSERT_TRUE(ReductionOf(CFX_REDUCE_SUM, CFX_INT32, &r).ok());
  EXPECT_FALSE(r.divide_after);
}

TEST(NcclCollectivesHost, DtypesWithoutAnNcclTypeAreUnimplementedNamingTheDtype) {
  Reduction r;
  sdk::Status boolean = ReductionOf(CFX_REDUCE_SUM, CFX_BOOL, &r);
  EXPECT_EQ(boolean.code(), CFX_UNIMPLEMENTED);
  EXPECT_NE(boolean.message().find("NCCL has no type for bool"), std::string::npos)
      << boolean.message();
  sdk::Status complex = ReductionOf(CFX_REDUCE_MEAN, CFX_COMPLEX64, &r);
  EXPECT_EQ(complex.code(), CFX_UNIMPLEMENTED);
  EXPECT_NE(complex.message().find("NCCL has no type for complex64"), std::string::npos)
      << complex.message();
}

TEST(NcclCollectivesHost, TheWholeGroupHasOneCommunicatorKeyWhicheverWayItIsNamed) {
  auto all = GroupKey({}, 3, 1);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<int32_t>{0, 1, 2}));
  const std::vector<int32_t> listed = {0, 1, 2};
  auto same = GroupKey(listed, 3, 1);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, *all);
  const std::vector<int32_t> some = {0, 2};
  auto sub = GroupKey(some, 3, 2);
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(*sub, some);
  EXPECT_EQ(IndexIn(*sub, 2), 1);  // rank 2 is NCCL rank 1 of {0,2}
  EXPECT_EQ(IndexIn(*sub, 1), -1);
}

TEST(NcclCollectivesHost, GroupsThatAreNotAscendingRanksOfTheGroupOrLackThisRankAreRefused) {
  const std::vector<int32_t> unsorted = {1, 0}, out_of_range = {0, 3}, without = {0, 2};
  auto a = GroupKey(unsorted, 3, 0);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("group {1,0} is not a list of ascending ranks of the "
                                      "3-process group"),
            std::string::npos)
      << a.status().message();
  EXPECT_FALSE(GroupKey(out_of_range, 3, 0).ok());
  auto c = GroupKey(without, 3, 1);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("rank 1 is not a member of group {0,2}"), std::string::npos)
      << c.status().message();
}

TEST(NcclCollectivesHost, ErrorsNameTheCallTheGroupAndNcclsWords) {
  const std::vector<int32_t> group = {0, 1};
  EXPECT_EQ(ErrorText("all_reduce", group, "ncclAllReduce", "unhandled cuda error",
                      "Cuda failure 'out of memory'"),
            "nccl all_reduce over group {0,1}: ncclAllReduce failed: unhandled cuda error "
            "(Cuda failure 'out of memory')");
  EXPECT_EQ(ErrorText("broadcast", group, "ncclBroadcast", "remote process exited", ""),
            "nccl broadcast over group {0,1}: ncclBroadcast failed: remote process exited");
}

TEST(NcclCollectivesHost, PluginOptionsTakeTheLibrariesAndRefuseOtherKeys) {
  auto options = ParsePluginOptions(
      {{"cudnn_library", "/opt/cudnn.so.9"}, {"nccl_library", "/opt/nccl/libnccl.so.2"}});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->cudnn_library, "/opt/cudnn.so.9");
  EXPECT_EQ(options->nccl_library, "/opt/nccl/libnccl.so.2");
  auto none = ParsePluginOptions({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->nccl_library.empty());
  auto bad = ParsePluginOptions({{"nccl_lib", "x"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "plugins.cuda.options: unknown key 'nccl_lib' (expected cudnn_library or "
            "nccl_library)");
}

// The collectives the loaded cuda plugin lists (what `conflux plugins` prints after
// "collectives:").
std::vector<std::string> CudaPluginCollectives(Runtime& rt) {
  for (const LoadedPluginInfo& p : rt.plugins())
    if (p.name == "cuda") return p.collectives;
  ADD_FAILURE() << "the cuda plugin is not loaded";
  return {};
}

bool Lists(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(NcclCollectivesHost, ThePluginRegistersNcclForGpuWhereverLibncclOpens) {
  // The plugin registers the provider with or without a GPU: whether the group creates it is
  // decided when a cluster forms (a task without GPUs skips it, with the reason).
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  const bool have_nccl = lib != nullptr;
  if (lib != nullptr) dlclose(lib);
  EXPECT_EQ(Lists(CudaPluginCollectives(test::CudaRuntime()), "nccl (GPU)"), have_nccl)
      << (have_nccl ? "libnccl.so.2 opens here" : "libnccl.so.2 does not open here");
}

TEST(NcclCollectivesHost, AMissingNcclLibraryLeavesThePluginLoadedWithoutTheProvider) {
  auto config = Config::FromString(R"(plugins:
  - {name: cpu}
  - {name: cuda, options: {nccl_library: /nonexistent/libnccl.so.2}}
devices:
  CPU: {count: 1}
  GPU: {count: 1, required: false}
)",
                                   "nccl_missing.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  config->plugin_paths.insert(config->plugin_paths.begin(), test::BuildPluginDir());
  auto rt = Runtime::Create(*config);
  ASSERT_TRUE(rt.ok()) << rt.status();
  EXPECT_TRUE(CudaPluginCollectives(**rt).empty());
  EXPECT_TRUE((*rt)->FindDevice("CPU:0").ok());
}

}  // namespace
}  // namespace cfx::cuda::nccl
