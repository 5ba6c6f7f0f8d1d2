#include "passes/transforms/bind_params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/printer.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Parse;
using ::hetpass::testing::RunPipeline;
using ::testing::HasSubstr;

constexpr char kModel[] = R"(
def @main(%x: f32[n, 2], %w: f32[3, 2], %b: f32[3]) {
  %0 = nn.dense(%x, %w)
  %1 = nn.bias_add(%0, %b) {axis = -1}
  return %1
}
)";

Tensor Weights() { return Tensor::FromDoubles(DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6}); }

// Tests that bound parameters become constants named like them, in parameter order, and the
// parameter list shrinks.
TEST(BindParams, BindsFromOptions) {
  auto m = Parse(kModel);
  ASSERT_NE(m, nullptr);
  BindParamsOptions o;
  o.params["w"] = Weights();
  auto changed = CreateBindParamsPass(o)->Run(*m);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  const std::string out = PrintModule(*m);
  EXPECT_THAT(out, HasSubstr("def @main(%x: f32[n, 2], %b: f32[3])"));
  EXPECT_THAT(out, HasSubstr("%w = constant<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : f32[3, 2]"));
  EXPECT_THAT(out, HasSubstr("nn.dense(%x, %w)"));
}

// Tests that values attached to the function are bound by the text pipeline, `names` limits
// them, and bound values are consumed.
TEST(BindParams, BindsAttachedValuesByName) {
  auto m = Parse(kModel);
  ASSERT_NE(m, nullptr);
  Function* f = m->FindFunction("main");
  f->param_values()["w"] = Weights();
  f->param_values()["b"] = Tensor::FromDoubles(DType::kF32, {3}, {0.5, 0.5, 0.5});
  ASSERT_TRUE(RunPipeline(*m, "bind-params{names=b}").ok());
  EXPECT_EQ(f->body().num_params(), 2);
  EXPECT_EQ(f->param_values().count("b"), 0u);
  ASSERT_TRUE(RunPipeline(*m, "bind-params,infer-types").ok());
  EXPECT_EQ(f->body().num_params(), 1);
  EXPECT_TRUE(f->param_values().empty());
}

// Tests the error cases: unknown parameter, dtype mismatch, shape mismatch, symbolic shape.
TEST(BindParams, Errors) {
  struct Case {
    std::string name;
    Tensor value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"nope", Weights(), "@main has no parameter 'nope' (parameters: x, w, b)"},
      {"w", Tensor::Zeros(DType::kF64, {3, 2}), "dtypes differ"},
      {"w", Tensor::Zeros(DType::kF32, {2, 3}), "dimension 0 differs"},
      {"b", Tensor::Zeros(DType::kF32, {3, 1}), "ranks differ"},
      {"x", Tensor::Zeros(DType::kF32, {4, 2}), "dimension 0 is symbolic (n)"},
  };
  for (const Case& c : cases) {
    auto m = Parse(kModel);
    ASSERT_NE(m, nullptr);
    BindParamsOptions o;
    o.params[c.name] = c.value;
    auto r = CreateBindParamsPass(o)->Run(*m);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
  auto m = Parse(kModel);
  BindParamsOptions o;
  o.function = "other";
  o.params["w"] = Weights();
  auto r = CreateBindParamsPass(o)->Run(*m);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no function @other"));
}

}  // namespace
}  // namespace hetpass
