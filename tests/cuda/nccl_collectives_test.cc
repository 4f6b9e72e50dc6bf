// The host logic of the CUDA plugin's NCCL collectives (plugins/cuda/nccl_collectives.h), run
// without a GPU: NCCL's types and reductions for Conflux's, a group's communicator key, the error
// text, the plugin's options. The collectives themselves run in tests/distributed/
// nccl_collectives_test.cc, which needs GPUs.
#include "nccl_collectives.h"

#include <gtest/gtest.h>

#include <vector>

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

TEST(NcclCollectivesHost, ReductionsMapToNcclOpsAndMeanIsAvgOnFloatingPointOnly) {
  RedOp op;
  ASSERT_TRUE(RedOpOf(CFX_REDUCE_SUM, CFX_FLOAT, &op).ok());
  EXPECT_EQ(op, kSum);
  ASSERT_TRUE(RedOpOf(CFX_REDUCE_PROD, CFX_INT32, &op).ok());
  EXPECT_EQ(op, kProd);
  ASSERT_TRUE(RedOpOf(CFX_REDUCE_MIN, CFX_INT64, &op).ok());
  EXPECT_EQ(op, kMin);
  ASSERT_TRUE(RedOpOf(CFX_REDUCE_MAX, CFX_DOUBLE, &op).ok());
  EXPECT_EQ(op, kMax);
  ASSERT_TRUE(RedOpOf(CFX_REDUCE_MEAN, CFX_HALF, &op).ok());
  EXPECT_EQ(op, kAvg);
  sdk::Status mean = RedOpOf(CFX_REDUCE_MEAN, CFX_INT32, &op);
  EXPECT_EQ(mean.code(), CFX_UNIMPLEMENTED);
  EXPECT_NE(mean.message().find("the mean of int32"), std::string::npos) << mean.message();
  sdk::Status boolean = RedOpOf(CFX_REDUCE_SUM, CFX_BOOL, &op);
  EXPECT_EQ(boolean.code(), CFX_UNIMPLEMENTED);
  EXPECT_NE(boolean.message().find("NCCL has no type for"), std::string::npos) << boolean.message();
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

}  // namespace
}  // namespace cfx::cuda::nccl
