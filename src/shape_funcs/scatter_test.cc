// Tests of gather_nd, scatter_elements and scatter_nd.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Tests that every input of the three ops is `shape` (no index tensor is ever copied for a
// shape function).
TEST(ScatterTest, MasksAreShapeOnly) {
  for (const char* op : {"gather_nd", "scatter_elements", "scatter_nd"}) {
    for (int i = 0; i < Op(op)->min_inputs(); ++i) EXPECT_EQ(Op(op)->dep(i), InputDep::kShape) << op;
  }
}

// Tests gather_nd's type (batch dims, index tuples, trailing slice) and its errors.
TEST(GatherNdTest, Inference) {
  EXPECT_EQ(InferStr("gather_nd", {}, {In(F32({S("n"), 4, 5})), In(T(DType::kI64, {S("k"), 2}))}),
            "f32[k, 5]");
  EXPECT_EQ(InferStr("gather_nd", {{"batch_dims", int64_t{1}}},
                     {In(F32({S("b"), 4, 5})), In(T(DType::kI64, {S("b"), 3, 1}))}),
            "f32[b, 3, 5]");
  EXPECT_THAT(InferStr("gather_nd", {}, {In(F32({4, 5})), In(T(DType::kI64, {2, S("k")}))}),
              HasSubstr("the last dim of indices must be static"));
  EXPECT_THAT(InferStr("gather_nd", {}, {In(F32({4, 5})), In(T(DType::kI64, {2, 3}))}),
              HasSubstr("index length 3 do not fit data of rank 2"));
  EXPECT_THAT(InferStr("gather_nd", {{"batch_dims", int64_t{1}}},
                       {In(F32({2, 5})), In(T(DType::kI64, {3, 1}))}),
              HasSubstr("batch dim 0 differs: data 2, indices 3"));
}

// Tests gather_nd picking elements and rows, with negative indices and batch dims, and an
// out-of-range index as an error naming it.
TEST(GatherNdTest, Reference) {
  const Tensor x = FT({2, 3}, {1, 2, 3, 4, 5, 6});
  auto elems = RunRef("gather_nd", {}, {x, IT({2, 2}, {1, -1, 0, 1})});
  ASSERT_TRUE(elems.ok()) << elems.status();
  EXPECT_THAT(Doubles((*elems)[0]), ElementsAre(6, 2));
  auto rows = RunRef("gather_nd", {}, {x, IT({1, 1}, {-1})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(Doubles((*rows)[0]), ElementsAre(4, 5, 6));
  auto batched = RunRef("gather_nd", {{"batch_dims", int64_t{1}}}, {x, IT({2, 1}, {2, 0})});
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_THAT(Doubles((*batched)[0]), ElementsAre(3, 4));
  auto bad = RunRef("gather_nd", {}, {x, IT({1, 2}, {2, 0})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("gather_nd: index 2 is out of range for an axis of size 2"));
}

// Tests scatter_elements along each axis with every reduction, a repeated position (the last
// update wins with none) and negative indices.
TEST(ScatterElementsTest, Reference) {
  const Tensor x = FT({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor idx = IT({1, 3}, {1, 0, -1});
  const Tensor upd = FT({1, 3}, {10, 20, 30});
  auto none = RunRef("scatter_elements", {}, {x, idx, upd});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(Doubles((*none)[0]), ElementsAre(1, 20, 3, 10, 5, 30));
  auto add = RunRef("scatter_elements", {{"reduction", std::string("add")}}, {x, idx, upd});
  ASSERT_TRUE(add.ok()) << add.status();
  EXPECT_THAT(Doubles((*add)[0]), ElementsAre(1, 22, 3, 14, 5, 36));
  auto mul = RunRef("scatter_elements", {{"axis", int64_t{1}}, {"reduction", std::string("mul")}},
                    {x, IT({1, 2}, {2, 2}), FT({1, 2}, {2, 5})});
  ASSERT_TRUE(mul.ok()) << mul.status();
  EXPECT_THAT(Doubles((*mul)[0]), ElementsAre(1, 2, 30, 4, 5, 6));
  auto last = RunRef("scatter_elements", {{"axis", int64_t{1}}}, {x, IT({1, 2}, {0, 0}), FT({1, 2}, {7, 8})});
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_THAT(Doubles((*last)[0]), ElementsAre(8, 2, 3, 4, 5, 6));
  auto mx = RunRef("scatter_elements", {{"axis", int64_t{1}}, {"reduction", std::string("max")}},
                   {x, IT({1, 2}, {0, 1}), FT({1, 2}, {0, 9})});
  ASSERT_TRUE(mx.ok()) << mx.status();
  EXPECT_THAT(Doubles((*mx)[0]), ElementsAre(1, 9, 3, 4, 5, 6));
  EXPECT_FALSE(RunRef("scatter_elements", {}, {x, IT({1, 1}, {2}), FT({1, 1}, {0})}).ok());
  EXPECT_THAT(InferStr("scatter_elements", {{"reduction", std::string("sub")}},
                       {In(F32({2, 3})), In(T(DType::kI64, {1, 3})), In(F32({1, 3}))}),
              HasSubstr("reduction must be none, add, mul, max or min, got 'sub'"));
  EXPECT_THAT(InferStr("scatter_elements", {},
                       {In(F32({2, 3})), In(T(DType::kI64, {1, 3})), In(F32({1, 2}))}),
              HasSubstr("indices and updates differ in dim 1: 3 vs 2"));
}

// Tests scatter_nd writing elements and whole rows, with add, and its shape checks.
TEST(ScatterNdTest, Reference) {
  const Tensor x = FT({2, 3}, {1, 2, 3, 4, 5, 6});
  auto elems = RunRef("scatter_nd", {}, {x, IT({2, 2}, {0, 1, -1, -1}), FT({2}, {10, 20})});
  ASSERT_TRUE(elems.ok()) << elems.status();
  EXPECT_THAT(Doubles((*elems)[0]), ElementsAre(1, 10, 3, 4, 5, 20));
  auto rows = RunRef("scatter_nd", {{"reduction", std::string("add")}},
                     {x, IT({1, 1}, {1}), FT({1, 3}, {1, 1, 1})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(Doubles((*rows)[0]), ElementsAre(1, 2, 3, 5, 6, 7));
  EXPECT_EQ(InferStr("scatter_nd", {}, {In(F32({S("n"), 3})), In(T(DType::kI64, {S("k"), 1})),
                                        In(F32({S("k"), 3}))}),
            "f32[n, 3]");
  EXPECT_THAT(InferStr("scatter_nd", {}, {In(F32({2, 3})), In(T(DType::kI64, {4, 1})), In(F32({4, 2}))}),
              HasSubstr("updates must be indices.shape[:-1] + data.shape[1:]"));
}

// Tests cumsum inclusive / exclusive, forward / reverse, on a computed axis, and its errors.
TEST(CumsumTest, Reference) {
  EXPECT_EQ(Op("cumsum")->dep(1), InputDep::kNone);
  const Tensor x = FT({2, 3}, {1, 2, 3, 4, 5, 6});
  auto rows = RunRef("cumsum", {}, {x, I64Scalar(1)});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(Doubles((*rows)[0]), ElementsAre(1, 3, 6, 4, 9, 15));
  auto ex = RunRef("cumsum", {{"exclusive", true}, {"reverse", true}}, {x, I64Scalar(-1)});
  ASSERT_TRUE(ex.ok()) << ex.status();
  EXPECT_THAT(Doubles((*ex)[0]), ElementsAre(5, 3, 0, 11, 6, 0));
  auto cols = RunRef("cumsum", {}, {IT({2, 2}, {1, 2, 3, 4}), IT({1}, {0})});
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_THAT(Ints((*cols)[0]), ElementsAre(1, 2, 4, 6));
  EXPECT_FALSE(RunRef("cumsum", {}, {x, I64Scalar(2)}).ok());
  EXPECT_THAT(InferStr("cumsum", {}, {In(F32({3})), In(F32({}))}),
              HasSubstr("axis must be an integer scalar, got f32"));
}

}  // namespace
}  // namespace hetpass::testing
