// LowerFunctions (passes/lower_functions.h) on hand-written graphs: calls by PartitionedCall and
// by function name with type attrs, functions calling functions, control inputs of a call
// reaching its body, loop invariants, and the errors for recursion, missing functions,
// signatures that do not fit and graphs grown past the node limit. The function library reader
// is checked on a TensorFlow-made library.
#include "passes/lower_functions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conflux/session.h"
#include "graph/function_library.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::ExpectTensorEqual;
using test::MakeVector;
using test::TestRuntime;

GraphDef Parse(const std::string& text) {
  StatusOr<GraphDef> graph = ParseGraphDef(text, GraphFormat::kText);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : GraphDef();
}

// A float Placeholder "x" and `nodes`, with `library` as the function library.
GraphDef WithLibrary(const std::string& nodes, const std::string& library) {
  return Parse(
      R"(node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
)" + nodes +
      "library {\n" + library + "}\n");
}

std::string FloatCall(const std::string& name, const std::string& function,
                      const std::string& input) {
  return "node { name: '" + name + "' op: 'PartitionedCall' input: '" + input +
         "' attr { key: 'Tin' value { list { type: DT_FLOAT } } }"
         " attr { key: 'Tout' value { list { type: DT_FLOAT } } }"
         " attr { key: 'f' value { func { name: '" +
         function + "' } } } }\n";
}

// f(v: float) -> (out: float) whose body is `body`; `ret` names the result.
std::string FloatFunction(const std::string& name, const std::string& body,
                          const std::string& ret) {
  return "function { signature { name: '" + name +
         "' input_arg { name: 'v' type: DT_FLOAT } output_arg { name: 'out' type: DT_FLOAT } }\n" +
         body + " ret { key: 'out' value: '" + ret + "' } }\n";
}

StatusOr<Tensor> RunOne(const GraphDef& graph, const std::string& fetch, const Tensor& x) {
  CFX_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(&TestRuntime(), graph));
  std::vector<Tensor> out;
  CFX_RETURN_IF_ERROR(session->Run({{"x:0", x}}, {fetch}, {}, &out));
  return out[0];
}

void ExpectError(const Status& s, Code code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.ok()) << "it succeeded";
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& p : parts)
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s;
}

Status CreateStatus(const GraphDef& graph) {
  return Session::Create(&TestRuntime(), graph).status();
}

const NodeDef* FindNode(const GraphDef& g, const std::string& name) {
  for (const NodeDef& n : g.node)
    if (n.name == name) return &n;
  return nullptr;
}

// scale(v: T) -> v * 2 (a Const whose dtype is the placeholder T); outer(a) -> scale(scale(a)),
// called once by its name and once through PartitionedCall.
const char kTypedLibrary[] = R"(
function {
  signature { name: "scale" input_arg { name: "v" type_attr: "T" }
              output_arg { name: "out" type_attr: "T" } attr { name: "T" type: "type" } }
  node_def { name: "two" op: "Const" attr { key: "dtype" value { placeholder: "T" } }
             attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }
  node_def { name: "m" op: "Mul" input: "v" input: "two:output:0"
             attr { key: "T" value { placeholder: "T" } } }
  ret { key: "out" value: "m:z:0" }
}
function {
  signature { name: "outer" input_arg { name: "a" type: DT_FLOAT } output_arg { name: "b" type: DT_FLOAT } }
  node_def { name: "s1" op: "scale" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
  node_def { name: "s2" op: "PartitionedCall" input: "s1:out:0"
             attr { key: "Tin" value { list { type: DT_FLOAT } } }
             attr { key: "Tout" value { list { type: DT_FLOAT } } }
             attr { key: "f" value { func { name: "scale" attr { key: "T" value { type: DT_FLOAT } } } } } }
  ret { key: "b" value: "s2:output:0" }
}
)";

TEST(LowerFunctions, FunctionsCallingFunctionsWithTypeAttrs) {
  GraphDef graph = WithLibrary(R"(node { name: "c" op: "outer" input: "x" })", kTypedLibrary);
  StatusOr<Tensor> y = RunOne(graph, "c:0", MakeVector<float>({1.5f, -2.0f}));
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensorEqual(MakeVector<float>({6.0f, -8.0f}), *y);

  GraphDef lowered = graph;
  ASSERT_OK(LowerFunctions(TestRuntime().ops(), 1000, &lowered));
  for (const NodeDef& n : lowered.node) {
    EXPECT_NE(n.op, "outer") << n.name;
    EXPECT_NE(n.op, "scale") << n.name;
    EXPECT_NE(n.op, "PartitionedCall") << n.name;
  }
  const NodeDef* mul = FindNode(lowered, "c/s2/m");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->attr.at("T").type, DT_FLOAT);  // the placeholder, instantiated
  // The argument read directly: its producer (s1's results) is no Switch or Enter.
  EXPECT_EQ(mul->input, (std::vector<std::string>{"c/s1", "c/s2/two"}));
  EXPECT_EQ(lowered.library, graph.library);  // carried unchanged
}

// Extend lowers the nodes it adds, with their own library or the session graph's.
TEST(LowerFunctions, ExtendLowersTheAddedNodes) {
  GraphDef base = WithLibrary("", kTypedLibrary);
  StatusOr<std::unique_ptr<Session>> session = Session::Create(&TestRuntime(), base);
  ASSERT_TRUE(session.ok()) << session.status();
  GraphDef added;
  added.node = Parse(R"(node { name: "c" op: "outer" input: "x" })").node;
  ASSERT_OK((*session)->Extend(added));
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({{"x:0", MakeVector<float>({0.25f})}}, {"c:0"}, {}, &out));
  ExpectTensorEqual(MakeVector<float>({1.0f}), out[0]);
}

TEST(LowerFunctions, GraphWithoutFunctionsIsUnchanged) {
  GraphDef graph = WithLibrary(
      R"(node { name: "y" op: "Neg" input: "x" attr { key: "T" value { type: DT_FLOAT } } })",
      kTypedLibrary);
  GraphDef lowered = graph;
  ASSERT_OK(LowerFunctions(TestRuntime().ops(), 1000, &lowered));
  EXPECT_EQ(lowered, graph);
}

TEST(LowerFunctions, ControlInputsOfACallReachItsBody) {
  GraphDef graph = WithLibrary(
      R"(node { name: "first" op: "NoOp" }
         node { name: "c" op: "scale" input: "x" input: "^first" attr { key: "T" value { type: DT_FLOAT } } })",
      kTypedLibrary);
  ASSERT_OK(LowerFunctions(TestRuntime().ops(), 1000, &graph));
  const NodeDef* control = FindNode(graph, "c/input_control_node");
  ASSERT_NE(control, nullptr);
  EXPECT_EQ(control->input, (std::vector<std::string>{"^first", "^x"}));
  const NodeDef* two = FindNode(graph, "c/two");  // the body's input-less Const
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->input, std::vector<std::string>{"^c/input_control_node"});
  const NodeDef* result = FindNode(graph, "c");
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(result->op, "IdentityN");
  EXPECT_EQ(result->input, (std::vector<std::string>{"c/m", "^c/input_control_node"}));
}

TEST(LowerFunctions, RecursionIsAnErrorNamingTheChain) {
  GraphDef direct = WithLibrary(
      FloatCall("c", "f", "x"),
      FloatFunction("f", "node_def { name: 'again' op: 'f' input: 'v' }", "again:out:0"));
  ExpectError(CreateStatus(direct), Code::kInvalidArgument,
              {"node 'c/again'", "function 'f' calls itself (f -> f)", "recursive"});

  GraphDef mutual = WithLibrary(
      FloatCall("c", "f", "x"),
      FloatFunction("f", "node_def { name: 'to_g' op: 'g' input: 'v' }", "to_g:out:0") +
          FloatFunction("g", "node_def { name: 'to_f' op: 'f' input: 'v' }", "to_f:out:0"));
  ExpectError(CreateStatus(mutual), Code::kInvalidArgument,
              {"node 'c/to_g/to_f'", "(in function f -> g)", "calls itself (f -> g -> f)"});
}

TEST(LowerFunctions, MissingFunctionNamesNodeAndFunction) {
  ExpectError(CreateStatus(WithLibrary(FloatCall("c", "nope", "x"), kTypedLibrary)),
              Code::kInvalidArgument, {"node 'c'", "function 'nope'", "library does not have"});
  // Inside a function, the error names the chain.
  GraphDef nested =
      WithLibrary(FloatCall("c", "f", "x"),
                  FloatFunction("f",
                                "node_def { name: 'inner' op: 'PartitionedCall' input: 'v' "
                                "attr { key: 'Tin' value { list { type: DT_FLOAT } } } "
                                "attr { key: 'Tout' value { list { type: DT_FLOAT } } } "
                                "attr { key: 'f' value { func { name: 'gone' } } } }",
                                "inner:output:0"));
  ExpectError(CreateStatus(nested), Code::kInvalidArgument,
              {"node 'c/inner'", "(in function f)", "function 'gone'"});
  // A While whose body is missing.
  GraphDef loop = WithLibrary(
      R"(node { name: "w" op: "While" input: "x"
                attr { key: "T" value { list { type: DT_FLOAT } } }
                attr { key: "cond" value { func { name: "scale" } } }
                attr { key: "body" value { func { name: "no_body" } } } })",
      kTypedLibrary);
  ExpectError(CreateStatus(loop), Code::kInvalidArgument,
              {"node 'w' (op While)", "attr 'body' names function 'no_body'"});
}

TEST(LowerFunctions, SignatureMismatchNamesNodeAndFunction) {
  const std::string two_args = R"(
function { signature { name: "add" input_arg { name: "a" type: DT_FLOAT } input_arg { name: "b" type: DT_FLOAT }
                       output_arg { name: "c" type: DT_FLOAT } }
           node_def { name: "s" op: "AddV2" input: "a" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
           ret { key: "c" value: "s:z:0" } })";
  ExpectError(CreateStatus(WithLibrary(FloatCall("c", "add", "x"), two_args)),
              Code::kInvalidArgument, {"node 'c'", "function 'add'", "1 inputs", "takes 2"});
  GraphDef wrong_type = WithLibrary(
      R"(node { name: "i" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } }
         node { name: "c" op: "PartitionedCall" input: "i"
                attr { key: "Tin" value { list { type: DT_INT32 } } }
                attr { key: "Tout" value { list { type: DT_FLOAT } } }
                attr { key: "f" value { func { name: "scale" attr { key: "T" value { type: DT_FLOAT } } } } } })",
      kTypedLibrary);
  ExpectError(CreateStatus(wrong_type), Code::kInvalidArgument,
              {"node 'c'", "function 'scale'", "Tin is (int32)", "inputs are (float)"});
  GraphDef no_type = WithLibrary(R"(node { name: "c" op: "scale" input: "x" })", kTypedLibrary);
  ExpectError(CreateStatus(no_type), Code::kInvalidArgument, {"node 'c'", "function 'scale'", "T"});
}

TEST(LowerFunctions, MalformedBodiesAreErrorsNamingTheNode) {
  ExpectError(CreateStatus(WithLibrary(FloatCall("c", "f", "x"),
                                       FloatFunction("f", "", "nowhere:output:0"))),
              Code::kInvalidArgument, {"node 'c'", "function 'f'", "ret 'out'", "'nowhere"});
  ExpectError(CreateStatus(WithLibrary(FloatCall("c", "f", "x"),
                                       FloatFunction("f",
                                                     "node_def { name: 'n' op: 'Neg' input: 'v' "
                                                     "attr { key: 'T' value { type: DT_FLOAT } } }",
                                                     "n:y:3"))),
              Code::kInvalidArgument, {"node 'c'", "output 'y' of node 'c/n' has 1 tensors"});
  ExpectError(CreateStatus(WithLibrary(
                  FloatCall("c", "f", "x"),
                  FloatFunction("f", "node_def { name: 'n' op: 'Neg' input: 'v:zz' }", "n:y:0"))),
              Code::kInvalidArgument, {"node 'n'", "'zz' is not an index"});
  // A loop body that returns fewer results than the loop has variables.
  GraphDef loop = WithLibrary(
      R"(node { name: "w" op: "StatelessWhile" input: "x" input: "x"
                attr { key: "T" value { list { type: DT_FLOAT type: DT_FLOAT } } }
                attr { key: "cond" value { func { name: "scale" } } }
                attr { key: "body" value { func { name: "outer" } } } })",
      kTypedLibrary);
  ExpectError(CreateStatus(loop), Code::kInvalidArgument, {"node 'w/", "function '"});
}

TEST(LowerFunctions, GrowthPastTheNodeLimitIsAnError) {
  GraphDef graph = WithLibrary(R"(node { name: "c" op: "outer" input: "x" })", kTypedLibrary);
  ExpectError(LowerFunctions(TestRuntime().ops(), 6, &graph), Code::kInvalidArgument,
              {"limits.nodes", "6"});
}

TEST(LowerFunctions, IfWithNonBoolPredicateIsUnimplemented) {
  GraphDef graph = WithLibrary(
      R"(node { name: "i" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } }
         node { name: "c" op: "If" input: "i" input: "x"
                attr { key: "Tcond" value { type: DT_INT32 } }
                attr { key: "Tin" value { list { type: DT_FLOAT } } }
                attr { key: "Tout" value { list { type: DT_FLOAT } } }
                attr { key: "then_branch" value { func { name: "scale" } } }
                attr { key: "else_branch" value { func { name: "scale" } } } })",
      kTypedLibrary);
  ExpectError(CreateStatus(graph), Code::kUnimplemented, {"node 'c'", "int32", "bool"});
}

std::string FixturePath(const std::string& file) {
  return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/functions/" + file;
}

// TensorFlow's while_loop with x, n and a Const passed through the body unchanged.
TEST(LowerFunctions, LoopInvariantsEnterOnceAsConstants) {
  StatusOr<GraphDef> graph = ReadGraphDefFile(FixturePath("while_loop.pb"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_OK(LowerFunctions(TestRuntime().ops(), 10000, &*graph));
  int constant = 0, variable = 0, merges = 0;
  for (const NodeDef& n : graph->node) {
    if (n.op == "Merge") ++merges;
    if (n.op != "Enter") continue;
    EXPECT_EQ(n.attr.at("frame_name").s, "while");
    EXPECT_EQ(n.attr.at("parallel_iterations").i, 4);
    (n.attr.at("is_constant").b ? constant : variable)++;
  }
  // x (the second time it is passed), n, the Const w, and maximum_iterations (returned through
  // an Identity of its argument).
  EXPECT_EQ(constant, 4);
  EXPECT_EQ(variable, 3);  // loop counter, i, acc
  EXPECT_EQ(merges, 3);
}

TEST(FunctionLibrary, ReadsTensorFlowsLibrary) {
  StatusOr<GraphDef> graph = ReadGraphDefFile(FixturePath("while_loop.pb"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  StatusOr<FunctionLibrary> library = ParseFunctionLibrary(graph->library);
  ASSERT_TRUE(library.ok()) << library.status();
  ASSERT_EQ(library->functions.size(), 2u);
  const NodeDef* while_node = FindNode(*graph, "while");
  ASSERT_NE(while_node, nullptr);
  const FunctionDef* cond = library->Find(while_node->attr.at("cond").func->name);
  ASSERT_NE(cond, nullptr);
  EXPECT_EQ(cond->signature.input_arg.size(), 7u);
  ASSERT_EQ(cond->signature.output_arg.size(), 1u);
  EXPECT_EQ(cond->signature.output_arg[0].type, DT_BOOL);
  EXPECT_EQ(cond->ret.at(cond->signature.output_arg[0].name), "while/Identity:output:0");
  EXPECT_EQ(cond->arg_attr.at(0).at("_user_specified_name").s, "while/loop_counter");
  EXPECT_EQ(cond->attr.at("_construction_context").s, "kEagerRuntime");
  const auto less = std::find_if(cond->node_def.begin(), cond->node_def.end(),
                                 [](const NodeDef& n) { return n.op == "Less"; });
  ASSERT_NE(less, cond->node_def.end());
  EXPECT_EQ(less->attr.at("T").type, DT_INT32);

  ExpectError(ParseFunctionLibrary("\xff\xff").status(), Code::kInvalidArgument,
              {"FunctionDefLibrary"});
}

}  // namespace
}  // namespace cfx
