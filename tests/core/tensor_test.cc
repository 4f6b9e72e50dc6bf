// Status, DataType, TensorShape, Tensor and Allocator statistics.
#include "conflux/tensor.h"

#include "kernel_test_util.h"

namespace cfx {
namespace {

TEST(Status, OkIsCheapAndErrorsCarryCodeAndMessage) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.ToString(), "OK");
  Status e = errors::InvalidArgument("bad ", 3);
  EXPECT_EQ(e.code(), Code::kInvalidArgument);
  EXPECT_EQ(e.ToString(), "INVALID_ARGUMENT: bad 3");
  Status copy = e;
  EXPECT_EQ(copy, e);
  EXPECT_EQ(e.WithPrefix("node x: ").message(), "node x: bad 3");
  StatusOr<int> v = 5;
  EXPECT_EQ(*v, 5);
  StatusOr<int> err = errors::NotFound("x");
  EXPECT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), Code::kNotFound);
}

TEST(DataType, UsesTensorFlowValuesAndNames) {
  EXPECT_EQ(DT_FLOAT, 1);
  EXPECT_EQ(DT_INT32, 3);
  EXPECT_EQ(DT_STRING, 7);
  EXPECT_EQ(DT_BOOL, 10);
  EXPECT_EQ(DT_BFLOAT16, 14);
  EXPECT_EQ(DT_HALF, 19);
  EXPECT_EQ(DT_RESOURCE, 20);
  EXPECT_EQ(DataTypeSize(DT_HALF), 2u);
  EXPECT_EQ(DataTypeSize(DT_COMPLEX128), 16u);
  EXPECT_EQ(DataTypeString(MakeRefType(DT_FLOAT)), "float_ref");
  for (int v = 1; v <= 23; ++v) {
    DataType d = static_cast<DataType>(v);
    auto back = DataTypeFromString(DataTypeString(d));
    ASSERT_TRUE(back.ok()) << v;
    EXPECT_EQ(*back, d);
  }
  EXPECT_FALSE(DataTypeFromString("float33").ok());
}

TEST(TensorShape, ValidatesAndMergesPartialShapes) {
  EXPECT_FALSE(TensorShape::Make({2, -1}).ok());
  EXPECT_FALSE(TensorShape::Make({1LL << 40, 1LL << 40}).ok());
  EXPECT_EQ(TensorShape::Make({2, 3})->num_elements(), 6);
  PartialTensorShape a({-1, 3}), b({2, -1}), c({2, 4});
  EXPECT_EQ(a.Merge(b)->ToString(), "[2,3]");
  EXPECT_FALSE(a.Merge(c).ok());
  EXPECT_TRUE(PartialTensorShape().IsCompatibleWith(c));
  EXPECT_EQ(PartialTensorShape().ToString(), "<unknown>");
  EXPECT_FALSE(a.IsFullyDefined());
}

// Shapes up to DimVector::kInline dims live inside the shape, larger ones on the heap; copies,
// moves, growth past the inline room and comparisons work the same either way.
TEST(TensorShape, DimsInlineAndOnTheHeapCopyMoveAndGrow) {
  for (int rank : {0, 1, 6, 7, 13}) {
    SCOPED_TRACE(rank);
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(i + 1);
    TensorShape shape(dims);
    EXPECT_EQ(shape.dims(), dims);
    EXPECT_EQ(std::vector<int64_t>(shape.dims()), dims);
    TensorShape copy = shape;
    EXPECT_EQ(copy, shape);
    if (rank > 0) copy.set_dim(0, 99);
    EXPECT_EQ(shape.dims(), dims) << "a copy's change shows in the original";
    TensorShape moved = std::move(copy);
    EXPECT_EQ(moved.rank(), rank);
    if (rank > 0) EXPECT_EQ(moved.dim(0), 99);
    copy = shape;  // a moved-from shape takes a new value
    EXPECT_EQ(copy, shape);
    moved = shape;  // assignment over a shape of the same rank
    EXPECT_EQ(moved, shape);
    // Growing one dim at a time crosses the inline room and doubles the heap room after it.
    TensorShape grown;
    for (int64_t d : dims) ASSERT_TRUE(grown.AddDim(d).ok());
    EXPECT_EQ(grown, shape);
    EXPECT_EQ(grown.num_elements(), shape.num_elements());
    EXPECT_EQ(grown.ToString(), PartialTensorShape(dims).ToString());
  }
  TensorShape small({2, 3}), large({1, 1, 1, 1, 1, 1, 1, 2, 3});
  EXPECT_NE(small, large);
  small = large;  // inline to heap
  EXPECT_EQ(small, large);
  large = TensorShape({4});  // heap to inline
  EXPECT_EQ(large.dims(), std::vector<int64_t>{4});
  EXPECT_EQ(small.num_elements(), 6);
}

TEST(Tensor, SharesBuffersAndCountsAllocatorStatistics) {
  Allocator* host = HostAllocator();
  AllocatorStats before = host->stats();
  {
    Tensor t(DT_FLOAT, TensorShape({4, 4}));
    ASSERT_TRUE(t.IsInitialized());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
    EXPECT_EQ(host->stats().bytes_in_use, before.bytes_in_use + 64);
    EXPECT_TRUE(t.RefCountIsOne());
    Tensor u = t;
    EXPECT_FALSE(t.RefCountIsOne());
    EXPECT_EQ(u.raw_data(), t.raw_data());
    auto r = t.Reshaped(TensorShape({16}));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->raw_data(), t.raw_data());
    EXPECT_FALSE(t.Reshaped(TensorShape({3})).ok());
  }
  EXPECT_EQ(host->stats().bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(host->stats().num_allocs, before.num_allocs + 1);
  EXPECT_GE(host->stats().peak_bytes_in_use, before.bytes_in_use + 64);
}

TEST(Tensor, StringsAndEquality) {
  Tensor s(DT_STRING, TensorShape({2}));
  s.at<std::string>(0) = "hello";
  s.at<std::string>(1) = std::string(1000, 'x');
  Tensor t = s;
  EXPECT_TRUE(s.Equals(t));
  Tensor u(DT_STRING, TensorShape({2}));
  EXPECT_FALSE(s.Equals(u));
  EXPECT_NE(s.DebugString().find("hello"), std::string::npos);
}

class LimitedAllocator final : public Allocator {
 public:
  std::string name() const override { return "limited"; }
  bool host_addressable() const override { return true; }

 protected:
  void* RawAllocate(size_t bytes, size_t) override { return std::malloc(bytes ? bytes : 1); }
  void RawDeallocate(void* p, size_t) override { std::free(p); }
};

TEST(Allocator, ALimitGivesResourceExhaustedNamingTheAllocator) {
  LimitedAllocator a;
  a.set_bytes_limit(100);
  auto ok = Tensor::Allocate(&a, DT_FLOAT, TensorShape({10}));
  ASSERT_TRUE(ok.ok());
  auto fail = Tensor::Allocate(&a, DT_FLOAT, TensorShape({20}));
  ASSERT_FALSE(fail.ok());
  EXPECT_EQ(fail.status().code(), Code::kResourceExhausted);
  EXPECT_NE(fail.status().message().find("limited"), std::string::npos);
  EXPECT_EQ(a.stats().bytes_in_use, 40);
}

}  // namespace
}  // namespace cfx
