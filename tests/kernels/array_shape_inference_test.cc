// Shape functions of the array ops on partial shapes and non-constant shape-like inputs (the
// kernel tests cover fully known shapes with constant inputs).
#include <vector>

#include "array_test_util.h"

namespace cfx {
namespace {

using test::Type;

using test::ExpectInferenceError;
using test::ExpectShapes;
using test::Infer;
using test::kU;
using test::MakeNode;
using test::MakeScalar;
using test::MakeVector;
using test::S;

const PartialTensorShape kUnknownRank = PartialTensorShape::UnknownRank();

TEST(ArrayShapeInference, ReshapeAndFill) {
  NodeDef reshape = MakeNode("Reshape", 2, {{"T", Type(DT_FLOAT)}});
  ExpectShapes(Infer(reshape, {S({2, kU}), S({3})}), {S({kU, kU, kU})});
  ExpectShapes(Infer(reshape, {S({2, kU}), S({kU})}), {kUnknownRank});
  Tensor shape = MakeVector<int32_t>({-1, 3});
  ExpectShapes(Infer(reshape, {S({kU, 6}), S({2})}, {nullptr, &shape}), {S({kU, 3})});
  ExpectShapes(Infer(reshape, {S({4, 6}), S({2})}, {nullptr, &shape}), {S({8, 3})});
  Tensor two_unknown = MakeVector<int32_t>({-1, -1});
  ExpectInferenceError(Infer(reshape, {kUnknownRank, S({2})}, {nullptr, &two_unknown}),
                       "only one dimension");

  NodeDef fill = MakeNode("Fill", 2, {{"T", Type(DT_FLOAT)}});
  ExpectShapes(Infer(fill, {S({2}), S({})}), {S({kU, kU})});
  ExpectInferenceError(Infer(fill, {S({2}), S({3})}), "rank 0");
}

TEST(ArrayShapeInference, ShapeRankSizeExpandDimsSqueeze) {
  NodeDef shape = MakeNode("Shape", 1, {{"T", Type(DT_FLOAT)}});
  ExpectShapes(Infer(shape, {kUnknownRank}), {S({kU})});
  ExpectShapes(Infer(shape, {S({kU, 2})}), {S({2})});
  ExpectShapes(Infer(MakeNode("Size", 1, {{"T", Type(DT_FLOAT)}}), {kUnknownRank}), {S({})});

  NodeDef expand = MakeNode("ExpandDims", 2, {{"T", Type(DT_FLOAT)}});
  ExpectShapes(Infer(expand, {S({kU, 3}), S({})}), {S({kU, kU, kU})});
  Tensor axis = MakeScalar<int32_t>(-1);
  ExpectShapes(Infer(expand, {S({kU, 3}), S({})}, {nullptr, &axis}), {S({kU, 3, 1})});

  NodeDef squeeze_all = MakeNode("Squeeze", 1, {{"T", Type(DT_FLOAT)}});
  ExpectShapes(Infer(squeeze_all, {S({1, kU, 3})}), {kUnknownRank});
  ExpectShapes(Infer(squeeze_all, {S({1, 2, 1})}), {S({2})});
  NodeDef squeeze_0 =
      MakeNode("Squeeze", 1, {{"T", Type(DT_FLOAT)}, {"squeeze_dims", AttrValue::IntList({0})}});
  ExpectShapes(Infer(squeeze_0, {S({kU, kU})}), {S({kU})});
}

TEST(ArrayShapeInference, TransposeTileConcatPack) {
  NodeDef transpose = MakeNode("Transpose", 2, {{"T", Type(DT_FLOAT)}});
  ExpectShapes(Infer(transpose, {S({2, 3}), S({2})}), {S({kU, kU})});
  Tensor perm = MakeVector<int32_t>({1, 0});
  ExpectShapes(Infer(transpose, {kUnknownRank, S({2})}, {nullptr, &perm}), {S({kU, kU})});
  ExpectShapes(Infer(transpose, {S({2, kU}), S({2})}, {nullptr, &perm}), {S({kU, 2})});

  NodeDef tile = MakeNode("Tile", 2, {{"T", Type(DT_FLOAT)}});
  Tensor multiples = MakeVector<int32_t>({2, 0});
  ExpectShapes(Infer(tile, {S({kU, kU}), S({2})}, {nullptr, &multiples}), {S({kU, 0})});
  ExpectShapes(Infer(tile, {kUnknownRank, S({3})}), {S({kU, kU, kU})});

  NodeDef concat = MakeNode("ConcatV2", 3, {{"T", Type(DT_FLOAT)}, {"N", AttrValue::Int(2)}});
  Tensor axis0 = MakeScalar<int32_t>(0), axis1 = MakeScalar<int32_t>(1);
  ExpectShapes(Infer(concat, {S({2, kU}), S({3, 5}), S({})}, {nullptr, nullptr, &axis0}),
               {S({5, 5})});
  ExpectShapes(Infer(concat, {kUnknownRank, S({2, 3}), S({})}, {nullptr, nullptr, &axis1}),
               {S({2, kU})});
  ExpectShapes(Infer(concat, {S({2, 3}), S({2, 3}), S({})}), {S({kU, kU})});
  ExpectInferenceError(Infer(concat, {S({2, kU}), S({3, 5}), S({})}, {nullptr, nullptr, &axis1}),
                       "only dimension 1");

  NodeDef pack = MakeNode(
      "Pack", 2, {{"T", Type(DT_FLOAT)}, {"N", AttrValue::Int(2)}, {"axis", AttrValue::Int(1)}});
  ExpectShapes(Infer(pack, {kUnknownRank, S({kU, 3})}), {S({kU, 2, 3})});
  ExpectShapes(Infer(pack, {kUnknownRank, kUnknownRank}), {kUnknownRank});
}

TEST(ArrayShapeInference, SplitUnpackSliceStridedSlice) {
  NodeDef split = MakeNode("Split", 2, {{"T", Type(DT_FLOAT)}, {"num_split", AttrValue::Int(2)}});
  ExpectShapes(Infer(split, {S({}), S({4, 6})}), {S({kU, kU}), S({kU, kU})});
  Tensor axis = MakeScalar<int32_t>(1);
  ExpectShapes(Infer(split, {S({}), S({kU, 6})}, {&axis}), {S({kU, 3}), S({kU, 3})});

  NodeDef unpack = MakeNode("Unpack", 1, {{"T", Type(DT_FLOAT)}, {"num", AttrValue::Int(3)}});
  ExpectShapes(Infer(unpack, {S({kU, 2})}), {S({2}), S({2}), S({2})});
  ExpectShapes(Infer(unpack, {kUnknownRank}), {kUnknownRank, kUnknownRank, kUnknownRank});

  NodeDef slice = MakeNode("Slice", 3, {{"T", Type(DT_FLOAT)}, {"Index", Type(DT_INT32)}});
  Tensor size = MakeVector<int32_t>({3, -1});
  ExpectShapes(Infer(slice, {S({5, 6}), S({2}), S({2})}, {nullptr, nullptr, &size}), {S({3, kU})});
  ExpectShapes(Infer(slice, {kUnknownRank, S({2}), S({2})}), {S({kU, kU})});

  // x[..., None, 0] with begin/end/strides not known: masks decide which dimensions remain.
  NodeDef strided = MakeNode("StridedSlice", 4,
                             {{"T", Type(DT_FLOAT)},
                              {"Index", Type(DT_INT32)},
                              {"ellipsis_mask", AttrValue::Int(1)},
                              {"new_axis_mask", AttrValue::Int(2)},
                              {"shrink_axis_mask", AttrValue::Int(4)}});
  ExpectShapes(Infer(strided, {S({2, kU, 4}), S({3}), S({3}), S({3})}), {S({2, kU, 1})});
  NodeDef plain = MakeNode("StridedSlice", 4, {{"T", Type(DT_FLOAT)}, {"Index", Type(DT_INT32)}});
  Tensor begin = MakeVector<int32_t>({1, 0}), end = MakeVector<int32_t>({-1, 2}),
         strides = MakeVector<int32_t>({1, 1});
  ExpectShapes(
      Infer(plain, {S({kU, 8}), S({2}), S({2}), S({2})}, {nullptr, &begin, &end, &strides}),
      {S({kU, 2})});
}

TEST(ArrayShapeInference, GatherAndRange) {
  NodeDef gather = MakeNode(
      "GatherV2", 3,
      {{"Tparams", Type(DT_FLOAT)}, {"Tindices", Type(DT_INT32)}, {"Taxis", Type(DT_INT32)}});
  ExpectShapes(Infer(gather, {S({3, 4}), S({5, 6}), S({})}), {S({kU, kU, kU})});
  Tensor axis = MakeScalar<int32_t>(1);
  ExpectShapes(Infer(gather, {S({3, kU, 2}), S({kU}), S({})}, {nullptr, nullptr, &axis}),
               {S({3, kU, 2})});
  ExpectShapes(Infer(gather, {kUnknownRank, S({2}), S({})}), {kUnknownRank});

  NodeDef range = MakeNode("Range", 3, {{"Tidx", Type(DT_INT32)}});
  ExpectShapes(Infer(range, {S({}), S({}), S({})}), {S({kU})});
  Tensor start = MakeScalar<int32_t>(2), limit = MakeScalar<int32_t>(11),
         delta = MakeScalar<int32_t>(3);
  ExpectShapes(Infer(range, {S({}), S({}), S({})}, {&start, &limit, &delta}), {S({3})});
  ExpectInferenceError(Infer(range, {S({}), S({}), S({})}, {&limit, &start, &delta}),
                       "must be <= limit");
}

}  // namespace
}  // namespace cfx
