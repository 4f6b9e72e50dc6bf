// GraphDef file I/O: exact round trips (binary and text), TensorFlow-written fixtures,
// TensorProto decoding rules, errors, and garbage input.
#include "conflux/graph_def.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::ReadFileBytes;

using Kind = AttrValue::Kind;

std::string GraphFixture(const std::string& name) {
  return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/graphs/" + name;
}

void WriteBytes(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

GraphDef ParseOk(const std::string& data, GraphFormat format) {
  StatusOr<GraphDef> graph = ParseGraphDef(data, format);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : GraphDef();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The "value" attr of a one-Const graph whose TensorProto is `tensor_text` (text format).
StatusOr<AttrValue> ConstValue(const std::string& tensor_text) {
  StatusOr<GraphDef> graph =
      ParseGraphDef("node { name: 'c' op: 'Const' attr { key: 'value' value { tensor { " +
                        tensor_text + " } } } }",
                    GraphFormat::kText);
  if (!graph.ok()) return graph.status();
  return graph->node[0].attr.at("value");
}

StatusOr<Tensor> DecodeTensor(const std::string& tensor_text) {
  StatusOr<AttrValue> value = ConstValue(tensor_text);
  if (!value.ok()) return value.status();
  return value->tensor;
}

void ExpectDecodeError(const std::string& tensor_text, Code code, const std::string& substring) {
  StatusOr<Tensor> tensor = DecodeTensor(tensor_text);
  ASSERT_FALSE(tensor.ok()) << tensor_text;
  EXPECT_EQ(tensor.status().code(), code) << tensor.status();
  EXPECT_TRUE(Contains(tensor.status().message(), substring)) << tensor.status();
  EXPECT_TRUE(Contains(tensor.status().message(), "node 'c' attr 'value'")) << tensor.status();
}

Tensor StringTensor(const std::vector<std::string>& values) {
  Tensor t(DT_STRING, TensorShape({static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) t.at<std::string>(i) = values[i];
  return t;
}

Tensor HalfTensor(DataType dtype, const std::vector<uint16_t>& bits) {
  Tensor t(dtype, TensorShape({static_cast<int64_t>(bits.size())}));
  for (size_t i = 0; i < bits.size(); ++i) t.at<uint16_t>(i) = bits[i];
  return t;
}

AttrValue Placeholder(const std::string& name) {
  AttrValue a;
  a.kind = Kind::kPlaceholder;
  a.s = name;
  return a;
}

// A graph with every attr kind, a function library and node debug info.
GraphDef EveryAttrKindGraph() {
  // Carried-as-bytes parts come from a parse, as they would in practice.
  GraphDef carried =
      ParseOk(R"pb(
                node {
                  name: "n"
                  experimental_debug_info { original_node_names: "a" original_func_names: "f" }
                }
                library {
                  function {
                    signature {
                      name: "f"
                      input_arg { name: "x" type: DT_FLOAT }
                      output_arg { name: "y" type_attr: "T" }
                      attr { name: "T" type: "type" }
                    }
                    node_def {
                      name: "id"
                      op: "Identity"
                      input: "x"
                      attr {
                        key: "T"
                        value { placeholder: "T" }
                      }
                    }
                    ret { key: "y" value: "id:output:0" }
                    attr {
                      key: "_noinline"
                      value { b: true }
                    }
                  }
                  gradient { function_name: "f" gradient_func: "f_grad" }
                })pb",
              GraphFormat::kText);

  NodeDef node;
  node.name = "every_attr";
  node.op = "Custom";
  node.input = {"a", "b:1", "^c"};
  node.device = "/job:worker/replica:0/task:1/device:CPU:0";
  node.experimental_debug_info = carried.node[0].experimental_debug_info;
  AttrMap& attr = node.attr;
  attr["none"] = AttrValue();
  attr["s"] = AttrValue::String(std::string("bytes\0\xff\n", 8));
  attr["s_empty"] = AttrValue::String("");
  attr["i"] = AttrValue::Int(-(int64_t{1} << 40));
  attr["i_zero"] = AttrValue::Int(0);
  attr["f"] = AttrValue::Float(-0.125f);
  attr["b"] = AttrValue::Bool(true);
  attr["b_false"] = AttrValue::Bool(false);
  attr["type"] = AttrValue::Type(DT_BFLOAT16);
  attr["type_ref"] = AttrValue::Type(MakeRefType(DT_FLOAT));
  attr["shape"] = AttrValue::Shape(PartialTensorShape({2, -1, 3}));
  attr["shape_unknown_rank"] = AttrValue::Shape(PartialTensorShape::UnknownRank());
  attr["shape_scalar"] = AttrValue::Shape(PartialTensorShape(std::vector<int64_t>{}));
  attr["tensor_f32"] =
      AttrValue::TensorValue(test::MakeTensor<float>(TensorShape({2, 2}), {1, -2, 3.5f, 0}));
  attr["tensor_i64"] = AttrValue::TensorValue(test::MakeScalar<int64_t>(-5));
  attr["tensor_bool"] = AttrValue::TensorValue(test::MakeVector<bool>({true, false}));
  attr["tensor_string"] = AttrValue::TensorValue(StringTensor({"ab", "", std::string("\0z", 2)}));
  attr["tensor_half"] = AttrValue::TensorValue(HalfTensor(DT_HALF, {0x3c00, 0xc000}));
  attr["tensor_empty"] = AttrValue::TensorValue(Tensor(DT_FLOAT, TensorShape({0, 3})));
  attr["list_s"] = AttrValue::StringList({"x", "", "y"});
  attr["list_i"] = AttrValue::IntList({1, -2, int64_t{1} << 50});
  attr["list_f"] = AttrValue::FloatList({0.5f, -1e30f});
  attr["list_b"] = AttrValue::EmptyList();
  attr["list_b"].list.b = {true, false, true};
  attr["list_type"] = AttrValue::TypeList({DT_INT32, DT_STRING, DT_COMPLEX128});
  attr["list_shape"] = AttrValue::ShapeList(
      {PartialTensorShape::UnknownRank(), PartialTensorShape({-1, -1}), PartialTensorShape({})});
  attr["list_tensor"] = AttrValue::EmptyList();
  attr["list_tensor"].list.tensor = {test::MakeVector<int32_t>({1, 2}), StringTensor({"q"})};
  attr["list_func"] = AttrValue::EmptyList();
  attr["list_func"].list.func = {NameAttrList{"g", {{"n", AttrValue::Int(1)}}},
                                 NameAttrList{"h", {}}};
  attr["list_empty"] = AttrValue::EmptyList();
  AttrValue inner = AttrValue::Func("inner");
  inner.func->attr["n"] = AttrValue::Int(3);
  inner.func->attr["shapes"] = AttrValue::ShapeList({PartialTensorShape({-1})});
  inner.func->attr["value"] = AttrValue::TensorValue(test::MakeVector<double>({0.25, 4}));
  inner.func->attr["dtype"] = Placeholder("T");
  attr["func"] = AttrValue::Func("outer");
  attr["func"].func->attr["T"] = AttrValue::Type(DT_FLOAT);
  attr["func"].func->attr["inner"] = inner;
  attr["func"].func->attr["sizes"] = AttrValue::IntList({4, 5});
  attr["placeholder"] = Placeholder("T");

  GraphDef graph;
  graph.node.push_back(node);
  NodeDef plain;
  plain.name = "c";
  plain.op = "NoOp";
  graph.node.push_back(plain);
  graph.has_versions = true;
  graph.versions.producer = 27;
  graph.versions.min_consumer = 12;
  graph.versions.bad_consumers = {3, 5};
  graph.version = 17;
  graph.library = carried.library;
  return graph;
}

// --- round trips -------------------------------------------------------------------------------

TEST(GraphDef, EveryAttrKindRoundTripsBinary) {
  const GraphDef graph = EveryAttrKindGraph();
  ASSERT_FALSE(graph.library.empty());
  ASSERT_FALSE(graph.node[0].experimental_debug_info.empty());
  const std::string bytes = SerializeGraphDef(graph, GraphFormat::kBinary);
  const GraphDef parsed = ParseOk(bytes, GraphFormat::kBinary);
  EXPECT_TRUE(parsed == graph);
  EXPECT_EQ(SerializeGraphDef(parsed, GraphFormat::kBinary), bytes);
  // Spot checks that == did not pass vacuously.
  const AttrMap& attr = parsed.node[0].attr;
  EXPECT_EQ(attr.size(), graph.node[0].attr.size());
  EXPECT_EQ(attr.at("none").kind, Kind::kNone);
  EXPECT_EQ(attr.at("s").s, std::string("bytes\0\xff\n", 8));
  EXPECT_EQ(attr.at("type_ref").type, MakeRefType(DT_FLOAT));
  EXPECT_TRUE(attr.at("shape_unknown_rank").shape.unknown_rank());
  EXPECT_EQ(attr.at("shape").shape.dims(), (std::vector<int64_t>{2, -1, 3}));
  EXPECT_EQ(attr.at("list_empty").kind, Kind::kList);
  EXPECT_EQ(attr.at("placeholder").kind, Kind::kPlaceholder);
  const NameAttrList& inner = *attr.at("func").func->attr.at("inner").func;
  EXPECT_EQ(inner.name, "inner");
  EXPECT_EQ(test::Values<double>(inner.attr.at("value").tensor), (std::vector<double>{0.25, 4}));
  EXPECT_EQ(attr.at("tensor_string").tensor.at<std::string>(2), std::string("\0z", 2));
  EXPECT_EQ(parsed.versions.bad_consumers, (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(parsed.version, 17);
}

TEST(GraphDef, EveryAttrKindRoundTripsText) {
  const GraphDef graph = EveryAttrKindGraph();
  const std::string text = SerializeGraphDef(graph, GraphFormat::kText);
  EXPECT_TRUE(Contains(text, "placeholder: \"T\"")) << text;
  EXPECT_TRUE(Contains(text, "unknown_rank: true")) << text;
  EXPECT_TRUE(Contains(text, "gradient_func: \"f_grad\"")) << text;  // library printed as text
  const GraphDef parsed = ParseOk(text, GraphFormat::kText);
  EXPECT_TRUE(parsed == graph);
  EXPECT_EQ(SerializeGraphDef(parsed, GraphFormat::kText), text);
  // Text and binary describe the same message.
  EXPECT_EQ(SerializeGraphDef(parsed, GraphFormat::kBinary),
            SerializeGraphDef(graph, GraphFormat::kBinary));
}

TEST(GraphDef, MapEntriesFollowTensorFlowsOrder) {
  GraphDef graph;
  graph.node.resize(1);
  for (const char* key : {"keep_dims", "T", "Tidx", "Ta"})
    graph.node[0].attr[key] = AttrValue::Int(1);
  // Binary: as TensorFlow's Python writer, a key after the longer keys it prefixes.
  const std::string bytes = SerializeGraphDef(graph, GraphFormat::kBinary);
  const size_t t = bytes.find("\x01T\x12");
  const size_t ta = bytes.find("\x02Ta\x12");
  const size_t tidx = bytes.find("\x04Tidx\x12");
  const size_t keep_dims = bytes.find("\x09keep_dims\x12");
  ASSERT_NE(t, std::string::npos);
  EXPECT_LT(ta, tidx);
  EXPECT_LT(tidx, t);
  EXPECT_LT(t, keep_dims);
  // Text: ascending keys, as protobuf's text printers write maps.
  const std::string text = SerializeGraphDef(graph, GraphFormat::kText);
  EXPECT_LT(text.find("\"T\""), text.find("\"Ta\""));
  EXPECT_LT(text.find("\"Ta\""), text.find("\"Tidx\""));
  EXPECT_TRUE(ParseOk(bytes, GraphFormat::kBinary) == ParseOk(text, GraphFormat::kText));
}

TEST(GraphDef, RepeatedAttrKeysKeepTheLastValue) {
  // As with a protobuf map.
  const GraphDef graph = ParseOk(
      "node { name: 'n' attr { key: 'a' value { list { i: 1 } } } attr { key: 'a' value { i: 2 } } "
      "attr { key: 'b' value { i: 3 } } attr { key: 'b' value { list { s: 'x' } } } }",
      GraphFormat::kText);
  EXPECT_EQ(graph.node[0].attr.at("a"), AttrValue::Int(2));
  EXPECT_TRUE(graph.node[0].attr.at("a").list == AttrValue::List());
  EXPECT_EQ(graph.node[0].attr.at("b"), AttrValue::StringList({"x"}));
}

TEST(GraphDef, EmptyGraphRoundTrips) {
  const GraphDef empty;
  EXPECT_EQ(SerializeGraphDef(empty, GraphFormat::kBinary), "");
  EXPECT_TRUE(ParseOk("", GraphFormat::kBinary) == empty);
  EXPECT_TRUE(ParseOk("", GraphFormat::kText) == empty);
  GraphDef versions_only;
  versions_only.has_versions = true;  // present but all zero: still written
  const GraphDef parsed =
      ParseOk(SerializeGraphDef(versions_only, GraphFormat::kBinary), GraphFormat::kBinary);
  EXPECT_TRUE(parsed.has_versions);
}

TEST(GraphDef, EqualityComparesEveryField) {
  const GraphDef base = EveryAttrKindGraph();
  EXPECT_TRUE(base == EveryAttrKindGraph());
  std::vector<GraphDef> changed(9, base);
  changed[0].node[0].name = "other";
  changed[1].node[0].op = "Other";
  changed[2].node[0].input.pop_back();
  changed[3].node[0].device = "";
  changed[4].node[0].attr["i"] = AttrValue::Int(1);
  changed[5].node[0].experimental_debug_info.clear();
  changed[6].versions.producer = 1;
  changed[7].version = 0;
  changed[8].library.clear();
  for (size_t i = 0; i < changed.size(); ++i) EXPECT_FALSE(changed[i] == base) << i;
}

// --- TensorFlow-written fixtures -----------------------------------------------------------------

const char* const kFixtures[] = {"matmul_add", "slice_concat", "while_loop", "constants"};

TEST(GraphDef, TensorFlowFixturesRoundTripExactly) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const std::string bytes = ReadFileBytes(GraphFixture(std::string(name) + ".pb"));
    const std::string text = ReadFileBytes(GraphFixture(std::string(name) + ".pbtxt"));
    ASSERT_FALSE(bytes.empty());
    const GraphDef from_binary = ParseOk(bytes, GraphFormat::kBinary);
    const GraphDef from_text = ParseOk(text, GraphFormat::kText);
    EXPECT_FALSE(from_binary.node.empty());
    EXPECT_TRUE(from_binary == from_text);
    // The same bytes come back, from the binary file and from the text file: map entries are
    // written in the order of TensorFlow's Python writer.
    EXPECT_EQ(SerializeGraphDef(from_binary, GraphFormat::kBinary), bytes);
    EXPECT_EQ(SerializeGraphDef(from_text, GraphFormat::kBinary), bytes);
    EXPECT_TRUE(ParseOk(SerializeGraphDef(from_text, GraphFormat::kText), GraphFormat::kText) ==
                from_binary);
  }
}

const NodeDef* FindNode(const GraphDef& graph, const std::string& name) {
  for (const NodeDef& node : graph.node)
    if (node.name == name) return &node;
  return nullptr;
}

TEST(GraphDef, ReadsTensorFlowMatMulGraph) {
  StatusOr<GraphDef> graph = ReadGraphDefFile(GraphFixture("matmul_add.pb"));
  ASSERT_OK(graph.status());
  EXPECT_TRUE(graph->has_versions);
  EXPECT_GT(graph->versions.producer, 0);
  EXPECT_TRUE(graph->library.empty());
  const NodeDef* matmul = FindNode(*graph, "MatMul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->op, "MatMul");
  EXPECT_EQ(matmul->input, (std::vector<std::string>{"x", "MatMul/ReadVariableOp"}));
  EXPECT_EQ(matmul->attr.at("T"), AttrValue::Type(DT_FLOAT));
  EXPECT_EQ(matmul->attr.at("transpose_a"), AttrValue::Bool(false));
  const NodeDef* x = FindNode(*graph, "x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->attr.at("shape").shape, PartialTensorShape({2, 3}));
  const NodeDef* offset = FindNode(*graph, "offset");
  ASSERT_NE(offset, nullptr);
  EXPECT_EQ(test::Values<float>(offset->attr.at("value").tensor), std::vector<float>{1.5f});
  const NodeDef* weights = FindNode(*graph, "MatMul/ReadVariableOp/resource");
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->attr.at("value").tensor.shape(), TensorShape({3, 4}));
  const NodeDef* identity = FindNode(*graph, "Identity");
  ASSERT_NE(identity, nullptr);
  EXPECT_EQ(identity->input, (std::vector<std::string>{"add", "^NoOp"}));
}

TEST(GraphDef, ReadsTensorFlowWhileLoopWithFunctionLibrary) {
  StatusOr<GraphDef> graph = ReadGraphDefFile(GraphFixture("while_loop.pbtxt"));
  ASSERT_OK(graph.status());
  EXPECT_FALSE(graph->library.empty());
  const NodeDef* loop = nullptr;
  for (const NodeDef& node : graph->node)
    if (node.op == "StatelessWhile" || node.op == "While") loop = &node;
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(loop->attr.at("body").kind, Kind::kFunc);
  ASSERT_EQ(loop->attr.at("cond").kind, Kind::kFunc);
  EXPECT_FALSE(loop->attr.at("body").func->name.empty());
  EXPECT_EQ(loop->attr.at("T").KindName(), "list(type)");
  EXPECT_EQ(loop->attr.at("output_shapes").KindName(), "list(shape)");
  // The library carries the bodies; its bytes name them.
  EXPECT_TRUE(Contains(graph->library, loop->attr.at("body").func->name));
}

// constants.expected.txt: "NAME DTYPE DIMS HEX" per Const, decoded by TensorFlow itself.
std::string Hex(const void* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    const auto byte = static_cast<const uint8_t*>(data)[i];
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out.empty() ? "-" : out;
}

TEST(GraphDef, DecodesTensorFlowConstantsOfEveryDtype) {
  const std::map<std::string, DataType> kTypes = {
      {"float32", DT_FLOAT},     {"float64", DT_DOUBLE},      {"float16", DT_HALF},
      {"bfloat16", DT_BFLOAT16}, {"int8", DT_INT8},           {"uint8", DT_UINT8},
      {"int16", DT_INT16},       {"uint16", DT_UINT16},       {"int32", DT_INT32},
      {"uint32", DT_UINT32},     {"int64", DT_INT64},         {"uint64", DT_UINT64},
      {"bool", DT_BOOL},         {"complex64", DT_COMPLEX64}, {"complex128", DT_COMPLEX128},
      {"string", DT_STRING}};
  const GraphDef graph = ParseOk(ReadFileBytes(GraphFixture("constants.pb")), GraphFormat::kBinary);
  std::istringstream expected(ReadFileBytes(GraphFixture("constants.expected.txt")));
  std::string line;
  int checked = 0;
  while (std::getline(expected, line)) {
    std::istringstream fields(line);
    std::string name, dtype, dims, data;
    fields >> name >> dtype >> dims;
    SCOPED_TRACE(line);
    const NodeDef* node = FindNode(graph, name);
    ASSERT_NE(node, nullptr);
    const Tensor& tensor = node->attr.at("value").tensor;
    ASSERT_TRUE(kTypes.count(dtype));
    EXPECT_EQ(tensor.dtype(), kTypes.at(dtype));
    std::string shape;
    for (int i = 0; i < tensor.rank(); ++i) shape += (i ? "," : "") + std::to_string(tensor.dim(i));
    EXPECT_EQ(shape.empty() ? "-" : shape, dims);
    if (tensor.dtype() == DT_STRING) {
      for (int64_t i = 0; i < tensor.num_elements(); ++i) {
        fields >> data;
        const std::string& s = tensor.at<std::string>(i);
        EXPECT_EQ(Hex(s.data(), s.size()), data) << "element " << i;
      }
    } else {
      fields >> data;
      EXPECT_EQ(Hex(tensor.raw_data(), tensor.TotalBytes()), data);
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(graph.node.size()));
  EXPECT_GE(checked, 25);
}

// --- TensorProto decoding ------------------------------------------------------------------------

TEST(TensorProto, PadsShortValueListWithLastValue) {
  StatusOr<Tensor> t =
      DecodeTensor("dtype: DT_FLOAT tensor_shape { dim { size: 4 } } float_val: 1 float_val: 2");
  ASSERT_OK(t.status());
  EXPECT_EQ(test::Values<float>(*t), (std::vector<float>{1, 2, 2, 2}));
}

TEST(TensorProto, SingleValueFillsTheTensor) {
  StatusOr<Tensor> t = DecodeTensor(
      "dtype: DT_INT64 tensor_shape { dim { size: 2 } dim { size: 3 } } int64_val: -9");
  ASSERT_OK(t.status());
  EXPECT_EQ(test::Values<int64_t>(*t), std::vector<int64_t>(6, -9));
  t = DecodeTensor("dtype: DT_STRING tensor_shape { dim { size: 3 } } string_val: 'ab'");
  ASSERT_OK(t.status());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t->at<std::string>(i), "ab");
}

TEST(TensorProto, NoValuesGivesZeros) {
  StatusOr<Tensor> t = DecodeTensor("dtype: DT_INT32 tensor_shape { dim { size: 3 } }");
  ASSERT_OK(t.status());
  EXPECT_EQ(test::Values<int32_t>(*t), (std::vector<int32_t>{0, 0, 0}));
  t = DecodeTensor("dtype: DT_FLOAT");  // no shape: a scalar
  ASSERT_OK(t.status());
  EXPECT_EQ(t->shape(), TensorShape());
  EXPECT_EQ(test::Values<float>(*t), std::vector<float>{0});
}

TEST(TensorProto, NarrowTypesComeFromIntVal) {
  StatusOr<Tensor> t =
      DecodeTensor("dtype: DT_INT8 tensor_shape { dim { size: 2 } } int_val: -1 int_val: 127");
  ASSERT_OK(t.status());
  EXPECT_EQ(test::Values<int8_t>(*t), (std::vector<int8_t>{-1, 127}));
  t = DecodeTensor("dtype: DT_UINT16 tensor_shape { dim { size: 2 } } int_val: 65535");
  ASSERT_OK(t.status());
  EXPECT_EQ(test::Values<uint16_t>(*t), (std::vector<uint16_t>{65535, 65535}));
  t = DecodeTensor("dtype: DT_UINT64 uint64_val: 18446744073709551615");
  ASSERT_OK(t.status());
  EXPECT_EQ(t->at<uint64_t>(0), ~uint64_t{0});
}

TEST(TensorProto, HalfAndBfloat16ComeFromHalfVal) {
  StatusOr<Tensor> t =
      DecodeTensor("dtype: DT_HALF tensor_shape { dim { size: 2 } } half_val: 15360");
  ASSERT_OK(t.status());
  EXPECT_EQ(t->at<uint16_t>(0), 0x3c00);
  EXPECT_EQ(t->at<uint16_t>(1), 0x3c00);
  t = DecodeTensor("dtype: DT_BFLOAT16 half_val: 16256");
  ASSERT_OK(t.status());
  EXPECT_EQ(t->dtype(), DT_BFLOAT16);
  EXPECT_EQ(t->at<uint16_t>(0), 0x3f80);
}

TEST(TensorProto, ComplexValuesPadByWholePairs) {
  StatusOr<Tensor> t = DecodeTensor(
      "dtype: DT_COMPLEX64 tensor_shape { dim { size: 3 } } scomplex_val: 1 scomplex_val: 2");
  ASSERT_OK(t.status());
  const float* parts = t->data<float>();
  EXPECT_EQ(std::vector<float>(parts, parts + 6), (std::vector<float>{1, 2, 1, 2, 1, 2}));
  ExpectDecodeError("dtype: DT_COMPLEX128 dcomplex_val: 1", Code::kInvalidArgument, "pairs");
}

TEST(TensorProto, BoolContentTreatsNonZeroAsTrue) {
  StatusOr<Tensor> t = DecodeTensor(
      "dtype: DT_BOOL tensor_shape { dim { size: 3 } } tensor_content: '\\002\\000\\001'");
  ASSERT_OK(t.status());
  EXPECT_EQ(test::Values<bool>(*t), (std::vector<bool>{true, false, true}));
}

TEST(TensorProto, StringContentUsesTensorFlowsEncoding) {
  // Lengths as varints first (3, 1), then the bytes.
  StatusOr<Tensor> t = DecodeTensor(
      "dtype: DT_STRING tensor_shape { dim { size: 2 } } tensor_content: '\\003\\001abcd'");
  ASSERT_OK(t.status());
  EXPECT_EQ(t->at<std::string>(0), "abc");
  EXPECT_EQ(t->at<std::string>(1), "d");
  ExpectDecodeError(
      "dtype: DT_STRING tensor_shape { dim { size: 2 } } tensor_content: '\\005\\001abcd'",
      Code::kInvalidArgument, "add up to");
  ExpectDecodeError("dtype: DT_STRING tensor_shape { dim { size: 2 } } tensor_content: '\\377'",
                    Code::kInvalidArgument, "too short");
}

TEST(TensorProto, ContentSizeMismatchNamesNodeAndAttr) {
  ExpectDecodeError("dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: 'abc'",
                    Code::kInvalidArgument, "tensor_content has 3 bytes");
  ExpectDecodeError(
      "dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 1 int_val: 2 int_val: 3",
      Code::kInvalidArgument, "3 values for a tensor of 2 elements");
}

TEST(TensorProto, ValuesInTheWrongFieldAreErrors) {
  ExpectDecodeError("dtype: DT_FLOAT int_val: 1", Code::kInvalidArgument, "int_val");
  ExpectDecodeError("dtype: DT_FLOAT tensor_content: '\\000\\000\\000\\000' float_val: 1",
                    Code::kInvalidArgument, "both tensor_content and float_val");
}

TEST(TensorProto, EmptyTensorIgnoresValuesAsTensorFlowDoes) {
  StatusOr<Tensor> t =
      DecodeTensor("dtype: DT_FLOAT tensor_shape { dim { size: 0 } } float_val: 1");
  ASSERT_OK(t.status());
  EXPECT_EQ(t->num_elements(), 0);
}

TEST(TensorProto, ShapeMustBeFullyDefinedAndValid) {
  ExpectDecodeError("dtype: DT_FLOAT tensor_shape { dim { size: -1 } }", Code::kInvalidArgument,
                    "fully defined");
  ExpectDecodeError("dtype: DT_FLOAT tensor_shape { unknown_rank: true }", Code::kInvalidArgument,
                    "fully defined");
  ExpectDecodeError("dtype: DT_FLOAT tensor_shape { dim { size: -2 } }", Code::kInvalidArgument,
                    "fully defined");
  ExpectDecodeError(
      "dtype: DT_FLOAT tensor_shape { dim { size: 4294967296 } dim { size: 4294967296 } }",
      Code::kInvalidArgument, "2^63");
}

// Grappler records symbolic dimensions (-2, -3, ...) in shape attrs such as `_input_shapes`;
// they read as unknown.
TEST(GraphDefText, SymbolicDimensionsAreUnknown) {
  GraphDef g = ParseOk(
      "node { name: 'n' op: 'NoOp' attr { key: '_input_shapes' value { list { shape { "
      "dim { size: -2 } dim { size: 3 } dim { size: -7 } } } } } }",
      GraphFormat::kText);
  ASSERT_EQ(g.node.size(), 1u);
  const AttrValue& shapes = g.node[0].attr.at("_input_shapes");
  ASSERT_EQ(shapes.list.shape.size(), 1u);
  EXPECT_EQ(shapes.list.shape[0].dims(), (std::vector<int64_t>{-1, 3, -1}));
}

TEST(TensorProto, HugeFillIsRefusedBeforeAllocating) {
  ExpectDecodeError("dtype: DT_FLOAT tensor_shape { dim { size: 1099511627776 } } float_val: 1",
                    Code::kResourceExhausted, "larger than");
}

TEST(TensorProto, UnsupportedAndInvalidDtypes) {
  ExpectDecodeError("dtype: DT_RESOURCE", Code::kUnimplemented, "resource");
  ExpectDecodeError("dtype: DT_VARIANT", Code::kUnimplemented, "variant");
  ExpectDecodeError("dtype: DT_FLOAT8_E5M2", Code::kUnimplemented, "DT_FLOAT8_E5M2");
  ExpectDecodeError("dtype: DT_INVALID", Code::kInvalidArgument, "DT_INVALID");
  ExpectDecodeError("dtype: DT_FLOAT_REF", Code::kInvalidArgument, "reference type");
}

TEST(TensorProto, NumericTensorsAreWrittenAsTensorContent) {
  GraphDef graph;
  graph.node.resize(1);
  graph.node[0].name = "c";
  graph.node[0].attr["f"] = AttrValue::TensorValue(test::MakeVector<float>({1, 2}));
  graph.node[0].attr["s"] = AttrValue::TensorValue(StringTensor({"hello"}));
  const std::string text = SerializeGraphDef(graph, GraphFormat::kText);
  EXPECT_TRUE(Contains(text, "tensor_content")) << text;
  EXPECT_FALSE(Contains(text, "float_val")) << text;
  EXPECT_TRUE(Contains(text, "string_val: \"hello\"")) << text;
}

TEST(TensorProto, KeepsTheEncodingItWasReadWith) {
  StatusOr<AttrValue> value =
      ConstValue("dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 1.5");
  ASSERT_OK(value.status());
  EXPECT_FALSE(value->tensor_encoding.empty());
  EXPECT_EQ(test::Values<float>(value->tensor), (std::vector<float>{1.5, 1.5, 1.5}));
  GraphDef graph;
  graph.node.resize(1);
  graph.node[0].attr["value"] = *value;
  std::string text = SerializeGraphDef(graph, GraphFormat::kText);
  EXPECT_TRUE(Contains(text, "float_val: 1.5")) << text;
  EXPECT_FALSE(Contains(text, "tensor_content")) << text;

  // With the encoding cleared, the tensor is encoded afresh.
  graph.node[0].attr["value"].tensor_encoding.clear();
  text = SerializeGraphDef(graph, GraphFormat::kText);
  EXPECT_TRUE(Contains(text, "tensor_content")) << text;
  EXPECT_TRUE(ParseOk(text, GraphFormat::kText).node[0].attr.at("value") == *value);

  // No values at all (TensorFlow's encoding of a zero): kept, not rewritten as tensor_content.
  value = ConstValue("dtype: DT_INT32 tensor_shape { }");
  ASSERT_OK(value.status());
  EXPECT_FALSE(value->tensor_encoding.empty());
  graph.node[0].attr["value"] = *value;
  EXPECT_EQ(SerializeGraphDef(graph, GraphFormat::kText).find("tensor_content"), std::string::npos);

  // A tensor that re-encodes to the same bytes is not held twice.
  value = ConstValue(
      "dtype: DT_INT32 tensor_shape { dim { size: 1 } } tensor_content: '\\007\\000\\000\\000'");
  ASSERT_OK(value.status());
  EXPECT_TRUE(value->tensor_encoding.empty());
  EXPECT_EQ(value->tensor.at<int32_t>(0), 7);
}

TEST(TensorProto, TensorWithoutBufferCannotBeWritten) {
  GraphDef graph;
  graph.node.resize(1);
  graph.node[0].name = "c";
  AttrValue broken;
  broken.kind = Kind::kTensor;  // Tensor(): no buffer
  graph.node[0].attr["value"] = broken;
  Status s = WriteGraphDefFile(graph, TempPath("no_buffer.pb"));
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
  EXPECT_TRUE(Contains(s.message(), "node 'c' attr 'value'")) << s;
}

// --- errors ------------------------------------------------------------------------------------

// Protobuf wire encoding, to write bytes that our own writer never would.
std::string Varint(uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return out;
}
std::string VarintField(int number, uint64_t v) { return Varint(number << 3) + Varint(v); }
std::string BytesField(int number, const std::string& payload) {
  return Varint((number << 3) | 2) + Varint(payload.size()) + payload;
}
// GraphDef { node { name: "n" attr { key: "T" value: <attr_value> } } }
std::string GraphWithAttr(const std::string& attr_value) {
  const std::string entry = BytesField(1, "T") + BytesField(2, attr_value);
  return BytesField(1, BytesField(1, "n") + BytesField(5, entry));
}

TEST(GraphDef, UnknownDataTypeValuesAreErrors) {
  // AttrValue.type (field 6) = 99, which TensorFlow does not define.
  StatusOr<GraphDef> graph = ParseGraphDef(GraphWithAttr(VarintField(6, 99)), GraphFormat::kBinary);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(graph.status().message(), "unknown DataType value 99")) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), "node 'n' attr 'T'")) << graph.status();
  // The same value is fine as DT_FLOAT (1).
  graph = ParseGraphDef(GraphWithAttr(VarintField(6, 1)), GraphFormat::kBinary);
  ASSERT_OK(graph.status());
  EXPECT_EQ(graph->node[0].attr.at("T"), AttrValue::Type(DT_FLOAT));
  // A TensorFlow type Conflux does not support.
  graph = ParseGraphDef("node { name: 'n' attr { key: 'T' value { list { type: DT_INT4 } } } }",
                        GraphFormat::kText);
  EXPECT_EQ(graph.status().code(), Code::kUnimplemented) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), "node 'n' attr 'T' [0]")) << graph.status();
}

TEST(GraphDef, NestedAttrErrorsNameThePath) {
  StatusOr<GraphDef> graph =
      ParseGraphDef(R"pb(
                      node {
                        name: "loop"
                        attr {
                          key: "body"
                          value {
                            func {
                              name: "b"
                              attr {
                                key: "value"
                                value { tensor { dtype: DT_FLOAT tensor_content: "x" } }
                              }
                            }
                          }
                        }
                      })pb",
                    GraphFormat::kText);
  ASSERT_FALSE(graph.ok());
  EXPECT_TRUE(Contains(graph.status().message(), "node 'loop' attr 'body' func 'b' attr 'value'"))
      << graph.status();
}

TEST(GraphDef, BadShapesInAttrsAreErrors) {
  StatusOr<GraphDef> graph = ParseGraphDef(
      "node { name: 'n' attr { key: 's' value { shape { unknown_rank: true dim { size: 1 } } } } }",
      GraphFormat::kText);
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), "unknown rank")) << graph.status();
}

TEST(GraphDef, TextErrorsGiveLineAndColumn) {
  StatusOr<GraphDef> graph =
      ParseGraphDef("node {\n  name: \"a\"\n  nmae: \"b\"\n}\n", GraphFormat::kText);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(graph.status().message(), "3:")) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), "nmae")) << graph.status();
}

TEST(GraphDef, NamesMustBeUtf8) {
  // Valid multi-byte UTF-8 reads and writes back.
  GraphDef graph = ParseOk("node { name: 'n\\305\\223ud/\\303\\251' }", GraphFormat::kText);
  ASSERT_EQ(graph.node.size(), 1u);
  EXPECT_EQ(graph.node[0].name, "n\xc5\x93ud/\xc3\xa9");
  ASSERT_OK(WriteGraphDefFile(graph, TempPath("utf8.pb")));
  // A stray byte, an overlong '/', a surrogate, and a truncated sequence are not UTF-8. The
  // binary parser rejects them itself; the text parser would not without our check.
  for (const char* bad : {"\\377", "\\300\\257", "\\355\\240\\200", "a\\303"}) {
    StatusOr<GraphDef> parsed =
        ParseGraphDef(std::string("node { name: 'x' input: '") + bad + "' }", GraphFormat::kText);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_TRUE(Contains(parsed.status().message(), "NodeDef.input is not valid UTF-8"))
        << parsed.status();
  }
  graph.node[0].name = "\xff";
  Status s = WriteGraphDefFile(graph, TempPath("not_utf8.pb"));
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_TRUE(Contains(s.message(), "NodeDef.name is not valid UTF-8")) << s;
  std::remove(TempPath("utf8.pb").c_str());
}

TEST(GraphDef, MalformedBinaryIsAnError) {
  StatusOr<GraphDef> graph = ParseGraphDef(
      "\x0a\x05"
      "ab",
      GraphFormat::kBinary);  // truncated
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(graph.status().message(), "malformed binary GraphDef")) << graph.status();
}

TEST(GraphDef, FilesRoundTripInBothFormats) {
  const GraphDef graph = EveryAttrKindGraph();
  for (const char* name : {"every_attr.pb", "every_attr.pbtxt", "every_attr.txt"}) {
    SCOPED_TRACE(name);
    const std::string path = TempPath(name);
    ASSERT_OK(WriteGraphDefFile(graph, path));
    const std::string written = ReadFileBytes(path);
    EXPECT_EQ(written, SerializeGraphDef(graph, GraphFormatForPath(path)));
    StatusOr<GraphDef> read = ReadGraphDefFile(path);
    ASSERT_OK(read.status());
    EXPECT_TRUE(*read == graph);
    std::remove(path.c_str());
  }
}

TEST(GraphDef, FormatFollowsTheFileName) {
  EXPECT_EQ(GraphFormatForPath("model.pbtxt"), GraphFormat::kText);
  EXPECT_EQ(GraphFormatForPath("dir.pb/graph.txt"), GraphFormat::kText);
  EXPECT_EQ(GraphFormatForPath("model.pb"), GraphFormat::kBinary);
  EXPECT_EQ(GraphFormatForPath("model.pbtxt.pb"), GraphFormat::kBinary);
  EXPECT_EQ(GraphFormatForPath("model"), GraphFormat::kBinary);
}

TEST(GraphDef, FileErrorsNameTheFile) {
  const std::string missing = TempPath("no_such_graph.pb");
  StatusOr<GraphDef> graph = ReadGraphDefFile(missing);
  EXPECT_EQ(graph.status().code(), Code::kNotFound) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), missing)) << graph.status();

  const std::string bad_binary = TempPath("bad_graph.pb");
  WriteBytes(bad_binary, "\xff\xff\xff\xff");
  graph = ReadGraphDefFile(bad_binary);
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), bad_binary)) << graph.status();

  const std::string bad_text = TempPath("bad_graph.pbtxt");
  WriteBytes(bad_text, "node {\n  name: 3 4\n}\n");
  graph = ReadGraphDefFile(bad_text);
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), bad_text + ": malformed text GraphDef: 2:"))
      << graph.status();

  const std::string bad_tensor = TempPath("bad_tensor.pbtxt");
  WriteBytes(bad_tensor,
             "node { name: 'k' attr { key: 'value' value { tensor { dtype: DT_INT64 "
             "tensor_shape { dim { size: 2 } } tensor_content: 'abc' } } } }");
  graph = ReadGraphDefFile(bad_tensor);
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), bad_tensor)) << graph.status();
  EXPECT_TRUE(Contains(graph.status().message(), "node 'k' attr 'value'")) << graph.status();

  graph = ReadGraphDefFile(::testing::TempDir());
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument) << graph.status();

  Status s = WriteGraphDefFile(GraphDef(), TempPath("no_such_dir/graph.pb"));
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "no_such_dir/graph.pb")) << s;
  for (const std::string& path : {bad_binary, bad_text, bad_tensor}) std::remove(path.c_str());
}

// --- garbage input -----------------------------------------------------------------------------

// Parses and, when that succeeds, writes back: neither may crash, whatever the input.
void ParseAndWriteBack(const std::string& data, GraphFormat format) {
  StatusOr<GraphDef> graph = ParseGraphDef(data, format);
  if (graph.ok()) {
    const std::string bytes = SerializeGraphDef(*graph, GraphFormat::kBinary);
    EXPECT_TRUE(ParseGraphDef(bytes, GraphFormat::kBinary).ok());
  } else {
    EXPECT_NE(graph.status().code(), Code::kOk);
  }
}

TEST(GraphDef, TruncatedFilesNeverCrash) {
  int failures = 0;
  for (const char* name : kFixtures) {
    const std::string bytes = ReadFileBytes(GraphFixture(std::string(name) + ".pb"));
    for (size_t n = 0; n < bytes.size(); ++n) {
      failures += !ParseGraphDef(bytes.substr(0, n), GraphFormat::kBinary).ok();
      ParseAndWriteBack(bytes.substr(0, n), GraphFormat::kBinary);
    }
    const std::string text = ReadFileBytes(GraphFixture(std::string(name) + ".pbtxt"));
    for (size_t n = 0; n < text.size(); n += 7)
      ParseAndWriteBack(text.substr(0, n), GraphFormat::kText);
  }
  EXPECT_GT(failures, 0);  // truncation is detected, not silently accepted everywhere
}

TEST(GraphDef, RandomAndMutatedBytesNeverCrash) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string data(rng() % 200, '\0');
    for (char& c : data) c = static_cast<char>(byte(rng));
    ParseAndWriteBack(data, GraphFormat::kBinary);
    ParseAndWriteBack(data, GraphFormat::kText);
  }
  const std::string valid = ReadFileBytes(GraphFixture("constants.pb"));
  for (int iter = 0; iter < 3000; ++iter) {
    std::string data = valid;
    for (int k = 0; k < 1 + iter % 4; ++k) data[rng() % data.size()] = static_cast<char>(byte(rng));
    ParseAndWriteBack(data, GraphFormat::kBinary);
  }
}

TEST(GraphDef, DeepNestingIsRejectedNotOverflowed) {
  std::string text = "node { name: 'n' attr { key: 'f' value { ";
  for (int i = 0; i < 5000; ++i) text += "func { name: 'g' attr { key: 'f' value { ";
  StatusOr<GraphDef> graph = ParseGraphDef(text, GraphFormat::kText);
  EXPECT_FALSE(graph.ok());
}

// --- tensor names ------------------------------------------------------------------------------

TEST(GraphDef, ParseTensorNameAcceptsTensorFlowForms) {
  StatusOr<TensorId> id = ParseTensorName("a");
  ASSERT_OK(id.status());
  EXPECT_EQ(*id, (TensorId{"a", 0}));
  id = ParseTensorName("a:0");
  ASSERT_OK(id.status());
  EXPECT_EQ(*id, (TensorId{"a", 0}));
  id = ParseTensorName("scope/a_1:12");
  ASSERT_OK(id.status());
  EXPECT_EQ(*id, (TensorId{"scope/a_1", 12}));
  id = ParseTensorName("^a");
  ASSERT_OK(id.status());
  EXPECT_EQ(*id, (TensorId{"a", -1}));
}

TEST(GraphDef, ParseTensorNameRejectsMalformedNames) {
  for (const char* bad :
       {"", "a:", "a:x", "a:-1", "^", "^a:1", ":0", "a:1:2", "a:99999999999", "a:+1"}) {
    StatusOr<TensorId> id = ParseTensorName(bad);
    EXPECT_FALSE(id.ok()) << "'" << bad << "'";
    EXPECT_EQ(id.status().code(), Code::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace cfx
