#include "passes/analysis/symbol_origins.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Parse;
using ::hetpass::testing::RunPipeline;
using ::testing::HasSubstr;

// Each kind of fresh symbol, with the binding that introduces it; the inputs' symbols (n, m)
// are not listed, and a symbol is listed once, where it first appears as a whole dim.
TEST(ExplainSymbols, ListsEachFreshSymbolWithItsBindingAndKind) {
  auto m = Parse(R"(def @main(%x: f32[n], %y: f32[m], %target: i64[2]) {
  %zero = constant<0.0> : f32[]
  %pos = greater(%x, %zero)
  %nz = argwhere(%pos)
  %r = dyn.reshape(%x, %target)
  %s = add(%x, %y)
  %t = nn.relu(%s)
  return %nz, %r, %t
}
)");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunPipeline(*m, "infer-types").ok());
  auto origins = ExplainSymbols(*m);
  ASSERT_TRUE(origins.ok()) << origins.status();
  ASSERT_EQ(origins->size(), 4u) << SymbolOriginsText(*origins);
  EXPECT_EQ((*origins)[0].symbol, "dyn1");
  EXPECT_EQ((*origins)[0].value, "%nz");
  EXPECT_EQ((*origins)[0].op, "argwhere");
  EXPECT_EQ((*origins)[0].kind, SymbolOrigin::Kind::kData);
  EXPECT_EQ((*origins)[1].op, "dyn.reshape");
  EXPECT_EQ((*origins)[1].kind, SymbolOrigin::Kind::kValue);
  EXPECT_EQ((*origins)[1].data_source, "%target (a parameter's contents)");
  EXPECT_EQ((*origins)[2].op, "dyn.reshape");
  EXPECT_EQ((*origins)[3].value, "%s");
  EXPECT_EQ((*origins)[3].op, "add");
  EXPECT_EQ((*origins)[3].kind, SymbolOrigin::Kind::kRule);
  EXPECT_EQ((*origins)[3].location, "<input>:6:3");
  const std::string text = SymbolOriginsText(*origins);
  EXPECT_THAT(text, HasSubstr("dyn1: %nz of argwhere [data] (<input>:4:3): the op's output size "
                              "depends on tensor contents"));
  EXPECT_THAT(text, HasSubstr("4 fresh symbols: 1 data-dependent, 2 from input values (2 of them "
                              "tensor contents), 1 where a rule gave up (0 fed a `?` size)"));
  EXPECT_FALSE(ExplainSymbols(*m, "nope").ok());
}

// A reshape target read from a tensor's values (a box size, a score count) names the nearest
// data-sized tensor it is computed from; one computed from shapes alone has no data source.
TEST(ExplainSymbols, NamesTheTensorWhoseContentsAValueSizeReads) {
  auto m = Parse(R"(def @main(%x: f32[n, 4]) {
  %sq = multiply(%x, %x)
  %mx = max(%sq) {axis = [0, 1]}
  %k = cast(%mx) {dtype = i64}
  %k1 = expand_dims(%k) {axis = 0}
  %four = constant<[4]> : i64[1]
  %target = concatenate(%k1, %four)
  %r = dyn.reshape(%x, %target)
  return %r
}
)");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunPipeline(*m, "infer-types").ok());
  auto origins = ExplainSymbols(*m);
  ASSERT_TRUE(origins.ok()) << origins.status();
  // Both dims of the target: its contents are known only as a whole.
  ASSERT_EQ(origins->size(), 2u) << SymbolOriginsText(*origins);
  EXPECT_EQ((*origins)[0].kind, SymbolOrigin::Kind::kValue);
  EXPECT_EQ((*origins)[0].data_source, "%sq of multiply (<input>:2:3)");
  EXPECT_THAT((*origins)[0].reason, HasSubstr("depend on tensor contents: %sq of multiply"));
}

}  // namespace
}  // namespace hetpass
