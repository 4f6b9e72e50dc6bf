// Optimizer updates through sessions: ApplyMomentum, ApplyAdam and ApplyRMSProp on reference
// variables and their Resource* forms on resource variables, float and double, with and without
// Nesterov and use_locking, step after step against reference updates written here (in double,
// from the formulas as TensorFlow documents them); their errors; and variables that one op names
// twice or that two concurrent ops name in swapped roles.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "conflux/kernel_runner.h"
#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// An optimizer op: its variables (var first), the rest of its inputs in order, its attrs.
struct Optimizer {
  std::string name;
  std::vector<std::string> variables;
  std::vector<std::string> inputs;
  bool has_nesterov;
};

const Optimizer kMomentum{"Momentum", {"var", "accum"}, {"lr", "grad", "momentum"}, true};
const Optimizer kAdam{"Adam",
                      {"var", "m", "v"},
                      {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"},
                      true};
const Optimizer kRMSProp{
    "RMSProp", {"var", "ms", "mom"}, {"lr", "rho", "momentum", "epsilon", "grad"}, false};

using Values = std::map<std::string, std::vector<double>>;  // variable name -> value
using Scalars = std::map<std::string, double>;              // scalar input name -> value

// One step of `op` on `s` in double: the updates as TensorFlow's documentation states them.
void ReferenceStep(const Optimizer& op, bool nesterov, const Scalars& h,
                   const std::vector<double>& g, Values& s) {
  std::vector<double>& var = s["var"];
  for (size_t i = 0; i < var.size(); ++i) {
    if (op.name == "Momentum") {
      double& accum = s["accum"][i];
      accum = h.at("momentum") * accum + g[i];
      var[i] -=
          nesterov ? h.at("lr") * g[i] + h.at("lr") * h.at("momentum") * accum : h.at("lr") * accum;
    } else if (op.name == "Adam") {
      const double b1 = h.at("beta1"), b2 = h.at("beta2");
      const double lr_t =
          h.at("lr") * std::sqrt(1 - h.at("beta2_power")) / (1 - h.at("beta1_power"));
      double &m = s["m"][i], &v = s["v"][i];
      m = b1 * m + (1 - b1) * g[i];
      v = b2 * v + (1 - b2) * g[i] * g[i];
      const double numerator = nesterov ? b1 * m + (1 - b1) * g[i] : m;
      var[i] -= lr_t * numerator / (std::sqrt(v) + h.at("epsilon"));
    } else {  // RMSProp
      double &ms = s["ms"][i], &mom = s["mom"][i];
      ms = h.at("rho") * ms + (1 - h.at("rho")) * g[i] * g[i];
      mom = h.at("momentum") * mom + h.at("lr") * g[i] / std::sqrt(ms + h.at("epsilon"));
      var[i] -= mom;
    }
  }
}

// The hyperparameters of step `k` (1-based): Adam's beta powers advance as its Python optimizer
// advances them.
Scalars HyperParameters(const Optimizer& op, int k) {
  if (op.name == "Momentum") return {{"lr", 0.1}, {"momentum", 0.9}};
  if (op.name == "Adam")
    return {{"lr", 0.05},
            {"beta1", 0.9},
            {"beta2", 0.999},
            {"epsilon", 1e-7},
            {"beta1_power", std::pow(0.9, k)},
            {"beta2_power", std::pow(0.999, k)}};
  return {{"lr", 0.05}, {"rho", 0.9}, {"momentum", 0.5}, {"epsilon", 1e-6}};
}

std::vector<double> Gradient(int k, size_t n) {
  std::vector<double> g(n);
  for (size_t i = 0; i < n; ++i) g[i] = std::sin(1.7 * static_cast<double>(i) + k) * (k % 2 + 1);
  return g;
}

Values InitialValues(const Optimizer& op) {
  Values s;
  s["var"] = {1, -2, 3, 0.5, -0.25};
  for (size_t k = 1; k < op.variables.size(); ++k) {
    // Accumulators of squares (v, ms) must be >= 0.
    s[op.variables[k]] = {0.2 * k, 0.1, 0.3, 0.05 * k, 0.4};
  }
  return s;
}

Tensor Typed(DataType t, const std::vector<double>& v) {
  if (t == DT_DOUBLE) return MakeVector<double>(v);
  return MakeVector<float>(std::vector<float>(v.begin(), v.end()));
}
Tensor TypedScalar(DataType t, double v) {
  return t == DT_DOUBLE ? MakeScalar<double>(v) : MakeScalar<float>(static_cast<float>(v));
}

struct Config {
  bool resource;
  DataType dtype;
  bool nesterov;
  bool use_locking;
  std::string Name(const Optimizer& op) const {
    return op.name + (resource ? "_resource" : "_ref") + (dtype == DT_DOUBLE ? "_f64" : "_f32") +
           (nesterov ? "_nesterov" : "") + (use_locking ? "_locked" : "");
  }
};

// Per variable x: a variable (VariableV2 or VarHandleOp, shared name `prefix`x, shape [n]), a
// placeholder x_init with an initializer init_x, and read_x. Placeholders for the other inputs;
// "step" is the optimizer op.
GraphDef OptimizerGraph(const Optimizer& op, const Config& c, const std::string& prefix,
                        int64_t n) {
  GraphBuilder b;
  std::vector<std::string> step_inputs;
  for (const std::string& x : op.variables) {
    const std::vector<std::pair<std::string, AttrValue>> attrs = {
        {"dtype", T(c.dtype)},
        {"shape", AttrValue::Shape(PartialTensorShape({n}))},
        {"shared_name", AttrValue::String(prefix + x)}};
    b.Op(x, c.resource ? "VarHandleOp" : "VariableV2", {}, attrs);
    b.Placeholder(x + "_init", c.dtype);
    if (c.resource) {
      b.Op("init_" + x, "AssignVariableOp", {x, x + "_init"}, {{"dtype", T(c.dtype)}});
      b.Op("read_" + x, "ReadVariableOp", {x}, {{"dtype", T(c.dtype)}});
    } else {
      b.Op("init_" + x, "Assign", {x, x + "_init"}, {{"T", T(c.dtype)}});
      b.Op("read_" + x, "Identity", {x}, {{"T", T(c.dtype)}});
    }
    step_inputs.push_back(x);
  }
  for (const std::string& in : op.inputs) {
    b.Placeholder(in, c.dtype);
    step_inputs.push_back(in);
  }
  std::vector<std::pair<std::string, AttrValue>> attrs = {
      {"T", T(c.dtype)}, {"use_locking", AttrValue::Bool(c.use_locking)}};
  if (op.has_nesterov) attrs.push_back({"use_nesterov", AttrValue::Bool(c.nesterov)});
  b.Op("step", (c.resource ? "ResourceApply" : "Apply") + op.name, step_inputs, attrs);
  return b.graph();
}

// Feeds for one step: the hyperparameters and the gradient.
std::vector<std::pair<std::string, Tensor>> StepFeeds(const Scalars& h, DataType t,
                                                      const std::vector<double>& grad) {
  std::vector<std::pair<std::string, Tensor>> feeds = {{"grad", Typed(t, grad)}};
  for (const auto& [name, value] : h) feeds.push_back({name, TypedScalar(t, value)});
  return feeds;
}

void ExpectValues(const Values& expected, Session& session, const Optimizer& op, DataType t) {
  std::vector<std::string> reads;
  for (const std::string& x : op.variables) reads.push_back("read_" + x);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, reads, {}, &out));
  const double tol = t == DT_DOUBLE ? 1e-12 : 2e-5;
  for (size_t k = 0; k < op.variables.size(); ++k) {
    SCOPED_TRACE(op.variables[k]);
    ExpectTensorNear(Typed(t, expected.at(op.variables[k])), out[k], tol, tol);
  }
}

TEST(Optimizers, MatchTheReferenceStepByStep) {
  for (const Optimizer* op : {&kMomentum, &kAdam, &kRMSProp}) {
    for (bool resource : {false, true}) {
      for (DataType dtype : {DT_FLOAT, DT_DOUBLE}) {
        for (bool nesterov : {false, true}) {
          if (nesterov && !op->has_nesterov) continue;
          for (bool use_locking : {false, true}) {
            const Config c{resource, dtype, nesterov, use_locking};
            SCOPED_TRACE(c.Name(*op));
            auto session =
                NewTestSession(OptimizerGraph(*op, c, "ref_step_" + c.Name(*op) + "_", 5));
            ASSERT_NE(session, nullptr);
            Values state = InitialValues(*op);
            std::vector<std::pair<std::string, Tensor>> init;
            std::vector<std::string> initializers;
            for (const std::string& x : op->variables) {
              init.push_back({x + "_init", Typed(dtype, state[x])});
              initializers.push_back("init_" + x);
            }
            ASSERT_OK(session->Run(init, {}, initializers, nullptr));
            for (int k = 1; k <= 4; ++k) {
              SCOPED_TRACE("step " + std::to_string(k));
              const Scalars h = HyperParameters(*op, k);
              const std::vector<double> grad = Gradient(k, 5);
              ReferenceStep(*op, nesterov, h, grad, state);
              std::vector<Tensor> out;
              ASSERT_OK(session->Run(
                  StepFeeds(h, dtype, grad),
                  resource ? std::vector<std::string>{} : std::vector<std::string>{"step"},
                  resource ? std::vector<std::string>{"step"} : std::vector<std::string>{}, &out));
              // The reference form's output is var itself, already updated.
              if (!resource) ExpectTensorNear(Typed(dtype, state["var"]), out[0], 2e-5, 2e-5);
              ExpectValues(state, *session, *op, dtype);
            }
          }
        }
      }
    }
  }
}

// Runs the initializers of `vars` with the values of InitialValues(op), `sizes` overriding the
// length of some.
Status Initialize(Session& session, const Optimizer& op, DataType t,
                  const std::vector<std::string>& vars, std::map<std::string, size_t> sizes = {}) {
  Values state = InitialValues(op);
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> targets;
  for (const std::string& x : vars) {
    std::vector<double> v = state[x];
    if (sizes.count(x)) v.resize(sizes[x], 1.0);
    feeds.push_back({x + "_init", Typed(t, v)});
    targets.push_back("init_" + x);
  }
  return session.Run(feeds, {}, targets, nullptr);
}

void ExpectErrorContaining(const Status& s, Code code, const std::vector<std::string>& parts) {
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& part : parts)
    EXPECT_NE(s.message().find(part), std::string::npos) << "\"" << part << "\" not in: " << s;
}

TEST(Optimizers, UninitializedSlotsAreErrorsNamingTheNodeAndInput) {
  const Config ref{false, DT_FLOAT, false, true}, resource{true, DT_FLOAT, false, false};
  auto session = NewTestSession(OptimizerGraph(kMomentum, ref, "uninit_ref_", 5));
  ASSERT_NE(session, nullptr);
  ASSERT_OK(Initialize(*session, kMomentum, DT_FLOAT, {"var"}));
  Status s = session->Run(StepFeeds(HyperParameters(kMomentum, 1), DT_FLOAT, Gradient(1, 5)), {},
                          {"step"}, nullptr);
  ExpectErrorContaining(s, Code::kFailedPrecondition, {"node step", "uninitialized", "accum"});

  session = NewTestSession(OptimizerGraph(kAdam, resource, "uninit_resource_", 5));
  ASSERT_NE(session, nullptr);
  ASSERT_OK(Initialize(*session, kAdam, DT_FLOAT, {"var", "v"}));
  s = session->Run(StepFeeds(HyperParameters(kAdam, 1), DT_FLOAT, Gradient(1, 5)), {}, {"step"},
                   nullptr);
  ExpectErrorContaining(s, Code::kFailedPrecondition,
                        {"node step (op ResourceApplyAdam)", "m (input 1)", "uninitialized"});
  // Nothing was updated.
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"read_var"}, {}, &out));
  ExpectTensorEqual(Typed(DT_FLOAT, InitialValues(kAdam)["var"]), out[0]);
}

TEST(Optimizers, BadShapesAndTypesAreErrorsNamingTheInput) {
  const Config resource{true, DT_FLOAT, false, false}, ref{false, DT_DOUBLE, true, false};
  auto session = NewTestSession(OptimizerGraph(kRMSProp, resource, "shapes_resource_", 5));
  ASSERT_NE(session, nullptr);
  const Scalars h = HyperParameters(kRMSProp, 1);
  // A slot of another shape than var (resource variables hold any shape).
  ASSERT_OK(Initialize(*session, kRMSProp, DT_FLOAT, {"var", "ms", "mom"}, {{"mom", 3}}));
  Status s = session->Run(StepFeeds(h, DT_FLOAT, Gradient(1, 5)), {}, {"step"}, nullptr);
  ExpectErrorContaining(
      s, Code::kInvalidArgument,
      {"node step", "var has shape [5] and mom has shape [3]; they must be equal"});
  ASSERT_OK(Initialize(*session, kRMSProp, DT_FLOAT, {"mom"}));
  s = session->Run(StepFeeds(h, DT_FLOAT, Gradient(1, 4)), {}, {"step"}, nullptr);
  ExpectErrorContaining(s, Code::kInvalidArgument, {"var has shape [5] and grad has shape [4]"});
  auto feeds = StepFeeds(h, DT_FLOAT, Gradient(1, 5));
  for (auto& [name, value] : feeds)
    if (name == "rho") value = MakeVector<float>({0.9f, 0.9f});
  s = session->Run(feeds, {}, {"step"}, nullptr);
  ExpectErrorContaining(s, Code::kInvalidArgument, {"rho must be a scalar, got shape [2]"});
  // The failed steps left every variable as it was.
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"read_var", "read_ms"}, {}, &out));
  ExpectTensorEqual(Typed(DT_FLOAT, InitialValues(kRMSProp)["var"]), out[0]);
  ExpectTensorEqual(Typed(DT_FLOAT, InitialValues(kRMSProp)["ms"]), out[1]);

  // A resource slot holding another dtype than T.
  GraphBuilder b;
  b.Op("h", "VarHandleOp", {},
       {{"dtype", T(DT_DOUBLE)},
        {"shape", AttrValue::Shape(PartialTensorShape({2}))},
        {"shared_name", AttrValue::String("dtype_accum")}});
  b.Op("v", "VarHandleOp", {},
       {{"dtype", T(DT_FLOAT)},
        {"shape", AttrValue::Shape(PartialTensorShape({2}))},
        {"shared_name", AttrValue::String("dtype_var")}});
  b.Const("accum_value", MakeVector<double>({1, 2}));
  b.Const("var_value", MakeVector<float>({1, 2}));
  b.Op("init_accum", "AssignVariableOp", {"h", "accum_value"}, {{"dtype", T(DT_DOUBLE)}});
  b.Op("init_var", "AssignVariableOp", {"v", "var_value"}, {{"dtype", T(DT_FLOAT)}});
  b.Const("lr", MakeScalar<float>(1));
  b.Const("grad", MakeVector<float>({1, 1}));
  b.Op("step", "ResourceApplyMomentum", {"v", "h", "lr", "grad", "lr"}, {{"T", T(DT_FLOAT)}});
  session = NewTestSession(b.graph());
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"init_accum", "init_var"}, nullptr));
  ExpectErrorContaining(session->Run({}, {}, {"step"}, nullptr), Code::kInvalidArgument,
                        {"accum: the variable holds double but T is float"});

  // Reference variables of different shapes.
  GraphDef g = OptimizerGraph(kMomentum, ref, "shapes_ref_", 5);
  for (NodeDef& n : g.node)
    if (n.name == "accum") n.attr["shape"] = AttrValue::Shape(PartialTensorShape({4}));
  session = NewTestSession(g);
  ASSERT_NE(session, nullptr);
  ASSERT_OK(Initialize(*session, kMomentum, DT_DOUBLE, {"var", "accum"}, {{"accum", 4}}));
  s = session->Run(StepFeeds(HyperParameters(kMomentum, 1), DT_DOUBLE, Gradient(1, 5)), {"step"},
                   {}, nullptr);
  ExpectErrorContaining(s, Code::kInvalidArgument, {"var has shape [5] and accum has shape [4]"});
}

// ApplyMomentum(x, x, ...): accum and var are one buffer, locked once (use_locking does not
// deadlock on itself). Element-wise: a = x * momentum + g; then x = a - lr * a.
TEST(Optimizers, AVariableNamedTwiceIsLockedOnce) {
  for (bool resource : {false, true}) {
    SCOPED_TRACE(resource ? "resource" : "ref");
    GraphBuilder b;
    b.Op("x", resource ? "VarHandleOp" : "VariableV2", {},
         {{"dtype", T(DT_FLOAT)},
          {"shape", AttrValue::Shape(PartialTensorShape({3}))},
          {"shared_name", AttrValue::String(resource ? "twice_resource" : "twice_ref")}});
    b.Const("value", MakeVector<float>({1, 2, 3}));
    if (resource)
      b.Op("init", "AssignVariableOp", {"x", "value"}, {{"dtype", T(DT_FLOAT)}});
    else
      b.Op("init", "Assign", {"x", "value"}, {{"T", T(DT_FLOAT)}});
    b.Const("lr", MakeScalar<float>(0.5f));
    b.Const("momentum", MakeScalar<float>(2));
    b.Const("grad", MakeVector<float>({1, 1, 1}));
    b.Op("step", resource ? "ResourceApplyMomentum" : "ApplyMomentum",
         {"x", "x", "lr", "grad", "momentum"},
         {{"T", T(DT_FLOAT)}, {"use_locking", AttrValue::Bool(true)}});
    if (resource)
      b.Op("read", "ReadVariableOp", {"x"}, {{"dtype", T(DT_FLOAT)}});
    else
      b.Op("read", "Identity", {"x"}, {{"T", T(DT_FLOAT)}});
    auto session = NewTestSession(b.graph());
    ASSERT_NE(session, nullptr);
    ASSERT_OK(session->Run({}, {}, {"init"}, nullptr));
    ASSERT_OK(session->Run({}, {}, {"step"}, nullptr));
    std::vector<Tensor> out;
    ASSERT_OK(session->Run({}, {"read"}, {}, &out));
    // a = {3, 5, 7}; x = a / 2.
    ExpectTensorEqual(MakeVector<float>({1.5f, 2.5f, 3.5f}), out[0]);
  }
}

// Two ops naming variables a and b in swapped roles run concurrently, within steps and from
// several threads: the locks are taken in one order, so no step deadlocks. With lr = 0,
// momentum = 1 and grad = 1 each op adds 1 to its accum and leaves its var, so the order of the
// updates does not matter: after n rounds a and b are n above where they started.
TEST(Optimizers, OpsSharingVariablesInSwappedRolesDoNotDeadlock) {
  for (bool resource : {false, true}) {
    SCOPED_TRACE(resource ? "resource" : "ref");
    GraphBuilder b;
    for (const char* x : {"a", "b"}) {
      b.Op(x, resource ? "VarHandleOp" : "VariableV2", {},
           {{"dtype", T(DT_FLOAT)},
            {"shape", AttrValue::Shape(PartialTensorShape({1000}))},
            {"shared_name",
             AttrValue::String(std::string("swapped_") + x + (resource ? "_resource" : "_ref"))}});
      b.Const(std::string(x) + "_value", MakeTensor<float>({1000}, std::vector<float>(1000, 0)));
      if (resource)
        b.Op(std::string("init_") + x, "AssignVariableOp", {x, std::string(x) + "_value"},
             {{"dtype", T(DT_FLOAT)}});
      else
        b.Op(std::string("init_") + x, "Assign", {x, std::string(x) + "_value"},
             {{"T", T(DT_FLOAT)}});
    }
    b.Const("lr", MakeScalar<float>(0));
    b.Const("one", MakeScalar<float>(1));
    b.Const("grad", MakeTensor<float>({1000}, std::vector<float>(1000, 1)));
    const std::string op = resource ? "ResourceApplyMomentum" : "ApplyMomentum";
    const std::vector<std::pair<std::string, AttrValue>> attrs = {
        {"T", T(DT_FLOAT)}, {"use_locking", AttrValue::Bool(true)}};
    b.Op("step_ab", op, {"a", "b", "lr", "grad", "one"}, attrs);
    b.Op("step_ba", op, {"b", "a", "lr", "grad", "one"}, attrs);
    if (resource) {
      b.Op("read_a", "ReadVariableOp", {"a"}, {{"dtype", T(DT_FLOAT)}});
      b.Op("read_b", "ReadVariableOp", {"b"}, {{"dtype", T(DT_FLOAT)}});
    } else {
      b.Op("read_a", "Identity", {"a"}, {{"T", T(DT_FLOAT)}});
      b.Op("read_b", "Identity", {"b"}, {{"T", T(DT_FLOAT)}});
    }
    auto session = NewTestSession(b.graph());
    ASSERT_NE(session, nullptr);
    ASSERT_OK(session->Run({}, {}, {"init_a", "init_b"}, nullptr));
    constexpr int kThreads = 3, kRounds = 100;
    std::vector<std::thread> threads;
    std::vector<Status> status(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRounds && status[t].ok(); ++r)
          status[t] = session->Run({}, {}, {"step_ab", "step_ba"}, nullptr);
      });
    }
    for (std::thread& t : threads) t.join();
    for (const Status& s : status) ASSERT_OK(s);
    std::vector<Tensor> out;
    ASSERT_OK(session->Run({}, {"read_a", "read_b"}, {}, &out));
    const std::vector<float> expected(1000, kThreads * kRounds);
    ExpectTensorEqual(MakeTensor<float>({1000}, expected), out[0]);
    ExpectTensorEqual(MakeTensor<float>({1000}, expected), out[1]);
  }
}

// The shape functions: scalars are scalars; var, its slots and grad merge into out's shape. The
// resource forms see handles, so only their scalars are checked.
TEST(Optimizers, ShapeInference) {
  using P = PartialTensorShape;
  const P scalar(std::vector<int64_t>{}), unknown = P::UnknownRank();
  auto infer = [](const std::string& op, const std::vector<P>& shapes) {
    NodeDef n = MakeNode(op, static_cast<int>(shapes.size()), {{"T", T(DT_FLOAT)}});
    return InferNodeShapes(TestRuntime(), n, shapes,
                           std::vector<const Tensor*>(shapes.size(), nullptr));
  };
  auto out = infer("ApplyMomentum", {P({-1, 3}), P({2, -1}), scalar, unknown, scalar});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({2, 3}));
  out = infer("ApplyAdam",
              {P({-1}), unknown, P({4}), scalar, scalar, scalar, scalar, scalar, scalar, P({-1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({4}));
  out = infer("ApplyRMSProp", {P({3}), P({3}), P({3}), scalar, scalar, scalar, scalar, P({2})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("var has shape [3] and grad has shape [2]"),
            std::string::npos)
      << out.status();
  out = infer("ApplyAdam",
              {P({3}), P({3}), P({3}), scalar, P({1}), scalar, scalar, scalar, scalar, P({3})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("beta2_power must be a scalar"), std::string::npos)
      << out.status();
  EXPECT_TRUE(infer("ResourceApplyRMSProp",
                    {scalar, scalar, scalar, scalar, scalar, scalar, scalar, P({7})})
                  .ok());
  EXPECT_FALSE(infer("ResourceApplyMomentum", {scalar, scalar, P({2}), P({7}), scalar}).ok());
  // The resource forms have no outputs; the reference forms one, the variable.
  for (const char* op : {"ResourceApplyMomentum", "ResourceApplyAdam", "ResourceApplyRMSProp"})
    EXPECT_TRUE(TestRuntime().ops().LookUp(op)->def.output_arg.empty()) << op;
}

}  // namespace
}  // namespace cfx
