// Tests of nn.max_unpool2d and dyn.nn.max_unpool2d: the unpooled shape (symbolic too), the
// output_shape forms, their errors, and the reference kernel's scatter (flat indices over the
// whole unpooled tensor, output_shape padding at the end, out-of-range indices as errors); and
// of nn.max_pool2d_with_indices, whose indices it consumes (pooling then unpooling keeps each
// window's maximum in place).
#include <limits>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Window(std::vector<int64_t> kernel, std::vector<int64_t> strides,
             std::vector<int64_t> padding = {0, 0, 0, 0}) {
  return {{"kernel_size", std::move(kernel)},
          {"strides", std::move(strides)},
          {"padding", std::move(padding)}};
}

TEST(MaxUnpoolTest, Masks) {
  EXPECT_EQ(Op("nn.max_unpool2d")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("nn.max_unpool2d")->dep(1), InputDep::kShape);
  // Only the four output_shape integers cross to the host, never the indices.
  EXPECT_EQ(Op("dyn.nn.max_unpool2d")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("dyn.nn.max_unpool2d")->dep(1), InputDep::kShape);
  EXPECT_EQ(Op("dyn.nn.max_unpool2d")->dep(2), InputDep::kValue);
}

// Tests (H - 1) * stride - (pad_begin + pad_end) + kernel, kept symbolic for symbolic H, W.
TEST(MaxUnpoolTest, Inference) {
  const Type i64 = T(DType::kI64, {S("n"), 3, S("h"), 5});
  EXPECT_EQ(InferStr("nn.max_unpool2d", Window({2, 2}, {2, 2}),
                     {In(F32({S("n"), 3, S("h"), 5})), In(i64)}),
            "f32[n, 3, h*2, 10]");
  EXPECT_EQ(InferStr("nn.max_unpool2d", Window({3, 2}, {2, 1}, {1, 0, 0, 1}),
                     {In(F32({1, 1, 4, 4})), In(T(DType::kI64, {1, 1, 4, 4}))}),
            "f32[1, 1, 8, 4]");
  Attrs with_shape = Window({2, 2}, {2, 2});
  with_shape.Set("output_shape", std::vector<int64_t>{1, 1, 5, 5});
  EXPECT_EQ(InferStr("nn.max_unpool2d", with_shape,
                     {In(F32({1, 1, 2, 2})), In(T(DType::kI64, {1, 1, 2, 2}))}),
            "f32[1, 1, 5, 5]");
  const Tensor shape = I64s({1, 2, 6, 4});
  EXPECT_EQ(InferStr("dyn.nn.max_unpool2d", Window({2, 2}, {2, 2}),
                     {In(F32({1, 2, 2, 2})), In(T(DType::kI64, {1, 2, 2, 2})), InV(shape)}),
            "f32[1, 2, 6, 4]");
  EXPECT_EQ(
      InferStr("dyn.nn.max_unpool2d", Window({2, 2}, {2, 2}),
               {In(F32({1, 2, 2, 2})), In(T(DType::kI64, {1, 2, 2, 2})), In(T(DType::kI64, {4}))}),
      "f32[?, ?, ?, ?]");
}

TEST(MaxUnpoolTest, InferenceErrors) {
  const ShapeInput x = In(F32({1, 1, 2, 2}));
  const ShapeInput idx = In(T(DType::kI64, {1, 1, 2, 2}));
  EXPECT_THAT(
      InferStr("nn.max_unpool2d", Window({2, 2}, {2, 2}), {x, In(T(DType::kI64, {1, 1, 2, 3}))}),
      HasSubstr("indices [1, 1, 2, 3] must have data's shape [1, 1, 2, 2]"));
  EXPECT_THAT(InferStr("nn.max_unpool2d", Window({2, 2}, {2, 2}), {x, In(F32({1, 1, 2, 2}))}),
              HasSubstr("indices must be integers, got f32"));
  EXPECT_THAT(InferStr("nn.max_unpool2d", Window({2, 2}, {0, 2}), {x, idx}),
              HasSubstr("kernel_size and strides must be positive, got 2 and 0"));
  EXPECT_THAT(InferStr("nn.max_unpool2d", Window({2}, {2, 2}), {x, idx}),
              HasSubstr("kernel_size and strides need 2 values and padding 4, got 1, 2 and 4"));
  // (2 - 1) * 1 - 4 + 1 = -2.
  EXPECT_THAT(InferStr("nn.max_unpool2d", Window({1, 1}, {1, 1}, {2, 0, 2, 0}), {x, idx}),
              HasSubstr("input dim 2 with kernel 1, stride 1 and padding 4 unpools to -2"));
  EXPECT_THAT(InferStr("nn.max_unpool2d", Window({2, 2}, {std::numeric_limits<int64_t>::max(), 1}),
                       {x, idx}),
              HasSubstr("unpools to more than int64 holds"));
  Attrs small = Window({2, 2}, {2, 2});
  small.Set("output_shape", std::vector<int64_t>{1, 1, 3, 4});
  EXPECT_THAT(InferStr("nn.max_unpool2d", small, {x, idx}),
              HasSubstr("output_shape [1, 1, 3, 4] is smaller than the unpooled shape [1, 1, 4, 4] "
                        "in dim 2"));
  const Tensor three = I64s({1, 1, 4});
  EXPECT_THAT(InferStr("dyn.nn.max_unpool2d", Window({2, 2}, {2, 2}), {x, idx, InV(three)}),
              HasSubstr("output_shape must have 4 values, got 3"));
}

// Tests ONNX's example: 2 x 2 maxima of a 4 x 4 input at flat positions 5, 7, 13, 15.
TEST(MaxUnpoolTest, ReferenceScattersFlatIndices) {
  auto out = RunRef("nn.max_unpool2d", Window({2, 2}, {2, 2}),
                    {FT({1, 1, 2, 2}, {1, 2, 3, 4}), IT({1, 1, 2, 2}, {5, 7, 13, 15})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4));
}

// Tests that indices count over the whole tensor (channel 1's index is past channel 0's
// plane) and that a larger output_shape keeps each element at its unpooled coordinates.
TEST(MaxUnpoolTest, ReferenceOutputShapePadsAtTheEnd) {
  // Unpooled [1, 2, 2, 2]; channel 0 value 7 at (0, 1), channel 1 value 9 at (1, 0) = 4 + 2.
  Attrs a = Window({1, 2}, {1, 2});
  a.Set("output_shape", std::vector<int64_t>{1, 2, 3, 3});
  auto out = RunRef("nn.max_unpool2d", a,
                    {FT({1, 2, 2, 1}, {7, 0, 0, 9}), IT({1, 2, 2, 1}, {1, 0, 4, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{1, 2, 3, 3}));
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(0, 7, 0, 0, 0, 0, 0, 0, 0,    // channel 0
                                              0, 0, 0, 9, 0, 0, 0, 0, 0));  // channel 1
}

// Tests that an index outside the unpooled tensor (negative or past its end: data the rule
// never reads) is a kernel error naming it, not a write out of bounds.
TEST(MaxUnpoolTest, ReferenceRejectsIndexOutOfRange) {
  for (int64_t bad : {int64_t{-1}, int64_t{16}}) {
    auto out = RunRef("nn.max_unpool2d", Window({2, 2}, {2, 2}),
                      {FT({1, 1, 2, 2}, {1, 2, 3, 4}), IT({1, 1, 2, 2}, {5, 7, bad, 15})});
    ASSERT_FALSE(out.ok());
    EXPECT_THAT(out.status().message(),
                HasSubstr(absl::StrCat("op 'nn.max_unpool2d': index ", bad,
                                       " of element 2 is outside the unpooled tensor of 16 "
                                       "elements")));
  }
}

// ---- nn.max_pool2d_with_indices ----------------------------------------------------------------

Attrs PoolAttrs(int64_t storage_order) {
  return {{"pool_size", std::vector<int64_t>{2, 2}},
          {"strides", std::vector<int64_t>{2, 2}},
          {"storage_order", storage_order}};
}

TEST(MaxPoolWithIndicesTest, Inference) {
  EXPECT_EQ(InferStr("nn.max_pool2d_with_indices", PoolAttrs(0), {In(F32({S("n"), 3, 4, 6}))}),
            "f32[n, 3, 2, 3], i64[n, 3, 2, 3]");
  EXPECT_THAT(InferStr("nn.max_pool2d_with_indices", PoolAttrs(2), {In(F32({1, 1, 4, 4}))}),
              HasSubstr("storage_order must be 0 or 1, got 2"));
}

// Tests the flat positions over the whole input (the second image's plane starts at 16), ties
// resolved to the first element in row order, and storage_order 1's column-major positions.
TEST(MaxPoolWithIndicesTest, ReferenceIndices) {
  // Image 0: distinct values; image 1: all 5 (ties: the window's top-left wins).
  std::vector<double> x = {1, 9, 2, 3, 4, 0, 8, 7, 5, 6, 1, 2, 0, 3, 4, 9};
  for (int i = 0; i < 16; ++i) x.push_back(5);
  auto row = RunRef("nn.max_pool2d_with_indices", PoolAttrs(0), {FT({2, 1, 4, 4}, x)});
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_THAT(Doubles((*row)[0]), ElementsAre(9, 8, 6, 9, 5, 5, 5, 5));
  EXPECT_THAT(Ints((*row)[1]), ElementsAre(1, 6, 9, 15, 16, 18, 24, 26));
  // Column-major within a plane: (h, w) -> h + w * 4.
  auto col = RunRef("nn.max_pool2d_with_indices", PoolAttrs(1), {FT({2, 1, 4, 4}, x)});
  ASSERT_TRUE(col.ok()) << col.status();
  EXPECT_THAT(Ints((*col)[1]), ElementsAre(4, 9, 6, 15, 16, 24, 18, 26));
}

// Tests that unpooling with the pooling's own indices puts every maximum back in place and
// zeros elsewhere: ONNX's MaxPool -> MaxUnpool pair.
TEST(MaxPoolWithIndicesTest, UnpoolingRestoresTheMaxima) {
  const std::vector<double> x = {1, 9, 2, 3, 4, 0, 8, 7, 5, 6, 1, 2, 0, 3, 4, 9};
  auto pooled = RunRef("nn.max_pool2d_with_indices", PoolAttrs(0), {FT({1, 1, 4, 4}, x)});
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  auto out = RunRef("nn.max_unpool2d", Window({2, 2}, {2, 2}), {(*pooled)[0], (*pooled)[1]});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(0, 9, 0, 0, 0, 0, 8, 0, 0, 6, 0, 0, 0, 0, 0, 9));
}

}  // namespace
}  // namespace hetpass::testing
