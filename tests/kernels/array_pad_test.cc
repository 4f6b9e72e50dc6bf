// Pad, PadV2, MirrorPad and MirrorPadGrad: refusals of bad paddings by both the shape functions
// and the kernels, naming the node, and Pad's placement of the input checked element by element.
// TensorFlow's own results on these ops are checked in tf_op_values_test.cc.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "array_test_util.h"

namespace cfx {
namespace {

using test::ExpectRefused;
using test::MakeNode;
using test::MakeScalar;
using test::MakeTensor;
using test::MakeVector;

NodeDef PadNode(const std::string& op, const std::string& mode = "") {
  NodeDef node = MakeNode(op, op == "PadV2" ? 3 : 2, {{"T", AttrValue::Type(DT_FLOAT)}});
  node.name = "bad_" + op;
  if (!mode.empty()) node.attr["mode"] = AttrValue::String(mode);
  return node;
}

Tensor Input(const TensorShape& shape) {
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

TEST(PadOps, BadPaddingsAreRefusedNamingTheNode) {
  const Tensor x = Input({2, 3});
  for (const char* op : {"Pad", "MirrorPad"}) {
    NodeDef node = PadNode(op, std::string(op) == "MirrorPad" ? "SYMMETRIC" : "");
    ExpectRefused(node, {x, MakeTensor<int32_t>({2, 3}, {0, 0, 0, 0, 0, 0})},
                  "paddings must be a matrix of shape [");
    ExpectRefused(node, {x, MakeTensor<int32_t>({3, 2}, {0, 0, 0, 0, 0, 0})},
                  "paddings must be a matrix of shape [2,2]");
    ExpectRefused(node, {x, MakeTensor<int32_t>({2, 2}, {0, 1, -1, 0})},
                  "paddings must be >= 0, got [-1, 0] for dimension 1");
  }
  NodeDef v2 = PadNode("PadV2");
  ExpectRefused(v2, {x, MakeTensor<int32_t>({2, 2}, {1, 1, 1, 1}), MakeVector<float>({1, 2})},
                "constant_values must be a scalar");
}

TEST(PadOps, MirrorPaddingLargerThanTheInputIsRefused) {
  const Tensor x = Input({2, 3});
  ExpectRefused(PadNode("MirrorPad", "REFLECT"), {x, MakeTensor<int32_t>({2, 2}, {0, 0, 3, 0})},
                "paddings [3, 0] of dimension 1 must be at most 2 in REFLECT mode");
  ExpectRefused(PadNode("MirrorPad", "SYMMETRIC"), {x, MakeTensor<int32_t>({2, 2}, {0, 0, 0, 4})},
                "paddings [0, 4] of dimension 1 must be at most 3 in SYMMETRIC mode");
  // At the limits both modes are fine.
  EXPECT_EQ(test::RunNodeOk(PadNode("MirrorPad", "REFLECT"),
                            {x, MakeTensor<int32_t>({2, 2}, {1, 1, 2, 2})})
                .shape(),
            TensorShape({4, 7}));
  EXPECT_EQ(test::RunNodeOk(PadNode("MirrorPad", "SYMMETRIC"),
                            {x, MakeTensor<int32_t>({2, 2}, {2, 2, 3, 3})})
                .shape(),
            TensorShape({6, 9}));
  // The gradient's output is the smaller tensor: its dims bound the paddings.
  ExpectRefused(PadNode("MirrorPadGrad", "REFLECT"),
                {Input({2, 5}), MakeTensor<int32_t>({2, 2}, {0, 0, 2, 1})},
                "paddings [2, 1] of dimension 1 must be at most 1 in REFLECT mode");
  ExpectRefused(PadNode("MirrorPadGrad", "SYMMETRIC"),
                {Input({2, 5}), MakeTensor<int32_t>({2, 2}, {0, 0, 3, 3})},
                "dimension 1 of size 5 is smaller than its paddings [3, 3]");
}

// Pad's zeros and PadV2's constant around the input, checked element by element against the
// definition (output[i + before] = input[i], everything else the constant).
TEST(PadOps, PadPlacesTheInputAtTheBeforePadding) {
  const Tensor x = Input({2, 3, 4});
  const std::vector<int64_t> pads = {1, 0, 2, 1, 0, 3};
  Tensor p(DT_INT64, TensorShape({3, 2}));
  for (int i = 0; i < 6; ++i) p.data<int64_t>()[i] = pads[i];
  NodeDef v2 = PadNode("PadV2");
  v2.attr["Tpaddings"] = AttrValue::Type(DT_INT64);
  const Tensor out = test::RunNodeOk(v2, {x, p, MakeScalar(-7.0f)});
  ASSERT_EQ(out.shape(), TensorShape({3, 6, 7}));
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 6; ++b)
      for (int64_t c = 0; c < 7; ++c) {
        const int64_t i = a - 1, j = b - 2, k = c;
        const bool inside = i >= 0 && i < 2 && j >= 0 && j < 3 && k < 4;
        const float want = inside ? static_cast<float>((i * 3 + j) * 4 + k) : -7.0f;
        EXPECT_EQ(out.data<float>()[(a * 6 + b) * 7 + c], want) << a << "," << b << "," << c;
      }
}

// Integer gradients that add past the type's range wrap around, as TensorFlow's do (signed
// overflow is undefined behaviour, which UBSan reported here).
TEST(PadOps, MirrorPadGradOfIntegersWraps) {
  NodeDef node =
      MakeNode("MirrorPadGrad", 2,
               {{"T", AttrValue::Type(DT_INT32)}, {"mode", AttrValue::String("SYMMETRIC")}});
  // SYMMETRIC padding of [a, b] by one on each side is [a, a, b, b]: each of a and b gets two.
  const int32_t max = std::numeric_limits<int32_t>::max();
  const Tensor out = test::RunNodeOk(
      node, {MakeVector<int32_t>({9, max, 1, 2}), MakeTensor<int32_t>({1, 2}, {1, 1})});
  EXPECT_EQ(test::Values<int32_t>(out),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min() + 8, 3}));
}

}  // namespace
}  // namespace cfx
