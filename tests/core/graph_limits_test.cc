// Limits on untrusted graphs (GraphLimits, the config's `limits:`): each limit, in the binary and
// text parsers and in Session::Create / Extend, gives an InvalidArgument naming the limit, the
// value and the config key; messages nested far deeper than any limit are an error, not a stack
// overflow; a config nested too deep is an error naming the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "config_test_util.h"
#include "conflux/config.h"
#include "conflux/graph_def.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "graph/function_library.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using ::testing::HasSubstr;

// Protobuf's wire format, by hand, so that a test can nest deeper than protobuf's own encoder
// would recurse.
void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
std::string Field(int number, const std::string& bytes) {
  std::string out;
  PutVarint(&out, (static_cast<uint64_t>(number) << 3) | 2);  // length-delimited
  PutVarint(&out, bytes.size());
  return out + bytes;
}

// A binary GraphDef of one node whose attr "f" is a func attr holding a func attr ... `levels`
// deep: each level nests three messages (AttrValue.func, NameAttrList.attr's entry, its value).
std::string NestedGraph(int levels) {
  std::string value;  // an empty AttrValue
  for (int i = 0; i < levels; ++i) {
    const std::string entry = Field(1, "f") + Field(2, value);  // map entry: key, value
    value = Field(10, Field(1, "g") + Field(2, entry));         // AttrValue.func = NameAttrList
  }
  const std::string node =
      Field(1, "n") + Field(2, "NoOp") + Field(5, Field(1, "f") + Field(2, value));
  return Field(1, node);
}

std::string TextGraph(int nodes) {
  std::string text;
  for (int i = 0; i < nodes; ++i)
    text += "node { name: \"n" + std::to_string(i) + "\" op: \"NoOp\" }\n";
  return text;
}

void ExpectLimitError(const Status& s, const std::string& key, const std::string& value) {
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("config key limits." + key)) << s;
  EXPECT_THAT(s.message(), HasSubstr(value)) << s;
}

TEST(GraphLimits, GraphBytes) {
  GraphLimits limits;
  limits.max_graph_bytes = 100;
  const std::string text = TextGraph(5);
  ASSERT_GT(text.size(), 100u);
  ExpectLimitError(ParseGraphDef(text, GraphFormat::kText, limits).status(), "graph_bytes",
                   std::to_string(text.size()) + " bytes is over the limit of 100");
  limits.max_graph_bytes = static_cast<int64_t>(text.size());
  EXPECT_OK(ParseGraphDef(text, GraphFormat::kText, limits).status());
}

TEST(GraphLimits, Nodes) {
  GraphLimits limits;
  limits.max_nodes = 4;
  ExpectLimitError(ParseGraphDef(TextGraph(5), GraphFormat::kText, limits).status(), "nodes",
                   "5 nodes, over the limit of 4");
  const std::string binary = SerializeGraphDef(
      ParseGraphDef(TextGraph(5), GraphFormat::kText).value(), GraphFormat::kBinary);
  ExpectLimitError(ParseGraphDef(binary, GraphFormat::kBinary, limits).status(), "nodes",
                   "5 nodes, over the limit of 4");
  EXPECT_OK(ParseGraphDef(TextGraph(4), GraphFormat::kText, limits).status());
}

TEST(GraphLimits, NestingDepthBinary) {
  const std::string graph = NestedGraph(40);  // 1 + 1 + 1 + 3 * 40 messages deep
  ExpectLimitError(ParseGraphDef(graph, GraphFormat::kBinary).status(), "nesting_depth",
                   "deeper than the limit of 100");
  GraphLimits deeper;
  deeper.max_nesting_depth = 200;
  auto parsed = ParseGraphDef(graph, GraphFormat::kBinary, deeper);
  ASSERT_OK(parsed.status());
  EXPECT_EQ(parsed->node[0].attr.at("f").func->name, "g");
  // Far deeper than any limit: still an error, and the parser's recursion stays bounded.
  Status s = ParseGraphDef(NestedGraph(5000), GraphFormat::kBinary).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
}

TEST(GraphLimits, NestingDepthText) {
  std::string value = "{}";
  for (int i = 0; i < 40; ++i)
    value = "{ func { name: \"g\" attr { key: \"f\" value " + value + " } } }";
  const std::string text =
      "node { name: \"n\" op: \"NoOp\" attr { key: \"f\" value " + value + " } }";
  Status s = ParseGraphDef(text, GraphFormat::kText).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("limits.nesting_depth = 100")) << s;
  GraphLimits deeper;
  deeper.max_nesting_depth = 200;
  EXPECT_OK(ParseGraphDef(text, GraphFormat::kText, deeper).status());
}

TEST(GraphLimits, AttrListLength) {
  GraphLimits limits;
  limits.max_attr_list_length = 10;
  auto text = [](int n) {
    std::string list;
    for (int i = 0; i < n; ++i) list += " i: " + std::to_string(i);
    return "node { name: \"c\" op: \"NoOp\" attr { key: \"dims\" value { list {" + list +
           " } } } }";
  };
  ExpectLimitError(ParseGraphDef(text(11), GraphFormat::kText, limits).status(), "attr_list_length",
                   "node 'c' attr 'dims' is a list of 11 values, over the limit of 10");
  EXPECT_OK(ParseGraphDef(text(10), GraphFormat::kText, limits).status());
}

// A Const of `n` floats given as one value: a TensorProto pads a short value list to its shape.
std::string PaddedConst(const std::string& name, int n) {
  return "node { name: \"" + name +
         "\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } } attr { key: "
         "\"value\" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: " +
         std::to_string(n) + " } } float_val: 1 } } } }\n";
}

// What the graph's constants decode to, in all: the node past the limit is a ResourceExhausted
// naming it, its attr, what is left and the config key; the same bound holds for the constants of
// the function library.
TEST(GraphLimits, ConstantBytes) {
  GraphLimits limits;
  limits.max_constant_bytes = 10000;
  const std::string two = PaddedConst("c0", 1024) + PaddedConst("c1", 1024);
  EXPECT_OK(ParseGraphDef(two, GraphFormat::kText, limits).status());
  const Status over =
      ParseGraphDef(two + PaddedConst("c2", 1024), GraphFormat::kText, limits).status();
  EXPECT_EQ(over.code(), Code::kResourceExhausted) << over;
  EXPECT_THAT(over.message(),
              HasSubstr("node 'c2' attr 'value': a float tensor of shape [1024] decodes to 4096 "
                        "bytes, more than the 1808 left of the graph's 10000 for constants (config "
                        "key limits.constant_bytes)"));
  EXPECT_EQ(GraphLimits().max_constant_bytes, int64_t{4} << 30);

  const std::string library =
      "library { function { signature { name: \"f\" output_arg { name: \"y\" type: DT_FLOAT } "
      "} node_def" +
      PaddedConst("k", 1024).substr(4) + " ret { key: \"y\" value: \"k:output:0\" } } }";
  const GraphDef with_library = ParseGraphDef(library, GraphFormat::kText).value();
  EXPECT_OK(ParseFunctionLibrary(with_library.library, 4096).status());
  const Status library_over = ParseFunctionLibrary(with_library.library, 4095).status();
  EXPECT_EQ(library_over.code(), Code::kResourceExhausted) << library_over;
  EXPECT_THAT(library_over.message(),
              HasSubstr("function 'f': node 'k' attr 'value': a float tensor of shape [1024] "
                        "decodes to 4096 bytes, more than the 4095 left"));
}

// The runtime's config limits every session's graph, as it grows.
TEST(GraphLimits, SessionCreateAndExtend) {
  Config config = Config::Default();
  config.limits = test::ParseConfigOk("limits:\n  nodes: 4\n  attr_list_length: 3\n").limits;
  EXPECT_EQ(config.limits.max_nodes, 4);
  EXPECT_EQ(config.limits.max_attr_list_length, 3);
  config.plugin_paths.insert(config.plugin_paths.begin(), test::BuildPluginDir());
  auto runtime = Runtime::Create(config);
  ASSERT_OK(runtime.status());
  ExpectLimitError(
      Session::Create(runtime->get(), ParseGraphDef(TextGraph(5), GraphFormat::kText).value())
          .status(),
      "nodes", "graph of 5 nodes is over the limit of 4");
  auto session =
      Session::Create(runtime->get(), ParseGraphDef(TextGraph(3), GraphFormat::kText).value());
  ASSERT_OK(session.status());
  GraphDef more;
  more.node.push_back({"m0", "NoOp", {}, "", {}, ""});
  ASSERT_OK((*session)->Extend(more));
  more.node[0].name = "m1";
  ExpectLimitError((*session)->Extend(more), "nodes", "graph of 5 nodes is over the limit of 4");
}

TEST(GraphLimits, ConfigKeys) {
  Config config = test::ParseConfigOk(
      "limits:\n  graph_bytes: 64MiB\n  nodes: 1000\n  nesting_depth: 50\n  attr_list_length: 7\n"
      "  constant_bytes: 1GiB\n");
  EXPECT_EQ(config.limits.max_constant_bytes, int64_t{1} << 30);
  EXPECT_EQ(config.limits.max_graph_bytes, int64_t{64} << 20);
  EXPECT_EQ(config.limits.max_nodes, 1000);
  EXPECT_EQ(config.limits.max_nesting_depth, 50);
  EXPECT_EQ(config.limits.max_attr_list_length, 7);
  const GraphLimits defaults = Config::Default().limits;
  EXPECT_EQ(defaults.max_graph_bytes, int64_t{1} << 30);
  EXPECT_EQ(defaults.max_nesting_depth, 100);
  test::ExpectInvalidConfig("limits:\n  nodes: 0\n", "test.yaml:2: limits.nodes: ", {"positive"});
  test::ExpectInvalidConfig("limits:\n  nesting_depth: 20000\n",
                            "test.yaml:2: limits.nesting_depth: ", {"at most 10000"});
  test::ExpectInvalidConfig("limits:\n  node: 5\n",
                            "test.yaml:2: limits.node: ", {"unknown key", "nodes"});
}

// YAML nested far deeper than any config needs: an error naming the file, not a stack overflow.
TEST(GraphLimits, DeeplyNestedYamlIsAnError) {
  const std::string yaml = "limits: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  StatusOr<Config> config = Config::FromString(yaml, test::kConfigSource);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), Code::kInvalidArgument) << config.status();
  EXPECT_THAT(config.status().message(), HasSubstr("test.yaml:1: YAML nested too deeply"))
      << config.status();
}

}  // namespace
}  // namespace cfx
