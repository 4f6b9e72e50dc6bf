// Cumsum and Cumprod: refusals of a bad axis by both the shape function and the kernel, naming
// the node; every combination of exclusive and reverse on lines longer than one work block,
// against a serial reference. TensorFlow's own results are checked in tf_op_values_test.cc.
#include <string>
#include <vector>

#include "array_test_util.h"

namespace cfx {
namespace {

using test::ExpectRefused;
using test::MakeScalar;
using test::MakeTensor;

NodeDef ScanNode(const std::string& op, DataType t, bool exclusive, bool reverse) {
  NodeDef node = test::MakeNode(op, 2,
                                {{"T", AttrValue::Type(t)},
                                 {"exclusive", AttrValue::Bool(exclusive)},
                                 {"reverse", AttrValue::Bool(reverse)}});
  node.name = "bad_" + op;
  return node;
}

TEST(Scan, BadAxisIsRefusedNamingTheNode) {
  const Tensor x = MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const char* op : {"Cumsum", "Cumprod"}) {
    const NodeDef node = ScanNode(op, DT_FLOAT, false, false);
    ExpectRefused(node, {x, MakeScalar<int32_t>(2)},
                  "axis 2 is out of range [-2, 2) for an input of shape [2,3]");
    ExpectRefused(node, {x, MakeScalar<int32_t>(-3)}, "axis -3 is out of range [-2, 2)");
    ExpectRefused(node, {MakeScalar(1.0f), MakeScalar<int32_t>(0)},
                  "axis 0 is out of range [0, 0) for an input of shape []");
    ExpectRefused(node, {x, test::MakeVector<int32_t>({0})}, "axis must be a scalar");
  }
}

// [outer, n, inner] with inner wider than a work block: each line against a serial scan.
TEST(Scan, EveryModeMatchesASerialScan) {
  const int64_t outer = 3, n = 5, inner = 300;
  const Tensor x = test::Iota<int64_t>({outer, n, inner}, -700);
  for (const char* op : {"Cumsum", "Cumprod"}) {
    const bool sum = std::string(op) == "Cumsum";
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(std::string(op) + (exclusive ? " exclusive" : "") +
                     (reverse ? " reverse" : ""));
        const Tensor out = test::RunNodeOk(ScanNode(op, DT_INT64, exclusive, reverse),
                                           {x, MakeScalar<int32_t>(1)});
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t c = 0; c < inner; ++c) {
            int64_t acc = sum ? 0 : 1;
            for (int64_t step = 0; step < n; ++step) {
              const int64_t j = reverse ? n - 1 - step : step;
              const int64_t at = (o * n + j) * inner + c;
              const int64_t next = sum ? acc + x.data<int64_t>()[at] : acc * x.data<int64_t>()[at];
              ASSERT_EQ(out.data<int64_t>()[at], exclusive ? acc : next)
                  << o << "," << j << "," << c;
              acc = next;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace cfx
