// Tests of the registry's symbolic-value rules (the shape arithmetic infer-types sees through):
// the facts a symbol carries (dims are >= 0) decide comparisons, where/select picks by a known
// condition, and every rule agrees with the reference kernel once its symbols are bound.
#include "shape_funcs/symbolic_values.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"
#include "support/op_generators.h"

namespace hetpass::testing {
namespace {

const Tensor kBoolTF = Tensor::FromInt64s(DType::kBool, {2}, std::vector<int64_t>{1, 0});

// Tests the exporters' `Where(Equal(shape, -1), ones, shape)` idiom and the facts behind it.
TEST(SymbolicValues, ComparisonsUseTheFactsOfDims) {
  const std::vector<DimExpr> shape = {S("batch"), S("seq")};
  const Tensor minus_one = I64s({-1, -1});
  EXPECT_EQ(SymValuesStr("equal", {}, {InSym(shape), InV(minus_one)}), "[0, 0]");
  EXPECT_EQ(SymValuesStr("equal", {}, {InSym(shape), InSym(shape)}), "[1, 1]");
  // batch may be 1: not decidable, the comparison runs.
  EXPECT_EQ(SymValuesStr("equal", {}, {InSym(shape), InV(I64s({1, 1}))}), "<unknown>");
  const std::vector<DimExpr> n = {S("n")}, n1 = {S("n") + 1}, half = {DimExpr::FloorDiv(S("n"), 2)};
  EXPECT_EQ(SymValuesStr("greater", {}, {InSymScalar(n1), InSymScalar(n)}), "[1]");
  EXPECT_EQ(SymValuesStr("less", {}, {InSymScalar(n1), InSymScalar(n)}), "[0]");
  EXPECT_EQ(SymValuesStr("less", {}, {InSymScalar(n), InSymScalar(n)}), "[0]");
  EXPECT_EQ(SymValuesStr("less", {}, {InV(I64Scalar(-1)), InSymScalar(n)}), "[1]");
  EXPECT_EQ(SymValuesStr("greater", {}, {InSymScalar(half), InSymScalar(n1)}), "[0]");  // n//2 <= n
  EXPECT_EQ(SymValuesStr("greater", {}, {InSymScalar(n), InV(I64Scalar(1))}), "<unknown>");
  EXPECT_EQ(SymValuesStr("equal", {}, {InSymScalar({S("n") + 1}), InSymScalar({S("m")})}), "<unknown>");
}

TEST(SymbolicValues, WherePicksByAKnownCondition) {
  const std::vector<DimExpr> shape = {S("batch"), S("seq")};
  const std::vector<DimExpr> cond = {DimExpr(0), DimExpr(1)};
  EXPECT_EQ(SymValuesStr("where", {}, {InSym(cond, DType::kBool), InV(I64s({1, 1})), InSym(shape)}),
            "[batch, 1]");
  EXPECT_EQ(SymValuesStr("where", {}, {InV(kBoolTF), InSym(shape), InV(I64Scalar(7))}), "[batch, 7]");
  // An unknown condition still gives the value both sides agree on.
  const std::vector<DimExpr> same = {S("k"), S("seq")};
  EXPECT_EQ(SymValuesStr("where", {}, {In(T(DType::kBool, {2})), InSym(same), InSym(shape)}),
            "<unknown>");
  EXPECT_EQ(SymValuesStr("where", {}, {In(T(DType::kBool, {2})), InSym(shape), InSym(shape)}),
            "[batch, seq]");
}

// Every op with a symbolic-value rule, on the op's random trials: integer inputs of rank <= 1
// become symbolic (each element >= 0 a symbol bound to it, negatives stay constants; float
// inputs are turned into integers first), and whatever values the rule claims must equal the
// reference kernel's output once the symbols are bound. The rules may say "unknown"; they may
// never be wrong.
TEST(SymbolicValues, EveryRuleAgreesWithTheReference) {
  int checked = 0;
  for (const auto& [name, gen] : Generators()) {
    const OpDef* def = OpRegistry::Global().Find(name);
    if (def == nullptr || !def->symbolic_value_rule() || !def->reference()) continue;
    Gen g(std::hash<std::string>()(name));
    int op_checked = 0;
    for (int trial = 0; trial < 300; ++trial) {
      Trial t = gen(g);
      for (Tensor& in : t.inputs) {
        if (!IsFloat(in.dtype())) continue;
        Tensor i = Tensor::Zeros(DType::kI64, in.shape());
        for (int64_t k = 0; k < in.num_elements(); ++k) i.SetInt64(k, static_cast<int64_t>(in.GetDouble(k) * 2));
        in = std::move(i);
      }
      auto checked_attrs = def->CheckAttrs(t.attrs);
      if (!checked_attrs.ok()) continue;
      std::vector<ShapeInput> concrete;
      for (const Tensor& in : t.inputs) concrete.push_back(InV(in));
      auto types = def->InferTypes(*checked_attrs, std::move(concrete));
      if (!types.ok()) continue;
      auto want = def->reference()(t.inputs, *checked_attrs, *types);
      if (!want.ok()) continue;  // e.g. a division by zero
      DimExpr::Bindings bindings;
      std::vector<std::vector<DimExpr>> syms(t.inputs.size());
      std::vector<ShapeInput> ins;
      for (size_t i = 0; i < t.inputs.size(); ++i) {
        const Tensor& in = t.inputs[i];
        if (!CarriesSymbolicValues(in.type()) || in.num_elements() > kMaxSymbolicElements) {
          ins.push_back(InV(in));
          continue;
        }
        for (int64_t k = 0; k < in.num_elements(); ++k) {
          const int64_t v = in.GetInt64(k);
          if (v < 0 || in.dtype() == DType::kBool || g.Int(0, 3) == 0) {
            syms[i].push_back(v);
          } else {
            const std::string s = absl::StrCat("s", i, "_", k);
            bindings[s] = v;
            syms[i].push_back(DimExpr::Symbol(s));
          }
        }
        ins.push_back(ShapeInput{in.type(), nullptr, &syms[i]});
      }
      ShapeContext ctx(*def, *checked_attrs, std::move(ins), /*enforce_mask=*/false);
      auto got = def->symbolic_value_rule()(ctx);
      if (!got) continue;
      ASSERT_EQ(got->size(), want->size()) << name;
      for (size_t o = 0; o < got->size(); ++o) {
        const Tensor& w = (*want)[o];
        if (!CarriesSymbolicValues(w.type())) continue;
        ASSERT_EQ(static_cast<int64_t>((*got)[o].size()), w.num_elements())
            << name << " " << t.attrs.ToString() << ": " << ShapeToString((*got)[o]);
        for (int64_t k = 0; k < w.num_elements(); ++k) {
          auto v = (*got)[o][k].Evaluate(bindings);
          ASSERT_TRUE(v.ok()) << name << ": " << v.status();
          EXPECT_EQ(*v, w.GetInt64(k)) << name << " " << t.attrs.ToString() << " element " << k
                                       << ": symbolic " << ShapeToString((*got)[o]);
        }
        ++op_checked;
      }
    }
    // Each rule must have been exercised, or this test proves nothing about it.
    EXPECT_GT(op_checked, 0) << name << ": no trial gave symbolic values";
    checked += op_checked;
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace hetpass::testing
