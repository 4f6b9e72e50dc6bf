// Every op Conflux registers (the core's standard ops and the default config's plugins) has
// TensorFlow's OpDef: the same inputs and outputs, attrs with the same types, defaults, allowed
// values and minimums, and the same flags. TensorFlow's definitions are in
// tests/fixtures/tf/op_registry.pbtxt, written from TensorFlow's op registry by
// tests/fixtures/tf/make_op_registry.py (docs/tensorflow-compat.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/op_def.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {


// Ops TensorFlow does not have: Conflux's own. Empty today; an entry needs a reason.
const std::map<std::string, std::string>& ConfluxOnlyOps() {
  static const std::map<std::string, std::string> ops = {};
  return ops;
}

// Deliberate differences from TensorFlow's OpDef, each with its reason; the op is compared with
// the listed attrs left out of both sides.
struct Difference {
  std::vector<std::string> attrs_left_out;
  std::string reason;
};
const std::map<std::string, Difference>& DeliberateDifferences() {
  static const std::map<std::string, Difference> ops = {};
  return ops;
}

std::string FixtureDir() { return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/tf"; }

std::map<std::string, OpDef> TensorFlowOps() {
  std::ifstream in(FixtureDir() + "/op_registry.pbtxt");
  std::ostringstream text;
  text << in.rdbuf();
  StatusOr<std::vector<OpDef>> ops = ParseOpList(text.str(), GraphFormat::kText);
  EXPECT_TRUE(ops.ok()) << ops.status();
  std::map<std::string, OpDef> by_name;
  if (ops.ok())
    for (OpDef& op : *ops) by_name[op.name] = std::move(op);
  return by_name;
}

const std::map<std::string, OpDef>& Fixture() {
  static const std::map<std::string, OpDef> ops = TensorFlowOps();
  return ops;
}

std::string Describe(const ArgDef& arg) {
  std::ostringstream s;
  s << arg.name << ": ";
  if (arg.is_ref) s << "Ref(";
  if (!arg.number_attr.empty()) s << arg.number_attr << " * ";
  if (!arg.type_attr.empty()) s << arg.type_attr;
  if (!arg.type_list_attr.empty()) s << arg.type_list_attr;
  if (arg.type != DT_INVALID) s << DataTypeString(arg.type);
  if (arg.is_ref) s << ")";
  return s.str();
}

// Allowed values are a set: their order in the list carries no meaning.
std::string DescribeAllowed(const AttrValue& allowed) {
  std::vector<std::string> items;
  for (DataType t : allowed.list.type) items.push_back(DataTypeString(t));
  for (const std::string& s : allowed.list.s) items.push_back("'" + s + "'");
  std::sort(items.begin(), items.end());
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "}";
}

std::string Describe(const AttrDef& attr) {
  std::ostringstream s;
  s << attr.name << ": " << attr.type;
  if (attr.allowed_values) s << " in " << DescribeAllowed(*attr.allowed_values);
  if (attr.has_minimum) s << " >= " << attr.minimum;
  if (attr.default_value) s << " = " << attr.default_value->DebugString();
  return s.str();
}

// One line per input, output and attr (attrs by name), then the flags: a failing comparison
// shows the lines that differ.
std::string Describe(const OpDef& op, const std::vector<std::string>& attrs_left_out) {
  std::ostringstream s;
  for (const ArgDef& arg : op.input_arg) s << "input " << Describe(arg) << "\n";
  for (const ArgDef& arg : op.output_arg) s << "output " << Describe(arg) << "\n";
  std::vector<std::string> attrs;
  for (const AttrDef& attr : op.attr)
    if (std::find(attrs_left_out.begin(), attrs_left_out.end(), attr.name) == attrs_left_out.end())
      attrs.push_back("attr " + Describe(attr));
  std::sort(attrs.begin(), attrs.end());
  for (const std::string& a : attrs) s << a << "\n";
  s << "is_stateful=" << op.is_stateful << " is_commutative=" << op.is_commutative
    << " is_aggregate=" << op.is_aggregate
    << " allows_uninitialized_input=" << op.allows_uninitialized_input << "\n";
  return s.str();
}

TEST(TensorFlowOpDefs, FixtureParses) {
  // Over 100 ops when written; fewer means the file is missing or truncated.
  EXPECT_GE(Fixture().size(), 100u) << FixtureDir() << "/op_registry.pbtxt";
}

TEST(TensorFlowOpDefs, EveryRegisteredOpIsTensorFlowsOrListed) {
  for (const std::string& name : test::DefaultConfigRuntime().ops().ListOps()) {
    EXPECT_TRUE(Fixture().count(name) || ConfluxOnlyOps().count(name))
        << name << " is registered but neither in " << FixtureDir()
        << "/op_registry.pbtxt nor a Conflux-only op: add it to op_names.txt and rerun "
           "make_op_registry.py";
  }
  for (const auto& [name, reason] : ConfluxOnlyOps())
    EXPECT_FALSE(Fixture().count(name)) << name << " is TensorFlow's, not Conflux-only";
}

TEST(TensorFlowOpDefs, EveryFixtureOpIsRegistered) {
  for (const auto& [name, op] : Fixture())
    EXPECT_NE(test::DefaultConfigRuntime().ops().LookUp(name), nullptr)
        << name << " is in the fixture but Conflux does not register it";
}

TEST(TensorFlowOpDefs, RegisteredOpDefsEqualTensorFlows) {
  int compared = 0;
  for (const std::string& name : test::DefaultConfigRuntime().ops().ListOps()) {
    auto tf = Fixture().find(name);
    if (tf == Fixture().end()) continue;
    std::vector<std::string> left_out;
    if (auto d = DeliberateDifferences().find(name); d != DeliberateDifferences().end())
      left_out = d->second.attrs_left_out;
    const OpDef& ours = test::DefaultConfigRuntime().ops().LookUp(name)->def;
    EXPECT_EQ(Describe(ours, left_out), Describe(tf->second, left_out))
        << name << ": Conflux's OpDef (left) differs from TensorFlow's (right)";
    ++compared;
  }
  EXPECT_GE(compared, 100);
}

// The comparison sees what it is meant to see: a changed default, allowed value or flag differs.
TEST(TensorFlowOpDefs, DescribeTellsDefinitionsApart) {
  auto build = [](OpDefBuilder b) {
    StatusOr<OpRegistration> reg = b.Build();
    EXPECT_TRUE(reg.ok()) << reg.status();
    return reg.ok() ? reg->def : OpDef();
  };
  const OpDef base = build(
      OpDefBuilder("Op").Input("x: T").Output("y: T").Attr("T: {float, int32}").Attr("k: int = 1"));
  const OpDef other_order = build(
      OpDefBuilder("Op").Input("x: T").Output("y: T").Attr("k: int = 1").Attr("T: {int32, float}"));
  EXPECT_EQ(Describe(base, {}), Describe(other_order, {}));
  const OpDef other_default = build(
      OpDefBuilder("Op").Input("x: T").Output("y: T").Attr("T: {float, int32}").Attr("k: int = 2"));
  EXPECT_NE(Describe(base, {}), Describe(other_default, {}));
  const OpDef other_types =
      build(OpDefBuilder("Op").Input("x: T").Output("y: T").Attr("T: {float}").Attr("k: int = 1"));
  EXPECT_NE(Describe(base, {}), Describe(other_types, {}));
  const OpDef stateful = build(OpDefBuilder("Op")
                                   .Input("x: T")
                                   .Output("y: T")
                                   .Attr("T: {float, int32}")
                                   .Attr("k: int = 1")
                                   .SetIsStateful());
  EXPECT_NE(Describe(base, {}), Describe(stateful, {}));
  EXPECT_EQ(Describe(base, {"k"}), Describe(other_default, {"k"}));
}

}  // namespace
}  // namespace cfx
