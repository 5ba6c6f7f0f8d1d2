// Tests of the transform family: reshape, dyn.reshape, transpose, expand_dims, squeeze,
// dyn.squeeze, dyn.unsqueeze, concatenate, broadcast_to, dyn.broadcast_to, tile, dyn.tile.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs NewShape(std::vector<int64_t> v) { return {{"newshape", std::move(v)}}; }

// ---- reshape -------------------------------------------------------------------------------

TEST(ReshapeTest, Mask) {
  EXPECT_EQ(Op("reshape")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("reshape")->pattern(), FusionPattern::kInjective);
}

TEST(ReshapeTest, SymbolicMinusOneCancelsFactors) {
  const Type x = F32({S("n"), 4, 8});
  EXPECT_EQ(InferStr("reshape", NewShape({0, -1}), {In(x)}), "f32[n, 32]");
  EXPECT_EQ(InferStr("reshape", NewShape({-1}), {In(x)}), "f32[n*32]");
  EXPECT_EQ(InferStr("reshape", NewShape({-1, 8}), {In(x)}), "f32[n*4, 8]");
  EXPECT_EQ(InferStr("reshape", NewShape({0, 2, -1}), {In(x)}), "f32[n, 2, 16]");
  EXPECT_EQ(InferStr("reshape", NewShape({-1, 3}), {In(F32({S("n"), 4}))}), "f32[n*4//3, 3]");
  EXPECT_EQ(InferStr("reshape", NewShape({-1}), {In(F32({DimExpr::Unknown(), 4}))}), "f32[?]");
}

TEST(ReshapeTest, Static) {
  EXPECT_EQ(InferStr("reshape", NewShape({3, -1}), {In(F32({2, 6}))}), "f32[3, 4]");
  EXPECT_EQ(InferStr("reshape", NewShape({12}), {In(F32({2, 6}))}), "f32[12]");
}

// Tests that inferring -1 rejects an input element count or a known-dims product that overflows
// int64 instead of wrapping (fuzzer findings: Flatten of [2^62, 8, 8], newshape [-1, 0, max]).
TEST(ReshapeTest, MinusOneOverflowIsAnError) {
  EXPECT_THAT(InferStr("reshape", NewShape({0, -1}), {In(F32({int64_t{1} << 62, 8, 8}))}),
              HasSubstr("op 'reshape': cannot infer -1: the element count of input shape "
                        "[4611686018427387904, 8, 8] overflows int64"));
  EXPECT_THAT(InferStr("reshape", NewShape({-1, 0, INT64_MAX}), {In(F32({4, 5}))}),
              HasSubstr("op 'reshape': cannot infer -1: the product of the known new dims "
                        "overflows int64 at dim 9223372036854775807"));
  // A symbolic input takes the same path.
  EXPECT_THAT(InferStr("reshape", NewShape({-1, INT64_MAX, 2}), {In(F32({S("n"), 4}))}),
              HasSubstr("overflows int64"));
}

TEST(ReshapeTest, Errors) {
  EXPECT_THAT(InferStr("reshape", NewShape({5}), {In(F32({2, 6}))}),
              HasSubstr("element count mismatch: [2, 6] has 12 elements, [5] has 5"));
  EXPECT_THAT(InferStr("reshape", NewShape({5, -1}), {In(F32({2, 6}))}),
              HasSubstr("cannot infer -1: 12 elements do not split"));
  EXPECT_THAT(InferStr("reshape", NewShape({-1, -1}), {In(F32({2, 6}))}),
              HasSubstr("more than one -1"));
  EXPECT_THAT(InferStr("reshape", NewShape({-2}), {In(F32({2, 6}))}),
              HasSubstr("newshape value -2 is not supported"));
  EXPECT_THAT(InferStr("reshape", NewShape({0, 0, 0}), {In(F32({2, 6}))}),
              HasSubstr("newshape[2] = 0 copies a dim the rank-2 input lacks"));
  EXPECT_THAT(InferStr("reshape", {}, {In(F32({2}))}), HasSubstr("needs attribute 'newshape'"));
}

TEST(ReshapeTest, ReferenceAndSymbolicValues) {
  auto out = RunRef("reshape", NewShape({3, -1}), {FT({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 2, 3, 4, 5, 6));
  const std::vector<DimExpr> v = {S("n")};
  EXPECT_EQ(SymValuesStr("reshape", NewShape({}), {InSym(v)}), "[n]");
}

// ---- dyn.reshape ---------------------------------------------------------------------------

TEST(DynReshapeTest, Mask) {
  EXPECT_EQ(Op("dyn.reshape")->dep(0), InputDep::kShape);
  // Values at run time; their count (NumValues) fixes the rank at compile time.
  EXPECT_EQ(Op("dyn.reshape")->dep(1), InputDep::kValue);
}

TEST(DynReshapeTest, SymbolicTarget) {
  // shape_of(x)[0] concatenated with -1: the output keeps n.
  const std::vector<DimExpr> target = {S("n"), -1};
  EXPECT_EQ(InferStr("dyn.reshape", {}, {In(F32({S("n"), 4, 8})), InSym(target)}), "f32[n, 32]");
  EXPECT_EQ(InferStr("dyn.reshape", {}, {In(F32({S("n"), 4})), In(T(DType::kI64, {3}))}),
            "f32[?, ?, ?]");
}

TEST(DynReshapeTest, ShapeFunction) {
  const Tensor target = I64s({4, 0, -1});
  EXPECT_EQ(InferStr("dyn.reshape", {}, {In(F32({2, 3, 4})), InV(target)}), "f32[4, 3, 2]");
  const Tensor bad = I64s({5});
  EXPECT_THAT(InferStr("dyn.reshape", {}, {In(F32({2, 3})), InV(bad)}),
              HasSubstr("element count mismatch"));
  const Tensor two_d = IT({1, 1}, {6});
  EXPECT_THAT(InferStr("dyn.reshape", {}, {In(F32({2, 3})), InV(two_d)}),
              HasSubstr("newshape must be 1-D"));
  EXPECT_THAT(InferStr("dyn.reshape", {}, {In(F32({2, 3})), In(T(DType::kI64, {S("k")}))}),
              HasSubstr("newshape must have a static length"));
}

// allowzero (ONNX Reshape-14): a 0 in the target is a zero dim, not a copy of the input's.
TEST(DynReshapeTest, AllowZero) {
  const Attrs allowzero = {{"allowzero", true}};
  EXPECT_EQ(InferStr("dyn.reshape", allowzero, {In(F32({0, 3, 4})), InV(I64s({3, 4, 0}))}),
            "f32[3, 4, 0]");
  EXPECT_EQ(InferStr("dyn.reshape", {}, {In(F32({0, 3, 4})), InV(I64s({0, 4, 3}))}), "f32[0, 4, 3]");
  EXPECT_THAT(InferStr("dyn.reshape", allowzero, {In(F32({2, 3})), InV(I64s({3, 0}))}),
              HasSubstr("element count mismatch"));
  EXPECT_THAT(InferStr("dyn.reshape", allowzero, {In(F32({0, 3})), InV(I64s({0, -1}))}),
              HasSubstr("cannot infer -1"));
}

TEST(DynReshapeTest, Reference) {
  auto out = RunRef("dyn.reshape", {}, {FT({4}, {1, 2, 3, 4}), I64s({2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 2}));
}

// ---- transpose -----------------------------------------------------------------------------

TEST(TransposeTest, InferenceErrorsReference) {
  EXPECT_EQ(Op("transpose")->dep(0), InputDep::kShape);
  EXPECT_EQ(InferStr("transpose", {}, {In(F32({S("n"), 3, 5}))}), "f32[5, 3, n]");
  EXPECT_EQ(
      InferStr("transpose", {{"axes", std::vector<int64_t>{0, 2, 1}}}, {In(F32({S("n"), 3, 5}))}),
      "f32[n, 5, 3]");
  EXPECT_THAT(InferStr("transpose", {{"axes", std::vector<int64_t>{0, 0}}}, {In(F32({2, 3}))}),
              HasSubstr("axis 0 is given twice"));
  EXPECT_THAT(InferStr("transpose", {{"axes", std::vector<int64_t>{0}}}, {In(F32({2, 3}))}),
              HasSubstr("is not a permutation of rank 2"));
  auto out = RunRef("transpose", {}, {FT({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 4, 2, 5, 3, 6));
}

// ---- layout_transform ----------------------------------------------------------------------

Attrs Layouts(const std::string& src, const std::string& dst) {
  return {{"src_layout", src}, {"dst_layout", dst}};
}

TEST(LayoutTransformTest, Inference) {
  EXPECT_EQ(Op("layout_transform")->dep(0), InputDep::kShape);
  EXPECT_EQ(
      InferStr("layout_transform", Layouts("NCHW", "NCHW16c"), {In(F32({S("n"), 32, S("h"), 7}))}),
      "f32[n, 2, h, 7, 16]");
  EXPECT_EQ(
      InferStr("layout_transform", Layouts("NCHW16c", "NCHW"), {In(F32({S("n"), 2, 3, 3, 16}))}),
      "f32[n, 32, 3, 3]");
  // Re-blocking with a symbolic block count: 16 = 2 x 8 keeps the count exact.
  EXPECT_EQ(
      InferStr("layout_transform", Layouts("NCHW16c", "NCHW8c"), {In(F32({1, S("cb"), 3, 3, 16}))}),
      "f32[1, cb*2, 3, 3, 8]");
  EXPECT_THAT(InferStr("layout_transform", Layouts("NCHW", "NCHW16c"), {In(F32({1, 24, 3, 3}))}),
              HasSubstr("24 channels do not split into blocks of 16"));
  EXPECT_THAT(InferStr("layout_transform", Layouts("NHWC", "NCHW"), {In(F32({1, 2, 3, 3}))}),
              HasSubstr("src_layout 'NHWC' is not a channel layout"));
  EXPECT_THAT(InferStr("layout_transform", Layouts("NCHW8c", "NCHW"), {In(F32({1, 2, 3, 3, 16}))}),
              HasSubstr("is not in NCHW8c"));
  EXPECT_THAT(InferStr("layout_transform", Layouts("NCHW8c", "NCHW"), {In(F32({1, 2, 3, 3}))}),
              HasSubstr("must have rank 5"));
}

// Tests the element mapping both ways and that a round trip is the identity.
TEST(LayoutTransformTest, Reference) {
  // Logical x[0][c][0][w] = 10c + w, 4 channels, 1x2 pixels.
  const Tensor x = FT({1, 4, 1, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  auto blocked = RunRef("layout_transform", Layouts("NCHW", "NCHW2c"), {x});
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  EXPECT_EQ((*blocked)[0].shape(), (std::vector<int64_t>{1, 2, 1, 2, 2}));
  EXPECT_THAT(Doubles((*blocked)[0]), ElementsAre(0, 10, 1, 11, 20, 30, 21, 31));
  auto reblocked = RunRef("layout_transform", Layouts("NCHW2c", "NCHW4c"), {(*blocked)[0]});
  ASSERT_TRUE(reblocked.ok()) << reblocked.status();
  EXPECT_THAT(Doubles((*reblocked)[0]), ElementsAre(0, 10, 20, 30, 1, 11, 21, 31));
  auto back = RunRef("layout_transform", Layouts("NCHW4c", "NCHW"), {(*reblocked)[0]});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(Doubles((*back)[0]), ElementsAre(0, 1, 10, 11, 20, 21, 30, 31));
}

// ---- expand_dims / squeeze -----------------------------------------------------------------

TEST(ExpandDimsTest, InferenceErrorsReference) {
  EXPECT_EQ(Op("expand_dims")->dep(0), InputDep::kShape);
  EXPECT_EQ(InferStr("expand_dims", {{"axis", int64_t{1}}}, {In(F32({S("n"), 3}))}),
            "f32[n, 1, 3]");
  EXPECT_EQ(InferStr("expand_dims", {{"axis", int64_t{-1}}, {"num_newaxis", int64_t{2}}},
                     {In(F32({S("n")}))}),
            "f32[n, 1, 1]");
  EXPECT_THAT(InferStr("expand_dims", {{"axis", int64_t{3}}}, {In(F32({2}))}),
              HasSubstr("axis 3 is out of range [-2, 1] for rank 1"));
  auto out = RunRef("expand_dims", {{"axis", int64_t{0}}}, {FT({2}, {7, 8})});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(7, 8));
}

TEST(SqueezeTest, SymbolicDimsAreNotSqueezedWithoutAxes) {
  EXPECT_EQ(Op("squeeze")->dep(0), InputDep::kShape);
  EXPECT_EQ(InferStr("squeeze", {}, {In(F32({1, S("n"), 1, 3}))}), "f32[n, 3]");
  EXPECT_EQ(InferStr("squeeze", {{"axis", std::vector<int64_t>{1}}}, {In(F32({2, S("m")}))}),
            "f32[2]");
  EXPECT_EQ(InferStr("squeeze", {{"axis", std::vector<int64_t>{-1}}}, {In(F32({2, 1}))}), "f32[2]");
  EXPECT_THAT(InferStr("squeeze", {{"axis", std::vector<int64_t>{0}}}, {In(F32({2, 1}))}),
              HasSubstr("cannot squeeze axis 0 of size 2"));
  auto out = RunRef("squeeze", {}, {FT({1, 2, 1}, {3, 4})});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2}));
}

// ---- dyn.squeeze / dyn.unsqueeze -----------------------------------------------------------

// Tests that only the axes' values are read on the host: the squeezed tensor is shape-only.
TEST(DynSqueezeTest, Mask) {
  for (const char* op : {"dyn.squeeze", "dyn.unsqueeze"}) {
    EXPECT_EQ(Op(op)->dep(0), InputDep::kShape) << op;
    EXPECT_EQ(Op(op)->dep(1), InputDep::kValue) << op;
  }
}

// Tests that unknown axes still fix the rank from their static length, with `?` dims.
TEST(DynSqueezeTest, UnknownAxesGiveRankOnly) {
  EXPECT_EQ(InferStr("dyn.squeeze", {}, {In(F32({1, S("n"), 1})), In(T(DType::kI64, {2}))}),
            "f32[?]");
  EXPECT_EQ(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), In(T(DType::kI64, {0}))}), "f32[?, ?]");
  EXPECT_THAT(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), In(T(DType::kI64, {3}))}),
              HasSubstr("op 'dyn.squeeze': cannot squeeze 3 axes of a rank-2 tensor"));
  EXPECT_THAT(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), In(T(DType::kI64, {S("k")}))}),
              HasSubstr("axes must have a static length"));
  // Symbolic values that are not constants do not say which axes either.
  const std::vector<DimExpr> sym = {S("a")};
  EXPECT_EQ(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), InSym(sym)}), "f32[?]");
}

// Tests that known axes give exact dims, symbolic dims included, and that an empty axes input
// squeezes nothing (the rank is rank - len(axes)).
TEST(DynSqueezeTest, KnownAxes) {
  const Tensor a = I64s({-1, 0});
  EXPECT_EQ(InferStr("dyn.squeeze", {}, {In(F32({1, S("n"), 1})), InV(a)}), "f32[n]");
  const Tensor mid = I64s({1});
  EXPECT_EQ(InferStr("dyn.squeeze", {}, {In(F32({2, S("m"), 3})), InV(mid)}), "f32[2, 3]");
  const Tensor none = I64s({});
  EXPECT_EQ(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), InV(none)}), "f32[1, 3]");
  const std::vector<DimExpr> sym = {2};
  EXPECT_EQ(InferStr("dyn.squeeze", {}, {In(F32({S("n"), 4, 1})), InSym(sym)}), "f32[n, 4]");
}

// Tests the shape function's checks on run-time axes: each error names the op.
TEST(DynSqueezeTest, BadAxesAreErrors) {
  const Tensor not_one = I64s({1});
  EXPECT_THAT(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), InV(not_one)}),
              HasSubstr("op 'dyn.squeeze': cannot squeeze axis 1 of size 3"));
  const Tensor out_of_range = I64s({2});
  EXPECT_THAT(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), InV(out_of_range)}),
              HasSubstr("op 'dyn.squeeze': axis 2 is out of range for rank 2"));
  const Tensor twice = I64s({0, -2});
  EXPECT_THAT(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), InV(twice)}),
              HasSubstr("op 'dyn.squeeze': axis -2 is given twice"));
  const Tensor two_d = IT({1, 1}, {0});
  EXPECT_THAT(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), InV(two_d)}),
              HasSubstr("axes must be 1-D, got rank 2"));
  const Tensor floats = FT({1}, {0});
  EXPECT_THAT(InferStr("dyn.squeeze", {}, {In(F32({1, 3})), InV(floats)}),
              HasSubstr("axes must be an integer tensor, got f32"));
}

TEST(DynSqueezeTest, ReferenceAndSymbolicValues) {
  auto out = RunRef("dyn.squeeze", {}, {FT({1, 2, 1}, {3, 4}), I64s({2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(3, 4));
  const std::vector<DimExpr> v = {S("n")};
  const Tensor axes = I64s({0});
  EXPECT_EQ(SymValuesStr("dyn.squeeze", {}, {InSym(v), InV(axes)}), "[n]");
}

// Tests that axes are output positions, in any order, negative ones counted from the output's
// end (ONNX Unsqueeze-13).
TEST(DynUnsqueezeTest, KnownAndUnknownAxes) {
  const Tensor unsorted = I64s({4, 3});
  EXPECT_EQ(InferStr("dyn.unsqueeze", {}, {In(F32({3, S("n"), 5})), InV(unsorted)}),
            "f32[3, n, 5, 1, 1]");
  const Tensor negative = I64s({-2});
  EXPECT_EQ(InferStr("dyn.unsqueeze", {}, {In(F32({1, 3, 1, 5})), InV(negative)}),
            "f32[1, 3, 1, 1, 5]");
  const Tensor front = I64s({0, 2});
  EXPECT_EQ(InferStr("dyn.unsqueeze", {}, {In(F32({S("n")})), InV(front)}), "f32[1, n, 1]");
  EXPECT_EQ(InferStr("dyn.unsqueeze", {}, {In(F32({S("n"), 4})), In(T(DType::kI64, {3}))}),
            "f32[?, ?, ?, ?, ?]");
  const Tensor scalar_out = I64s({0});
  EXPECT_EQ(InferStr("dyn.unsqueeze", {}, {In(F32({})), InV(scalar_out)}), "f32[1]");
}

TEST(DynUnsqueezeTest, BadAxesAreErrors) {
  const Tensor out_of_range = I64s({3});
  EXPECT_THAT(InferStr("dyn.unsqueeze", {}, {In(F32({2, 3})), InV(out_of_range)}),
              HasSubstr("op 'dyn.unsqueeze': axis 3 is out of range [-3, 2] for output rank 3"));
  const Tensor twice = I64s({1, -3});
  EXPECT_THAT(InferStr("dyn.unsqueeze", {}, {In(F32({2, 3})), InV(twice)}),
              HasSubstr("op 'dyn.unsqueeze': axis -3 is given twice"));
  EXPECT_THAT(InferStr("dyn.unsqueeze", {}, {In(F32({2})), In(T(DType::kI64, {}))}),
              HasSubstr("axes must be 1-D, got rank 0"));
}

TEST(DynUnsqueezeTest, Reference) {
  auto out = RunRef("dyn.unsqueeze", {}, {FT({2, 2}, {1, 2, 3, 4}), I64s({2, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 2, 3, 4));
}

// ---- concatenate ---------------------------------------------------------------------------

TEST(ConcatenateTest, MaskVariadic) {
  const OpDef* def = Op("concatenate");
  EXPECT_TRUE(def->variadic());
  EXPECT_EQ(def->dep(0), InputDep::kShape);
  EXPECT_EQ(def->dep(5), InputDep::kShape);
}

TEST(ConcatenateTest, Inference) {
  EXPECT_EQ(
      InferStr("concatenate", {}, {In(F32({S("n"), 3})), In(F32({S("m"), 3})), In(F32({2, 3}))}),
      "f32[m + n + 2, 3]");
  EXPECT_EQ(InferStr("concatenate", {{"axis", int64_t{-1}}},
                     {In(F32({DimExpr::Unknown(), 3})), In(F32({4, 5}))}),
            "f32[4, 8]");
  EXPECT_THAT(InferStr("concatenate", {{"axis", int64_t{1}}}, {In(F32({2, 3})), In(F32({4, 3}))}),
              HasSubstr("input 1 has 4 at axis 0, expected 2"));
  EXPECT_THAT(InferStr("concatenate", {}, {In(F32({2, 3})), In(F32({4}))}),
              HasSubstr("input 1 has rank 1, input 0 has rank 2"));
  EXPECT_THAT(InferStr("concatenate", {}, {In(F32({2})), In(T(DType::kI32, {4}))}),
              HasSubstr("input 1 has dtype i32, input 0 has f32"));
  EXPECT_THAT(InferStr("concatenate", {}, {}), HasSubstr("takes at least 1 inputs, got 0"));
}

TEST(ConcatenateTest, ReferenceAndSymbolicValues) {
  auto out =
      RunRef("concatenate", {{"axis", int64_t{1}}}, {FT({2, 1}, {1, 2}), FT({2, 2}, {3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 3, 4, 2, 5, 6));
  const std::vector<DimExpr> a = {S("n")};
  const Tensor b = I64s({-1});
  EXPECT_EQ(SymValuesStr("concatenate", {}, {InSym(a), InV(b)}), "[n, -1]");
}

// ---- broadcast_to / dyn.broadcast_to -------------------------------------------------------

TEST(BroadcastToTest, InferenceErrorsReference) {
  EXPECT_EQ(Op("broadcast_to")->dep(0), InputDep::kShape);
  EXPECT_EQ(InferStr("broadcast_to", {{"shape", std::vector<int64_t>{4, 3}}}, {In(F32({1, 3}))}),
            "f32[4, 3]");
  EXPECT_EQ(
      InferStr("broadcast_to", {{"shape", std::vector<int64_t>{2, 4, 3}}}, {In(F32({S("n")}))}),
      "f32[2, 4, 3]");
  EXPECT_THAT(InferStr("broadcast_to", {{"shape", std::vector<int64_t>{4, 3}}}, {In(F32({2, 3}))}),
              HasSubstr("cannot broadcast [2, 3] to [4, 3]"));
  EXPECT_THAT(InferStr("broadcast_to", {{"shape", std::vector<int64_t>{3}}}, {In(F32({1, 3}))}),
              HasSubstr("cannot broadcast rank 2 to the lower rank 1"));
  auto out = RunRef("broadcast_to", {{"shape", std::vector<int64_t>{2, 2}}}, {FT({2}, {1, 2})});
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 2, 1, 2));
}

TEST(DynBroadcastToTest, MaskInferenceReference) {
  EXPECT_EQ(Op("dyn.broadcast_to")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("dyn.broadcast_to")->dep(1), InputDep::kValue);
  const std::vector<DimExpr> target = {S("n"), 3};
  EXPECT_EQ(InferStr("dyn.broadcast_to", {}, {In(F32({1, 3})), InSym(target)}), "f32[n, 3]");
  // An unknown target dim against the input's 3: the target is 1 or 3, and either way gives 3.
  EXPECT_EQ(InferStr("dyn.broadcast_to", {}, {In(F32({3})), In(T(DType::kI64, {2}))}), "f32[?, 3]");
  const Tensor t = I64s({2, 3});
  EXPECT_EQ(InferStr("dyn.broadcast_to", {}, {In(F32({3})), InV(t)}), "f32[2, 3]");
  const Tensor bad = I64s({2, 4});
  EXPECT_THAT(InferStr("dyn.broadcast_to", {}, {In(F32({3})), InV(bad)}),
              HasSubstr("cannot broadcast [3] to [2, 4]"));
  auto out = RunRef("dyn.broadcast_to", {}, {FT({2, 1}, {1, 2}), I64s({2, 2})});
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 1, 2, 2));
}

// ---- tile / dyn.tile -----------------------------------------------------------------------

TEST(TileTest, InferenceErrorsReference) {
  EXPECT_EQ(Op("tile")->dep(0), InputDep::kShape);
  EXPECT_EQ(InferStr("tile", {{"reps", std::vector<int64_t>{2, 3}}}, {In(F32({S("n"), 4}))}),
            "f32[n*2, 12]");
  EXPECT_EQ(InferStr("tile", {{"reps", std::vector<int64_t>{2, 1, 1}}}, {In(F32({S("n"), 4}))}),
            "f32[2, n, 4]");
  EXPECT_EQ(InferStr("tile", {{"reps", std::vector<int64_t>{2}}}, {In(F32({3, 4}))}), "f32[3, 8]");
  EXPECT_THAT(InferStr("tile", {{"reps", std::vector<int64_t>{-1}}}, {In(F32({3}))}),
              HasSubstr("reps must be >= 0, got -1"));
  auto out = RunRef("tile", {{"reps", std::vector<int64_t>{2, 2}}}, {FT({2}, {1, 2})});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 2, 1, 2, 1, 2, 1, 2));
}

TEST(DynTileTest, MaskInferenceReference) {
  EXPECT_EQ(Op("dyn.tile")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("dyn.tile")->dep(1), InputDep::kValue);
  EXPECT_EQ(InferStr("dyn.tile", {}, {In(F32({S("n"), 4})), In(T(DType::kI64, {3}))}),
            "f32[?, ?, ?]");
  const std::vector<DimExpr> reps = {S("r"), 1};
  EXPECT_EQ(InferStr("dyn.tile", {}, {In(F32({S("n"), 4})), InSym(reps)}), "f32[n*r, 4]");
  const Tensor r = I64s({3});
  EXPECT_EQ(InferStr("dyn.tile", {}, {In(F32({2, 4})), InV(r)}), "f32[2, 12]");
  auto out = RunRef("dyn.tile", {}, {FT({2, 1}, {1, 2}), I64s({1, 3})});
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 1, 1, 2, 2, 2));
}

}  // namespace
}  // namespace hetpass::testing
