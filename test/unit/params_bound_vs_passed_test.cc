// The seed case: TVM gave different bytecode (and a 1.65x slowdown) for the same model
// depending on whether the weights were passed as parameters or bound as constants, because
// constant folding silently stopped at parameters. Here both routes must give identical IR.
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/builder.h"
#include "passes/ir/printer.h"
#include "passes/ir/structural.h"
#include "passes/transforms/bind_params.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kSizes[] = {1024, 512, 256, 128};
constexpr char kPipeline[] = "infer-types,fold-constants,dce,cse,infer-types";

struct Weights {
  std::vector<std::pair<std::string, Tensor>> tensors;  // w1, b1, w2, b2, w3, b3
};

Weights MakeWeights() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  Weights w;
  for (int l = 0; l < 3; ++l) {
    const int in = kSizes[l], out = kSizes[l + 1];
    std::vector<double> wv(static_cast<size_t>(in) * out), bv(out);
    for (double& v : wv) v = dist(rng);
    for (double& v : bv) v = dist(rng);
    w.tensors.emplace_back("w" + std::to_string(l + 1),
                           Tensor::FromDoubles(DType::kF32, {out, in}, wv));
    w.tensors.emplace_back("b" + std::to_string(l + 1), Tensor::FromDoubles(DType::kF32, {out}, bv));
  }
  return w;
}

// The 3-layer MLP; each weight is scaled by 0.5 first (a weight-preprocessing step that only
// constant folding removes). `weight_values` are either parameters or constants.
void BuildMlp(Block& body, Value* x, const std::vector<Value*>& weight_values) {
  Builder b(&body);
  Value* h = x;
  Value* half = b.Constant(Tensor::Scalar(DType::kF32, 0.5), "half");
  for (int l = 0; l < 3; ++l) {
    Value* w = *b.Call("multiply", {weight_values[2 * l], half});
    Value* d = *b.Call("nn.dense", {h, w});
    Value* biased = *b.Call("nn.bias_add", {d, weight_values[2 * l + 1]}, Attrs{{"axis", int64_t{-1}}});
    h = l < 2 ? *b.Call("nn.relu", {biased}) : biased;
  }
  body.set_results({h});
}

Type Batch(int64_t static_batch) {
  return Type::Tensor(DType::kF32, {static_batch > 0 ? DimExpr(static_batch) : DimExpr::Symbol("n"),
                                    DimExpr(1024)});
}

std::unique_ptr<Module> WithParams(const Weights& w, int64_t batch) {
  auto m = std::make_unique<Module>();
  Function* f = m->AddFunction("main");
  Value* x = f->body().AddParam(Batch(batch), "x");
  std::vector<Value*> params;
  for (const auto& [name, t] : w.tensors) params.push_back(f->body().AddParam(t.type(), name));
  BuildMlp(f->body(), x, params);
  return m;
}

std::unique_ptr<Module> WithConstants(const Weights& w, int64_t batch) {
  auto m = std::make_unique<Module>();
  Function* f = m->AddFunction("main");
  Value* x = f->body().AddParam(Batch(batch), "x");
  Builder b(&f->body());
  std::vector<Value*> consts;
  for (const auto& [name, t] : w.tensors) consts.push_back(b.Constant(t, name));
  BuildMlp(f->body(), x, consts);
  return m;
}

class ParamsBoundVsPassed : public ::testing::TestWithParam<int64_t> {};

// Tests that weights passed as parameters plus bind-params give exactly the IR of weights
// written as constants, after the same pipeline: same text, structurally equal.
TEST_P(ParamsBoundVsPassed, IdenticalIr) {
  const Weights w = MakeWeights();
  auto passed = WithParams(w, GetParam());
  BindParamsOptions o;
  for (const auto& [name, t] : w.tensors) o.params[name] = t;
  auto bound = CreateBindParamsPass(o)->Run(*passed);
  ASSERT_TRUE(bound.ok()) << bound.status();
  ASSERT_TRUE(testing::RunPipeline(*passed, kPipeline).ok());

  auto constants = WithConstants(w, GetParam());
  ASSERT_TRUE(testing::RunPipeline(*constants, kPipeline).ok());

  PrintOptions p;
  p.elide_large_constants = false;
  const std::string a = PrintModule(*passed, p), b = PrintModule(*constants, p);
  EXPECT_EQ(a, b);
  std::string why;
  EXPECT_TRUE(StructurallyEqual(*passed, *constants, &why)) << why;
  // Folding really happened: the weight scaling is gone in both.
  EXPECT_THAT(a, Not(HasSubstr("multiply")));
}

// Tests the hazard itself: without binding, the weight scaling cannot fold and stays in the
// program (what made TVM's two routes differ).
TEST_P(ParamsBoundVsPassed, UnboundParamsDoNotFold) {
  auto passed = WithParams(MakeWeights(), GetParam());
  ASSERT_TRUE(testing::RunPipeline(*passed, kPipeline).ok());
  PrintOptions p;
  p.elide_large_constants = true;
  EXPECT_THAT(PrintModule(*passed, p), HasSubstr("multiply"));
}

INSTANTIATE_TEST_SUITE_P(StaticAndDynamicBatch, ParamsBoundVsPassed,
                         ::testing::Values(int64_t{16}, int64_t{-1}),
                         [](const auto& info) {
                           return info.param > 0 ? std::string("static16") : std::string("dynamic");
                         });

}  // namespace
}  // namespace hetpass
