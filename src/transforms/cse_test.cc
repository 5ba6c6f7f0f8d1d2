#include "passes/transforms/cse.h"

#include "gmock/gmock.h"
#include "passes/ir/builder.h"
#include "gtest/gtest.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::ExpectIdempotent;
using ::hetpass::testing::RunAndPrint;
using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Tests that identical calls and identical constants merge, and uses are redirected.
TEST(Cse, MergesIdenticalBindings) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[4]) {
  %a = exp(%x)
  %b = exp(%x)
  %c1 = constant<[1.0, 2.0, 3.0, 4.0]> : f32[4]
  %c2 = constant<[1.0, 2.0, 3.0, 4.0]> : f32[4]
  %s = add(%a, %c1)
  %t = add(%b, %c2)
  %u = multiply(%s, %t)
  return %u
}
)",
                                      "cse");
  EXPECT_EQ(Count(out, "exp("), 1);
  EXPECT_EQ(Count(out, "constant<"), 1);
  EXPECT_EQ(Count(out, "add("), 1);
  EXPECT_THAT(out, HasSubstr("multiply(%s, %s)"));
}

// Large constants (hashed from sampled blocks, Tensor::Hash) merge only when every byte is
// equal: two that differ in one element between the sampled blocks hash alike and stay apart.
TEST(Cse, LargeConstantsMergeOnlyWhenEqual) {
  Module m;
  Function* f = m.AddFunction("main");
  Builder b(&f->body());
  Tensor w = Tensor::Zeros(DType::kF32, {512, 512});  // 1 MiB
  for (int64_t i = 0; i < w.num_elements(); ++i) w.SetDouble(i, static_cast<double>(i % 977));
  Tensor between = w;
  between.SetDouble(w.num_elements() / 64 + 100, -1.0);  // 400 bytes past sampled block 1
  ASSERT_EQ(between.Hash(), w.Hash());  // the premise: a difference the hash does not see
  ASSERT_NE(between, w);
  Value* a = b.Constant(w, "a");
  Value* a2 = b.Constant(w, "a2");
  Value* c = b.Constant(between, "c");
  f->body().set_results({a, a2, c});
  auto cse = CreateCsePass();
  ASSERT_TRUE(cse->Run(m).ok());
  const auto& results = f->body().results();
  EXPECT_EQ(results[0], results[1]);  // equal: merged
  EXPECT_NE(results[0], results[2]);  // one element apart: kept
  EXPECT_EQ(f->body().nodes().size(), 2u);
}

// Tests that differing attributes or devices prevent merging.
TEST(Cse, RespectsAttributesAndDevices) {
  const std::string out = RunAndPrint(R"(
def @main(%x: f32[4, 4]) {
  %a = sum(%x) {axis = [0]}
  %b = sum(%x) {axis = [1]}
  %c = exp(%x) @cpu
  %d = exp(%x) @sim
  return %a, %b, %c, %d
}
)",
                                      "cse");
  EXPECT_EQ(Count(out, "sum("), 2);
  EXPECT_EQ(Count(out, "exp("), 2);
}

// Tests scoping: a region reuses an outer binding, but a binding inside a region is not
// visible to the enclosing block.
TEST(Cse, ScopesRegions) {
  const std::string out = RunAndPrint(R"(
def @main(%c: bool[], %x: f32[4]) {
  %a = exp(%x)
  %r = if (%c) {
    %b = exp(%x)
    %t = tanh(%b)
    yield %t
  } else {
    yield %a
  }
  %t2 = tanh(%a)
  return %r, %t2
}
)",
                                      "cse");
  EXPECT_EQ(Count(out, "exp("), 1);   // %b merged into outer %a
  EXPECT_EQ(Count(out, "tanh("), 2);  // inner %t is not visible outside
  ExpectIdempotent(R"(
def @main(%x: f32[4]) {
  %a = exp(%x)
  %b = exp(%x)
  return %a, %b
}
)",
                   "cse");
}

}  // namespace
}  // namespace hetpass
