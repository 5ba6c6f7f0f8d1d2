// Tests of strided_slice, dyn.strided_slice and take.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Slice(std::vector<int64_t> b, std::vector<int64_t> e, std::vector<int64_t> s = {}) {
  return {{"begin", std::move(b)}, {"end", std::move(e)}, {"strides", std::move(s)}};
}

// ---- strided_slice -------------------------------------------------------------------------

TEST(StridedSliceTest, Mask) { EXPECT_EQ(Op("strided_slice")->dep(0), InputDep::kShape); }

TEST(StridedSliceTest, Static) {
  const Type x = F32({10, 8});
  EXPECT_EQ(InferStr("strided_slice", Slice({2, 0}, {7, 8}), {In(x)}), "f32[5, 8]");
  EXPECT_EQ(InferStr("strided_slice", Slice({1}, {10}, {3}), {In(x)}), "f32[3, 8]");
  EXPECT_EQ(InferStr("strided_slice", Slice({-3}, {100}), {In(x)}), "f32[3, 8]");
  EXPECT_EQ(InferStr("strided_slice", Slice({9}, {-11}, {-2}), {In(x)}), "f32[5, 8]");
  EXPECT_EQ(InferStr("strided_slice", Slice({7}, {2}), {In(x)}), "f32[0, 8]");
  Attrs axes = Slice({1}, {3});
  axes.Set("axes", std::vector<int64_t>{1});
  EXPECT_EQ(InferStr("strided_slice", axes, {In(x)}), "f32[10, 2]");
  Attrs size = Slice({2, 1}, {3, -1});
  size.Set("slice_mode", std::string("size"));
  EXPECT_EQ(InferStr("strided_slice", size, {In(x)}), "f32[3, 7]");
}

TEST(StridedSliceTest, Symbolic) {
  const Type x = F32({S("n"), 8});
  EXPECT_EQ(InferStr("strided_slice", Slice({0}, {2147483647}), {In(x)}), "f32[n, 8]");
  EXPECT_EQ(InferStr("strided_slice", Slice({1}, {2147483647}), {In(x)}), "f32[max(0, n - 1), 8]");
  EXPECT_EQ(InferStr("strided_slice", Slice({0, 2}, {2147483647, 6}), {In(x)}), "f32[n, 4]");
  EXPECT_EQ(InferStr("strided_slice", Slice({0}, {2147483647}, {2}), {In(x)}),
            "f32[(n + 1)//2, 8]");
}

TEST(StridedSliceTest, Errors) {
  EXPECT_THAT(InferStr("strided_slice", Slice({0}, {4}, {0}), {In(F32({8}))}),
              HasSubstr("strides must be non-zero"));
  EXPECT_THAT(InferStr("strided_slice", Slice({0, 0}, {4}), {In(F32({8, 8}))}),
              HasSubstr("begin has 2 values but end has 1"));
  EXPECT_THAT(InferStr("strided_slice", Slice({0, 0}, {4, 4}), {In(F32({8}))}),
              HasSubstr("2 begin values for rank 1"));
  Attrs axes = Slice({0}, {1});
  axes.Set("axes", std::vector<int64_t>{3});
  EXPECT_THAT(InferStr("strided_slice", axes, {In(F32({8}))}), HasSubstr("axis 3 is out of range"));
  Attrs mode = Slice({0}, {1});
  mode.Set("slice_mode", std::string("bogus"));
  EXPECT_THAT(InferStr("strided_slice", mode, {In(F32({8}))}),
              HasSubstr("slice_mode must be 'end' or 'size'"));
}

// Tests that a stride of INT64_MIN, whose negation does not fit in int64, is an error in both
// slice ops (fuzzer finding: ONNX Slice with steps [INT64_MIN]).
TEST(StridedSliceTest, Int64MinStrideIsAnError) {
  EXPECT_THAT(InferStr("strided_slice", Slice({-1}, {0}, {INT64_MIN}), {In(F32({8}))}),
              HasSubstr("op 'strided_slice': stride -9223372036854775808 is not supported"));
  const Tensor b = I64s({-1}), e = I64s({0}), s = I64s({INT64_MIN});
  EXPECT_THAT(InferStr("dyn.strided_slice", {}, {In(F32({S("n")})), InV(b), InV(e), InV(s)}),
              HasSubstr("op 'dyn.strided_slice': stride -9223372036854775808 is not supported"));
}

TEST(StridedSliceTest, Reference) {
  const Tensor x = FT({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto out = RunRef("strided_slice", Slice({0, 3}, {2, -5}, {1, -2}), {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(3, 1, 7, 5));
  auto row = RunRef("strided_slice", Slice({-1}, {2147483647}), {x});
  ASSERT_TRUE(row.ok());
  EXPECT_THAT(Doubles((*row)[0]), ElementsAre(4, 5, 6, 7));
}

// ---- dyn.strided_slice ---------------------------------------------------------------------

TEST(DynStridedSliceTest, MaskDataIsShapeOnly) {
  // The motivating case: the sliced tensor is never copied for the shape function.
  const OpDef* def = Op("dyn.strided_slice");
  EXPECT_EQ(def->dep(0), InputDep::kShape);
  EXPECT_EQ(def->dep(1), InputDep::kValue);
  EXPECT_EQ(def->dep(2), InputDep::kValue);
  EXPECT_EQ(def->dep(3), InputDep::kValue);
}

TEST(DynStridedSliceTest, SymbolicUnknownValues) {
  const Type idx = T(DType::kI64, {2});
  EXPECT_EQ(InferStr("dyn.strided_slice", {}, {In(F32({S("n"), 8})), In(idx), In(idx), In(idx)}),
            "f32[?, ?]");
}

TEST(DynStridedSliceTest, SymbolicKnownValues) {
  // begin/end from shape arithmetic: x[0:n//2] of f32[n, 8].
  const std::vector<DimExpr> b = {0}, e = {DimExpr::FloorDiv(S("n"), 2)}, s = {1};
  EXPECT_EQ(InferStr("dyn.strided_slice", {}, {In(F32({S("n"), 8})), InSym(b), InSym(e), InSym(s)}),
            "f32[n//2, 8]");
}

TEST(DynStridedSliceTest, ShapeFunction) {
  const Tensor b = I64s({1, 0}), e = I64s({3, 8}), s = I64s({1, 4});
  EXPECT_EQ(InferStr("dyn.strided_slice", {}, {In(F32({5, 8})), InV(b), InV(e), InV(s)}),
            "f32[2, 2]");
  const Tensor zero = I64s({0, 1});
  EXPECT_THAT(InferStr("dyn.strided_slice", {}, {In(F32({5, 8})), InV(b), InV(e), InV(zero)}),
              HasSubstr("strides must be non-zero"));
  const Tensor fb = FT({2}, {0, 0});
  EXPECT_THAT(InferStr("dyn.strided_slice", {}, {In(F32({5, 8})), InV(fb), InV(e), InV(s)}),
              HasSubstr("begin must be an integer tensor"));
}

TEST(DynStridedSliceTest, Reference) {
  auto out =
      RunRef("dyn.strided_slice", {}, {FT({5}, {0, 1, 2, 3, 4}), I64s({4}), I64s({0}), I64s({-2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(4, 2));
}

// ---- take ----------------------------------------------------------------------------------

// Tests gather_elements' masks (shapes only), its type (the shape of indices) and errors.
TEST(GatherElementsTest, MaskAndInference) {
  EXPECT_EQ(Op("gather_elements")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("gather_elements")->dep(1), InputDep::kShape);
  EXPECT_EQ(InferStr("gather_elements", {{"axis", int64_t{-1}}},
                     {In(F32({S("n"), 10})), In(T(DType::kI64, {S("n"), S("k")}))}),
            "f32[n, k]");
  EXPECT_THAT(InferStr("gather_elements", {}, {In(F32({3, 4})), In(F32({3, 4}))}),
              HasSubstr("indices must be integers, got f32"));
  EXPECT_THAT(InferStr("gather_elements", {}, {In(F32({3, 4})), In(T(DType::kI64, {3}))}),
              HasSubstr("the same rank >= 1, got 2 and 1"));
  EXPECT_THAT(InferStr("gather_elements", {}, {In(F32({3, 4})), In(T(DType::kI64, {2, 5}))}),
              HasSubstr("indices dim 1 is 5, more than data's 4"));
  EXPECT_THAT(InferStr("gather_elements", {{"axis", int64_t{2}}},
                       {In(F32({3, 4})), In(T(DType::kI64, {2, 4}))}),
              HasSubstr("axis 2 is out of range for rank 2"));
}

// Tests gather_elements along each axis with negative indices, indices smaller than data on
// the other axis, and an out-of-range index as an error naming it.
TEST(GatherElementsTest, Reference) {
  const Tensor x = FT({2, 3}, {1, 2, 3, 4, 5, 6});
  auto rows = RunRef("gather_elements", {}, {x, IT({1, 3}, {1, 0, -1})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(Doubles((*rows)[0]), ElementsAre(4, 2, 6));
  auto cols = RunRef("gather_elements", {{"axis", int64_t{1}}}, {x, IT({2, 2}, {2, 0, -3, 1})});
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_THAT(Doubles((*cols)[0]), ElementsAre(3, 1, 4, 5));
  auto bad = RunRef("gather_elements", {{"axis", int64_t{1}}}, {x, IT({1, 1}, {3})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("index 3 is out of range for an axis of size 3"));
}

TEST(TakeTest, Mask) {
  EXPECT_EQ(Op("take")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("take")->dep(1), InputDep::kShape);
}

TEST(TakeTest, Inference) {
  const Type idx = T(DType::kI64, {S("k"), 2});
  EXPECT_EQ(InferStr("take", {{"axis", int64_t{1}}}, {In(F32({S("n"), 10, 3})), In(idx)}),
            "f32[n, k, 2, 3]");
  EXPECT_EQ(InferStr("take", {}, {In(T(DType::kI64, {3})), In(T(DType::kI64, {}))}), "i64[]");
  EXPECT_THAT(InferStr("take", {}, {In(F32({3})), In(F32({2}))}),
              HasSubstr("indices must be integers, got f32"));
  EXPECT_THAT(InferStr("take", {{"axis", int64_t{2}}}, {In(F32({3})), In(T(DType::kI64, {2}))}),
              HasSubstr("axis 2 is out of range for rank 1"));
  EXPECT_THAT(
      InferStr("take", {{"mode", std::string("raise")}}, {In(F32({3})), In(T(DType::kI64, {2}))}),
      HasSubstr("mode must be clip, wrap or fast"));
}

TEST(TakeTest, SymbolicValuesOfShapeOf) {
  const std::vector<DimExpr> shape = {S("n"), 4, 8};
  const Tensor zero = I64Scalar(0);
  EXPECT_EQ(SymValuesStr("take", {}, {InSym(shape), InV(zero)}), "[n]");
  const Tensor last = I64s({-1, 1});
  EXPECT_EQ(SymValuesStr("take", {{"mode", std::string("wrap")}}, {InSym(shape), InV(last)}),
            "[8, 4]");
}

TEST(TakeTest, ReferenceModes) {
  const Tensor x = FT({2, 3}, {1, 2, 3, 4, 5, 6});
  auto cols = RunRef("take", {{"axis", int64_t{1}}}, {x, I64s({2, 0})});
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_THAT(Doubles((*cols)[0]), ElementsAre(3, 1, 6, 4));
  auto clip = RunRef("take", {}, {FT({3}, {7, 8, 9}), I64s({-5, 10})});
  ASSERT_TRUE(clip.ok());
  EXPECT_THAT(Doubles((*clip)[0]), ElementsAre(7, 9));
  auto wrap = RunRef("take", {{"mode", std::string("wrap")}}, {FT({3}, {7, 8, 9}), I64s({-1, 4})});
  ASSERT_TRUE(wrap.ok());
  EXPECT_THAT(Doubles((*wrap)[0]), ElementsAre(9, 8));
  auto fast = RunRef("take", {{"mode", std::string("fast")}}, {FT({3}, {7, 8, 9}), I64s({3})});
  EXPECT_THAT(fast.status().message(), HasSubstr("index 3 is out of range for an axis of size 3"));
}

}  // namespace
}  // namespace hetpass::testing
