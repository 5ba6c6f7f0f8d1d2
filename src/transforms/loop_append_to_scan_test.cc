// Tests of loop-append-to-scan on the VM: the rewritten loop gives bit for bit the outputs of
// the loop as written (pure data movement), for zero, one and several iterations and a
// non-empty initial value, fails where the original fails (a piece whose dims disagree with the
// accumulator's), and makes the same copies on sim. The IR shape of the rewrite is checked by
// test/ir/transforms/loop_append_to_scan.hir.
#include "passes/transforms/loop_append_to_scan.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/printer.h"
#include "passes/vm/vm.h"
#include "support/runtime_test_util.h"

namespace hetpass {
namespace {

using testing::CompileForVm;
using testing::ExpectSameCopies;
using ::testing::HasSubstr;

// Appends row + i (so every piece differs and the order shows) to an accumulator that starts
// as `init` (whose dims are its own symbols: a mismatch is a run-time error, not a type error).
constexpr char kAppend[] = R"(
def @main(%n: i64[], %row: f32[h, w], %init: f32[r, a, b]) {
  %go = constant<true> : bool[]
  %acc_n = loop(%n, %go, %init) (%i: i64[], %c: bool[], %acc: f32[?, ?, ?]) {
    %fi = cast(%i) {dtype = f32}
    %shifted = add(%row, %fi)
    %piece = expand_dims(%shifted) {axis = 0}
    %next = concatenate(%acc, %piece)
    yield %c, %next
  }
  return %acc_n
}
)";

std::string WithoutThePass(const std::string& pipeline) {
  const std::string pass = ",loop-append-to-scan";
  const size_t at = pipeline.find(pass);
  EXPECT_NE(at, std::string::npos) << pipeline;
  return pipeline.substr(0, at) + pipeline.substr(at + pass.size());
}

struct Ran {
  absl::StatusOr<std::vector<Tensor>> outputs;
  runtime::DeviceCounters counters;
};

Ran RunOn(const testing::VmProgram& p, const std::vector<Tensor>& inputs) {
  auto machine = vm::VirtualMachine::Load(p.executable);
  EXPECT_TRUE(machine.ok()) << machine.status();
  Ran r{(*machine)->RunWithHostTensors("main", inputs), {}};
  r.counters = (*machine)->LastRunCounters();
  return r;
}

Tensor Iota(DType dtype, std::vector<int64_t> shape, double start) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<double>(i);
  return Tensor::FromDoubles(dtype, std::move(shape), v);
}

class LoopAppendToScan : public ::testing::TestWithParam<DeviceKind> {};

// Tests that the rewrite applies (the default pipeline's module has the scan output) and that
// its outputs and copies equal the original loop's for 0, 1 and 4 iterations, from an empty and
// from a two-row initial value.
TEST_P(LoopAppendToScan, SameBytesAndCopiesAsTheLoopAsWritten) {
  const std::string pipeline = vm::DefaultPipeline(GetParam());
  auto with = CompileForVm(kAppend, pipeline);
  ASSERT_TRUE(with.ok()) << with.status();
  auto without = CompileForVm(kAppend, WithoutThePass(pipeline));
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_THAT(PrintModule(*with->compiled), HasSubstr("_rows"));
  EXPECT_FALSE(absl::StrContains(PrintModule(*without->compiled), "_rows"));

  const Tensor row = Iota(DType::kF32, {2, 3}, 0.5);
  for (int64_t init_rows : {0, 2}) {
    const Tensor init = Iota(DType::kF32, {init_rows, 2, 3}, 100.0);
    for (int64_t trips : {0, 1, 4}) {
      SCOPED_TRACE(absl::StrCat(trips, " iterations from ", init_rows, " rows"));
      const std::vector<Tensor> inputs = {Tensor::FromInt64s(DType::kI64, {}, {trips}), row, init};
      Ran a = RunOn(*with, inputs);
      Ran b = RunOn(*without, inputs);
      ASSERT_TRUE(a.outputs.ok()) << a.outputs.status();
      ASSERT_TRUE(b.outputs.ok()) << b.outputs.status();
      const Tensor& got = (*a.outputs)[0];
      const Tensor& want = (*b.outputs)[0];
      ASSERT_EQ(got.type().ToString(), want.type().ToString());
      EXPECT_EQ(got.ToDoubles(), want.ToDoubles());
      ExpectSameCopies(a.counters, b.counters);
    }
  }
}

// Tests that a piece whose dims disagree with the accumulator's is still an error naming the
// concatenation (after the loop now, instead of in its first iteration).
TEST_P(LoopAppendToScan, MismatchedPiecesAreStillAnError) {
  auto with = CompileForVm(kAppend, vm::DefaultPipeline(GetParam()));
  ASSERT_TRUE(with.ok()) << with.status();
  const std::vector<Tensor> inputs = {Tensor::FromInt64s(DType::kI64, {}, {2}),
                                      Iota(DType::kF32, {2, 3}, 0), Iota(DType::kF32, {1, 3, 2}, 0)};
  Ran a = RunOn(*with, inputs);
  ASSERT_FALSE(a.outputs.ok());
  EXPECT_THAT(a.outputs.status().message(), HasSubstr("concatenate"));
}

INSTANTIATE_TEST_SUITE_P(Devices, LoopAppendToScan, ::testing::Values(DeviceKind::kCpu, DeviceKind::kSim),
                         [](const auto& info) { return std::string(DeviceName(info.param)); });

}  // namespace
}  // namespace hetpass
