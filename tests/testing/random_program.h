// Random programs of nested while loops and conditionals (x <- tanh(x * a + b), counted loops,
// if/else on x), evaluated directly in C++ and emitted as GraphDefs of Switch, Merge, Enter,
// Exit, NextIteration and LoopCond whose arithmetic is scattered over given devices: the
// executor's control flow, split across partitions and tasks (EuroSys 2018 §4.4), is checked
// against direct evaluation.
#ifndef CONFLUX_TESTS_TESTING_RANDOM_PROGRAM_H_
#define CONFLUX_TESTS_TESTING_RANDOM_PROGRAM_H_

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "kernel_test_util.h"
#include "loop_graph.h"

namespace cfx::test {

// x <- tanh(x * a + b); or a loop running its body `trips` times; or if (x > threshold) then
// else.
struct Stmt {
  enum Kind { kAffine, kLoop, kIf } kind = kAffine;
  float a = 1, b = 0, threshold = 0;
  int trips = 0;
  int64_t parallel = 10;
  std::vector<Stmt> body, orelse;
};

inline std::vector<Stmt> RandomProgram(std::mt19937& rng, int depth) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto real = [&](float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(rng);
  };
  std::vector<Stmt> out;
  const int n = uniform(1, 3);
  for (int i = 0; i < n; ++i) {
    Stmt s;
    const int k = depth >= 3 ? 0 : uniform(0, 2);
    if (k == 1) {
      s.kind = Stmt::kLoop;
      s.trips = uniform(0, 6);
      static const int64_t kParallel[] = {1, 2, 10};
      s.parallel = kParallel[uniform(0, 2)];
      s.body = RandomProgram(rng, depth + 1);
    } else if (k == 2) {
      s.kind = Stmt::kIf;
      s.threshold = real(-0.5f, 0.5f);
      s.body = RandomProgram(rng, depth + 1);
      if (uniform(0, 3) > 0) s.orelse = RandomProgram(rng, depth + 1);
    } else {
      s.a = real(-1.5f, 1.5f);
      s.b = real(-0.5f, 0.5f);
    }
    out.push_back(std::move(s));
  }
  return out;
}

inline float Evaluate(const std::vector<Stmt>& program, float x) {
  for (const Stmt& s : program) {
    switch (s.kind) {
      case Stmt::kAffine:
        x = std::tanh(x * s.a + s.b);
        break;
      case Stmt::kLoop:
        for (int i = 0; i < s.trips; ++i) x = Evaluate(s.body, x);
        break;
      case Stmt::kIf:
        x = x > s.threshold ? Evaluate(s.body, x) : Evaluate(s.orelse, x);
        break;
    }
  }
  return x;
}

class Emitter {
 public:
  // Arithmetic goes to one of `devices` at random; control flow and constants to `home`.
  Emitter(std::mt19937* rng, std::vector<std::string> devices, std::string home = "/device:CPU:0")
      : rng_(rng), devices_(std::move(devices)), home_(std::move(home)) {}

  // Emits `program` applied to tensor `x`; `anchor` (a node of the current frame or branch, or
  // "") gives constants their frame. Returns the result tensor.
  std::string Emit(const std::vector<Stmt>& program, std::string x, const std::string& anchor) {
    for (const Stmt& s : program) {
      switch (s.kind) {
        case Stmt::kAffine:
          x = EmitAffine(s, x, anchor);
          break;
        case Stmt::kLoop:
          x = EmitLoop(s, x, anchor);
          break;
        case Stmt::kIf:
          x = EmitIf(s, x, anchor);
          break;
      }
    }
    return x;
  }
  GraphBuilder& builder() { return b_; }

 private:
  std::string Name(const std::string& base) { return base + "_" + std::to_string(next_++); }
  std::string ArithmeticDevice() {
    if (devices_.size() < 2) return devices_.empty() ? home_ : devices_[0];
    return devices_[std::uniform_int_distribution<size_t>(0, devices_.size() - 1)(*rng_)];
  }
  std::string Const(const Tensor& v, const std::string& anchor) {
    const std::string name = Name("c");
    NodeDef& n = b_.Const(name, v, home_);
    if (!anchor.empty()) n.input.push_back("^" + anchor);
    return name;
  }
  NodeDef& Op(const std::string& name, const std::string& op, std::vector<std::string> in,
              DataType t, const std::string& device = "") {
    return b_.Op(name, op, std::move(in), {{"T", AttrValue::Type(t)}},
                 device.empty() ? home_ : device);
  }

  std::string EmitAffine(const Stmt& s, const std::string& x, const std::string& anchor) {
    const std::string a = Const(MakeScalar<float>(s.a), anchor);
    const std::string b = Const(MakeScalar<float>(s.b), anchor);
    const std::string mul = Name("mul"), add = Name("add"), tanh = Name("tanh");
    Op(mul, "Mul", {x, a}, DT_FLOAT, ArithmeticDevice());
    Op(add, "AddV2", {mul, b}, DT_FLOAT, ArithmeticDevice());
    Op(tanh, "Tanh", {add}, DT_FLOAT, ArithmeticDevice());
    return tanh;
  }

  std::string EmitLoop(const Stmt& s, const std::string& x, const std::string& anchor) {
    const std::string frame = Name("frame");
    LoopOptions options{frame + "/", frame, s.parallel, anchor};
    return AddCountedLoop(b_, options, Const(MakeScalar<int32_t>(s.trips), anchor),
                          {{"x", x, DT_FLOAT}},
                          [&](const std::string& i, const std::vector<std::string>& v) {
                            return std::vector<std::string>{Emit(s.body, v[0], i)};
                          })[0];
  }

  std::string EmitIf(const Stmt& s, const std::string& x, const std::string& anchor) {
    const std::string p = Name("if") + "/";
    Op(p + "pred", "Greater", {x, Const(MakeScalar<float>(s.threshold), anchor)}, DT_FLOAT);
    Op(p + "switch", "Switch", {x, p + "pred"}, DT_FLOAT);
    Op(p + "pivot_t", "Identity", {p + "switch:1"}, DT_FLOAT);
    Op(p + "pivot_f", "Identity", {p + "switch:0"}, DT_FLOAT);
    const std::string then_x = Emit(s.body, p + "pivot_t", p + "pivot_t");
    const std::string else_x = Emit(s.orelse, p + "pivot_f", p + "pivot_f");
    b_.Op(p + "merge", "Merge", {else_x, then_x},
          {{"T", AttrValue::Type(DT_FLOAT)}, {"N", AttrValue::Int(2)}}, home_);
    return p + "merge";
  }

  std::mt19937* rng_;
  std::vector<std::string> devices_;
  std::string home_;
  GraphBuilder b_;
  int next_ = 0;
};

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TESTING_RANDOM_PROGRAM_H_
