// Einsum: refusals of bad equations and shapes by both the shape function and the kernel, naming
// the node; shape inference on partial shapes; larger products (long contractions, permuted
// outputs, broadcast ellipses) against a direct sum. TensorFlow's own results are checked in
// tf_op_values_test.cc.
#include <map>
#include <random>
#include <string>
#include <vector>

#include "array_test_util.h"

namespace cfx {
namespace {

using test::ExpectRefused;
using test::ExpectShapes;
using test::Infer;
using test::kU;
using test::S;

NodeDef EinsumNode(const std::string& equation, int n, DataType t = DT_FLOAT) {
  NodeDef node = test::MakeNode("Einsum", n,
                                {{"T", AttrValue::Type(t)},
                                 {"N", AttrValue::Int(n)},
                                 {"equation", AttrValue::String(equation)}});
  node.name = "bad_einsum";
  return node;
}

TEST(Einsum, BadEquationsAndShapesAreRefusedNamingTheNode) {
  const Tensor a = test::Iota<float>({2, 3}), b = test::Iota<float>({3, 4});
  ExpectRefused(EinsumNode("ij,jk", 2), {a, b}, "must have exactly one \"->\"");
  ExpectRefused(EinsumNode("ij->ij", 2), {a, b}, "has 1 input subscripts for 2 inputs");
  ExpectRefused(EinsumNode("ij,j1->i", 2), {a, b}, "input subscript 1 \"j1\" has '1'");
  ExpectRefused(EinsumNode("ij,jk->iz", 2), {a, b}, "names 'z', which no input has");
  ExpectRefused(EinsumNode("ij,jk->ii", 2), {a, b}, "names 'i' twice");
  ExpectRefused(EinsumNode("ijk,jk->i", 2), {a, b},
                "input 0 has shape [2,3] but its subscript \"ijk\" names 3 dimensions");
  ExpectRefused(EinsumNode("ij,kj->ik", 2), {a, b},
                "label 'j' names dimensions of different sizes, in inputs of shapes [2,3] and "
                "[3,4]");
  ExpectRefused(EinsumNode("...ij,...jk->...ik", 2),
                {test::Iota<float>({2, 2, 3}), test::Iota<float>({3, 3, 4})},
                "the ellipsis dimensions of the inputs (shapes [2,2,3] and [3,3,4]) do not "
                "broadcast");
}

TEST(Einsum, ShapeInferenceOnPartialShapes) {
  ExpectShapes(Infer(EinsumNode("bij,bjk->bki", 2), {S({kU, 2, 3}), S({4, kU, 5})}),
               {S({4, 5, 2})});
  ExpectShapes(Infer(EinsumNode("...ij,jk->...ik", 2), {S({7, 1, 2, 3}), S({3, 5})}),
               {S({7, 1, 2, 5})});
  ExpectShapes(
      Infer(EinsumNode("...ij,jk->...ik", 2), {PartialTensorShape::UnknownRank(), S({3, 5})}),
      {PartialTensorShape::UnknownRank()});
  ExpectShapes(Infer(EinsumNode("ij,jk->ik", 2), {PartialTensorShape::UnknownRank(), S({3, 5})}),
               {S({kU, kU})});
}

// out[labels of the output] = sum over the other labels of the product of the inputs' elements,
// computed directly in double.
Tensor DirectEinsum(const std::string& in0, const std::string& in1, const std::string& out,
                    const Tensor& x, const Tensor& y) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < in0.size(); ++i) size[in0[i]] = x.dim(static_cast<int>(i));
  for (size_t i = 0; i < in1.size(); ++i) size[in1[i]] = y.dim(static_cast<int>(i));
  std::vector<char> labels;
  for (const auto& [label, n] : size) labels.push_back(label);
  std::vector<int64_t> out_dims;
  for (char c : out) out_dims.push_back(size[c]);
  Tensor result(DT_DOUBLE, TensorShape(out_dims));
  for (int64_t i = 0; i < result.num_elements(); ++i) result.data<double>()[i] = 0;
  std::map<char, int64_t> at;
  for (char c : labels) at[c] = 0;
  auto offset = [&](const std::string& sub, const Tensor& t) {
    int64_t o = 0;
    for (size_t d = 0; d < sub.size(); ++d) o = o * t.dim(static_cast<int>(d)) + at[sub[d]];
    return o;
  };
  while (true) {
    int64_t o = 0;
    for (char c : out) o = o * size[c] + at[c];
    result.data<double>()[o] += static_cast<double>(x.data<float>()[offset(in0, x)]) *
                                static_cast<double>(y.data<float>()[offset(in1, y)]);
    size_t l = labels.size();
    while (l-- > 0) {
      if (++at[labels[l]] < size[labels[l]]) break;
      at[labels[l]] = 0;
    }
    if (l == static_cast<size_t>(-1)) break;
  }
  return result;
}

Tensor Uniform(const TensorShape& shape, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

TEST(Einsum, LargerProductsMatchADirectSum) {
  struct Spec {
    std::string in0, in1, out;
    TensorShape x, y;
  };
  const std::vector<Spec> specs = {
      {"bqhd", "bkhd", "bhqk", {2, 9, 3, 40}, {2, 7, 3, 40}},
      {"bhqk", "bkhd", "bqhd", {2, 3, 9, 7}, {2, 7, 3, 16}},
      {"abc", "cd", "dab", {3, 5, 64}, {64, 6}},
      {"ij", "kl", "lj", {3, 4}, {5, 6}},
  };
  unsigned seed = 1;
  for (const Spec& s : specs) {
    const std::string equation = s.in0 + "," + s.in1 + "->" + s.out;
    SCOPED_TRACE(equation);
    const Tensor x = Uniform(s.x, seed++), y = Uniform(s.y, seed++);
    const Tensor got = test::RunNodeOk(EinsumNode(equation, 2), {x, y});
    const Tensor want = DirectEinsum(s.in0, s.in1, s.out, x, y);
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.num_elements(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.data<double>()[i], 1e-4) << i;
  }
}

}  // namespace
}  // namespace cfx
