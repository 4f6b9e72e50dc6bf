// Helpers shared by the array kernel tests (array_*_test.cc, index_ops_test.cc): counting
// tensors, row-major index arithmetic for the tests' element-by-element references, and refusals
// checked in both the shape function and the kernel.
#ifndef CONFLUX_TESTS_KERNELS_ARRAY_TEST_UTIL_H_
#define CONFLUX_TESTS_KERNELS_ARRAY_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "conflux/kernel_runner.h"
#include "kernel_test_util.h"

namespace cfx::test {

// The element types every array op is tested with.
using ArrayElementTypes = ::testing::Types<float, int32_t, int64_t, double, bool>;

// A tensor holding first, first + 1, ... (bool: true where that count is 1 modulo 3).
template <typename T>
Tensor Iota(const TensorShape& shape, int64_t first = 0) {
  Tensor t(DataTypeOf<T>(), shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if constexpr (std::is_same_v<T, bool>)
      t.at<T>(i) = (first + i) % 3 == 1;
    else
      t.at<T>(i) = static_cast<T>(first + i);
  }
  return t;
}

// The row-major position of `index` in `shape`, and the index at row-major position `flat`.
inline int64_t FlatIndex(const std::vector<int64_t>& index, const TensorShape& shape) {
  int64_t flat = 0;
  for (int d = 0; d < shape.rank(); ++d) flat = flat * shape.dim(d) + index[d];
  return flat;
}
inline std::vector<int64_t> MultiIndex(int64_t flat, const TensorShape& shape) {
  std::vector<int64_t> index(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = flat % shape.dim(d);
    flat /= shape.dim(d);
  }
  return index;
}

// An unknown dimension, and a partial shape of known rank, for shape inference expectations.
inline constexpr int64_t kU = kUnknownDim;
inline PartialTensorShape S(std::vector<int64_t> dims) {
  return PartialTensorShape(std::move(dims));
}

// Output shapes of `node` inferred for input `shapes`; `values[i]` is input i's value when
// constant.
inline StatusOr<std::vector<PartialTensorShape>> Infer(
    const NodeDef& node, const std::vector<PartialTensorShape>& shapes,
    std::vector<const Tensor*> values = {}) {
  values.resize(shapes.size(), nullptr);
  return InferNodeShapes(TestRuntime(), node, shapes, values);
}

inline void ExpectShapes(const StatusOr<std::vector<PartialTensorShape>>& got,
                         const std::vector<PartialTensorShape>& expected) {
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ((*got)[i], expected[i])
        << "output " << i << ": " << (*got)[i].ToString() << " vs " << expected[i].ToString();
}

inline void ExpectInferenceError(const StatusOr<std::vector<PartialTensorShape>>& got,
                                 const std::string& substring) {
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument) << got.status();
  EXPECT_NE(got.status().message().find(substring), std::string::npos) << got.status();
}

// Both the shape function (RunNode) and the kernel alone (RunKernelOnly) refuse the input
// with an InvalidArgument that names the node and contains `what`.
inline void ExpectRefused(const NodeDef& node, const std::vector<Tensor>& inputs,
                          const std::string& what) {
  SCOPED_TRACE(node.op + ": " + what);
  for (bool kernel_only : {false, true}) {
    StatusOr<std::vector<Tensor>> result =
        kernel_only ? RunKernelOnly(node, inputs) : RunNode(node, inputs);
    ExpectError(result, Code::kInvalidArgument, what);
    if (!result.ok()) {
      EXPECT_NE(result.status().message().find(node.name), std::string::npos) << result.status();
    }
  }
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_KERNELS_ARRAY_TEST_UTIL_H_
