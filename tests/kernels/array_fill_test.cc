// Fill, ZerosLike, OnesLike and Range through the kernel harness.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "array_test_util.h"

namespace cfx {
namespace {

using test::MakeNode;
using test::MakeScalar;
using test::MakeTensor;
using test::MakeVector;
using test::RunNode;
using test::RunNodeOk;

NodeDef FillNode(DataType t, DataType index_type = DT_INT32) {
  return MakeNode("Fill", 2,
                  {{"T", AttrValue::Type(t)}, {"index_type", AttrValue::Type(index_type)}});
}
NodeDef LikeNode(const char* op, DataType t) {
  return MakeNode(op, 1, {{"T", AttrValue::Type(t)}});
}
NodeDef RangeNode(DataType t) { return MakeNode("Range", 3, {{"Tidx", AttrValue::Type(t)}}); }

TEST(ArrayFill, EveryElementIsTheValue) {
  test::ExpectTensorEqual(
      MakeTensor<float>({2, 3}, std::vector<float>(6, 1.5f)),
      RunNodeOk(FillNode(DT_FLOAT), {MakeVector<int32_t>({2, 3}), MakeScalar(1.5f)}));
  test::ExpectTensorEqual(
      MakeTensor<int64_t>({3}, {-7, -7, -7}),
      RunNodeOk(FillNode(DT_INT64, DT_INT64), {MakeVector<int64_t>({3}), MakeScalar<int64_t>(-7)}));
  test::ExpectTensorEqual(
      MakeTensor<bool>({2, 1}, {true, true}),
      RunNodeOk(FillNode(DT_BOOL), {MakeVector<int32_t>({2, 1}), MakeScalar(true)}));
  test::ExpectTensorEqual(
      MakeScalar<double>(0.25),
      RunNodeOk(FillNode(DT_DOUBLE), {MakeVector<int32_t>({}), MakeScalar(0.25)}));
  test::ExpectTensorEqual(
      MakeTensor<int32_t>({4, 0}, {}),
      RunNodeOk(FillNode(DT_INT32), {MakeVector<int32_t>({4, 0}), MakeScalar(9)}));
}

TEST(ArrayFill, LargeOutputsAreFilledEverywhere) {
  // Big enough to be split over threads.
  Tensor out = RunNodeOk(FillNode(DT_INT32), {MakeVector<int32_t>({300, 1000}), MakeScalar(42)});
  ASSERT_EQ(out.num_elements(), 300000);
  for (int64_t i = 0; i < out.num_elements(); ++i) ASSERT_EQ(out.at<int32_t>(i), 42) << i;
}

TEST(ArrayFill, RejectsNegativeDimsAndNonScalarValues) {
  test::ExpectError(RunNode(FillNode(DT_FLOAT), {MakeVector<int32_t>({2, -1}), MakeScalar(1.0f)}),
                    Code::kInvalidArgument, "dims[1] = -1 must be >= 0");
  test::ExpectError(
      RunNode(FillNode(DT_FLOAT), {MakeVector<int32_t>({2}), MakeVector<float>({1, 2})}),
      Code::kInvalidArgument, "rank 0");
}

template <typename T>
class ArrayLikeTyped : public ::testing::Test {};
TYPED_TEST_SUITE(ArrayLikeTyped, test::ArrayElementTypes);

TYPED_TEST(ArrayLikeTyped, ZerosAndOnesKeepShapeAndType) {
  constexpr DataType kType = test::DataTypeOf<TypeParam>();
  Tensor x =
      MakeTensor<TypeParam>({2, 2}, {TypeParam(1), TypeParam(0), TypeParam(1), TypeParam(1)});
  test::ExpectTensorEqual(MakeTensor<TypeParam>({2, 2}, std::vector<TypeParam>(4, TypeParam(0))),
                          RunNodeOk(LikeNode("ZerosLike", kType), {x}));
  test::ExpectTensorEqual(MakeTensor<TypeParam>({2, 2}, std::vector<TypeParam>(4, TypeParam(1))),
                          RunNodeOk(LikeNode("OnesLike", kType), {x}));
  Tensor empty = MakeTensor<TypeParam>({0, 5}, {});
  test::ExpectTensorEqual(empty, RunNodeOk(LikeNode("OnesLike", kType), {empty}));
  test::ExpectTensorEqual(
      MakeScalar<TypeParam>(TypeParam(1)),
      RunNodeOk(LikeNode("OnesLike", kType), {MakeScalar<TypeParam>(TypeParam(0))}));
}

TEST(ArrayLike, OnesLikeOfHalfIsIeeeOne) {
  Tensor x(DT_HALF, TensorShape({3}));
  std::memset(x.raw_data(), 0xff, x.TotalBytes());
  Tensor out = RunNodeOk(LikeNode("OnesLike", DT_HALF), {x});
  ASSERT_EQ(out.dtype(), DT_HALF);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(static_cast<const uint16_t*>(out.raw_data())[i], 0x3C00);
}

TEST(ArrayLike, OnesLikeRejectsTypesOutsideItsList) {
  Tensor x(DT_UINT32, TensorShape({2}));
  EXPECT_FALSE(RunNode(LikeNode("OnesLike", DT_UINT32), {x}).ok());
}

// Range's values from an explicit accumulating reference.
template <typename T>
std::vector<T> RangeReference(T start, T limit, T delta) {
  std::vector<T> v;
  for (T x = start; delta > 0 ? x < limit : x > limit; x = static_cast<T>(x + delta))
    v.push_back(x);
  return v;
}

template <typename T>
class ArrayRangeTyped : public ::testing::Test {};
using RangeTypes = ::testing::Types<int32_t, int64_t, float, double>;
TYPED_TEST_SUITE(ArrayRangeTyped, RangeTypes);

TYPED_TEST(ArrayRangeTyped, MatchesReferenceInBothDirections) {
  using T = TypeParam;
  const NodeDef node = RangeNode(test::DataTypeOf<T>());
  const T cases[][3] = {{0, 5, 1}, {1, 10, 3}, {10, 1, -3}, {-4, 4, 2}, {3, 3, 1}, {5, -5, -1}};
  for (const auto& c : cases) {
    std::vector<T> expected = RangeReference<T>(c[0], c[1], c[2]);
    test::ExpectTensorEqual(
        MakeVector<T>(expected),
        RunNodeOk(node, {MakeScalar<T>(c[0]), MakeScalar<T>(c[1]), MakeScalar<T>(c[2])}));
  }
}

TEST(ArrayRange, FractionalFloatSteps) {
  test::ExpectTensorEqual(
      MakeVector<float>({0.0f, 0.5f, 1.0f, 1.5f}),
      RunNodeOk(RangeNode(DT_FLOAT), {MakeScalar(0.0f), MakeScalar(2.0f), MakeScalar(0.5f)}));
  // ceil((1 - 0) / 0.3) = 4 elements.
  Tensor out = RunNodeOk(RangeNode(DT_DOUBLE), {MakeScalar(0.0), MakeScalar(1.0), MakeScalar(0.3)});
  ASSERT_EQ(out.num_elements(), 4);
  EXPECT_NEAR(out.at<double>(3), 0.9, 1e-12);
}

TEST(ArrayRange, RejectsZeroDeltaAndWrongDirection) {
  const NodeDef node = RangeNode(DT_INT32);
  test::ExpectError(RunNode(node, {MakeScalar(0), MakeScalar(5), MakeScalar(0)}),
                    Code::kInvalidArgument, "delta must be non-zero");
  test::ExpectError(RunNode(node, {MakeScalar(5), MakeScalar(0), MakeScalar(1)}),
                    Code::kInvalidArgument,
                    "start (5) must be <= limit (0) when delta (1) is positive");
  test::ExpectError(RunNode(node, {MakeScalar(0), MakeScalar(5), MakeScalar(-1)}),
                    Code::kInvalidArgument, "must be >= limit");
  test::ExpectError(RunNode(node, {MakeVector<int32_t>({0}), MakeScalar(5), MakeScalar(1)}),
                    Code::kInvalidArgument, "rank 0");
  test::ExpectError(
      RunNode(RangeNode(DT_FLOAT), {MakeScalar(0.0f), MakeScalar(INFINITY), MakeScalar(1.0f)}),
      Code::kInvalidArgument, "finite");
  // 2^62 int64 elements is a valid shape but 2^65 bytes: an error, not a short buffer written
  // past its end.
  test::ExpectError(RunNode(RangeNode(DT_INT64), {MakeScalar<int64_t>(0),
                                                  MakeScalar<int64_t>(int64_t{1} << 62),
                                                  MakeScalar<int64_t>(1)}),
                    Code::kInvalidArgument, "would need more than 2^63-1 bytes");
}

// Shapes whose byte size does not fit int64 are an error wherever a tensor is allocated.
TEST(TensorBytes, OverflowingByteSizesAreRefused) {
  auto t = Tensor::Allocate(HostAllocator(), DT_DOUBLE, TensorShape({int64_t{1} << 60, 2}));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << t.status();
  EXPECT_NE(t.status().message().find("double tensor of shape [1152921504606846976,2]"),
            std::string::npos)
      << t.status();
  Tensor direct(HostAllocator(), DT_INT64, TensorShape({int64_t{1} << 62}));
  EXPECT_FALSE(direct.IsInitialized());
}

}  // namespace
}  // namespace cfx
