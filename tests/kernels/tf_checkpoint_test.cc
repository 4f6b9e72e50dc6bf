// Checkpoints that TensorFlow 2.21 wrote (tests/fixtures/savedmodel/: tf.compat.v1.train.Saver,
// tf.train.Checkpoint of a Keras model, a partitioned variable saved as slices, raw SaveV2)
// restore through RestoreV2 to TensorFlow's values; and a bundle Conflux writes for the tensors
// TensorFlow saved is TensorFlow's, entry for entry and byte for byte.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/tensor_bundle.h"
#include "conflux/kernel_runner.h"
#include "conflux/npy.h"
#include "kernel_test_util.h"
#include "proto/tensor_bundle.pb.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;
using test::MakeStringScalar;
using test::MakeStringVector;
using test::RunNode;

std::string Fixture(const std::string& rel) {
  return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/savedmodel/" + rel;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Variable {
  std::string name;
  DataType dtype;
  std::vector<int64_t> dims;
};

// variables.txt: "name dtype_number dims" (dims comma-separated, empty for a scalar).
std::vector<Variable> Variables(const std::string& dir) {
  std::vector<Variable> out;
  std::ifstream in(Fixture(dir + "/variables.txt"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    Variable v;
    int code = 0;
    std::string dims;
    f >> v.name >> code;
    f >> dims;
    v.dtype = static_cast<DataType>(code);
    std::stringstream ds(dims);
    for (std::string d; std::getline(ds, d, ',');) v.dims.push_back(std::stoll(d));
    out.push_back(v);
  }
  EXPECT_FALSE(out.empty()) << dir;
  return out;
}

std::string NpyName(std::string name) {
  for (size_t at; (at = name.find('/')) != std::string::npos;) name.replace(at, 1, "__");
  return name + ".npy";
}

StatusOr<Tensor> RestoreOne(const std::string& prefix, const std::string& name, DataType dtype,
                            const std::string& slice = "") {
  NodeDef n = test::MakeNode("RestoreV2", 3, {{"dtypes", AttrValue::TypeList({dtype})}});
  CFX_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunNode(n, {MakeStringScalar(prefix), MakeStringVector({name}),
                                   MakeStringVector({slice})}));
  return out[0];
}

// `actual` holds exactly `expected`'s values (bfloat16 against the float32 the fixture keeps).
void ExpectSameValues(const Tensor& expected, const Tensor& actual, const std::string& what) {
  ASSERT_EQ(expected.shape(), actual.shape()) << what;
  if (actual.dtype() == DT_BFLOAT16) {
    ASSERT_EQ(expected.dtype(), DT_FLOAT) << what;
    for (int64_t i = 0; i < actual.num_elements(); ++i) {
      const uint32_t bits = static_cast<uint32_t>(actual.data<uint16_t>()[i]) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      EXPECT_EQ(f, expected.data<float>()[i]) << what << " element " << i;
    }
    return;
  }
  ASSERT_EQ(expected.dtype(), actual.dtype()) << what;
  if (actual.dtype() == DT_STRING) {
    for (int64_t i = 0; i < actual.num_elements(); ++i)
      EXPECT_EQ(expected.at<std::string>(i), actual.at<std::string>(i)) << what << " element " << i;
    return;
  }
  EXPECT_EQ(std::memcmp(expected.raw_data(), actual.raw_data(), actual.TotalBytes()), 0) << what;
}

// Every variable TensorFlow listed is in the index with its dtype and shape, and restores to
// the value TensorFlow read back.
void ExpectRestoresTensorFlowsValues(const std::string& dir, const std::string& prefix_name) {
  const std::string prefix = Fixture(dir + "/" + prefix_name);
  auto reader = internal::bundle::BundleReader::Open(prefix);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::map<std::string, internal::bundle::BundleVariable> listed;
  for (const auto& v : (*reader)->List()) listed[v.name] = v;
  const std::vector<Variable> vars = Variables(dir);
  EXPECT_EQ(listed.size(), vars.size());
  int compared = 0;
  for (const Variable& v : vars) {
    SCOPED_TRACE(v.name);
    ASSERT_TRUE(listed.count(v.name));
    EXPECT_EQ(listed[v.name].dtype, v.dtype);
    EXPECT_EQ(listed[v.name].shape, TensorShape(v.dims));
    auto t = RestoreOne(prefix, v.name, v.dtype);
    ASSERT_TRUE(t.ok()) << t.status();
    const std::string npy = Fixture(dir + "/expected/" + NpyName(v.name));
    if (!fs::exists(npy)) continue;  // the object graph, a serialized proto
    auto expected = ReadNpy(npy);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ExpectSameValues(*expected, *t, v.name);
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

TEST(TensorFlowCheckpoints, V1SaverOfEveryDtypeRestores) {
  ExpectRestoresTensorFlowsValues("ckpt_v1", "model.ckpt");
}

TEST(TensorFlowCheckpoints, ObjectBasedKerasCheckpointRestores) {
  ExpectRestoresTensorFlowsValues("ckpt_object", "ckpt-1");
}

TEST(TensorFlowCheckpoints, PartitionedVariableRestoresWholeAndBySlice) {
  ExpectRestoresTensorFlowsValues("ckpt_sliced", "model.ckpt");
  auto full = ReadNpy(Fixture("ckpt_sliced/expected/part.npy"));
  ASSERT_TRUE(full.ok());
  // Rows 1-4, columns 1-2: across all three of TensorFlow's slices.
  auto t = RestoreOne(Fixture("ckpt_sliced/model.ckpt"), "part", DT_FLOAT, "6 4 1,4:1,2");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->shape(), TensorShape({4, 2}));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 2; ++c)
      EXPECT_EQ(t->data<float>()[r * 2 + c], full->data<float>()[(r + 1) * 4 + c + 1]);
}

// SaveV2 of the tensors TensorFlow's SaveV2 saved writes the same data file and the same index,
// byte for byte (so the same entries: dtypes, shapes, offsets, sizes, checksums).
TEST(TensorFlowCheckpoints, ABundleConfluxWritesIsTensorFlows) {
  const std::vector<std::pair<std::string, DataType>> names = {
      {"a", DT_FLOAT}, {"b/c", DT_INT64}, {"e", DT_STRING}, {"empty", DT_FLOAT}, {"z", DT_DOUBLE}};
  std::vector<Tensor> inputs = {MakeStringScalar(::testing::TempDir() + "/conflux_ref"), Tensor(),
                                Tensor()};
  std::vector<std::string> keys;
  std::vector<DataType> dtypes;
  for (const auto& [name, dtype] : names) {
    auto t = ReadNpy(Fixture("bundle_ref/" + NpyName(name)));
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_EQ(t->dtype(), dtype) << name;
    inputs.push_back(*t);
    keys.push_back(name);
    dtypes.push_back(dtype);
  }
  inputs[1] = MakeStringVector(keys);
  inputs[2] = MakeStringVector(std::vector<std::string>(keys.size()));
  NodeDef save = test::MakeNode("SaveV2", static_cast<int>(inputs.size()),
                                {{"dtypes", AttrValue::TypeList(dtypes)}});
  ASSERT_TRUE(RunNode(save, inputs).ok());
  const std::string ours = ::testing::TempDir() + "/conflux_ref";
  const std::string theirs = Fixture("bundle_ref/ref");
  EXPECT_EQ(ReadFile(ours + ".data-00000-of-00001"), ReadFile(theirs + ".data-00000-of-00001"));
  auto a = internal::bundle::BundleReader::Open(ours);
  auto b = internal::bundle::BundleReader::Open(theirs);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ((*a)->entries().size(), (*b)->entries().size());
  for (const auto& [key, entry] : (*b)->entries()) {
    SCOPED_TRACE(key);
    ASSERT_TRUE((*a)->entries().count(key));
    EXPECT_EQ((*a)->entries().at(key).SerializeAsString(), entry.SerializeAsString());
  }
  EXPECT_EQ((*a)->header().SerializeAsString(), (*b)->header().SerializeAsString());
  EXPECT_EQ(ReadFile(ours + ".index"), ReadFile(theirs + ".index"));
}

}  // namespace
}  // namespace cfx
