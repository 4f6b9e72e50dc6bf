// Lookup tables (HashTableV2, MutableHashTableV2, MutableHashTableOfTensorsV2 and the ops on
// their handles, InitializeTableFromTextFileV2 on real files), the string ops (StringJoin,
// StringLength, StringLower, StringUpper, StaticRegexFullMatch, RegexFullMatch), ResourceGather
// and DisableCopyOnRead through the kernel harness. Expected values are TensorFlow 2.21's, taken
// from running it (tests/fixtures/tf/README.md names the setup) or from its kernels' code.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;
using test::ExpectError;
using test::ExpectTensorEqual;
using test::MakeScalar;
using test::MakeStringScalar;
using test::MakeStringTensor;
using test::MakeStringVector;
using test::MakeTensor;
using test::MakeVector;
using test::RunNode;
using test::RunNodeOk;

// ---------------------------------------------------------------------------------------------
// Lookup tables.

// A table handle of `op` named `shared_name`, made by running the op once.
Tensor TableHandle(const std::string& op, const std::string& shared_name, DataType key,
                   DataType value, std::vector<int64_t> value_shape = {}) {
  NodeDef n = test::MakeNode(op, 0,
                             {{"shared_name", AttrValue::String(shared_name)},
                              {"key_dtype", AttrValue::Type(key)},
                              {"value_dtype", AttrValue::Type(value)}});
  if (op == "MutableHashTableOfTensorsV2")
    n.attr["value_shape"] = AttrValue::Shape(PartialTensorShape(value_shape));
  return RunNodeOk(n, {});
}
Tensor HashTable(const std::string& name, DataType key, DataType value) {
  return TableHandle("HashTableV2", name, key, value);
}
Tensor MutableTable(const std::string& name, DataType key, DataType value) {
  return TableHandle("MutableHashTableV2", name, key, value);
}

StatusOr<std::vector<Tensor>> InitTable(const Tensor& table, const Tensor& keys,
                                        const Tensor& values) {
  return RunNode(test::MakeNode("InitializeTableV2", 3,
                                {{"Tkey", AttrValue::Type(keys.dtype())},
                                 {"Tval", AttrValue::Type(values.dtype())}}),
                 {table, keys, values});
}
StatusOr<std::vector<Tensor>> Find(const Tensor& table, const Tensor& keys,
                                   const Tensor& default_value) {
  return RunNode(test::MakeNode("LookupTableFindV2", 3,
                                {{"Tin", AttrValue::Type(keys.dtype())},
                                 {"Tout", AttrValue::Type(default_value.dtype())}}),
                 {table, keys, default_value});
}
Tensor FindOk(const Tensor& table, const Tensor& keys, const Tensor& default_value) {
  auto out = Find(table, keys, default_value);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}
// LookupTableInsertV2 (op "Insert") or LookupTableImportV2 ("Import").
StatusOr<std::vector<Tensor>> Update(const std::string& op, const Tensor& table,
                                     const Tensor& keys, const Tensor& values) {
  return RunNode(test::MakeNode("LookupTable" + op + "V2", 3,
                                {{"Tin", AttrValue::Type(keys.dtype())},
                                 {"Tout", AttrValue::Type(values.dtype())}}),
                 {table, keys, values});
}
StatusOr<std::vector<Tensor>> Remove(const Tensor& table, const Tensor& keys) {
  return RunNode(
      test::MakeNode("LookupTableRemoveV2", 2, {{"Tin", AttrValue::Type(keys.dtype())}}),
      {table, keys});
}
int64_t TableSize(const Tensor& table) {
  Tensor size = RunNodeOk(test::MakeNode("LookupTableSizeV2", 1), {table});
  EXPECT_EQ(size.dtype(), DT_INT64);
  return size.at<int64_t>(0);
}
StatusOr<std::vector<Tensor>> Export(const Tensor& table, DataType key, DataType value) {
  return RunNode(test::MakeNode("LookupTableExportV2", 1,
                                {{"Tkeys", AttrValue::Type(key)},
                                 {"Tvalues", AttrValue::Type(value)}}),
                 {table});
}

// An export's pairs by key (its order is the hash map's), values as strings for comparison.
template <typename K>
std::map<K, std::string> ExportedPairs(const Tensor& table, DataType key, DataType value) {
  auto out = Export(table, key, value);
  EXPECT_TRUE(out.ok()) << out.status();
  std::map<K, std::string> pairs;
  if (!out.ok()) return pairs;
  const Tensor& keys = (*out)[0];
  const Tensor& values = (*out)[1];
  EXPECT_EQ(keys.rank(), 1);
  EXPECT_EQ(values.dim(0), keys.dim(0));
  const int64_t width = keys.num_elements() > 0 ? values.num_elements() / keys.num_elements() : 0;
  for (int64_t i = 0; i < keys.num_elements(); ++i) {
    std::string v;
    for (int64_t j = 0; j < width; ++j) {
      const int64_t e = i * width + j;
      if (j > 0) v += ",";
      switch (values.dtype()) {
        case DT_STRING:
          v += values.at<std::string>(e);
          break;
        case DT_INT32:
          v += std::to_string(values.at<int32_t>(e));
          break;
        case DT_INT64:
          v += std::to_string(values.at<int64_t>(e));
          break;
        case DT_FLOAT:
          v += StrCat(values.at<float>(e));
          break;
        case DT_DOUBLE:
          v += StrCat(values.at<double>(e));
          break;
        default:
          v += values.at<bool>(e) ? "true" : "false";
      }
    }
    pairs[keys.data<K>()[i]] = v;
  }
  return pairs;
}

TEST(LookupHashTable, FindsAfterItsInitializationOnly) {
  Tensor t = HashTable("lookup_hash_basic", DT_STRING, DT_INT64);
  ExpectError(Find(t, MakeStringVector({"a"}), MakeScalar<int64_t>(-1)),
              Code::kFailedPrecondition, "Table not initialized.");
  EXPECT_EQ(TableSize(t), 0);  // TensorFlow: 0 before the initializer
  ExpectError(Export(t, DT_STRING, DT_INT64), Code::kAborted, "HashTable is not initialized.");
  ASSERT_OK(InitTable(t, MakeStringVector({"a", "b"}), MakeVector<int64_t>({1, 2})).status());
  EXPECT_EQ(TableSize(t), 2);
  // Keys of any shape; values keys.shape + [] (scalars).
  ExpectTensorEqual(
      MakeTensor<int64_t>({2, 2}, {1, -1, 2, -1}),
      FindOk(t, MakeStringTensor({2, 2}, {"a", "c", "b", "zz"}), MakeScalar<int64_t>(-1)));
  ExpectTensorEqual(MakeScalar<int64_t>(2), FindOk(t, MakeStringScalar("b"), MakeScalar<int64_t>(0)));
  // A default per key (keys.shape + value_shape), as TensorFlow allows.
  ExpectTensorEqual(MakeVector<int64_t>({1, -6}),
                    FindOk(t, MakeStringVector({"a", "zz"}), MakeVector<int64_t>({-5, -6})));
  ExpectError(Find(t, MakeStringVector({"a", "zz"}), MakeVector<int64_t>({-5, -6, -7})),
              Code::kInvalidArgument, "Expected shape [] or [2] for default value, got [3]");
  auto pairs = ExportedPairs<std::string>(t, DT_STRING, DT_INT64);
  EXPECT_EQ(pairs, (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}}));
}

TEST(LookupHashTable, IsImmutableAfterItsFirstInitialization) {
  Tensor t = HashTable("lookup_hash_immutable", DT_STRING, DT_INT64);
  ASSERT_OK(InitTable(t, MakeStringVector({"a", "b"}), MakeVector<int64_t>({1, 2})).status());
  // TensorFlow's rule: as many pairs as entries is taken for the same data, and ignored.
  ASSERT_OK(InitTable(t, MakeStringVector({"c", "d"}), MakeVector<int64_t>({3, 4})).status());
  ExpectTensorEqual(MakeVector<int64_t>({1, -1}),
                    FindOk(t, MakeStringVector({"a", "c"}), MakeScalar<int64_t>(-1)));
  ExpectError(InitTable(t, MakeStringVector({"c"}), MakeVector<int64_t>({3})),
              Code::kFailedPrecondition, "Table was already initialized with different data.");
  ExpectError(Update("Insert", t, MakeStringVector({"c"}), MakeVector<int64_t>({3})),
              Code::kUnimplemented, "Insert not supported");
  ExpectError(Remove(t, MakeStringVector({"a"})), Code::kUnimplemented, "Remove not supported");
  // Import is an initialization for a HashTable.
  ExpectError(Update("Import", t, MakeStringVector({"c"}), MakeVector<int64_t>({3})),
              Code::kFailedPrecondition, "already initialized");
  EXPECT_EQ(TableSize(t), 2);
}

TEST(LookupHashTable, ImportInitializesAnEmptyHashTable) {
  Tensor t = HashTable("lookup_hash_import", DT_INT64, DT_STRING);
  ASSERT_OK(Update("Import", t, MakeVector<int64_t>({7, 8}), MakeStringVector({"x", "y"})).status());
  ExpectTensorEqual(MakeStringVector({"y", "?"}),
                    FindOk(t, MakeVector<int64_t>({8, 9}), MakeStringScalar("?")));
}

TEST(LookupHashTable, InitializationErrorsLeaveTheTableUninitialized) {
  Tensor t = HashTable("lookup_hash_init_errors", DT_STRING, DT_INT64);
  ExpectError(InitTable(t, MakeStringVector({"a", "a"}), MakeVector<int64_t>({1, 2})),
              Code::kFailedPrecondition,
              "HashTable has different value for same key. Key a has 1 and trying to add value 2");
  // The shape function says it first; the kernel says it too.
  const Tensor matrix_keys = MakeStringTensor({1, 1}, {"a"});
  const Tensor matrix_values = MakeTensor<int64_t>({1, 1}, {1});
  ExpectError(InitTable(t, matrix_keys, matrix_values), Code::kInvalidArgument,
              "input 1 must have rank 1, got shape [1,1]");
  ExpectError(test::RunKernelOnly(test::MakeNode("InitializeTableV2", 3,
                                                 {{"Tkey", AttrValue::Type(DT_STRING)},
                                                  {"Tval", AttrValue::Type(DT_INT64)}}),
                                  {t, matrix_keys, matrix_values}),
              Code::kInvalidArgument, "Keys must be a vector, but received shape [1,1]");
  ExpectError(InitTable(t, MakeStringVector({"a", "b"}), MakeVector<int64_t>({1})),
              Code::kInvalidArgument, "InitializeTableV2");  // the shape function's check
  ExpectError(InitTable(t, MakeStringVector({}), MakeVector<int64_t>({})),
              Code::kInvalidArgument, "keys and values cannot be empty tensors.");
  ExpectError(InitTable(t, MakeStringVector({"a"}), MakeVector<int32_t>({1})),
              Code::kInvalidArgument, "table lookup_hash_init_errors has int64 values; got int32");
  ExpectError(Find(t, MakeStringVector({"a"}), MakeScalar<int64_t>(0)), Code::kFailedPrecondition,
              "Table not initialized.");
  // Equal keys with equal values are one entry.
  ASSERT_OK(
      InitTable(t, MakeStringVector({"a", "a", "b"}), MakeVector<int64_t>({1, 1, 2})).status());
  EXPECT_EQ(TableSize(t), 2);
}

TEST(LookupHashTable, ErrorsNameTheNodeTheTableAndWhatWasExpected) {
  Tensor t = HashTable("lookup_hash_dtypes", DT_STRING, DT_INT64);
  ASSERT_OK(InitTable(t, MakeStringVector({"a"}), MakeVector<int64_t>({1})).status());
  ExpectError(Find(t, MakeVector<int32_t>({1}), MakeScalar<int64_t>(0)), Code::kInvalidArgument,
              "node node (op LookupTableFindV2): table lookup_hash_dtypes has string keys; got "
              "int32 keys");
  ExpectError(Find(t, MakeStringVector({"a"}), MakeScalar<int32_t>(0)), Code::kInvalidArgument,
              "has int64 values; got a int32 default value");
  ExpectError(Export(t, DT_INT32, DT_INT64), Code::kInvalidArgument,
              "this node exports Tkeys int32");
  // The same shared name with other dtypes.
  NodeDef other = test::MakeNode("HashTableV2", 0,
                                 {{"shared_name", AttrValue::String("lookup_hash_dtypes")},
                                  {"key_dtype", AttrValue::Type(DT_STRING)},
                                  {"value_dtype", AttrValue::Type(DT_INT32)}});
  ExpectError(RunNode(other, {}), Code::kInvalidArgument,
              "Conflicting key/value dtypes string->int32 with string-int64 for table "
              "lookup_hash_dtypes");
  // A handle that names no table.
  Tensor missing = HashTable("lookup_hash_missing", DT_STRING, DT_INT64);
  ASSERT_OK(RunNode(test::MakeNode("DestroyResourceOp", 1), {missing}).status());
  ExpectError(Find(missing, MakeStringVector({"a"}), MakeScalar<int64_t>(0)), Code::kNotFound,
              "lookup_hash_missing");
}

TEST(LookupMutableHashTable, InsertFindRemoveExportImport) {
  Tensor t = MutableTable("lookup_mutable_basic", DT_INT64, DT_FLOAT);
  EXPECT_EQ(TableSize(t), 0);
  ExpectTensorEqual(MakeVector<float>({0.5f, 0.5f}),
                    FindOk(t, MakeVector<int64_t>({1, 2}), MakeScalar(0.5f)));
  ASSERT_OK(Update("Insert", t, MakeVector<int64_t>({1, 2, 3}), MakeVector<float>({1, 2, 3}))
                .status());
  // The last of equal keys wins.
  ASSERT_OK(Update("Insert", t, MakeVector<int64_t>({4, 4}), MakeVector<float>({1, 2})).status());
  ExpectTensorEqual(MakeTensor<float>({2, 2}, {1, 2, 2, 0.5f}),
                    FindOk(t, MakeTensor<int64_t>({2, 2}, {1, 2, 4, 9}), MakeScalar(0.5f)));
  ASSERT_OK(Remove(t, MakeVector<int64_t>({2, 7})).status());  // 7 is absent: ignored
  EXPECT_EQ(TableSize(t), 3);
  EXPECT_EQ((ExportedPairs<int64_t>(t, DT_INT64, DT_FLOAT)),
            (std::map<int64_t, std::string>{{1, "1"}, {3, "3"}, {4, "2"}}));
  // Import replaces the contents.
  ASSERT_OK(Update("Import", t, MakeVector<int64_t>({10, 11}), MakeVector<float>({5, 6})).status());
  EXPECT_EQ((ExportedPairs<int64_t>(t, DT_INT64, DT_FLOAT)),
            (std::map<int64_t, std::string>{{10, "5"}, {11, "6"}}));
  // Keys of rank 2 and scalar keys.
  ASSERT_OK(Update("Insert", t, MakeTensor<int64_t>({1, 2}, {20, 21}),
                   MakeTensor<float>({1, 2}, {7, 8}))
                .status());
  ASSERT_OK(Update("Insert", t, MakeScalar<int64_t>(30), MakeScalar(9.0f)).status());
  ExpectTensorEqual(MakeScalar(9.0f), FindOk(t, MakeScalar<int64_t>(30), MakeScalar(0.0f)));
  EXPECT_EQ(TableSize(t), 5);
  // An empty import empties the table.
  ASSERT_OK(Update("Import", t, MakeVector<int64_t>({}), MakeVector<float>({})).status());
  EXPECT_EQ(TableSize(t), 0);
}

TEST(LookupMutableHashTable, RejectsMismatchedShapesAndDtypes) {
  Tensor t = MutableTable("lookup_mutable_errors", DT_INT64, DT_FLOAT);
  ExpectError(Update("Insert", t, MakeVector<int64_t>({10, 11}), MakeVector<float>({5})),
              Code::kInvalidArgument, "Expected shape [2] for value, got [1]");
  ExpectError(Update("Import", t, MakeVector<int64_t>({10, 11}), MakeVector<float>({5})),
              Code::kInvalidArgument, "Expected shape [2] for value, got [1]");
  ExpectError(Update("Insert", t, MakeVector<int32_t>({10}), MakeVector<float>({5})),
              Code::kInvalidArgument, "has int64 keys; got int32 keys");
  ExpectError(Remove(t, MakeVector<int32_t>({10})), Code::kInvalidArgument,
              "has int64 keys; got int32 keys");
  ExpectError(InitTable(t, MakeVector<int64_t>({1}), MakeVector<float>({1})),
              Code::kInvalidArgument, "Table lookup_mutable_errors is not initializable");
  // An unsupported dtype fails when the kernel is made.
  NodeDef bad = test::MakeNode("MutableHashTableV2", 0,
                               {{"shared_name", AttrValue::String("lookup_mutable_bad")},
                                {"key_dtype", AttrValue::Type(DT_FLOAT)},
                                {"value_dtype", AttrValue::Type(DT_FLOAT)}});
  ExpectError(RunNode(bad, {}), Code::kInvalidArgument,
              "lookup tables with float keys and float values are not supported");
}

// Every supported pair of key and value dtypes round-trips through insert, find and export.
TEST(LookupMutableHashTable, EverySupportedDtypePair) {
  const std::vector<DataType> keys = {DT_STRING, DT_INT32, DT_INT64};
  const std::vector<DataType> values = {DT_STRING, DT_INT32, DT_INT64,
                                        DT_FLOAT,  DT_DOUBLE, DT_BOOL};
  auto make = [](DataType dtype, std::vector<int> v) {
    Tensor t(dtype, TensorShape({static_cast<int64_t>(v.size())}));
    for (size_t i = 0; i < v.size(); ++i) {
      switch (dtype) {
        case DT_STRING:
          t.at<std::string>(i) = "s" + std::to_string(v[i]);
          break;
        case DT_INT32:
          t.at<int32_t>(i) = v[i];
          break;
        case DT_INT64:
          t.at<int64_t>(i) = int64_t{v[i]} << 40;
          break;
        case DT_FLOAT:
          t.at<float>(i) = v[i] + 0.25f;
          break;
        case DT_DOUBLE:
          t.at<double>(i) = v[i] + 0.125;
          break;
        default:
          t.at<bool>(i) = v[i] % 2 == 1;
      }
    }
    return t;
  };
  for (DataType k : keys) {
    for (DataType v : values) {
      SCOPED_TRACE(DataTypeString(k) + " -> " + DataTypeString(v));
      Tensor t = MutableTable("lookup_pair_" + DataTypeString(k) + "_" + DataTypeString(v), k, v);
      ASSERT_OK(Update("Insert", t, make(k, {1, 2, 3}), make(v, {3, 2, 1})).status());
      Tensor default_value = make(v, {0});
      auto d = default_value.Reshaped(TensorShape());
      ASSERT_TRUE(d.ok());
      Tensor found = FindOk(t, make(k, {3, 9, 1}), *d);
      ExpectTensorEqual(make(v, {1, 0, 3}), found);
      auto exported = Export(t, k, v);
      ASSERT_TRUE(exported.ok()) << exported.status();
      EXPECT_EQ((*exported)[0].num_elements(), 3);
      EXPECT_EQ((*exported)[1].dtype(), v);
    }
  }
}

TEST(LookupMutableHashTableOfTensors, VectorValues) {
  Tensor t = TableHandle("MutableHashTableOfTensorsV2", "lookup_tensors", DT_STRING, DT_INT32, {2});
  ASSERT_OK(Update("Insert", t, MakeStringVector({"a", "b"}),
                   MakeTensor<int32_t>({2, 2}, {1, 2, 3, 4}))
                .status());
  ExpectTensorEqual(MakeTensor<int32_t>({2, 2}, {1, 2, 0, -1}),
                    FindOk(t, MakeStringVector({"a", "z"}), MakeVector<int32_t>({0, -1})));
  // One default per key: keys.shape + value_shape.
  ExpectTensorEqual(
      MakeTensor<int32_t>({2, 2}, {7, 8, 3, 4}),
      FindOk(t, MakeStringVector({"z", "b"}), MakeTensor<int32_t>({2, 2}, {7, 8, 9, 10})));
  ExpectError(Find(t, MakeStringVector({"a", "z"}), MakeScalar<int32_t>(0)),
              Code::kInvalidArgument, "Expected shape [2] or [2,2] for default value, got []");
  ExpectError(Update("Insert", t, MakeStringVector({"a", "b"}), MakeVector<int32_t>({1, 2})),
              Code::kInvalidArgument, "Expected shape [2,2] for value, got [2]");
  auto exported = Export(t, DT_STRING, DT_INT32);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ((*exported)[1].shape(), TensorShape({2, 2}));
  EXPECT_EQ((ExportedPairs<std::string>(t, DT_STRING, DT_INT32)),
            (std::map<std::string, std::string>{{"a", "1,2"}, {"b", "3,4"}}));
  // TensorFlow's tables of tensors hold vectors only.
  NodeDef matrix = test::MakeNode("MutableHashTableOfTensorsV2", 0,
                                  {{"shared_name", AttrValue::String("lookup_tensors_2x2")},
                                   {"key_dtype", AttrValue::Type(DT_INT64)},
                                   {"value_dtype", AttrValue::Type(DT_FLOAT)},
                                   {"value_shape", AttrValue::Shape(PartialTensorShape({2, 2}))}});
  ExpectError(RunNode(matrix, {}), Code::kInvalidArgument,
              "Default value must be a vector, got shape [2,2]");
}

// Lookups and updates from several threads at once on one table (meant for TSan as well).
TEST(LookupMutableHashTable, ConcurrentFindsAndInserts) {
  Tensor t = MutableTable("lookup_mutable_threads", DT_INT64, DT_INT64);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int64_t i = 0; i < 50; ++i) {
        const int64_t key = w * 1000 + i;
        EXPECT_OK(
            Update("Insert", t, MakeVector<int64_t>({key}), MakeVector<int64_t>({key * 2})).status());
        Tensor found = FindOk(t, MakeVector<int64_t>({key}), MakeScalar<int64_t>(-1));
        EXPECT_EQ(found.at<int64_t>(0), key * 2);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(TableSize(t), 200);
}

// A table without a shared name is named by its node, with or without use_node_name_sharing
// (Conflux has no per-session kernel cache to keep a kernel-private table in; see
// lookup_table_kernels.cc): one signature of a session initializes it, another looks it up, and
// a second session of the graph sees it too.
TEST(LookupHashTable, ATableWithoutSharedNameIsTheNodes) {
  for (bool share : {false, true}) {
    SCOPED_TRACE(share ? "use_node_name_sharing" : "no use_node_name_sharing");
    const std::string table = share ? "lookup_node_named_shared" : "lookup_node_named";
    test::GraphBuilder b;
    b.Op(table, "HashTableV2", {},
         {{"key_dtype", AttrValue::Type(DT_STRING)},
          {"value_dtype", AttrValue::Type(DT_INT64)},
          {"use_node_name_sharing", AttrValue::Bool(share)}});
    b.Const("keys", MakeStringVector({"a", "b"}));
    b.Const("values", MakeVector<int64_t>({1, 2}));
    b.Op("init", "InitializeTableV2", {table, "keys", "values"},
         {{"Tkey", AttrValue::Type(DT_STRING)}, {"Tval", AttrValue::Type(DT_INT64)}});
    b.Placeholder("query", DT_STRING);
    b.Const("default", MakeScalar<int64_t>(-1));
    b.Op("find", "LookupTableFindV2", {table, "query", "default"},
         {{"Tin", AttrValue::Type(DT_STRING)}, {"Tout", AttrValue::Type(DT_INT64)}});
    auto first = test::NewTestSession(b.graph());
    ASSERT_NE(first, nullptr);
    std::vector<Tensor> out;
    Status before = first->Run({{"query", MakeStringVector({"a"})}}, {"find:0"}, {}, &out);
    EXPECT_EQ(before.code(), Code::kFailedPrecondition) << before;
    EXPECT_NE(before.message().find("Table not initialized."), std::string::npos) << before;
    ASSERT_OK(first->Run({}, {}, {"init"}, &out));
    for (int step = 0; step < 2; ++step) {  // the table outlives the step
      ASSERT_OK(first->Run({{"query", MakeStringVector({"b", "x"})}}, {"find:0"}, {}, &out));
      ExpectTensorEqual(MakeVector<int64_t>({2, -1}), out[0]);
    }
    auto second = test::NewTestSession(b.graph());
    ASSERT_NE(second, nullptr);
    ASSERT_OK(second->Run({{"query", MakeStringVector({"a"})}}, {"find:0"}, {}, &out));
    ExpectTensorEqual(MakeVector<int64_t>({1}), out[0]);
    // Not left for other tests of the process.
    ASSERT_OK(RunNode(test::MakeNode("DestroyResourceOp", 1),
                      {HashTable(table, DT_STRING, DT_INT64)})
                  .status());
  }
}

// ---------------------------------------------------------------------------------------------
// InitializeTableFromTextFileV2.

class LookupTextFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/cfx_vocab_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  // A fresh HashTable of (key, value) filled from `path`.
  StatusOr<Tensor> InitFromFile(const std::string& path, DataType key, DataType value,
                                int64_t key_index, int64_t value_index,
                                std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
    static std::atomic<int> tables{0};  // tables outlive the test: a new name for each
    Tensor t = HashTable("lookup_file_" + std::to_string(++tables), key, value);
    CFX_RETURN_IF_ERROR(InitFile(t, path, key_index, value_index, attrs));
    return t;
  }
  Status InitFile(const Tensor& t, const std::string& path, int64_t key_index,
                  int64_t value_index, std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
    NodeDef n = test::MakeNode("InitializeTableFromTextFileV2", 2,
                               {{"key_index", AttrValue::Int(key_index)},
                                {"value_index", AttrValue::Int(value_index)}});
    for (auto& [name, v] : attrs) n.attr[name] = v;
    return RunNode(n, {t, MakeStringScalar(path)}).status();
  }

  std::string dir_;
};

TEST_F(LookupTextFileTest, ColumnsLineNumbersAndWholeLines) {
  // A "\r\n" line end and a last line without one, as TensorFlow reads them.
  const std::string path =
      Write("fruit.tsv", "apple\t10\t1.5\nbanana\t20\t2.5\r\ncherry\t30\t3.5");
  auto pairs = [&](auto key_type, DataType key, DataType value, int64_t ki, int64_t vi,
                   std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
    using K = decltype(key_type);
    auto t = InitFromFile(path, key, value, ki, vi, attrs);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? ExportedPairs<K>(*t, key, value) : std::map<K, std::string>();
  };
  using Strings = std::map<std::string, std::string>;
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_INT64, 0, 1),
            (Strings{{"apple", "10"}, {"banana", "20"}, {"cherry", "30"}}));
  // TensorFlow adds `offset` to int32 fields and line numbers, not to int64 fields.
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_INT32, 0, 1, {{"offset", AttrValue::Int(100)}}),
            (Strings{{"apple", "110"}, {"banana", "120"}, {"cherry", "130"}}));
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_INT64, 0, 1, {{"offset", AttrValue::Int(100)}}),
            (Strings{{"apple", "10"}, {"banana", "20"}, {"cherry", "30"}}));
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_INT64, 0, -1, {{"offset", AttrValue::Int(100)}}),
            (Strings{{"apple", "100"}, {"banana", "101"}, {"cherry", "102"}}));
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_FLOAT, 0, 2),
            (Strings{{"apple", "1.5"}, {"banana", "2.5"}, {"cherry", "3.5"}}));
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_DOUBLE, 0, 2),
            (Strings{{"apple", "1.5"}, {"banana", "2.5"}, {"cherry", "3.5"}}));
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_INT64, -2, -1),
            (Strings{{"apple\t10\t1.5", "0"}, {"banana\t20\t2.5", "1"}, {"cherry\t30\t3.5", "2"}}));
  EXPECT_EQ(pairs(int64_t(), DT_INT64, DT_STRING, -1, -2),
            (std::map<int64_t, std::string>{
                {0, "apple\t10\t1.5"}, {1, "banana\t20\t2.5"}, {2, "cherry\t30\t3.5"}}));
  // vocab_size keeps the first lines; a space delimiter leaves each line one column.
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_INT64, 0, -1, {{"vocab_size", AttrValue::Int(2)}}),
            (Strings{{"apple", "0"}, {"banana", "1"}}));
  EXPECT_EQ(pairs(std::string(), DT_STRING, DT_INT64, 0, -1,
                  {{"delimiter", AttrValue::String(" ")}}),
            (Strings{{"apple\t10\t1.5", "0"}, {"banana\t20\t2.5", "1"}, {"cherry\t30\t3.5", "2"}}));
  // Integers with spaces around them and a sign, as TensorFlow's safe_strto64 reads them.
  const std::string numbers = Write("numbers.txt", " 12 \n+13\n-4\n");
  auto t = InitFromFile(numbers, DT_INT64, DT_INT64, -2, -1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ExportedPairs<int64_t>(*t, DT_INT64, DT_INT64),
            (std::map<int64_t, std::string>{{12, "0"}, {13, "1"}, {-4, "2"}}));
  // Empty fields are fields.
  const std::string sparse = Write("sparse.txt", "a\tb\t\tc\n");
  t = InitFromFile(sparse, DT_STRING, DT_STRING, 3, 2);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ExportedPairs<std::string>(*t, DT_STRING, DT_STRING), (Strings{{"c", ""}}));
}

TEST_F(LookupTextFileTest, ErrorsNameTheFileAndTheLine) {
  const std::string fruit = Write("fruit.tsv", "apple\t10\nbanana\t20\n");
  ExpectError(RunNode(test::MakeNode("InitializeTableFromTextFileV2", 2,
                                     {{"key_index", AttrValue::Int(0)},
                                      {"value_index", AttrValue::Int(1)},
                                      {"delimiter", AttrValue::String("ab")}}),
                      {HashTable("lookup_file_delim", DT_STRING, DT_INT64),
                       MakeStringScalar(fruit)}),
              Code::kInvalidArgument, "delimiter should be only 1 char");
  auto fails = [&](const std::string& path, DataType key, DataType value, int64_t ki, int64_t vi,
                   Code code, const std::string& message,
                   std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
    auto t = InitFromFile(path, key, value, ki, vi, attrs);
    ASSERT_FALSE(t.ok()) << message;
    EXPECT_EQ(t.status().code(), code) << t.status();
    EXPECT_NE(t.status().message().find(message), std::string::npos) << t.status();
  };
  fails(Write("gap.txt", "a\t1\n\nb\t2\n"), DT_STRING, DT_INT64, 0, 1, Code::kInvalidArgument,
        "gap.txt: empty line found at line 2");
  fails(Write("bad.txt", "a\t1\nb\tx\n"), DT_STRING, DT_INT64, 0, 1, Code::kInvalidArgument,
        "Field x in line 2 of " + dir_ + "/bad.txt is not a valid int64.");
  fails(Write("bad32.txt", "a\t1\nb\t0x10\n"), DT_STRING, DT_INT32, 0, 1, Code::kInvalidArgument,
        "Field 0x10 in line 2 of " + dir_ + "/bad32.txt is not a valid int32.");
  fails(Write("badf.txt", "a\t1.5e\n"), DT_STRING, DT_FLOAT, 0, 1, Code::kInvalidArgument,
        "is not a valid float.");
  fails(Write("few.txt", "a\t1\nb\n"), DT_STRING, DT_INT64, 0, 1, Code::kInvalidArgument,
        "Invalid number of columns in " + dir_ + "/few.txt line 2 (b) : expected at least 2 got 1");
  fails(fruit, DT_STRING, DT_INT64, 0, -1, Code::kInvalidArgument,
        "Invalid vocab_size in " + fruit + ": expected 5 but got 2",
        {{"vocab_size", AttrValue::Int(5)}});
  fails(dir_ + "/nope.txt", DT_STRING, DT_INT64, 0, 1, Code::kNotFound, dir_ + "/nope.txt");
  fails(Write("empty.txt", ""), DT_STRING, DT_INT64, 0, -1, Code::kOutOfRange, "has no lines");
  fails(fruit, DT_STRING, DT_STRING, -1, 0, Code::kInvalidArgument,
        "Key index for line number requires table key dtype of int64, got string");
  fails(fruit, DT_STRING, DT_INT32, 0, -1, Code::kInvalidArgument,
        "Value index for line number requires table value dtype of int64, got int32");
  fails(fruit, DT_STRING, DT_FLOAT, 0, -2, Code::kInvalidArgument,
        "Value index for whole line requires table value dtype of integer or string, got float");
  fails(fruit, DT_STRING, DT_BOOL, 0, 1, Code::kInvalidArgument, "Data type bool not supported.");
  fails(Write("dup.txt", "a\t1\na\t2\n"), DT_STRING, DT_INT64, 0, 1, Code::kFailedPrecondition,
        "HashTable has different value for same key. Key a has 1 and trying to add value 2");
  // The filename input.
  Tensor t = HashTable("lookup_file_name", DT_STRING, DT_INT64);
  NodeDef n = test::MakeNode("InitializeTableFromTextFileV2", 2,
                             {{"key_index", AttrValue::Int(0)}, {"value_index", AttrValue::Int(1)}});
  ExpectError(RunNode(n, {t, MakeStringScalar("")}), Code::kInvalidArgument,
              "filename cannot be empty.");
  ExpectError(test::RunKernelOnly(n, {t, MakeStringVector({fruit})}), Code::kInvalidArgument,
              "filename should be a single string, but got [1]");
  // Only a HashTable takes an initializer.
  ExpectError(RunNode(n, {MutableTable("lookup_file_mutable", DT_STRING, DT_INT64),
                          MakeStringScalar(fruit)}),
              Code::kInvalidArgument, "Table lookup_file_mutable is not initializable");
}

TEST_F(LookupTextFileTest, ASecondInitializationIsIgnored) {
  const std::string first = Write("first.txt", "a\nb\nc\n");
  const std::string second = Write("second.txt", "x\n");
  Tensor t = HashTable("lookup_file_twice", DT_STRING, DT_INT64);
  ASSERT_OK(InitFile(t, first, 0, -1));
  ASSERT_OK(InitFile(t, second, 0, -1));  // TensorFlow: ignored for an initialized table
  EXPECT_EQ(TableSize(t), 3);
  ExpectTensorEqual(MakeVector<int64_t>({2, -1}),
                    FindOk(t, MakeStringVector({"c", "x"}), MakeScalar<int64_t>(-1)));
}

// ---------------------------------------------------------------------------------------------
// String ops.

NodeDef StringJoinNode(int n, const std::string& separator) {
  return test::MakeNode("StringJoin", n,
                        {{"N", AttrValue::Int(n)}, {"separator", AttrValue::String(separator)}});
}

TEST(StringJoin, BroadcastsScalarsOnly) {
  ExpectTensorEqual(MakeStringVector({"a-x-c", "b-x-d"}),
                    RunNodeOk(StringJoinNode(3, "-"), {MakeStringVector({"a", "b"}),
                                                       MakeStringScalar("x"),
                                                       MakeStringVector({"c", "d"})}));
  ExpectTensorEqual(MakeStringTensor({2, 1}, {"ax", "bx"}),
                    RunNodeOk(StringJoinNode(2, ""), {MakeStringTensor({2, 1}, {"a", "b"}),
                                                      MakeStringScalar("x")}));
  ExpectTensorEqual(MakeStringScalar("a, b"),
                    RunNodeOk(StringJoinNode(2, ", "),
                              {MakeStringScalar("a"), MakeStringScalar("b")}));
  ExpectTensorEqual(MakeStringScalar(""), RunNodeOk(StringJoinNode(0, ","), {}));
  ExpectError(test::RunKernelOnly(StringJoinNode(2, "-"), {MakeStringVector({"a", "b"}),
                                                           MakeStringVector({"c", "d", "e"})}),
              Code::kInvalidArgument, "Input shapes do not match: [2] vs. [3]");
  ExpectError(RunNode(StringJoinNode(2, "-"),
                      {MakeStringTensor({2, 1}, {"a", "b"}), MakeStringVector({"c", "d"})}),
              Code::kInvalidArgument, "[2,1]");
}

TEST(StringLength, BytesAndUtf8Characters) {
  const Tensor in = MakeStringVector(
      {"", "abc", "h\u00E9llo", "\u65E5\u672C\u8A9E", "\xff\xfe" "ab", "\xe6\x97"});
  auto node = [](const std::string& unit) {
    return test::MakeNode("StringLength", 1, {{"unit", AttrValue::String(unit)}});
  };
  ExpectTensorEqual(MakeVector<int32_t>({0, 3, 6, 9, 4, 2}), RunNodeOk(node("BYTE"), {in}));
  // TensorFlow counts the bytes that are no continuation bytes.
  ExpectTensorEqual(MakeVector<int32_t>({0, 3, 5, 3, 4, 1}), RunNodeOk(node("UTF8_CHAR"), {in}));
  ExpectError(RunNode(node("CHAR"), {in}), Code::kInvalidArgument, "unit");
}

NodeDef CaseNode(const std::string& op, const std::string& encoding) {
  return test::MakeNode(op, 1, {{"encoding", AttrValue::String(encoding)}});
}

TEST(StringLowerUpper, AsciiOnlyWithoutEncoding) {
  const Tensor in = MakeStringVector({"HeLLo \u00C0\u00C9\u00CE", "A\xff" "B\xc3", std::string("A\0B", 3)});
  ExpectTensorEqual(
      MakeStringVector({"hello \u00C0\u00C9\u00CE", "a\xff" "b\xc3", std::string("a\0b", 3)}),
      RunNodeOk(CaseNode("StringLower", ""), {in}));
  ExpectTensorEqual(
      MakeStringVector({"HELLO \u00C0\u00C9\u00CE", "A\xff" "B\xc3", std::string("A\0B", 3)}),
      RunNodeOk(CaseNode("StringUpper", ""), {in}));
  ExpectError(RunNode(CaseNode("StringLower", "latin1"), {in}), Code::kInvalidArgument,
              "only utf-8 or '' (no encoding) is supported, received latin1");
}

// With encoding "utf-8", TensorFlow's ICU mappings: full mappings, the final sigma, U+FFFD for
// ill-formed bytes, and the text cut at its first NUL. Values from TensorFlow 2.21.
TEST(StringLowerUpper, Utf8AsTensorFlowsIcu) {
  const std::vector<std::pair<std::string, std::string>> lower = {
      {"HeLLo \u00C0\u00C9\u00CE \u039F\u0394\u039F\u03A3 \u03A3\u0391\u03A3. \u00DF \u0130 "
       "\u216B \uFF21",
       "hello \u00E0\u00E9\u00EE \u03BF\u03B4\u03BF\u03C2 \u03C3\u03B1\u03C2. \u00DF i\u0307 "
       "\u217B \uFF41"},
      {"\u0391\u03A3\u0301", "\u03B1\u03C2\u0301"},
      {"\u0391\u03A3\u0301\u0391", "\u03B1\u03C3\u0301\u03B1"},
      {"A'\u03A3", "a'\u03C2"},
      {"A\u03A3'A", "a\u03C3'a"},
      {"1\u03A3", "1\u03C3"},
      {"\u00AA\u03A3", "\u00AA\u03C2"},
      {"\u03A3", "\u03C3"},
      {"\u01C5", "\u01C6"},
      {"\U00010400", "\U00010428"},
      {"A\xff" "B\xc3", "a\uFFFD" "b\uFFFD"},
      {std::string("A\0B", 3), "a"},
  };
  const std::vector<std::pair<std::string, std::string>> upper = {
      {"hello \u00E0\u00E9\u00EE \u00DF \u0149 \uFB01 \u0390 \u01C5 \u01C6 \uFF41",
       "HELLO \u00C0\u00C9\u00CE SS \u02BCN FI \u0399\u0308\u0301 \u01C4 \u01C4 \uFF21"},
      {"\u03C2\u03C3", "\u03A3\u03A3"},
      {"\U00010428 \u01F0 \uFB03", "\U00010400 J\u030C FFI"},
      {"\u0345", "\u0399"},
      {"a\xff" "b\xc3", "A\uFFFD" "B\uFFFD"},
      {"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"},  // an overlong form: one U+FFFD per byte
  };
  for (const auto& [op, cases] : {std::pair{"StringLower", lower}, std::pair{"StringUpper", upper}}) {
    std::vector<std::string> in, expected;
    for (const auto& [from, to] : cases) {
      in.push_back(from);
      expected.push_back(to);
    }
    EXPECT_EQ(expected, test::StringValues(
                            RunNodeOk(CaseNode(op, "utf-8"), {MakeStringVector(in)})))
        << op;
  }
}

NodeDef StaticRegexNode(const std::string& pattern) {
  return test::MakeNode("StaticRegexFullMatch", 1, {{"pattern", AttrValue::String(pattern)}});
}

// RE2's syntax and full-match semantics; each case checked against TensorFlow 2.21.
TEST(StringRegexFullMatch, MatchesAsRe2) {
  struct Case {
    std::string pattern;
    std::vector<std::string> texts;
    std::vector<bool> expected;
  };
  const std::vector<Case> cases = {
      {"a.c", {"abc", "abcd", "ab"}, {true, false, false}},
      {"a|ab", {"ab", "b", "a"}, {true, false, true}},
      {"a\\d", {"a1", "a ", "ab"}, {true, false, false}},
      {"[a-c]+", {"abc", "x"}, {true, false}},
      {"^s3://.*", {"s3://bucket/ckpt", "/tmp/ckpt"}, {true, false}},  // SavedModel's save path
      {"a.b", {std::string("a\0b", 3), "a\nb"}, {true, false}},
      {".", {"\u00E9", "\xff", "\r", "\u2028"}, {true, false, true, true}},
      {".*", {"a\xff", ""}, {false, true}},  // no pattern matches ill-formed UTF-8
      {"[^a]", {"\xff", "b"}, {false, true}},
      {"(?s)a.b", {"a\nb"}, {true}},
      {"(?m)a$\n^b", {"a\nb"}, {true}},
      {"(?i)abc", {"AbC"}, {true}},
      {"(?i)\u00E9", {"\u00C9"}, {true}},
      {"(?i)[[:lower:]]", {"A"}, {true}},
      {"(?U)a+", {"aa"}, {true}},
      {"", {"", "a"}, {true, false}},
      {"\\Aab\\z", {"ab"}, {true}},
      {"a$", {"a\n", "a"}, {false, true}},
      {"(?P<x>a)b", {"ab"}, {true}},
      {"\\Qa.b\\E", {"a.b", "axb"}, {true, false}},
      {"a{2,3}", {"aaa", "aaaa"}, {true, false}},
      {"x{1000}", {std::string(1000, 'x')}, {true}},
      {"a{", {"a{"}, {true}},
      {"a{,2}", {"a{,2}"}, {true}},
      {"a}", {"a}"}, {true}},
      {"a]", {"a]"}, {true}},
      {"[]a]", {"]", "a"}, {true, true}},
      {"[a-b-c]", {"-", "c"}, {true, true}},
      {"[\\d-z]", {"-"}, {true}},
      {"[[:^alpha:]]", {"1", "a"}, {true, false}},
      {"[:alpha:]", {"a"}, {true}},
      {"\\s", {"\v", "\u00A0", " "}, {false, false, true}},
      {"\\w", {"\u00E9", "_"}, {false, true}},
      {"\\d", {"\u0663"}, {false}},
      {"[\u00E0-\u00FC]", {"\u00E9", "\u00FC"}, {true, true}},
      {"\\x{e9}\\x41", {"\u00E9A"}, {true}},
      {"[\\x{10FFFF}]", {"\U0010FFFF"}, {true}},
      {"\\12\\0123", {"\n\n3"}, {true}},
      {"\\0", {std::string(1, '\0')}, {true}},
      {"\\_\\ \\v", {"_ \v"}, {true}},
      {"a\\b.\\bb", {"a b"}, {true}},
      {"a+?", {"aaa"}, {true}},
      {"(a)|b", {"b"}, {true}},
      {"a||b", {""}, {true}},
      {"a^b", {"ab"}, {false}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("pattern /" + c.pattern + "/");
    std::vector<bool> got;
    for (const char* kernel : {"StaticRegexFullMatch", "RegexFullMatch"}) {
      auto out = kernel == std::string("RegexFullMatch")
                     ? RunNode(test::MakeNode("RegexFullMatch", 2),
                               {MakeStringVector(c.texts), MakeStringScalar(c.pattern)})
                     : RunNode(StaticRegexNode(c.pattern), {MakeStringVector(c.texts)});
      ASSERT_TRUE(out.ok()) << kernel << ": " << out.status();
      const Tensor& t = (*out)[0];
      ASSERT_EQ(t.dtype(), DT_BOOL);
      for (int64_t i = 0; i < t.num_elements(); ++i)
        EXPECT_EQ(c.expected[i], t.at<bool>(i)) << kernel << " on text " << i;
    }
  }
}

TEST(StringRegexFullMatch, RejectsWhatRe2RejectsWithItsMessage) {
  const std::vector<std::pair<std::string, std::string>> invalid = {
      {"a(c", "Invalid pattern: a(c, error: "},
      {"[a-c+", "Invalid pattern: [a-c+, error: missing ]: [a-c+"},
      {"(a)\\1", "invalid escape sequence: \\1"},
      {"a(?=a)a", "invalid perl operator: (?="},
      {"(?<x>a)b", "invalid perl operator: (?<"},
      {"(?x)a b", "invalid perl operator: (?x"},
      {"(?i", "invalid perl operator: (?i"},
      {"(?P<>a)", "invalid named capture group: (?P<>"},
      {"a{1001}", "invalid repetition size: {1001}"},
      {"x{2,1}", "invalid repetition size: {2,1}"},
      {"x{2}{3}", "bad repetition operator: {2}{3}"},
      {"a**", "bad repetition operator: **"},
      {"*a", "no argument for repetition operator: *"},
      {"a|*", "no argument for repetition operator: *"},
      {"\\cA", "invalid escape sequence: \\c"},
      {"\\u00e9", "invalid escape sequence: \\u"},
      {"a\\Z", "invalid escape sequence: \\Z"},
      {"\\e", "invalid escape sequence: \\e"},
      {"a\\Eb", "invalid escape sequence: \\E"},
      {"\\x4", "invalid escape sequence: \\x4"},
      {"\\x{110000}", "invalid escape sequence: \\x{110000"},
      {"\\\u00E9", "invalid escape sequence: \\\u00E9"},
      {"[z-a]", "invalid character class range: z-a"},
      {"[[:foo:]]", "invalid character class range: [:foo:]"},
      {"[\\b]", "invalid escape sequence: \\b"},
      {"[]", "missing ]: []"},
  };
  for (const auto& [pattern, message] : invalid) {
    SCOPED_TRACE("pattern /" + pattern + "/");
    ExpectError(RunNode(StaticRegexNode(pattern), {MakeStringVector({"a"})}),
                Code::kInvalidArgument, message);
    ExpectError(RunNode(test::MakeNode("RegexFullMatch", 2),
                        {MakeStringVector({"a"}), MakeStringScalar(pattern)}),
                Code::kInvalidArgument, message);
  }
  // RE2 features std::regex cannot express: Unimplemented, naming the construct.
  for (const char* pattern : {"\\pN", "\\p{Greek}", "a(?i)b", "a(?i:b)", "\\C"})
    ExpectError(RunNode(StaticRegexNode(pattern), {MakeStringVector({"a"})}),
                Code::kUnimplemented, "is not supported by Conflux's regex engine");
  ExpectError(test::RunKernelOnly(test::MakeNode("RegexFullMatch", 2),
                                  {MakeStringVector({"a"}), MakeStringVector({"a", "b"})}),
              Code::kInvalidArgument, "Pattern must be scalar, but received [2]");
}

// A long text does not grow the stack (the matcher is breadth-first) and keeps its shape.
TEST(StringRegexFullMatch, LongTextsAndShapes) {
  const std::string long_text(200000, 'a');
  ExpectTensorEqual(MakeTensor<bool>({1}, {true}),
                    RunNodeOk(StaticRegexNode("(a|b)*"), {MakeStringVector({long_text})}));
  ExpectTensorEqual(MakeTensor<bool>({2, 1}, {true, false}),
                    RunNodeOk(StaticRegexNode("a+"), {MakeStringTensor({2, 1}, {"aa", "ab"})}));
  ExpectTensorEqual(MakeScalar(true), RunNodeOk(StaticRegexNode("a.c"), {MakeStringScalar("abc")}));
}

// ---------------------------------------------------------------------------------------------
// ResourceGather and DisableCopyOnRead.

Tensor VarHandle(const std::string& name, DataType dtype) {
  return RunNodeOk(test::MakeNode("VarHandleOp", 0,
                                  {{"shared_name", AttrValue::String(name)},
                                   {"dtype", AttrValue::Type(dtype)},
                                   {"shape", AttrValue::Shape(PartialTensorShape())}}),
                   {});
}
Tensor NewVariable(const std::string& name, const Tensor& value) {
  Tensor h = VarHandle(name, value.dtype());
  EXPECT_OK(RunNode(test::MakeNode("AssignVariableOp", 2, {{"dtype", AttrValue::Type(value.dtype())}}),
                    {h, value})
                .status());
  return h;
}
StatusOr<std::vector<Tensor>> Gather(const Tensor& var, DataType dtype, const Tensor& indices,
                                     int64_t batch_dims = 0) {
  return RunNode(test::MakeNode("ResourceGather", 2,
                                {{"dtype", AttrValue::Type(dtype)},
                                 {"Tindices", AttrValue::Type(indices.dtype())},
                                 {"batch_dims", AttrValue::Int(batch_dims)}}),
                 {var, indices});
}
Tensor GatherOk(const Tensor& var, DataType dtype, const Tensor& indices, int64_t batch_dims = 0) {
  auto out = Gather(var, dtype, indices, batch_dims);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

TEST(ResourceGather, RowsOfTheVariable) {
  Tensor v = NewVariable("gather_matrix", MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  ExpectTensorEqual(MakeTensor<float>({3, 3}, {4, 5, 6, 1, 2, 3, 4, 5, 6}),
                    GatherOk(v, DT_FLOAT, MakeVector<int32_t>({1, 0, 1})));
  ExpectTensorEqual(MakeTensor<float>({2, 1, 3}, {4, 5, 6, 1, 2, 3}),
                    GatherOk(v, DT_FLOAT, MakeTensor<int64_t>({2, 1}, {1, 0})));
  ExpectTensorEqual(MakeVector<float>({4, 5, 6}), GatherOk(v, DT_FLOAT, MakeScalar<int32_t>(1)));
  ExpectTensorEqual(MakeTensor<float>({0, 3}, {}),
                    GatherOk(v, DT_FLOAT, MakeVector<int64_t>({})));
  // batch_dims = 1: row b of the output picks from row b of the variable.
  ExpectTensorEqual(MakeTensor<float>({2, 2}, {3, 1, 5, 5}),
                    GatherOk(v, DT_FLOAT, MakeTensor<int32_t>({2, 2}, {2, 0, 1, 1}), 1));
}

TEST(ResourceGather, AnyFixedSizeDtypeAndStrings) {
  Tensor bytes = NewVariable("gather_int8", MakeTensor<int8_t>({3, 2}, {1, 2, 3, 4, 5, 6}));
  ExpectTensorEqual(MakeTensor<int8_t>({2, 2}, {5, 6, 1, 2}),
                    GatherOk(bytes, DT_INT8, MakeVector<int32_t>({2, 0})));
  Tensor flags = NewVariable("gather_bool", MakeVector<bool>({true, false}));
  ExpectTensorEqual(MakeVector<bool>({false, false, true}),
                    GatherOk(flags, DT_BOOL, MakeVector<int64_t>({1, 1, 0})));
  Tensor doubles = NewVariable("gather_double", MakeVector<double>({0.5, 1.5}));
  ExpectTensorEqual(MakeVector<double>({1.5}), GatherOk(doubles, DT_DOUBLE, MakeVector<int32_t>({1})));
  Tensor words = NewVariable("gather_string", MakeStringVector({"a", "b", "c"}));
  ExpectTensorEqual(MakeStringVector({"c", "c", "a"}),
                    GatherOk(words, DT_STRING, MakeVector<int32_t>({2, 2, 0})));
}

TEST(ResourceGather, ErrorsNameTheIndexAndTheRange) {
  Tensor v = NewVariable("gather_errors", MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  ExpectError(Gather(v, DT_FLOAT, MakeTensor<int32_t>({1, 2}, {0, 5})), Code::kInvalidArgument,
              "node node (op ResourceGather): indices[0,1] = 5 is not in [0, 2)");
  ExpectError(Gather(v, DT_FLOAT, MakeVector<int64_t>({-1})), Code::kInvalidArgument,
              "indices[0] = -1 is not in [0, 2)");
  // Checked against its batch's rows (TensorFlow's CPU kernel reads the next batch's instead).
  ExpectError(Gather(v, DT_FLOAT, MakeTensor<int32_t>({2, 2}, {3, 0, 1, 1}), 1),
              Code::kInvalidArgument, "indices[0,0] = 3 is not in [0, 3)");
  ExpectError(Gather(v, DT_FLOAT, MakeTensor<int32_t>({2, 2}, {0, 0, 1, 1}), -1),
              Code::kInvalidArgument, "batch_dims is negative (-1)");
  ExpectError(Gather(v, DT_FLOAT, MakeTensor<int32_t>({2, 2}, {0, 0, 1, 1}), 2),
              Code::kInvalidArgument, "gather_errors");
  ExpectError(Gather(v, DT_FLOAT, MakeTensor<int32_t>({3, 2}, {0, 0, 1, 1, 0, 0}), 1),
              Code::kInvalidArgument, "batch dimension 0 differs");
  ExpectError(Gather(v, DT_INT32, MakeVector<int32_t>({0})), Code::kInvalidArgument,
              "variable gather_errors holds float; this op expects int32");
  Tensor scalar = NewVariable("gather_scalar", MakeScalar(3.0f));
  ExpectError(Gather(scalar, DT_FLOAT, MakeVector<int32_t>({0})), Code::kInvalidArgument,
              "params must be at least 1 dimensional");
  ExpectError(Gather(VarHandle("gather_never_assigned", DT_FLOAT), DT_FLOAT,
                     MakeVector<int32_t>({0})),
              Code::kNotFound, "gather_never_assigned");
}

TEST(DisableCopyOnRead, ANoOpOnAVariableThatExists) {
  Tensor v = NewVariable("copy_on_read", MakeVector<float>({1, 2}));
  ASSERT_OK(RunNode(test::MakeNode("DisableCopyOnRead", 1), {v}).status());
  ExpectTensorEqual(MakeVector<float>({2}), GatherOk(v, DT_FLOAT, MakeVector<int32_t>({1})));
  ExpectError(RunNode(test::MakeNode("DisableCopyOnRead", 1),
                      {VarHandle("copy_on_read_missing", DT_FLOAT)}),
              Code::kFailedPrecondition, "copy_on_read_missing");
}

}  // namespace
}  // namespace cfx
