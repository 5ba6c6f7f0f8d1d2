// The copies the IR promises are the copies made: every exact-count case of the planner and
// manifest-alloc tests (5a-f), compiled, run on the sim device, and its run-time counters
// (device-to-host and host-to-device calls and bytes, syncs) compared with the copy ledger with
// the symbols bound, under our per-input masks and under the single-flag registry. Outputs are
// also compared with the unfused reference evaluation, so a "cheaper" run cannot be wrong.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/vm/vm.h"
#include "support/runtime_test_util.h"
#include "support/seed_models.h"

namespace hetpass {
namespace {

using ::hetpass::testing::CompileForVm;
using ::hetpass::testing::RandomTensor;
using ::hetpass::testing::ReferenceRun;
using ::hetpass::testing::SingleFlag;
using ::hetpass::testing::TensorsNear;

constexpr char kTargetOutputs[] = "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc";
constexpr char kDefault[] = "infer-types,plan-devices,fuse-ops,manifest-alloc";

struct Case {
  std::string name;
  std::string text;
  std::string pipeline;
  std::vector<Tensor> inputs;
  DimExpr::Bindings bindings;
  // Expected run-time copies: ours, then single flag.
  int64_t h2d, d2h, old_h2d, old_d2h;
};

Tensor I64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return Tensor::FromInt64s(DType::kI64, std::move(shape), v);
}

std::vector<Case> Cases() {
  const Tensor begin = I64({2}, {1, 2}), end = I64({2}, {1000, 60}), strides = I64({2}, {1, 1});
  std::vector<Case> cases;
  cases.push_back({"5a_slice_chain", ::hetpass::testing::SliceChain(), kTargetOutputs,
                   {RandomTensor(DType::kF32, {24, 64}, 1), begin, end, strides}, {{"n", 24}},
                   0, 0, 0, 10});
  for (int64_t n : {16, 5}) {
    cases.push_back({absl::StrCat("5b_mlp_n", n), ::hetpass::testing::SeedMlp("n"), kDefault,
                     {RandomTensor(DType::kF32, {n, 1024}, 2)}, {{"n", n}}, 1, 1, 1, 1});
  }
  cases.push_back({"5b_mlp_static", ::hetpass::testing::SeedMlp("16"), kDefault,
                   {RandomTensor(DType::kF32, {16, 1024}, 3)}, {}, 1, 1, 1, 1});
  cases.push_back({"5c_reshape_from_shape_arithmetic", ::hetpass::testing::kReshapeFromShapeArithmetic,
                   kDefault, {RandomTensor(DType::kF32, {6, 1024}, 4)}, {{"n", 6}}, 1, 1, 1, 1});
  cases.push_back({"5d_argwhere_count", ::hetpass::testing::kArgwhereCount,
                   kTargetOutputs, {RandomTensor(DType::kF32, {7, 4}, 5)}, {{"n", 7}}, 0, 1, 0, 1});
  cases.push_back({"nms_count", ::hetpass::testing::kNonMaxSuppressionCount, kTargetOutputs,
                   {RandomTensor(DType::kF32, {1, 9, 4}, 8),
                    RandomTensor(DType::kF32, {1, 2, 9}, 9)},
                   {{"n", 9}}, 0, 1, 0, 1});
  cases.push_back({"5e_over_declared_ops", ::hetpass::testing::kOverDeclaredOps,
                   kTargetOutputs,
                   {RandomTensor(DType::kF32, {2, 3, 8, 8}, 6), I64({2}, {10, 12}),
                    I64({8}, {0, 0, 1, 1, 0, 0, 2, 2}), I64({4}, {1, 1, 2, 1}), I64({}, {5})},
                   {{"n", 2}}, 1, 0, 1, 5});
  cases.push_back({"5f_shape_and_value_copied_once", ::hetpass::testing::kShapeAndValueCopiedOnce,
                   kTargetOutputs,
                   {RandomTensor(DType::kF32, {9, 64}, 7), I64({2}, {1, 2}), I64({2}, {5, 30}), I64({2}, {1, 1})},
                   {{"n", 9}}, 0, 0, 0, 1});
  return cases;
}

class LedgerAgreement : public ::testing::TestWithParam<Case> {};

TEST_P(LedgerAgreement, RunTimeCountersEqualTheLedger) {
  const Case& c = GetParam();
  std::vector<std::vector<Tensor>> outputs;
  for (const OpRegistry* registry : {&OpRegistry::Global(), &SingleFlag()}) {
    const bool single = registry != &OpRegistry::Global();
    SCOPED_TRACE(single ? "single-flag masks" : "per-input masks");
    auto p = CompileForVm(c.text, c.pipeline, registry);
    ASSERT_TRUE(p.ok()) << p.status();
    auto vm = vm::VirtualMachine::Load(p->executable);
    ASSERT_TRUE(vm.ok()) << vm.status();
    auto out = (*vm)->RunWithHostTensors("main", c.inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    const runtime::DeviceCounters& counters = (*vm)->LastRunCounters();
    const absl::Status agree = vm::CompareWithLedger(p->ledger, counters, c.bindings);
    EXPECT_TRUE(agree.ok()) << agree << "\n" << p->ledger.ToText();
    EXPECT_EQ(counters.h2d_calls, single ? c.old_h2d : c.h2d);
    EXPECT_EQ(counters.d2h_calls, single ? c.old_d2h : c.d2h);
    // Every device-to-host copy blocks once; nothing else synchronises.
    EXPECT_EQ(counters.syncs, counters.d2h_calls);
    auto ref = ReferenceRun(*p->source, c.inputs);
    ASSERT_TRUE(ref.ok()) << ref.status();
    ASSERT_EQ(out->size(), ref->size());
    for (size_t i = 0; i < out->size(); ++i) EXPECT_TRUE(TensorsNear((*out)[i], (*ref)[i])) << "output " << i;
    outputs.push_back(*out);
  }
}

// Tests that non_max_suppression on sim copies exactly its 8-byte count to the host per run
// (its counter runs on sim; boxes and scores stay there), run after run, and that its rows are
// those of the unfused reference.
TEST(LedgerAgreementNms, OnlyTheEightByteCountCrosses) {
  auto p = CompileForVm(::hetpass::testing::kNonMaxSuppressionCount, kTargetOutputs, nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  auto vm = vm::VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  for (int64_t n : {9, 3}) {
    const std::vector<Tensor> inputs = {RandomTensor(DType::kF32, {1, n, 4}, 10 + n),
                                        RandomTensor(DType::kF32, {1, 2, n}, 20 + n)};
    auto out = (*vm)->RunWithHostTensors("main", inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    const runtime::DeviceCounters& counters = (*vm)->LastRunCounters();
    EXPECT_EQ(counters.d2h_calls, 1) << "n=" << n;
    EXPECT_EQ(counters.d2h_bytes, 8) << "n=" << n;
    EXPECT_EQ(counters.h2d_calls, 0) << "n=" << n;
    EXPECT_EQ(counters.syncs, 1) << "n=" << n;
    auto ref = ReferenceRun(*p->source, inputs);
    ASSERT_TRUE(ref.ok()) << ref.status();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_TRUE(TensorsNear((*out)[0], (*ref)[0])) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(ExactCounts, LedgerAgreement, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace hetpass
