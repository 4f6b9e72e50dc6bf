// Sizes taken from input values and attrs: shapes whose element count or bytes do not fit int64
// are an InvalidArgument naming the node, the op and the shape, in shape inference and in the
// kernels; an allocation the device cannot satisfy is a ResourceExhausted naming the node, the
// bytes and the allocator's use and limit. Never a crash, a wrapped-around size or an abort.
#include <gmock/gmock.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "conflux/kernel_runner.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using ::testing::HasSubstr;
using namespace test;  // NOLINT

constexpr int64_t k2To40 = int64_t{1} << 40;
constexpr int64_t k2To62 = int64_t{1} << 62;
constexpr int64_t kU = kUnknownDim;

PartialTensorShape S(std::vector<int64_t> dims) { return PartialTensorShape(std::move(dims)); }

// The result failed with `code` and a message containing each of `parts`.
template <typename T>
void ExpectFailure(const StatusOr<T>& result, Code code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(result.ok()) << "succeeded; expected " << CodeName(code);
  EXPECT_EQ(result.status().code(), code) << result.status();
  for (const std::string& part : parts) EXPECT_THAT(result.status().message(), HasSubstr(part));
}

StatusOr<std::vector<PartialTensorShape>> InferShapes(const NodeDef& node,
                                                      const std::vector<PartialTensorShape>& shapes,
                                                      std::vector<const Tensor*> values = {}) {
  values.resize(shapes.size(), nullptr);
  return InferNodeShapes(test::TestRuntime(), node, shapes, values);
}

TEST(ShapeValidity, MakeAndAddDimRefuseWhatNoTensorCanHave) {
  ExpectFailure(TensorShape::Make({3, -2}), Code::kInvalidArgument,
                {"dimension 1 of a shape is -2; expected a non-negative size"});
  ExpectFailure(TensorShape::Make({k2To40, k2To40}), Code::kInvalidArgument,
                {"shape [1099511627776,1099511627776] has more than 2^63-1 elements"});
  // Empty, but indexing it would multiply 2^62 by 4: refused as well.
  ExpectFailure(TensorShape::Make({0, k2To62, 4}), Code::kInvalidArgument,
                {"shape [0,4611686018427387904,4]: its non-zero dimensions multiply to more than "
                 "2^63-1"});
  ExpectFailure(PartialTensorShape::Make({kU, k2To40, k2To40}), Code::kInvalidArgument,
                {"shape [?,1099511627776,1099511627776] has more than 2^63-1 elements"});
  ExpectFailure(PartialTensorShape::Make({kU, -2}), Code::kInvalidArgument,
                {"dimension 1 of a shape is -2; expected a size >= 0 or -1 (unknown)"});
  ASSERT_TRUE(PartialTensorShape::Make({kU, k2To62}).ok());

  TensorShape s({k2To40});
  Status added = s.AddDim(k2To40);
  EXPECT_EQ(added.code(), Code::kInvalidArgument) << added;
  EXPECT_THAT(added.message(), HasSubstr("has more than 2^63-1 elements"));
  EXPECT_EQ(s, TensorShape({k2To40})) << "a refused dim is not added";
  EXPECT_EQ(s.AddDim(-1).code(), Code::kInvalidArgument);
  ASSERT_OK(s.AddDim(3));
  EXPECT_EQ(s, TensorShape({k2To40, 3}));

  // A shape built unchecked says it has no element count rather than a wrapped-around one, and
  // nothing is allocated for it.
  EXPECT_EQ(TensorShape({k2To40, k2To40}).num_elements(), -1);
  EXPECT_EQ(TensorShape({2, -3}).num_elements(), -1);
  ExpectFailure(Tensor::Allocate(HostAllocator(), DT_UINT8, TensorShape({k2To40, k2To40})),
                Code::kInvalidArgument, {"has more than 2^63-1 elements"});
  ExpectFailure(Tensor::Allocate(HostAllocator(), DT_UINT8, TensorShape({0, k2To62, 4})),
                Code::kInvalidArgument, {"non-zero dimensions multiply to more than 2^63-1"});
  EXPECT_FALSE(Tensor(HostAllocator(), DT_FLOAT, TensorShape({0, k2To62, 4})).IsInitialized());
}

TEST(SizeValidation, RangeToTwoToThe62NamesTheNodeAndTheShape) {
  // 2^62 int64 elements are a valid shape of 2^65 bytes: refused, not wrapped around.
  test::ExpectError(
      test::RunNode(MakeNode("Range", 3, {{"Tidx", Type(DT_INT64)}}),
                    {MakeScalar<int64_t>(0), MakeScalar<int64_t>(k2To62), MakeScalar<int64_t>(1)}),
      Code::kInvalidArgument,
      "node node (op Range): a int64 tensor of shape [4611686018427387904] would need more than "
      "2^63-1 bytes");
}

TEST(SizeValidation, FillOfOverflowingDimsIsRefusedByInferenceAndKernel) {
  NodeDef fill = MakeNode("Fill", 2, {{"T", Type(DT_FLOAT)}, {"index_type", Type(DT_INT64)}});
  const Tensor dims = MakeVector<int64_t>({k2To40, k2To40});
  // The shape function says so first, naming the output...
  test::ExpectError(test::RunNode(fill, {dims, MakeScalar(1.0f)}), Code::kInvalidArgument,
                    "node node (op Fill): output 0: shape [1099511627776,1099511627776] has more "
                    "than 2^63-1 elements");
  // ...and the kernel on its own, where the dims are known only at run time.
  test::ExpectError(test::RunKernelOnly(fill, {dims, MakeScalar(1.0f)}), Code::kInvalidArgument,
                    "node node (op Fill): shape [1099511627776,1099511627776] has more than "
                    "2^63-1 elements");
}

// OneHot's depth and ScatterNd's shape are sizes taken from values: an output that cannot exist
// is refused by shape inference and by the kernel, and a huge one that could is ResourceExhausted.
TEST(SizeValidation, OneHotAndScatterNdOutputsTooLargeToExist) {
  NodeDef one_hot = MakeNode("OneHot", 4, {{"T", Type(DT_FLOAT)}, {"TI", Type(DT_INT32)}});
  const Tensor indices = MakeVector<int32_t>({0, 1, 2, 3});
  const Tensor depth = MakeScalar<int32_t>(std::numeric_limits<int32_t>::max());
  auto out = test::RunNode(one_hot, {indices, depth, MakeScalar(1.0f), MakeScalar(0.0f)});
  ExpectFailure(out, Code::kResourceExhausted, {"node node (op OneHot): out of memory allocating"});
  NodeDef scatter = MakeNode("ScatterNd", 3, {{"T", Type(DT_FLOAT)}, {"Tindices", Type(DT_INT64)}});
  const Tensor shape = MakeVector<int64_t>({k2To62, 4});
  const std::vector<Tensor> inputs = {MakeTensor<int64_t>({1, 1}, {0}),
                                      MakeTensor<float>({1, 4}, {1, 2, 3, 4}), shape};
  for (bool kernel_only : {false, true}) {
    auto result =
        kernel_only ? test::RunKernelOnly(scatter, inputs) : test::RunNode(scatter, inputs);
    ExpectFailure(result, Code::kInvalidArgument,
                  {"node node (op ScatterNd)", "has more than 2^63-1 elements"});
  }
}

TEST(SizeValidation, FillOfATrillionFloatsIsResourceExhausted) {
  // 4 * 10^12 bytes fit int64 but no machine here: refused by the CPU device's default limit
  // (its physical memory) before anything is asked of the system.
  auto out = test::RunNode(MakeNode("Fill", 2, {{"T", Type(DT_FLOAT)}}),
                           {MakeVector<int32_t>({1000000, 1000000}), MakeScalar(1.0f)});
  ExpectFailure(out, Code::kResourceExhausted,
                {"node node (op Fill): out of memory allocating 4000000000000 bytes for a float "
                 "tensor of shape [1000000,1000000] on CPU:0 (",
                 " bytes in use, limit " + std::to_string(PhysicalMemoryBytes()) + ")"});
}

TEST(SizeValidation, HostMemoryIsLimitedToThePhysicalMemoryByDefault) {
  ASSERT_GT(PhysicalMemoryBytes(), 0);
  EXPECT_EQ(HostAllocator()->stats().bytes_limit, PhysicalMemoryBytes());
  auto device = test::TestRuntime().FindDevice("CPU:0");
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ((*device)->allocator()->stats().bytes_limit, PhysicalMemoryBytes());
  // A request larger than any limit is refused before it is counted.
  const AllocatorStats before = HostAllocator()->stats();
  EXPECT_EQ(HostAllocator()->Allocate(static_cast<size_t>(INT64_MAX), 64), nullptr);
  EXPECT_EQ(HostAllocator()->Allocate(SIZE_MAX - 63, 64), nullptr);
  EXPECT_EQ(HostAllocator()->stats().bytes_in_use, before.bytes_in_use);
}

TEST(SizeValidation, ConfiguredMemoryLimitNamesTheNodeTheBytesAndTheLimit) {
  auto config = Config::FromString(
      "plugins:\n  - name: cpu\ndevices:\n  CPU:\n    memory_limit: 1MiB\n", "test.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  config->plugin_paths.insert(config->plugin_paths.begin(), test::BuildPluginDir());
  auto rt = Runtime::Create(*config);
  ASSERT_TRUE(rt.ok()) << rt.status();
  auto device = (*rt)->FindDevice("CPU:0");
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ((*device)->allocator()->stats().bytes_limit, 1 << 20);
  NodeDef fill = MakeNode("Fill", 2, {{"T", Type(DT_FLOAT)}});
  fill.name = "big";
  auto out =
      RunKernelOnce(**rt, *device, fill, {MakeVector<int32_t>({1000, 1000}), MakeScalar(1.0f)});
  ExpectFailure(out, Code::kResourceExhausted,
                {"node big (op Fill): out of memory allocating 4000000 bytes for a float tensor "
                 "of shape [1000,1000] on CPU:0 (0 bytes in use, limit 1048576)"});
  // What fits still runs.
  auto small =
      RunKernelOnce(**rt, *device, fill, {MakeVector<int32_t>({100, 100}), MakeScalar(1.0f)});
  ASSERT_TRUE(small.ok()) << small.status();
}

TEST(SizeValidation, TileAndBroadcastToWithOverflowingProducts) {
  NodeDef tile = MakeNode("Tile", 2, {{"T", Type(DT_FLOAT)}, {"Tmultiples", Type(DT_INT64)}});
  const Tensor one = MakeTensor<float>({1, 1}, {1});
  test::ExpectError(test::RunNode(tile, {one, MakeVector<int64_t>({k2To40, k2To40})}),
                    Code::kInvalidArgument,
                    "node node (op Tile): output 0: shape [1099511627776,1099511627776] has more "
                    "than 2^63-1 elements");
  test::ExpectError(test::RunKernelOnly(tile, {one, MakeVector<int64_t>({k2To40, k2To40})}),
                    Code::kInvalidArgument,
                    "node node (op Tile): shape [1099511627776,1099511627776] has more than "
                    "2^63-1 elements");
  // multiples of unknown values but 2^40 of them: a rank, not a size to allocate.
  ExpectFailure(InferShapes(tile, {PartialTensorShape::UnknownRank(), S({k2To40})}),
                Code::kInvalidArgument,
                {"node node (op Tile): the output would have rank 1099511627776 (the length of "
                 "multiples); the maximum is 64"});

  NodeDef segments = MakeNode(
      "UnsortedSegmentSum", 3,
      {{"T", Type(DT_FLOAT)}, {"Tindices", Type(DT_INT32)}, {"Tnumsegments", Type(DT_INT64)}});
  test::ExpectError(
      test::RunNode(segments, {MakeTensor<float>({1, 4}, {1, 2, 3, 4}), MakeVector<int32_t>({0}),
                               MakeScalar<int64_t>(k2To62)}),
      Code::kInvalidArgument,
      "node node (op UnsortedSegmentSum): output 0: shape [4611686018427387904,4] has "
      "more than 2^63-1 elements");

  NodeDef broadcast = MakeNode("BroadcastTo", 2, {{"T", Type(DT_FLOAT)}, {"Tidx", Type(DT_INT64)}});
  test::ExpectError(
      test::RunKernelOnly(broadcast, {MakeScalar(1.0f), MakeVector<int64_t>({k2To40, k2To40})}),
      Code::kInvalidArgument,
      "node node (op BroadcastTo): shape [1099511627776,1099511627776] has more than 2^63-1 "
      "elements");
}

TEST(SizeValidation, ReshapeConcatAndShapeInputsWithOverflowingSizes) {
  NodeDef reshape = MakeNode("Reshape", 2, {{"T", Type(DT_FLOAT)}, {"Tshape", Type(DT_INT64)}});
  test::ExpectError(
      test::RunKernelOnly(reshape, {MakeVector<float>({1}), MakeVector<int64_t>({k2To40, k2To40})}),
      Code::kInvalidArgument,
      "node node (op Reshape): requested shape [1099511627776,1099511627776] has too many "
      "elements for int64");
  // Its shape input's length is a rank: 2^40 unknown dims are refused, not allocated.
  ExpectFailure(InferShapes(reshape, {S({kU}), S({k2To40})}), Code::kInvalidArgument,
                {"node node (op Reshape): input 1 has shape [1099511627776]: a shape of rank "
                 "1099511627776; the maximum is 64"});

  NodeDef concat = MakeNode("ConcatV2", 3, {{"T", Type(DT_FLOAT)}, {"N", AttrValue::Int(2)}});
  const Tensor axis = MakeScalar<int32_t>(0);
  ExpectFailure(
      InferShapes(concat, {S({k2To62, 2}), S({k2To62, 2}), S({})}, {nullptr, nullptr, &axis}),
      Code::kInvalidArgument,
      {"node node (op ConcatV2): dimension 0 (the axis) of the inputs 0 to 1 adds up to "
       "more than 2^63-1; input 1 has shape [4611686018427387904,2]"});

  NodeDef uniform =
      MakeNode("RandomUniform", 1, {{"T", Type(DT_INT64)}, {"dtype", Type(DT_FLOAT)}});
  const Tensor huge = MakeVector<int64_t>({k2To40, k2To40, 1});
  ExpectFailure(InferShapes(uniform, {S({3})}, {&huge}), Code::kInvalidArgument,
                {"node node (op RandomUniform): input 0: shape [1099511627776,1099511627776,1] has "
                 "more than 2^63-1 elements"});
  test::ExpectError(test::RunKernelOnly(uniform, {huge}), Code::kInvalidArgument,
                    "node node (op RandomUniform): shape [1099511627776,1099511627776,1] has more "
                    "than 2^63-1 elements");
  test::ExpectError(test::RunKernelOnly(uniform, {MakeVector<int64_t>({2, -5})}),
                    Code::kInvalidArgument, "shape has dimension -5 at position 1");
}

// Empty tensors cut or joined along a dimension of 2^61: a row of 2^61 doubles has more bytes
// than int64 holds, so the kernels copy nothing before computing one (UBSan reported the
// overflow in Split's row sizes).
TEST(SizeValidation, EmptyTensorsWithHugeRowsAreSplitAndJoinedWithoutSizes) {
  const int64_t k2To61 = int64_t{1} << 61;
  const Tensor whole(DT_DOUBLE, TensorShape({0, k2To62})),
      half(DT_DOUBLE, TensorShape({0, k2To61}));
  NodeDef split = MakeNode("Split", 2, {{"T", Type(DT_DOUBLE)}, {"num_split", AttrValue::Int(2)}});
  auto pieces = RunKernelOnly(split, {MakeScalar<int32_t>(1), whole});
  ASSERT_TRUE(pieces.ok()) << pieces.status();
  ASSERT_EQ(pieces->size(), 2u);
  EXPECT_EQ((*pieces)[1].shape(), half.shape());
  NodeDef concat = MakeNode("ConcatV2", 3, {{"T", Type(DT_DOUBLE)}, {"N", AttrValue::Int(2)}});
  auto joined = RunKernelOnly(concat, {half, half, MakeScalar<int32_t>(1)});
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ((*joined)[0].shape(), whole.shape());
}

// The CPU device's ParallelFor over counts near 2^63: the chunks partition [0, total) exactly
// (each chunk's bounds were total * c / chunks, which overflowed: UBSan).
TEST(SizeValidation, CpuParallelForSplitsCountsNear2To63) {
  auto device = test::TestRuntime().FindDevice("CPU:0");
  ASSERT_TRUE(device.ok()) << device.status();
  for (const int64_t total : {k2To62, std::numeric_limits<int64_t>::max(), int64_t{7}}) {
    std::mutex mu;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    (*device)->ParallelFor(total, 1 << 20, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mu);
      chunks.emplace_back(begin, end);
    });
    std::sort(chunks.begin(), chunks.end());
    ASSERT_FALSE(chunks.empty());
    EXPECT_EQ(chunks.front().first, 0);
    EXPECT_EQ(chunks.back().second, total);
    for (size_t i = 1; i < chunks.size(); ++i) EXPECT_EQ(chunks[i].first, chunks[i - 1].second);
  }
  // UnsortedSegmentSum into an empty output whose rows have 2^62 columns: no work to share.
  NodeDef segment = MakeNode(
      "UnsortedSegmentSum", 3,
      {{"T", Type(DT_INT32)}, {"Tindices", Type(DT_INT32)}, {"Tnumsegments", Type(DT_INT32)}});
  auto sums = RunKernelOnly(segment, {Tensor(DT_INT32, TensorShape({0, k2To62})),
                                      Tensor(DT_INT32, TensorShape({0})), MakeScalar<int32_t>(0)});
  ASSERT_TRUE(sums.ok()) << sums.status();
  EXPECT_EQ((*sums)[0].shape(), TensorShape({0, k2To62}));
}

// A stride of 2^62 takes one element; its step through the input (2^62 times the row) is never
// computed (it overflowed: undefined behaviour that UBSan reports).
TEST(SizeValidation, StridedSliceWithAHugeStride) {
  NodeDef strided = MakeNode("StridedSlice", 4, {{"T", Type(DT_FLOAT)}, {"Index", Type(DT_INT64)}});
  Tensor out =
      test::RunNodeOk(strided, {MakeTensor<float>({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}),
                                MakeVector<int64_t>({1, 0}), MakeVector<int64_t>({3, 4}),
                                MakeVector<int64_t>({k2To62, 1})});
  test::ExpectTensorEqual(MakeTensor<float>({1, 4}, {4, 5, 6, 7}), out);
}

TEST(SizeValidation, RanksReadFromInputLengthsOrAttrsAreBounded) {
  NodeDef transpose = MakeNode("Transpose", 2, {{"T", Type(DT_FLOAT)}});
  ExpectFailure(InferShapes(transpose, {PartialTensorShape::UnknownRank(), S({k2To40})}),
                Code::kInvalidArgument,
                {"node node (op Transpose): the output would have rank 1099511627776 (the length "
                 "of perm); the maximum is 64"});
  NodeDef strided = MakeNode("StridedSlice", 4, {{"T", Type(DT_FLOAT)}, {"Index", Type(DT_INT32)}});
  ExpectFailure(InferShapes(strided, {S({2, 3}), S({k2To40}), S({k2To40}), S({k2To40})}),
                Code::kInvalidArgument,
                {"node node (op StridedSlice): at most 64 range specifications are supported, "
                 "got 1099511627776"});
  NodeDef gather = MakeNode("GatherV2", 3,
                            {{"Tparams", Type(DT_FLOAT)},
                             {"Tindices", Type(DT_INT32)},
                             {"Taxis", Type(DT_INT32)},
                             {"batch_dims", AttrValue::Int(-k2To62)}});
  ExpectFailure(InferShapes(gather, {S({2, 3}), S({4}), S({})}), Code::kInvalidArgument,
                {"node node (op GatherV2): batch_dims -4611686018427387904 is out of range [-1, 1] "
                 "for indices of shape [4]"});
}

}  // namespace
}  // namespace cfx
