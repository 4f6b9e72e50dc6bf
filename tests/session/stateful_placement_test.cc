// Stateful nodes keep one device in every signature of a session: a variable's initializer and
// its update, run as separate steps whose pruned graphs alone would place the variable on
// different devices, reach the same variable.
#include <gtest/gtest.h>

#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// v has no requested device. Alone with its initializer it would go to CPU:0 (ties go to the
// lowest index); "inc" takes v's reference and asks for CPU:1, which binds v there whenever inc
// is in the graph.
GraphDef Graph(const std::string& shared_name) {
  GraphBuilder b;
  b.Op("v", "VariableV2", {},
       {{"dtype", F()},
        {"shape", AttrValue::Shape(PartialTensorShape({2}))},
        {"shared_name", AttrValue::String(shared_name)}});
  b.Const("init_value", MakeVector<float>({1, 2}));
  b.Op("init", "Assign", {"v", "init_value"}, {{"T", F()}});
  b.Const("delta", MakeVector<float>({10, 20}));
  b.Op("inc", "AssignAdd", {"v", "delta"}, {{"T", F()}}, "/device:CPU:1");
  b.Op("read", "Identity", {"v"}, {{"T", F()}});
  return b.graph();
}

TEST(StatefulPlacement, InitializerAndUpdateReachTheSameVariable) {
  auto session = Session::Create(&TestRuntimeWith(2, 2), Graph("stateful_placement_v"));
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_OK((*session)->Run({}, {}, {"init"}, nullptr));
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({}, {"inc"}, {}, &out));
  ExpectTensorEqual(out[0], MakeVector<float>({11, 22}));
  ASSERT_OK((*session)->Run({}, {"read"}, {}, &out));
  ExpectTensorEqual(out[0], MakeVector<float>({11, 22}));
}

// The whole graph decides, also when the first signature run is the one that alone would put v
// elsewhere (here: reading it after an initializer of its own signature).
TEST(StatefulPlacement, AReadOfTheVariableRunsWhereTheVariableLives) {
  auto session = Session::Create(&TestRuntimeWith(2, 2), Graph("stateful_placement_w"));
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({}, {}, {"init"}, nullptr));
  ASSERT_OK((*session)->Run({}, {"read"}, {}, &out));
  ExpectTensorEqual(out[0], MakeVector<float>({1, 2}));
  ASSERT_OK((*session)->Run({}, {}, {"inc"}, nullptr));
  ASSERT_OK((*session)->Run({}, {"read"}, {}, &out));
  ExpectTensorEqual(out[0], MakeVector<float>({11, 22}));
}

}  // namespace
}  // namespace cfx
