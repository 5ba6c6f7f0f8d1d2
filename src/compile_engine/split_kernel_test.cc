#include "compile_engine/split_kernel.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "support/ir_test_util.h"
#include "support/runtime_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::RandomTensor;
using ::hetpass::testing::TensorsNear;
using ::testing::HasSubstr;

TensorArg Arg(Tensor& t) { return TensorArg{t.mutable_data(), t.dtype(), t.shape()}; }

// Runs `kernel` and the reference kernel of `f` on `inputs` (constants as given) and compares.
void ExpectMatchesReference(const Function& f, CompiledKernel& kernel,
                            std::vector<Tensor> inputs, const std::vector<bool>& constant,
                            std::vector<int64_t> out_shape) {
  auto reference = CompileReferenceKernel(f);
  ASSERT_TRUE(reference.ok()) << reference.status();
  std::vector<const Tensor*> consts;
  for (size_t i = 0; i < inputs.size(); ++i) consts.push_back(constant[i] ? &inputs[i] : nullptr);
  auto a = kernel.Instantiate(consts);
  auto r = (*reference)->Instantiate(std::vector<const Tensor*>(inputs.size(), nullptr));
  ASSERT_TRUE(a.ok() && r.ok());
  Tensor got = Tensor::Zeros(DType::kF32, out_shape), want = got;
  std::vector<TensorArg> args;
  for (Tensor& t : inputs) args.push_back(Arg(t));
  args.push_back(Arg(got));
  ASSERT_TRUE((*a)->Run(args).ok());
  args.back() = Arg(want);
  ASSERT_TRUE((*r)->Run(args).ok());
  EXPECT_TRUE(TensorsNear(got, want, 1e-5));
}

// Tests dense + bias + residual add + tanh: oneDNN for the head, the JIT for the tail in place.
TEST(SplitKernel, DenseHeadWithResidualAndTanhTail) {
  auto m = testing::Parse(R"(
def @f(%x: f32[m, 8], %w: f32[4, 8], %b: f32[4], %r: f32[m, 4]) -> f32[m, 4] attributes {primitive = true} {
  %h = nn.dense(%x, %w) : f32[m, 4]
  %hb = nn.bias_add(%h, %b) {axis = -1} : f32[m, 4]
  %s = add(%hb, %r) : f32[m, 4]
  %t = tanh(%s) : f32[m, 4]
  return %t
}
)");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  auto kernel = CompileLibraryHeadJitTail(f);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_THAT((*kernel)->Describe(), HasSubstr("onednn matmul[bias]"));
  EXPECT_THAT((*kernel)->Describe(), HasSubstr("in-place jit[add,tanh]"));
  for (int64_t rows : {1, 5}) {
    ExpectMatchesReference(f, **kernel,
                           {RandomTensor(DType::kF32, {rows, 8}, 1), RandomTensor(DType::kF32, {4, 8}, 2),
                            RandomTensor(DType::kF32, {4}, 3), RandomTensor(DType::kF32, {rows, 4}, 4)},
                           {false, true, true, false}, {rows, 4});
  }
}

// Tests a body with no library head (rejected), and a tail that reads the head's result twice
// (relu(h) + h, computed in place over h: each element reads its inputs before it is written).
TEST(SplitKernel, NoLibraryHeadAndJointReadTwice) {
  auto m = testing::Parse(R"(
def @f(%x: f32[m, 8], %w: f32[4, 8]) -> f32[m, 4] attributes {primitive = true} {
  %h = nn.dense(%x, %w) : f32[m, 4]
  %a = nn.relu(%h) : f32[m, 4]
  %s = add(%a, %h) : f32[m, 4]
  return %s
}

def @g(%x: f32[m, 4]) -> f32[m, 4] attributes {primitive = true} {
  %a = nn.softmax(%x) : f32[m, 4]
  %t = tanh(%a) : f32[m, 4]
  return %t
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(absl::IsUnimplemented(CompileLibraryHeadJitTail(*m->FindFunction("g")).status()));
  auto k = CompileLibraryHeadJitTail(*m->FindFunction("f"));
  ASSERT_TRUE(k.ok()) << k.status();
  ExpectMatchesReference(*m->FindFunction("f"), **k,
                         {RandomTensor(DType::kF32, {3, 8}, 5), RandomTensor(DType::kF32, {4, 8}, 6)},
                         {false, true}, {3, 4});
}

}  // namespace
}  // namespace hetpass
