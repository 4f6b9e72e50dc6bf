// Test helpers: a shared Runtime with the in-tree CPU plugin, a one-node kernel harness, tensor
// builders and comparisons.
#ifndef CONFLUX_TESTS_TESTING_KERNEL_TEST_UTIL_H_
#define CONFLUX_TESTS_TESTING_KERNEL_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "conflux/attr_value.h"
#include "conflux/graph_def.h"
#include "conflux/kernel_runner.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "conflux/status.h"
#include "conflux/tensor.h"

#define ASSERT_OK(expr)                    \
  do {                                     \
    ::cfx::Status _s = (expr);             \
    ASSERT_TRUE(_s.ok()) << _s.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                    \
  do {                                     \
    ::cfx::Status _s = (expr);             \
    EXPECT_TRUE(_s.ok()) << _s.ToString(); \
  } while (0)

namespace cfx::test {

// A process-wide Runtime built from the default config, with plugins found in the build tree.
Runtime& TestRuntime();
// The same with `inter_op_threads` executor threads and `cpu_devices` CPU devices; one per
// combination for the whole process.
Runtime& TestRuntimeWith(int inter_op_threads, int cpu_devices);

// The directory of the built in-tree plugins and of the test fixture plugins.
std::string BuildPluginDir();
std::string FixturePluginDir();
// A new Runtime of the default config that also loads libconflux_fixture_<name>.so for each of
// `names`, in order.
StatusOr<std::unique_ptr<Runtime>> RuntimeWithFixtures(const std::vector<std::string>& names);
inline StatusOr<std::unique_ptr<Runtime>> RuntimeWithFixture(const std::string& name) {
  return RuntimeWithFixtures({name});
}
// A process-wide Runtime of the default config in which no test registers ops of its own (as
// they may in TestRuntime()): for tests of what the default config registers.
Runtime& DefaultConfigRuntime();

// The AttrValue of a dtype, for a node's "T" or "dtype" attr; F() is float's.
inline AttrValue Type(DataType t) { return AttrValue::Type(t); }
inline AttrValue T(DataType t = DT_FLOAT) { return AttrValue::Type(t); }
inline AttrValue F() { return AttrValue::Type(DT_FLOAT); }

// A session for `g` on `rt`; nullptr and a failed expectation when it cannot be created.
std::unique_ptr<Session> NewTestSession(const GraphDef& g, Runtime* rt = &TestRuntime());
// The node named `name` in `g`, or nullptr.
const NodeDef* FindNode(const GraphDef& g, const std::string& name);
// The contents of the file at `path`; empty and a failed expectation when it cannot be read.
std::string ReadFileBytes(const std::string& path);

// A NodeDef `name` running `op` on `inputs`, with `attrs`, asking for `device`.
NodeDef NodeOf(const std::string& name, const std::string& op, std::vector<std::string> inputs,
               AttrMap attrs = {}, const std::string& device = "");

// A NodeDef named "node" for `op` with `num_inputs` data inputs ("in0", "in1", ...) and attrs.
NodeDef MakeNode(const std::string& op, int num_inputs,
                 std::initializer_list<std::pair<const std::string, AttrValue>> attrs = {});

// Runs `node` once on `device` of TestRuntime() (see RunKernelOnce).
StatusOr<std::vector<Tensor>> RunNode(const NodeDef& node, const std::vector<Tensor>& inputs,
                                      const std::string& device = "CPU:0");
// Runs the kernel of `node` on `inputs` without the harness's input checks and shape inference,
// to reach the kernel's own validation.
StatusOr<std::vector<Tensor>> RunKernelOnly(const NodeDef& node, const std::vector<Tensor>& inputs,
                                            const std::string& device = "CPU:0");
// Runs and expects success and exactly one output.
Tensor RunNodeOk(const NodeDef& node, const std::vector<Tensor>& inputs,
                 const std::string& device = "CPU:0");

template <typename T>
constexpr DataType DataTypeOf();
template <>
constexpr DataType DataTypeOf<float>() {
  return DT_FLOAT;
}
template <>
constexpr DataType DataTypeOf<double>() {
  return DT_DOUBLE;
}
template <>
constexpr DataType DataTypeOf<int32_t>() {
  return DT_INT32;
}
template <>
constexpr DataType DataTypeOf<int64_t>() {
  return DT_INT64;
}
template <>
constexpr DataType DataTypeOf<bool>() {
  return DT_BOOL;
}
template <>
constexpr DataType DataTypeOf<uint8_t>() {
  return DT_UINT8;
}
template <>
constexpr DataType DataTypeOf<int8_t>() {
  return DT_INT8;
}
template <>
constexpr DataType DataTypeOf<int16_t>() {
  return DT_INT16;
}
template <>
constexpr DataType DataTypeOf<uint16_t>() {
  return DT_UINT16;
}

// A host tensor of `shape` holding `values` (row-major; sizes must match).
template <typename T>
Tensor MakeTensor(const TensorShape& shape, const std::vector<T>& values) {
  Tensor t(DataTypeOf<T>(), shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.num_elements()) << "MakeTensor: size mismatch";
  for (int64_t i = 0; i < t.num_elements() && i < static_cast<int64_t>(values.size()); ++i)
    t.data<T>()[i] = values[i];
  return t;
}
template <typename T>
Tensor MakeScalar(T v) {
  return MakeTensor<T>(TensorShape(), {v});
}
template <typename T>
Tensor MakeVector(const std::vector<T>& v) {
  return MakeTensor<T>(TensorShape({static_cast<int64_t>(v.size())}), v);
}
// A DT_STRING host tensor of `shape` holding `values` (row-major; sizes must match).
Tensor MakeStringTensor(const TensorShape& shape, const std::vector<std::string>& values);
inline Tensor MakeStringScalar(const std::string& v) {
  return MakeStringTensor(TensorShape(), {v});
}
inline Tensor MakeStringVector(const std::vector<std::string>& v) {
  return MakeStringTensor(TensorShape({static_cast<int64_t>(v.size())}), v);
}
// The elements of a DT_STRING host tensor.
std::vector<std::string> StringValues(const Tensor& t);
// The elements of a host tensor as a vector (T must match the dtype).
template <typename T>
std::vector<T> Values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DataTypeOf<T>());
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}

// Same dtype, shape and values (bitwise for integers and bool; floats equal or both NaN).
void ExpectTensorEqual(const Tensor& expected, const Tensor& actual);
// Same dtype and shape; floats within atol + rtol * |expected|.
void ExpectTensorNear(const Tensor& expected, const Tensor& actual, double atol = 1e-5,
                      double rtol = 1e-5);
// The run failed with `code` and a message containing `substring`.
void ExpectError(const StatusOr<std::vector<Tensor>>& result, Code code,
                 const std::string& substring = "");

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TESTING_KERNEL_TEST_UTIL_H_
