#include "passes/shape_funcs/primitive_function.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Parse;
using ::hetpass::testing::RunPipeline;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Type T(const std::string& text) {
  absl::StatusOr<Type> t = ParseType(text);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Type();
}

// Parses `text`, runs infer-types, returns the module.
std::unique_ptr<Module> Typed(const std::string& text) {
  std::unique_ptr<Module> m = Parse(text);
  if (m == nullptr) return nullptr;
  absl::StatusOr<bool> r = RunPipeline(*m, "infer-types");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(m) : nullptr;
}

// ShapeInputs with the declared parameter types of `f` and no data.
std::vector<ShapeInput> DeclaredInputs(const Function& f) {
  std::vector<ShapeInput> ins;
  for (const auto& p : f.body().params()) ins.push_back(ShapeInput{p->type()});
  return ins;
}

constexpr char kDenseGroup[] = R"(
def @f(%x: f32[n, 1024], %w: f32[512, 1024], %b: f32[512]) attributes {primitive = true} {
  %d = nn.dense(%x, %w)
  %db = nn.bias_add(%d, %b) {axis = -1}
  %r = nn.relu(%db)
  return %r
}
)";

// Tests that IsPrimitive reads the attribute.
TEST(PrimitiveFunction, IsPrimitive) {
  auto m = Typed(kDenseGroup);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(IsPrimitive(*m->FindFunction("f")));
  auto plain = Typed("def @g(%x: f32[2]) {\n  return %x\n}\n");
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(IsPrimitive(*plain->FindFunction("g")));
}

// Tests that fused dense + bias_add + relu needs only the shapes of its three parameters.
TEST(PrimitiveFunction, DenseBiasReluMaskIsAllShape) {
  auto m = Typed(kDenseGroup);
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(DeriveInputMask(*m->FindFunction("f")),
              ElementsAre(InputDep::kShape, InputDep::kShape, InputDep::kShape));
}

// Tests that the same holds for the functions fuse-ops creates from the MLP.
TEST(PrimitiveFunction, FusedMlpMasksAreAllShape) {
  auto m = Parse(R"(
def @main(%x: f32[n, 1024], %w1: f32[512, 1024], %b1: f32[512], %w2: f32[256, 512],
          %b2: f32[256]) {
  %h1 = nn.dense(%x, %w1)
  %h1b = nn.bias_add(%h1, %b1) {axis = -1}
  %a1 = nn.relu(%h1b)
  %h2 = nn.dense(%a1, %w2)
  %h2b = nn.bias_add(%h2, %b2) {axis = -1}
  %a2 = nn.relu(%h2b)
  return %a2
}
)");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,fuse-ops").ok());
  int primitives = 0;
  for (const auto& f : m->functions()) {
    if (!IsPrimitive(*f)) continue;
    ++primitives;
    EXPECT_THAT(DeriveInputMask(*f),
                ElementsAre(InputDep::kShape, InputDep::kShape, InputDep::kShape));
    // The composed shape function reproduces infer-types on the symbolic inputs.
    absl::StatusOr<std::vector<Type>> types = InferPrimitiveTypes(*f, DeclaredInputs(*f));
    ASSERT_TRUE(types.ok()) << types.status();
    EXPECT_EQ(*types, f->result_types());
  }
  EXPECT_EQ(primitives, 2);
}

// Tests that a dyn.reshape target coming from a parameter makes that parameter `value`, and
// the reshaped data only `shape`.
TEST(PrimitiveFunction, ReshapeTargetIsValue) {
  auto m = Typed(R"(
def @f(%x: f32[n, 4, 8], %t: i64[2]) attributes {primitive = true} {
  %e = exp(%x)
  %r = dyn.reshape(%e, %t)
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(DeriveInputMask(*m->FindFunction("f")),
              ElementsAre(InputDep::kShape, InputDep::kValue));
}

// Tests the case TVM's single flag aborted on: one parameter needed both as data of an
// elementwise op (shape) and as the target of dyn.reshape (value).
TEST(PrimitiveFunction, ShapeAndValue) {
  auto m = Typed(R"(
def @f(%p: i64[2], %x: f32[24]) attributes {primitive = true} {
  %q = negative(%p)
  %r = dyn.reshape(%x, %p)
  return %q, %r
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(DeriveInputMask(*m->FindFunction("f")),
              ElementsAre(InputDep::kShapeAndValue, InputDep::kShape));
}

// Tests that a parameter read only through a `none` input (dyn.full's fill value), even via
// an elementwise op, needs nothing; and that the composed shape function then works without
// its dims.
TEST(PrimitiveFunction, FillValueIsNone) {
  auto m = Typed(R"(
def @f(%fill: f32[], %shape: i64[2]) attributes {primitive = true} {
  %v = exp(%fill)
  %r = dyn.full(%v, %shape)
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  EXPECT_THAT(DeriveInputMask(f), ElementsAre(InputDep::kNone, InputDep::kValue));
  const Tensor shape = Tensor::FromInt64s(DType::kI64, {2}, {3, 5});
  absl::StatusOr<std::vector<Type>> types =
      InferPrimitiveTypes(f, {ShapeInput{T("f32[]")}, ShapeInput{T("i64[2]"), &shape}});
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_THAT(*types, ElementsAre(T("f32[3, 5]")));
}

// Tests that a value computed inside the group from a parameter makes that parameter
// shape+value (the host runs the op's reference kernel), and that the composed shape function
// computes it in concrete mode.
TEST(PrimitiveFunction, InnerValueFromReferenceKernel) {
  auto m = Typed(R"(
def @f(%x: f32[24], %t: i64[2], %k: i64[]) attributes {primitive = true} {
  %t2 = multiply(%t, %k)
  %r = dyn.reshape(%x, %t2)
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  EXPECT_THAT(DeriveInputMask(f),
              ElementsAre(InputDep::kShape, InputDep::kShapeAndValue, InputDep::kShapeAndValue));
  const Tensor t = Tensor::FromInt64s(DType::kI64, {2}, {2, 6});
  const Tensor k = Tensor::FromInt64s(DType::kI64, {}, {2});
  absl::StatusOr<std::vector<Type>> types = InferPrimitiveTypes(
      f, {ShapeInput{T("f32[48]")}, ShapeInput{T("i64[2]"), &t}, ShapeInput{T("i64[]"), &k}});
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_THAT(*types, ElementsAre(T("f32[4, 12]")));
}

// Tests that shape_of inside a group needs only its operand's shape (no copy of the tensor),
// and that its contents come from the symbolic-value rule in both modes.
TEST(PrimitiveFunction, ShapeQueryNeedsOnlyShape) {
  auto m = Typed(R"(
def @f(%x: f32[n, 32], %y: f32[n, 4, 8]) attributes {primitive = true} {
  %s = shape_of(%y)
  %r = dyn.reshape(%x, %s)
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  EXPECT_THAT(DeriveInputMask(f), ElementsAre(InputDep::kShape, InputDep::kShape));
  absl::StatusOr<std::vector<Type>> sym = InferPrimitiveTypes(f, DeclaredInputs(f));
  ASSERT_TRUE(sym.ok()) << sym.status();
  EXPECT_THAT(*sym, ElementsAre(T("f32[n, 4, 8]")));
  absl::StatusOr<std::vector<Type>> concrete =
      InferPrimitiveTypes(f, {ShapeInput{T("f32[3, 32]")}, ShapeInput{T("f32[3, 4, 8]")}});
  ASSERT_TRUE(concrete.ok()) << concrete.status();
  EXPECT_THAT(*concrete, ElementsAre(T("f32[3, 4, 8]")));
}

// Tests that the composed shape function needs data only for `value` parameters: giving it
// for those alone gives the same result as giving it for every parameter, in concrete mode;
// and that in symbolic mode it reproduces infer-types when the caller knows the target
// symbolically.
TEST(PrimitiveFunction, DataOnlyForValueParamsSuffices) {
  auto m = Typed(R"(
def @f(%x: f32[n, 4, 8], %t: i64[2]) attributes {primitive = true} {
  %e = exp(%x)
  %r = dyn.reshape(%e, %t)
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  const std::vector<InputDep> mask = DeriveInputMask(f);
  const Tensor x = Tensor::Zeros(DType::kF32, {3, 4, 8});
  const Tensor t = Tensor::FromInt64s(DType::kI64, {2}, {3, 32});
  const std::vector<const Tensor*> data = {&x, &t};
  std::vector<ShapeInput> only_value, all;
  for (int i = 0; i < 2; ++i) {
    const Type type = data[i]->type();
    only_value.push_back(ShapeInput{type, NeedsValue(mask[i]) ? data[i] : nullptr});
    all.push_back(ShapeInput{type, data[i]});
  }
  absl::StatusOr<std::vector<Type>> a = InferPrimitiveTypes(f, only_value);
  absl::StatusOr<std::vector<Type>> b = InferPrimitiveTypes(f, all);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(*a, ElementsAre(T("f32[3, 32]")));
  EXPECT_EQ(*a, *b);

  // Symbolic: the caller knows %t as [n, 32] (shape_of -> take -> concatenate).
  const std::vector<DimExpr> sym = {DimExpr::Symbol("n"), DimExpr(32)};
  absl::StatusOr<std::vector<Type>> s = InferPrimitiveTypes(
      f, {ShapeInput{T("f32[n, 4, 8]")}, ShapeInput{T("i64[2]"), nullptr, &sym}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, ElementsAre(T("f32[n, 32]")));
}

// Tests that the functions fuse-ops makes from the seed's shape subgraph reproduce the
// caller's inferred types when the composed shape functions are chained with the symbolic
// values the caller knows.
TEST(PrimitiveFunction, ReproducesInferTypesOnFusedShapeSubgraph) {
  auto m = Parse(R"(
def @main(%x: f32[n, 32, 32]) {
  %shape = shape_of(%x)
  %i0 = constant<[0]> : i64[1]
  %batch = take(%shape, %i0) {axis = 0}
  %features = constant<[1024]> : i64[1]
  %target = concatenate(%batch, %features) {axis = 0}
  %flat = dyn.reshape(%x, %target)
  %r = nn.relu(%flat)
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunPipeline(*m, "infer-types,fuse-ops").ok());
  const Function* reshape = m->FindFunction("fused_dyn_reshape_nn_relu_1");
  ASSERT_NE(reshape, nullptr);
  EXPECT_THAT(DeriveInputMask(*reshape), ElementsAre(InputDep::kShape, InputDep::kValue));
  const std::vector<DimExpr> target = {DimExpr::Symbol("n"), DimExpr(1024)};
  absl::StatusOr<std::vector<Type>> types = InferPrimitiveTypes(
      *reshape, {ShapeInput{T("f32[n, 32, 32]")}, ShapeInput{T("i64[2]"), nullptr, &target}});
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_EQ(*types, reshape->result_types());
  EXPECT_THAT(*types, ElementsAre(T("f32[n, 1024]")));

  // Concrete mode, n = 5: the take + concatenate group computes the target on the host.
  const Function* take = m->FindFunction("fused_take_concatenate_0");
  ASSERT_NE(take, nullptr);
  EXPECT_THAT(DeriveInputMask(*take),
              ElementsAre(InputDep::kShape, InputDep::kShape, InputDep::kShape));
  absl::StatusOr<std::vector<Type>> tt = InferPrimitiveTypes(*take, DeclaredInputs(*take));
  ASSERT_TRUE(tt.ok()) << tt.status();
  EXPECT_THAT(*tt, ElementsAre(T("i64[2]")));
  const Tensor t = Tensor::FromInt64s(DType::kI64, {2}, {5, 1024});
  absl::StatusOr<std::vector<Type>> concrete =
      InferPrimitiveTypes(*reshape, {ShapeInput{T("f32[5, 32, 32]")}, ShapeInput{T("i64[2]"), &t}});
  ASSERT_TRUE(concrete.ok()) << concrete.status();
  EXPECT_THAT(*concrete, ElementsAre(T("f32[5, 1024]")));
}

// Tests that bad inputs to the composed shape function are errors naming the function.
TEST(PrimitiveFunction, InputErrors) {
  auto m = Typed(kDenseGroup);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  absl::StatusOr<std::vector<Type>> few = InferPrimitiveTypes(f, {ShapeInput{T("f32[2, 1024]")}});
  ASSERT_FALSE(few.ok());
  EXPECT_THAT(few.status().message(), HasSubstr("shape function of @f takes 3 inputs, got 1"));
  absl::StatusOr<std::vector<Type>> dtype = InferPrimitiveTypes(
      f,
      {ShapeInput{T("i32[2, 1024]")}, ShapeInput{T("f32[512, 1024]")}, ShapeInput{T("f32[512]")}});
  ASSERT_FALSE(dtype.ok());
  EXPECT_THAT(dtype.status().message(), HasSubstr("input 0 (%x) has type i32[2, 1024]"));
  // A shape error of an inner op names the function and the binding.
  absl::StatusOr<std::vector<Type>> bad = InferPrimitiveTypes(
      f,
      {ShapeInput{T("f32[2, 1000]")}, ShapeInput{T("f32[512, 1024]")}, ShapeInput{T("f32[512]")}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("shape function of @f: "));
  EXPECT_THAT(bad.status().message(), HasSubstr("nn.dense %d: "));
}

}  // namespace
}  // namespace hetpass
