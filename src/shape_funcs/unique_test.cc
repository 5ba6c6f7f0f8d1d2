// Tests of unique and unique_count: masks and the counter link, inference with and without
// known values, and the reference kernel against ONNX's examples and hand-worked cases (sorted
// and first-occurrence order, slices along an axis, NaN, int64 beyond double precision).
#include <cmath>
#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs UniqueAttrs(bool sorted, std::vector<int64_t> axis = {}) {
  return {{"sorted", sorted}, {"axis", std::move(axis)}};
}

// The four outputs of unique, and the counter's scalar (which must agree with them).
struct UniqueOut {
  std::vector<double> y;
  std::vector<int64_t> y_shape, indices, inverse, counts;
  int64_t count = -1;
};

UniqueOut RunUnique(const Tensor& x, const Attrs& attrs) {
  UniqueOut r;
  auto out = RunRef("unique", attrs, {x});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return r;
  r.y = Doubles((*out)[0]);
  r.y_shape = (*out)[0].shape();
  r.indices = Ints((*out)[1]);
  r.inverse = Ints((*out)[2]);
  r.counts = Ints((*out)[3]);
  auto count = RunRef("unique_count", attrs, {x});
  EXPECT_TRUE(count.ok()) << count.status();
  if (count.ok()) r.count = (*count)[0].GetInt64(0);
  return r;
}

TEST(UniqueTest, MasksAndCounter) {
  EXPECT_EQ(Op("unique")->dep(0), InputDep::kShapeAndValue);
  EXPECT_TRUE(Op("unique")->data_dependent_output_shape());
  EXPECT_EQ(Op("unique")->shape_counter(), "unique_count");
  EXPECT_EQ(Op("unique")->num_outputs(), 4);
  // The counter runs on the device without any copy: its rule reads nothing.
  EXPECT_EQ(Op("unique_count")->dep(0), InputDep::kNone);
}

// Tests that only the counted dims are unknown without values: inverse_indices has the
// element count (symbolic too) or the axis's dim.
TEST(UniqueTest, InferenceWithoutValues) {
  EXPECT_EQ(InferStr("unique", UniqueAttrs(true), {In(F32({S("n"), 3}))}),
            "f32[?], i64[?], i64[n*3], i64[?]");
  EXPECT_EQ(InferStr("unique", UniqueAttrs(true, {-1}), {In(F32({S("n"), 3}))}),
            "f32[n, ?], i64[?], i64[3], i64[?]");
  EXPECT_THAT(InferStr("unique", UniqueAttrs(true, {2}), {In(F32({2, 3}))}),
              HasSubstr("axis must be [] (flattened) or one axis in [-2, 2), got 1 values "
                        "starting 2"));
  EXPECT_THAT(InferStr("unique", UniqueAttrs(true, {0, 1}), {In(F32({2, 3}))}),
              HasSubstr("got 2 values"));
}

TEST(UniqueTest, InferenceWithValues) {
  const Tensor x = FT({2, 3}, {1, 1, 2, 1, 1, 2});
  EXPECT_EQ(InferStr("unique", UniqueAttrs(false), {InV(x)}), "f32[2], i64[2], i64[6], i64[2]");
  EXPECT_EQ(InferStr("unique", UniqueAttrs(true, {0}), {InV(x)}),
            "f32[1, 3], i64[1], i64[2], i64[1]");
}

// Tests ONNX's example of the flattened form, unsorted: [2, 1, 1, 3, 4, 3].
TEST(UniqueTest, FlattenedByFirstOccurrence) {
  const UniqueOut r = RunUnique(FT({6}, {2, 1, 1, 3, 4, 3}), UniqueAttrs(false));
  EXPECT_THAT(r.y, ElementsAre(2, 1, 3, 4));
  EXPECT_THAT(r.indices, ElementsAre(0, 1, 3, 4));
  EXPECT_THAT(r.inverse, ElementsAre(0, 1, 1, 2, 3, 2));
  EXPECT_THAT(r.counts, ElementsAre(1, 2, 2, 1));
  EXPECT_EQ(r.count, 4);
}

TEST(UniqueTest, FlattenedSorted) {
  const UniqueOut r = RunUnique(FT({2, 3}, {2, 1, 1, 3, 4, 3}), UniqueAttrs(true));
  EXPECT_THAT(r.y, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(r.indices, ElementsAre(1, 0, 3, 4));
  EXPECT_THAT(r.inverse, ElementsAre(1, 0, 0, 2, 3, 2));
  EXPECT_THAT(r.counts, ElementsAre(2, 1, 2, 1));
}

// Tests ONNX's example along axis 1 of a [2, 4, 2]: the slices x[:, j, :] are compared whole,
// lexicographically over (outer, inner) with the outer index first.
TEST(UniqueTest, SlicesAlongAnAxisSorted) {
  const Tensor x = FT({2, 4, 2}, {1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1});
  const UniqueOut r = RunUnique(x, UniqueAttrs(true, {1}));
  EXPECT_EQ(r.y_shape, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_THAT(r.y, ElementsAre(0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1));
  EXPECT_THAT(r.indices, ElementsAre(1, 0, 2));
  EXPECT_THAT(r.inverse, ElementsAre(1, 0, 2, 0));
  EXPECT_THAT(r.counts, ElementsAre(2, 1, 1));  // slices 1 and 3 are equal
  EXPECT_EQ(r.count, 3);
}

// Tests that NaNs count as one value, sorted after every number, and that int64 values that
// doubles cannot tell apart stay distinct.
TEST(UniqueTest, NanAndLargeIntegers) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const UniqueOut f = RunUnique(FT({4}, {nan, 1, nan, -1}), UniqueAttrs(true));
  ASSERT_EQ(f.y.size(), 3u);
  EXPECT_EQ(f.y[0], -1);
  EXPECT_EQ(f.y[1], 1);
  EXPECT_TRUE(std::isnan(f.y[2]));
  EXPECT_THAT(f.counts, ElementsAre(1, 1, 2));
  const int64_t big = int64_t{1} << 60;
  const UniqueOut i = RunUnique(IT({3}, {big + 1, big, big + 1}), UniqueAttrs(true));
  EXPECT_THAT(i.counts, ElementsAre(1, 2));
  EXPECT_THAT(i.inverse, ElementsAre(1, 0, 1));
  EXPECT_EQ(i.count, 2);
}

// Tests the empty tensor and a scalar (flattened to one element).
TEST(UniqueTest, EmptyAndScalar) {
  const UniqueOut empty = RunUnique(FT({0, 3}, {}), UniqueAttrs(true));
  EXPECT_TRUE(empty.y.empty());
  EXPECT_EQ(empty.count, 0);
  const UniqueOut scalar = RunUnique(FT({}, {5}), UniqueAttrs(true));
  EXPECT_THAT(scalar.y, ElementsAre(5));
  EXPECT_THAT(scalar.inverse, ElementsAre(0));
}

// Tests that outputs allocated from a wrong count are an error, not a write out of bounds.
TEST(UniqueTest, KernelRejectsAWrongAllocation) {
  const OpDef* op = Op("unique");
  auto attrs = op->CheckAttrs(UniqueAttrs(true));
  ASSERT_TRUE(attrs.ok());
  const Type i64 = T(DType::kI64, {2});
  auto out =
      op->reference()({FT({3}, {1, 2, 3})}, *attrs, {F32({2}), i64, T(DType::kI64, {3}), i64});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("unique: 3 distinct slices but y is allocated"));
}

}  // namespace
}  // namespace hetpass::testing
