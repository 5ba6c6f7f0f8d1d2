// Types share their dims and fields between copies (type.h): copies and types built apart must
// still compare and hash by structure, scalars (which hold no shared block) by kind and dtype,
// and a copy must outlive the type it was taken from.
#include "passes/ir/type.h"

#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace hetpass {
namespace {

// Tests that a copy and an equal type built apart are equal to the original, with one hash.
TEST(Type, CopiesAndEqualTypesBuiltApartAgree) {
  const Type a = Type::Tensor(DType::kF32, {DimExpr::Symbol("n"), DimExpr(16)});
  const Type copy = a;  // NOLINT: the copy is the point
  const Type apart = Type::Tensor(DType::kF32, {DimExpr::Symbol("n"), DimExpr(16)});
  EXPECT_EQ(copy, a);
  EXPECT_EQ(apart, a);
  EXPECT_EQ(apart.Hash(), a.Hash());
  EXPECT_EQ(copy.ToString(), "f32[n, 16]");
  EXPECT_NE(a, Type::Tensor(DType::kI64, {DimExpr::Symbol("n"), DimExpr(16)}));
  EXPECT_NE(a, Type::Tensor(DType::kF32, {DimExpr::Symbol("m"), DimExpr(16)}));
  EXPECT_NE(a, Type::Tensor(DType::kF32, {DimExpr::Symbol("n")}));
}

// Tests that types without dims or fields (scalars, unset, the empty tuple) still differ by
// kind and dtype.
TEST(Type, TypesWithoutDimsCompareByKindAndDtype) {
  const Type f = Type::Tensor(DType::kF32, {});
  const Type i = Type::Tensor(DType::kI64, {});
  EXPECT_NE(f, i);
  EXPECT_NE(f.Hash(), i.Hash());
  EXPECT_EQ(f, Type::Tensor(DType::kF32, {}));
  EXPECT_EQ(f.rank(), 0);
  EXPECT_TRUE(f.shape().empty());
  EXPECT_TRUE(f.fields().empty());
  EXPECT_EQ(Type(), Type());
  EXPECT_NE(Type(), f);
  EXPECT_EQ(Type::Tuple({}), Type::Tuple({}));
  EXPECT_NE(Type::Tuple({}), Type());
  EXPECT_EQ(Type::Tuple({}).ToString(), "()");
  EXPECT_EQ(Type::Storage(DimExpr(64)), Type::Storage(DimExpr(64)));
  EXPECT_NE(Type::Storage(DimExpr(64)), Type::Storage(DimExpr(32)));
}

// Tests that copies keep their dims after the original is reassigned and destroyed, and that
// assigning over a copy leaves the original unchanged.
TEST(Type, CopiesOutliveTheirSource) {
  std::vector<Type> copies;
  {
    Type t = Type::Tuple({Type::Tensor(DType::kF32, {DimExpr(2)}), Type::Sequence(Type())});
    copies.push_back(t);
    copies.push_back(t);
    t = Type::Tensor(DType::kI32, {DimExpr(7)});
    EXPECT_EQ(t.ToString(), "i32[7]");
  }
  EXPECT_EQ(copies[0].ToString(), "(f32[2], seq<?>)");
  copies[1] = Type::Optional(copies[0]);
  EXPECT_EQ(copies[0].ToString(), "(f32[2], seq<?>)");
  EXPECT_EQ(copies[1].ToString(), "opt<(f32[2], seq<?>)>");
  EXPECT_EQ(copies[1].element(), copies[0]);
  Type moved = std::move(copies[0]);
  EXPECT_EQ(moved.fields().size(), 2u);
  EXPECT_EQ(copies[1].element(), moved);
}

}  // namespace
}  // namespace hetpass
