// Tests of topk, dyn.topk, argwhere and non_max_suppression.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- topk ----------------------------------------------------------------------------------

TEST(TopKTest, MaskDataIsShapeOnly) {
  EXPECT_EQ(Op("topk")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("topk")->num_outputs(), 2);
}

TEST(TopKTest, Inference) {
  EXPECT_EQ(InferStr("topk", {{"k", int64_t{3}}}, {In(F32({S("b"), 10}))}), "f32[b, 3], i64[b, 3]");
  EXPECT_EQ(InferStr("topk", {{"k", int64_t{3}}, {"axis", int64_t{0}}}, {In(F32({S("n"), 10}))}),
            "f32[min(3, n), 10], i64[min(3, n), 10]");
  EXPECT_EQ(InferStr("topk", {{"k", int64_t{0}}, {"dtype", DType::kI32}}, {In(F32({4, 10}))}),
            "f32[4, 10], i32[4, 10]");
  EXPECT_EQ(InferStr("topk", {{"k", int64_t{20}}}, {In(F32({4, 10}))}), "f32[4, 10], i64[4, 10]");
  EXPECT_THAT(InferStr("topk", {{"axis", int64_t{2}}}, {In(F32({4, 10}))}),
              HasSubstr("axis 2 is out of range"));
  EXPECT_THAT(InferStr("topk", {{"dtype", DType::kF32}}, {In(F32({4}))}),
              HasSubstr("dtype must be an integer type"));
}

TEST(TopKTest, ReferenceStableTies) {
  const Tensor x = FT({2, 4}, {3, 1, 3, 2, 0, 5, 5, 5});
  auto out = RunRef("topk", {{"k", int64_t{2}}}, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(3, 3, 5, 5));
  EXPECT_THAT(Ints((*out)[1]), ElementsAre(0, 2, 1, 2));
  auto asc = RunRef("topk", {{"k", int64_t{2}}, {"is_ascend", true}}, {x});
  ASSERT_TRUE(asc.ok());
  EXPECT_THAT(Doubles((*asc)[0]), ElementsAre(1, 2, 0, 5));
  EXPECT_THAT(Ints((*asc)[1]), ElementsAre(1, 3, 0, 1));
  auto col = RunRef("topk", {{"k", int64_t{1}}, {"axis", int64_t{0}}}, {x});
  ASSERT_TRUE(col.ok());
  EXPECT_THAT(Ints((*col)[1]), ElementsAre(0, 1, 1, 1));
}

// Tests the reference topk against a full stable sort on rows with many ties (values drawn
// from 5 levels), both orders, every k: the same values and indices (ties by index).
TEST(TopKTest, ReferenceEqualsAStableSortOfTheRow) {
  std::vector<double> v(257);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 5) - 2.0;
  const Tensor x = Tensor::FromDoubles(DType::kF32, {static_cast<int64_t>(v.size())}, v);
  for (bool ascend : {false, true}) {
    std::vector<int64_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return ascend ? v[a] < v[b] : v[a] > v[b];
    });
    for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{17}, int64_t{256}, int64_t{257}}) {
      auto out = RunRef("topk", {{"k", k}, {"is_ascend", ascend}}, {x});
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ((*out)[1].num_elements(), k);
      for (int64_t j = 0; j < k; ++j) {
        EXPECT_EQ((*out)[1].GetInt64(j), order[j]) << "k " << k << " rank " << j;
        EXPECT_EQ((*out)[0].GetDouble(j), v[order[j]]);
      }
    }
  }
}

TEST(DynTopKTest, MaskOnlyKIsValue) {
  EXPECT_EQ(Op("dyn.topk")->dep(0), InputDep::kShape);
  EXPECT_EQ(Op("dyn.topk")->dep(1), InputDep::kValue);
}

TEST(DynTopKTest, Inference) {
  EXPECT_EQ(InferStr("dyn.topk", {}, {In(F32({S("b"), 10})), In(T(DType::kI64, {}))}),
            "f32[b, ?], i64[b, ?]");
  const std::vector<DimExpr> k = {S("k")};
  EXPECT_EQ(InferStr("dyn.topk", {}, {In(F32({S("b"), 10})), InSymScalar(k)}),
            "f32[b, min(10, k)], i64[b, min(10, k)]");
  const Tensor two = I64Scalar(2);
  EXPECT_EQ(InferStr("dyn.topk", {}, {In(F32({5, 10})), InV(two)}), "f32[5, 2], i64[5, 2]");
  const Tensor vec = I64s({2});
  EXPECT_THAT(InferStr("dyn.topk", {}, {In(F32({5, 10})), InV(vec)}),
              HasSubstr("k must be a scalar, got rank 1"));
}

TEST(DynTopKTest, Reference) {
  auto out = RunRef("dyn.topk", {}, {FT({4}, {1, 4, 2, 3}), I64Scalar(3)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(4, 3, 2));
  EXPECT_THAT(Ints((*out)[1]), ElementsAre(1, 3, 2));
}

// ---- argwhere ------------------------------------------------------------------------------

TEST(ArgwhereTest, MaskAndDataDependence) {
  EXPECT_EQ(Op("argwhere")->dep(0), InputDep::kValue);
  EXPECT_TRUE(Op("argwhere")->data_dependent_output_shape());
  EXPECT_EQ(Op("argwhere")->pattern(), FusionPattern::kOpaque);
}

TEST(ArgwhereTest, Inference) {
  EXPECT_EQ(InferStr("argwhere", {}, {In(T(DType::kBool, {S("n"), 3}))}), "i64[?, 2]");
  const Tensor c = FT({2, 2}, {0, 0.5, 1, 0});
  EXPECT_EQ(InferStr("argwhere", {}, {InV(c)}), "i64[2, 2]");
}

TEST(ArgwhereTest, Reference) {
  auto out = RunRef("argwhere", {}, {FT({2, 3}, {0, 1, 0, 2, 0, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_THAT(Ints((*out)[0]), ElementsAre(0, 1, 1, 0, 1, 2));
}

// ---- non_max_suppression -------------------------------------------------------------------

// The six boxes of ONNX's NonMaxSuppression examples ([y1, x1, y2, x2]): three overlapping
// near x = 0, two near x = 10, one alone at x = 100.
Tensor SixBoxes() {
  return FT({1, 6, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, -0.1, 1, 0.9,
                        0, 10, 1, 11, 0, 10.1, 1, 11.1, 0, 100, 1, 101});
}
Tensor SixScores() { return FT({1, 1, 6}, {0.9, 0.75, 0.6, 0.95, 0.5, 0.3}); }
Tensor F32Scalar(double v) { return FT({}, {v}); }

// Runs non_max_suppression and its counter; the counter must agree with the row count.
absl::StatusOr<std::vector<int64_t>> Nms(const std::vector<Tensor>& in, const Attrs& attrs = {}) {
  ASSIGN_OR_RETURN(std::vector<Tensor> rows, RunRef("non_max_suppression", attrs, in));
  ASSIGN_OR_RETURN(std::vector<Tensor> count, RunRef("non_max_suppression_count", attrs, in));
  EXPECT_EQ(rows[0].rank(), 2);
  EXPECT_EQ(rows[0].shape()[1], 3);
  EXPECT_EQ(count[0].GetInt64(0), rows[0].shape()[0]) << "counter and op disagree";
  return Ints(rows[0]);
}

TEST(NonMaxSuppressionTest, MasksAndCounter) {
  const OpDef* nms = Op("non_max_suppression");
  EXPECT_TRUE(nms->data_dependent_output_shape());
  EXPECT_EQ(nms->shape_counter(), "non_max_suppression_count");
  EXPECT_EQ(nms->dep(0), InputDep::kShapeAndValue);
  EXPECT_EQ(nms->dep(1), InputDep::kShapeAndValue);
  for (int i = 2; i < 5; ++i) EXPECT_EQ(nms->dep(i), InputDep::kValue) << i;
  // The counter runs on the device: it must read no values (no copy to run it).
  const OpDef* count = Op("non_max_suppression_count");
  EXPECT_FALSE(count->needs_values());
  EXPECT_FALSE(count->data_dependent_output_shape());
}

TEST(NonMaxSuppressionTest, Inference) {
  const Type scalar_i = T(DType::kI64, {1}), scalar_f = F32({});
  EXPECT_EQ(InferStr("non_max_suppression", {},
                     {In(F32({S("b"), S("n"), 4})), In(F32({S("b"), 2, S("n")})), In(scalar_i),
                      In(scalar_f), In(scalar_f)}),
            "i64[?, 3]");
  EXPECT_EQ(InferStr("non_max_suppression_count", {},
                     {In(F32({S("b"), S("n"), 4})), In(F32({S("b"), 2, S("n")})), In(scalar_i),
                      In(scalar_f), In(scalar_f)}),
            "i64[]");
  // Known values (constants): the count is known at compile time.
  const Tensor boxes = SixBoxes(), scores = SixScores(), max_out = I64s({3});
  const Tensor iou = F32Scalar(0.5), score = F32Scalar(0);
  EXPECT_EQ(InferStr("non_max_suppression", {},
                     {InV(boxes), InV(scores), InV(max_out), InV(iou), InV(score)}),
            "i64[3, 3]");
}

TEST(NonMaxSuppressionTest, SuppressByIou) {
  auto r = Nms({SixBoxes(), SixScores(), I64s({3}), F32Scalar(0.5), F32Scalar(0)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre(0, 0, 3, 0, 0, 0, 0, 0, 5));
  // max_output_boxes_per_class limits each class.
  auto limited = Nms({SixBoxes(), SixScores(), I64Scalar(2), F32Scalar(0.5), F32Scalar(0)});
  ASSERT_TRUE(limited.ok()) << limited.status();
  EXPECT_THAT(*limited, ElementsAre(0, 0, 3, 0, 0, 0));
  // No limit in practice (exporters write INT64_MAX): read exactly, not through a double.
  auto unlimited = Nms({SixBoxes(), SixScores(), I64Scalar(std::numeric_limits<int64_t>::max()),
                        F32Scalar(0.5), F32Scalar(0)});
  ASSERT_TRUE(unlimited.ok()) << unlimited.status();
  EXPECT_THAT(*unlimited, ElementsAre(0, 0, 3, 0, 0, 0, 0, 0, 5));
}

TEST(NonMaxSuppressionTest, FlippedCornersAndCenterFormat) {
  const Tensor flipped = FT({1, 6, 4}, {1, 1, 0, 0, 0, 0.1, 1, 1.1, 0, 0.9, 1, -0.1,
                                        0, 10, 1, 11, 1, 10.1, 0, 11.1, 1, 101, 0, 100});
  auto r = Nms({flipped, SixScores(), I64s({3}), F32Scalar(0.5), F32Scalar(0)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre(0, 0, 3, 0, 0, 0, 0, 0, 5));
  const Tensor centers = FT({1, 6, 4}, {0.5, 0.5, 1, 1, 0.5, 0.6, 1, 1, 0.5, 0.4, 1, 1,
                                        0.5, 10.5, 1, 1, 0.5, 10.6, 1, 1, 0.5, 100.5, 1, 1});
  auto c = Nms({centers, SixScores(), I64s({3}), F32Scalar(0.5), F32Scalar(0)},
               {{"center_point_box", int64_t{1}}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(*c, ElementsAre(0, 0, 3, 0, 0, 0, 0, 0, 5));
}

TEST(NonMaxSuppressionTest, ThresholdsAreStrict) {
  // score > score_threshold: 0.6 == threshold is dropped, 0.75 passes.
  auto s = Nms({SixBoxes(), SixScores(), I64s({6}), F32Scalar(0), F32Scalar(0.6)});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, ElementsAre(0, 0, 3, 0, 0, 0));
  // IoU > iou_threshold: two unit squares overlapping by half have IoU 0.5 / 1.5 in f32; at
  // exactly that threshold the second survives, just below it is suppressed.
  const Tensor halves = FT({1, 2, 4}, {0, 0, 1, 1, 0, 0.5, 1, 1.5});
  const Tensor sc = FT({1, 1, 2}, {0.9, 0.8});
  auto at = Nms({halves, sc, I64s({2}), F32Scalar(static_cast<float>(0.5f / 1.5f)), F32Scalar(0)});
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_THAT(*at, ElementsAre(0, 0, 0, 0, 0, 1));
  auto below = Nms({halves, sc, I64s({2}), F32Scalar(0.33), F32Scalar(0)});
  ASSERT_TRUE(below.ok()) << below.status();
  EXPECT_THAT(*below, ElementsAre(0, 0, 0));
}

TEST(NonMaxSuppressionTest, TiesPreferTheLowerIndex) {
  const Tensor same = FT({1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1});
  auto r = Nms({same, FT({1, 1, 3}, {0.5, 0.9, 0.9}), I64s({3}), F32Scalar(0.5), F32Scalar(0)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre(0, 0, 1));
  // Disjoint boxes with equal scores: all selected, lower index first.
  const Tensor apart = FT({1, 3, 4}, {0, 20, 1, 21, 0, 10, 1, 11, 0, 0, 1, 1});
  auto all = Nms({apart, FT({1, 1, 3}, {0.5, 0.5, 0.5}), I64s({3}), F32Scalar(0.5), F32Scalar(0)});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all, ElementsAre(0, 0, 0, 0, 0, 1, 0, 0, 2));
}

TEST(NonMaxSuppressionTest, ZeroAreaBoxesNeverSuppress) {
  // A degenerate box (a line) inside a real one: IoU 0, both kept even at threshold 0.
  const Tensor boxes = FT({1, 2, 4}, {0, 0, 1, 1, 0.5, 0, 0.5, 1});
  auto r = Nms({boxes, FT({1, 1, 2}, {0.9, 0.8}), I64s({2}), F32Scalar(0), F32Scalar(0)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre(0, 0, 0, 0, 0, 1));
}

TEST(NonMaxSuppressionTest, AbsentScoreThresholdKeepsEveryScore) {
  // ONNX without score_threshold: nothing is dropped for its score, -inf included (a -inf
  // sentinel input would drop it). Input 4 is ignored.
  const Tensor boxes = FT({1, 2, 4}, {0, 0, 1, 1, 0, 5, 1, 6});
  const Tensor scores = FT({1, 1, 2}, {-1, -std::numeric_limits<double>::infinity()});
  auto r = Nms({boxes, scores, I64s({2}), F32Scalar(0), F32Scalar(100)},
               {{"has_score_threshold", false}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre(0, 0, 0, 0, 0, 1));
  auto with = Nms({boxes, scores, I64s({2}), F32Scalar(0), F32Scalar(-2)});
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_THAT(*with, ElementsAre(0, 0, 0));
}

TEST(NonMaxSuppressionTest, MaxOutputZeroOrNegativeSelectsNothing) {
  for (int64_t m : {0, -1}) {
    auto r = Nms({SixBoxes(), SixScores(), I64Scalar(m), F32Scalar(0.5), F32Scalar(0)});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->empty()) << m;
  }
}

TEST(NonMaxSuppressionTest, NoBoxesOrNoClassesSelectNothing) {
  auto no_boxes = Nms({FT({2, 0, 4}, {}), FT({2, 3, 0}, {}), I64s({3}), F32Scalar(0.5),
                       F32Scalar(0)});
  ASSERT_TRUE(no_boxes.ok()) << no_boxes.status();
  EXPECT_TRUE(no_boxes->empty());
  auto no_classes = Nms({SixBoxes(), FT({1, 0, 6}, {}), I64s({3}), F32Scalar(0.5), F32Scalar(0)});
  ASSERT_TRUE(no_classes.ok()) << no_classes.status();
  EXPECT_TRUE(no_classes->empty());
}

TEST(NonMaxSuppressionTest, OrderIsBatchThenClassThenSelection) {
  // Two batches of the six boxes, two classes: scores of class 1 are class 0's reversed.
  std::vector<double> b = SixBoxes().ToDoubles(), two_b = b;
  two_b.insert(two_b.end(), b.begin(), b.end());
  const std::vector<double> s0 = {0.9, 0.75, 0.6, 0.95, 0.5, 0.3};
  const std::vector<double> s1 = {0.3, 0.5, 0.95, 0.6, 0.75, 0.9};
  std::vector<double> scores;
  for (int batch = 0; batch < 2; ++batch) {
    scores.insert(scores.end(), s0.begin(), s0.end());
    scores.insert(scores.end(), s1.begin(), s1.end());
  }
  auto r = Nms({FT({2, 6, 4}, two_b), FT({2, 2, 6}, scores), I64s({2}), F32Scalar(0.5),
                F32Scalar(0)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre(0, 0, 3, 0, 0, 0, 0, 1, 2, 0, 1, 5,  //
                              1, 0, 3, 1, 0, 0, 1, 1, 2, 1, 1, 5));
}

TEST(NonMaxSuppressionTest, BadInputsAreErrorsNamingTheOp) {
  const Tensor max_out = I64s({3}), iou = F32Scalar(0.5), score = F32Scalar(0);
  struct BadCase {
    std::vector<Tensor> in;
    Attrs attrs;
    std::string error;
  };
  const std::vector<BadCase> cases = {
      {{FT({6, 4}, std::vector<double>(24, 0)), SixScores(), max_out, iou, score}, {},
       "boxes must have rank 3"},
      {{SixBoxes(), FT({1, 6}, std::vector<double>(6, 0)), max_out, iou, score}, {},
       "scores must have rank 3"},
      {{SixBoxes(), FT({1, 1, 5}, std::vector<double>(5, 0)), max_out, iou, score}, {},
       "differ in spatial_dimension"},
      {{SixBoxes(), FT({2, 1, 6}, std::vector<double>(12, 0)), max_out, iou, score}, {},
       "differ in num_batches"},
      {{FT({1, 6, 3}, std::vector<double>(18, 0)), SixScores(), max_out, iou, score}, {},
       "boxes must be [num_batches, spatial_dimension, 4]"},
      {{SixBoxes(), SixScores(), F32Scalar(3), iou, score}, {},
       "max_output_boxes_per_class must be i64"},
      {{SixBoxes(), SixScores(), max_out, I64Scalar(0), score}, {}, "iou_threshold must be f32"},
      {{SixBoxes(), SixScores(), I64s({3, 3}), iou, score}, {},
       "max_output_boxes_per_class must be a scalar or hold one value"},
      {{SixBoxes(), SixScores(), max_out, F32Scalar(1.5), score}, {},
       "iou_threshold must be in [0, 1], got 1.5"},
      {{SixBoxes(), SixScores(), max_out, iou, score}, {{"center_point_box", int64_t{2}}},
       "center_point_box must be 0 or 1"},
  };
  for (const BadCase& c : cases) {
    // Shape rule then kernel (the counter's rule reads no values: its kernel reports a bad
    // iou_threshold).
    for (absl::string_view op : {"non_max_suppression", "non_max_suppression_count"}) {
      auto r = RunRef(op, c.attrs, c.in);
      ASSERT_FALSE(r.ok()) << op << ": " << c.error;
      EXPECT_THAT(std::string(r.status().message()), HasSubstr(absl::StrCat("op '", op, "': ")));
      EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.error)) << op;
    }
    // The kernels check on their own, outside type inference.
    for (absl::string_view op : {"non_max_suppression", "non_max_suppression_count"}) {
      auto attrs = Op(op)->CheckAttrs(c.attrs);
      ASSERT_TRUE(attrs.ok());
      auto k = Op(op)->reference()(c.in, *attrs, {T(DType::kI64, {0, 3})});
      ASSERT_FALSE(k.ok()) << op << ": " << c.error;
      EXPECT_THAT(std::string(k.status().message()), HasSubstr(absl::StrCat("op '", op, "': ")));
      EXPECT_THAT(std::string(k.status().message()), HasSubstr(c.error));
    }
  }
  // A kernel given an output of the wrong size (a count that disagrees) reports it.
  const std::vector<Tensor> ok = {SixBoxes(), SixScores(), max_out, iou, score};
  auto attrs = Op("non_max_suppression")->CheckAttrs({});
  ASSERT_TRUE(attrs.ok());
  auto k = Op("non_max_suppression")->reference()(ok, *attrs, {T(DType::kI64, {2, 3})});
  ASSERT_FALSE(k.ok());
  EXPECT_THAT(std::string(k.status().message()),
              HasSubstr("selected 3 boxes but the output is i64[2, 3]"));
}

}  // namespace
}  // namespace hetpass::testing
