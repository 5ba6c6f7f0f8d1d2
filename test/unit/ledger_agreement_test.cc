// The copies the IR promises are the copies made: every exact-count case of the planner and
// manifest-alloc tests (5a-f), compiled, run on the sim device, and its run-time counters
// (device-to-host and host-to-device calls and bytes, syncs) compared with the copy ledger with
// the symbols bound, under our per-input masks and under both baselines (single-flag, relay:
// the baseline-masks pass before manifest-alloc, same placement and fusion). Outputs are also
// compared with the unfused reference evaluation, so a "cheaper" run cannot be wrong. Then
// loops (the ledger's region symbols bound by the VM's execution counts) and a ledger that
// lies, which the comparison must reject.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/analysis/baseline_masks.h"
#include "passes/vm/vm.h"
#include "support/runtime_test_util.h"
#include "support/seed_models.h"

namespace hetpass {
namespace {

using ::hetpass::testing::CompileForVm;
using ::hetpass::testing::RandomTensor;
using ::hetpass::testing::ReferenceRun;
using ::hetpass::testing::TensorsNear;

constexpr char kTargetOutputs[] = "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc";
constexpr char kDefault[] = "infer-types,plan-devices,fuse-ops,manifest-alloc";

struct Case {
  std::string name;
  std::string text;
  std::string pipeline;
  std::vector<Tensor> inputs;
  DimExpr::Bindings bindings;
  // Expected run-time copies {h2d, d2h}: ours, single-flag, relay.
  struct Copies {
    int64_t h2d, d2h;
  } ours, single_flag, relay;
};

Tensor I64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return Tensor::FromInt64s(DType::kI64, std::move(shape), v);
}

std::vector<Case> Cases() {
  const Tensor begin = I64({2}, {1, 2}), end = I64({2}, {1000, 60}), strides = I64({2}, {1, 1});
  std::vector<Case> cases;
  cases.push_back({"5a_slice_chain", ::hetpass::testing::SliceChain(), kTargetOutputs,
                   {RandomTensor(DType::kF32, {24, 64}, 1), begin, end, strides}, {{"n", 24}},
                   {0, 0}, {0, 1}, {0, 0}});
  for (int64_t n : {16, 5}) {
    cases.push_back({absl::StrCat("5b_mlp_n", n), ::hetpass::testing::SeedMlp("n"), kDefault,
                     {RandomTensor(DType::kF32, {n, 1024}, 2)}, {{"n", n}}, {1, 1}, {1, 1}, {1, 1}});
  }
  cases.push_back({"5b_mlp_static", ::hetpass::testing::SeedMlp("16"), kDefault,
                   {RandomTensor(DType::kF32, {16, 1024}, 3)}, {}, {1, 1}, {1, 1}, {1, 1}});
  cases.push_back({"5c_reshape_from_shape_arithmetic", ::hetpass::testing::kReshapeFromShapeArithmetic,
                   kDefault, {RandomTensor(DType::kF32, {6, 1024}, 4)}, {{"n", 6}}, {1, 1}, {1, 1}, {1, 1}});
  cases.push_back({"5d_argwhere_count", ::hetpass::testing::kArgwhereCount,
                   kTargetOutputs, {RandomTensor(DType::kF32, {7, 4}, 5)}, {{"n", 7}}, {0, 1}, {0, 1}, {0, 1}});
  cases.push_back({"nms_count", ::hetpass::testing::kNonMaxSuppressionCount, kTargetOutputs,
                   {RandomTensor(DType::kF32, {1, 9, 4}, 8),
                    RandomTensor(DType::kF32, {1, 2, 9}, 9)},
                   {{"n", 9}}, {0, 1}, {0, 1}, {0, 1}});
  cases.push_back({"5e_over_declared_ops", ::hetpass::testing::kOverDeclaredOps,
                   kTargetOutputs,
                   {RandomTensor(DType::kF32, {2, 3, 8, 8}, 6), I64({2}, {10, 12}),
                    I64({8}, {0, 0, 1, 1, 0, 0, 2, 2}), I64({4}, {1, 1, 2, 1}), I64({}, {5})},
                   {{"n", 2}}, {1, 0}, {1, 5}, {1, 5}});
  cases.push_back({"5f_shape_and_value_copied_once", ::hetpass::testing::kShapeAndValueCopiedOnce,
                   kTargetOutputs,
                   {RandomTensor(DType::kF32, {9, 64}, 7), I64({2}, {1, 2}), I64({2}, {5, 30}), I64({2}, {1, 1})},
                   {{"n", 9}}, {0, 0}, {0, 1}, {0, 0}});
  return cases;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class LedgerAgreement : public ::testing::TestWithParam<Case> {};

TEST_P(LedgerAgreement, RunTimeCountersEqualTheLedger) {
  const Case& c = GetParam();
  std::vector<std::vector<Tensor>> outputs;
  const std::pair<std::optional<BaselineMasks>, Case::Copies> modes[] = {
      {std::nullopt, c.ours}, {BaselineMasks::kSingleFlag, c.single_flag},
      {BaselineMasks::kRelay, c.relay}};
  for (const auto& [baseline, want] : modes) {
    SCOPED_TRACE(baseline ? std::string(BaselineMasksName(*baseline)) : "hetpass masks");
    auto p = CompileForVm(c.text, baseline ? PipelineWithBaseline(c.pipeline, *baseline) : c.pipeline);
    ASSERT_TRUE(p.ok()) << p.status();
    auto vm = vm::VirtualMachine::Load(p->executable);
    ASSERT_TRUE(vm.ok()) << vm.status();
    auto out = (*vm)->RunWithHostTensors("main", c.inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    const runtime::DeviceCounters& counters = (*vm)->LastRunCounters();
    const DimExpr::Bindings bindings = (*vm)->LastRunRecord().LedgerBindings(p->ledger);
    for (const auto& [symbol, value] : c.bindings) EXPECT_EQ(bindings.at(symbol), value) << symbol;
    const vm::LedgerComparison cmp =
        vm::CompareLedgerToRun(p->ledger, counters, (*vm)->LastRunRecord());
    EXPECT_TRUE(cmp.agrees()) << cmp.Summary() << "\n" << cmp.Table() << p->ledger.ToText();
    std::printf("[ copies   ] %-34s %-12s h2d %lld d2h %lld params %lld\n", c.name.c_str(),
                baseline ? std::string(BaselineMasksName(*baseline)).c_str() : "hetpass",
                static_cast<long long>(counters.h2d_calls), static_cast<long long>(counters.d2h_calls),
                static_cast<long long>(counters.param_calls));
    EXPECT_EQ(counters.h2d_calls, want.h2d);
    EXPECT_EQ(counters.d2h_calls, want.d2h);
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

// A loop whose body copies its carried tensor to the host and back every iteration: the ledger
// promises `1 + $loop0` device-to-host copies (the last after the loop), the VM reports how many
// times the body ran, and with that bound the comparison is exact: counts, bytes and syncs.
constexpr char kLoopPingPong[] = R"(
def @main(%m: i64[] @cpu, %c: bool[] @cpu, %x: f32[n, 4] @sim) {
  %r = loop(%m, %c, %x) (%i: i64[] @cpu, %ci: bool[] @cpu, %acc: f32[n, 4] @sim) {
    %h = device_copy(%acc) {src = "sim", dst = "cpu"} : f32[n, 4] @cpu
    %e = exp(%h) : f32[n, 4] @cpu
    %d = device_copy(%e) {src = "cpu", dst = "sim"} : f32[n, 4] @sim
    yield %ci, %d
  } : f32[n, 4] @sim
  %rh = device_copy(%r) {src = "sim", dst = "cpu"} : f32[n, 4] @cpu
  return %rh
}
)";

absl::StatusOr<::hetpass::testing::VmProgram> CompileLoop() {
  return CompileForVm(kLoopPingPong, "infer-types,fuse-ops,manifest-alloc");
}

TEST(LedgerLoops, TripCountsBindTheLedgerExactly) {
  auto p = CompileLoop();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ledger.Count(CopyDirection::kDeviceToHost).ToString(), "$loop0 + 1")
      << p->ledger.ToText();
  auto vm = vm::VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  for (const auto& [trips, n] : std::vector<std::pair<int64_t, int64_t>>{{5, 3}, {0, 2}, {12, 1}}) {
    SCOPED_TRACE(absl::StrCat("trips ", trips, ", n ", n));
    auto out = (*vm)->RunWithHostTensors(
        "main", {I64({}, {trips}), Tensor::FromDoubles(DType::kBool, {}, {1}),
                 RandomTensor(DType::kF32, {n, 4}, 11)});
    ASSERT_TRUE(out.ok()) << out.status();
    const runtime::DeviceCounters& counters = (*vm)->LastRunCounters();
    const DimExpr::Bindings bindings = (*vm)->LastRunRecord().LedgerBindings(p->ledger);
    EXPECT_EQ(bindings.at("$loop0"), trips);
    EXPECT_EQ(bindings.at("n"), n);
    EXPECT_EQ(counters.d2h_calls, 1 + trips);
    EXPECT_EQ(counters.d2h_bytes, (1 + trips) * n * 16);
    EXPECT_EQ(counters.h2d_calls, trips);
    const vm::LedgerComparison cmp =
        vm::CompareLedgerToRun(p->ledger, counters, (*vm)->LastRunRecord());
    EXPECT_TRUE(cmp.exact()) << cmp.Summary() << "\n" << cmp.Table();
    EXPECT_THAT(cmp.Summary(), ::testing::HasSubstr("exactly"));
  }
}

// A ledger that lies must fail the comparison, field by field, and never read "exactly": a
// wrong trip count (the per-iteration copies are off), a copy too many, a wrong size, copies
// of a run-time size the run never made, a wrong sync count and a wrong byte total.
TEST(LedgerLoops, AWrongLedgerFailsTheComparison) {
  auto p = CompileLoop();
  ASSERT_TRUE(p.ok()) << p.status();
  auto vm = vm::VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  auto out = (*vm)->RunWithHostTensors(
      "main", {I64({}, {4}), Tensor::FromDoubles(DType::kBool, {}, {1}),
               RandomTensor(DType::kF32, {3, 4}, 12)});
  ASSERT_TRUE(out.ok()) << out.status();
  const runtime::DeviceCounters& counters = (*vm)->LastRunCounters();
  const DimExpr::Bindings right = (*vm)->LastRunRecord().LedgerBindings(p->ledger);
  ASSERT_TRUE(vm::CompareLedger(p->ledger, counters, right).exact());

  DimExpr::Bindings wrong_trips = right;
  wrong_trips["$loop0"] = 3;
  const vm::LedgerComparison trips = vm::CompareLedger(p->ledger, counters, wrong_trips);
  EXPECT_FALSE(trips.agrees());
  EXPECT_THAT(trips.Summary(), ::testing::Not(::testing::HasSubstr("exactly")));
  EXPECT_FALSE(vm::CompareWithLedger(p->ledger, counters, wrong_trips).ok());

  CopyLedger extra = p->ledger;
  extra.entries.push_back(extra.entries.back());  // one more device-to-host copy
  const vm::LedgerComparison more = vm::CompareLedger(extra, counters, right);
  EXPECT_FALSE(more.agrees()) << more.Table();
  EXPECT_THAT(more.Summary(), ::testing::HasSubstr("d2h"));

  CopyLedger bigger = p->ledger;
  for (LedgerEntry& e : bigger.entries) e.bytes = e.bytes * DimExpr(2);
  EXPECT_FALSE(vm::CompareLedger(bigger, counters, right).agrees());

  // A ledger that turns the run's copies into `?` ones promises copies of a run-time size the
  // VM never made: their count fails, however many bytes moved.
  CopyLedger unknown = p->ledger;
  for (LedgerEntry& e : unknown.entries) {
    if (e.direction == CopyDirection::kDeviceToHost) e.bytes = DimExpr::Unknown();
  }
  const vm::LedgerComparison unchecked =
      vm::CompareLedgerToRun(unknown, counters, (*vm)->LastRunRecord());
  EXPECT_FALSE(unchecked.agrees()) << unchecked.Table();
  EXPECT_THAT(unchecked.Summary(), ::testing::HasSubstr("d2h copies of a run-time size"));

  // A wrong sync count fails, though every copy matches.
  runtime::DeviceCounters one_more_sync = counters;
  ++one_more_sync.syncs;
  const vm::LedgerComparison syncs = vm::CompareLedger(p->ledger, one_more_sync, right);
  EXPECT_FALSE(syncs.agrees());
  EXPECT_THAT(syncs.Summary(), ::testing::HasSubstr("syncs: ledger"));

  // So does a byte total off by four bytes.
  runtime::DeviceCounters four_more_bytes = counters;
  four_more_bytes.h2d_bytes += 4;
  const vm::LedgerComparison bytes = vm::CompareLedger(p->ledger, four_more_bytes, right);
  EXPECT_FALSE(bytes.agrees());
  EXPECT_THAT(bytes.Summary(), ::testing::HasSubstr("h2d bytes: ledger"));
}

// Tests that a promise with a symbol the run did not bind fails, naming the symbol: a ledger
// that cannot be evaluated promises nothing, and "nothing" must not pass.
TEST(LedgerLoops, AnUnboundSymbolFailsTheComparison) {
  auto p = CompileLoop();
  ASSERT_TRUE(p.ok()) << p.status();
  auto vm = vm::VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  auto out = (*vm)->RunWithHostTensors(
      "main", {I64({}, {2}), Tensor::FromDoubles(DType::kBool, {}, {1}),
               RandomTensor(DType::kF32, {3, 4}, 13)});
  ASSERT_TRUE(out.ok()) << out.status();
  DimExpr::Bindings no_trips = (*vm)->LastRunRecord().LedgerBindings(p->ledger);
  no_trips.erase("$loop0");
  const vm::LedgerComparison cmp = vm::CompareLedger(p->ledger, (*vm)->LastRunCounters(), no_trips);
  EXPECT_FALSE(cmp.agrees()) << cmp.Table();
  EXPECT_FALSE(cmp.ToStatus().ok());
  EXPECT_THAT(cmp.Summary(), ::testing::HasSubstr("symbol '$loop0' is not bound"));
  EXPECT_THAT(cmp.Table(), ::testing::HasSubstr("FAILED"));
}

// A copy inside a loop body sized by a count the body itself binds (argwhere's): the count may
// differ between iterations and no single value of it is bound where the ledger is evaluated,
// so the ledger states the copy's count and not its bytes (`?`), and the VM counts those bytes
// apart by the same rule (RegionCopyBytesStated). Before, the ledger promised `$loop0*dyn1*8`
// bytes, which no run could evaluate (found by gru_seq2seq on cuda).
constexpr char kLoopLocalCount[] = R"(
def @main(%m: i64[] @cpu, %c: bool[] @cpu, %x: f32[n] @sim, %one: f32[] @sim) {
  %r, %s = loop(%m, %c, %x) (%i: i64[] @cpu, %ci: bool[] @cpu, %acc: f32[n] @sim) {
    %nz = argwhere(%acc) @sim
    %h = device_copy(%nz) {src = "sim", dst = "cpu"} @cpu
    %t = sum(%h) @cpu
    %next = subtract(%acc, %one) @sim
    yield %ci, %next, %t
  }
  %rh = device_copy(%r) {src = "sim", dst = "cpu"} @cpu
  return %rh, %s
}
)";

TEST(LedgerRuntimeSized, ACopySizedByACountTheLoopBodyBindsIsOfARunTimeSize) {
  auto p = CompileForVm(kLoopLocalCount, "infer-types,fuse-ops,manifest-alloc");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->ledger.HasUnknownBytes(CopyDirection::kDeviceToHost)) << p->ledger.ToText();
  auto vm = vm::VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  auto out = (*vm)->RunWithHostTensors(
      "main", {I64({}, {3}), Tensor::FromDoubles(DType::kBool, {}, {1}),
               Tensor::FromDoubles(DType::kF32, {4}, {3, 2, 1, 0}), Tensor::FromDoubles(DType::kF32, {}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Three iterations of three nonzero rows each ([3 2 1 0], [2 1 0 -1], [1 0 -1 -2]).
  const auto& measured = (*vm)->LastRunRecord().runtime_sized[static_cast<int>(CopyDirection::kDeviceToHost)];
  EXPECT_EQ(measured.calls, 3);
  EXPECT_EQ(measured.bytes, 3 * 3 * 8);
  const vm::LedgerComparison cmp = vm::CompareLedgerToRun(p->ledger, (*vm)->LastRunCounters(), (*vm)->LastRunRecord());
  EXPECT_TRUE(cmp.agrees()) << cmp.Summary() << "\n" << cmp.Table();
  EXPECT_FALSE(cmp.exact());
}

// Two results copied to the host: a slice whose size is known only at run time (`?`) and the
// relu it slices (n*256 bytes). The `?` copy is counted apart by the VM, so the d2h bytes of
// the other copy are still compared exactly, and a lie about them fails.
constexpr char kRuntimeSizedBesideStated[] = R"(
def @main(%x: f32[n, 64] @sim, %b: i64[2] @cpu, %e: i64[2] @cpu, %s: i64[2] @cpu) {
  %xs = nn.relu(%x) @sim
  %y = dyn.strided_slice(%xs, %b, %e, %s) @sim
  return %y, %xs
}
)";

TEST(LedgerRuntimeSized, AQuestionMarkCopyHidesNothingElse) {
  // Without named data-dependent dims, the slice's type is f32[?, ?].
  auto p = CompileForVm(kRuntimeSizedBesideStated,
                        "infer-types{name-data-dims=false},plan-devices,fuse-ops,manifest-alloc");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->ledger.HasUnknownBytes(CopyDirection::kDeviceToHost)) << p->ledger.ToText();
  auto vm = vm::VirtualMachine::Load(p->executable);
  ASSERT_TRUE(vm.ok()) << vm.status();
  auto out = (*vm)->RunWithHostTensors(
      "main", {RandomTensor(DType::kF32, {24, 64}, 14), I64({2}, {1, 2}), I64({2}, {1000, 60}),
               I64({2}, {1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  const runtime::DeviceCounters& counters = (*vm)->LastRunCounters();
  const vm::RunRecord& record = (*vm)->LastRunRecord();
  ASSERT_EQ(counters.d2h_calls, 2);
  const int64_t slice_bytes = 23 * 58 * 4, relu_bytes = 24 * 64 * 4;
  EXPECT_EQ(counters.d2h_bytes, slice_bytes + relu_bytes);
  const auto& measured = record.runtime_sized[static_cast<int>(CopyDirection::kDeviceToHost)];
  EXPECT_EQ(measured.calls, 1);
  EXPECT_EQ(measured.bytes, slice_bytes);

  const vm::LedgerComparison cmp = vm::CompareLedgerToRun(p->ledger, counters, record);
  EXPECT_TRUE(cmp.agrees()) << cmp.Summary() << "\n" << cmp.Table();
  EXPECT_FALSE(cmp.exact());
  const vm::LedgerComparison::Row* d2h = nullptr;
  for (const auto& r : cmp.rows) {
    if (r.name == "d2h") d2h = &r;
  }
  ASSERT_NE(d2h, nullptr);
  EXPECT_TRUE(d2h->runtime_sized);
  EXPECT_EQ(d2h->bytes.verdict, vm::LedgerComparison::Verdict::kMatch);  // checked, not hidden
  EXPECT_EQ(d2h->bytes.measured, relu_bytes);
  EXPECT_EQ(d2h->runtime_sized_count.verdict, vm::LedgerComparison::Verdict::kMatch);
  EXPECT_EQ(d2h->runtime_sized_bytes.verdict, vm::LedgerComparison::Verdict::kNotChecked);
  EXPECT_EQ(d2h->runtime_sized_bytes.measured, slice_bytes);
  EXPECT_THAT(cmp.Summary(), ::testing::HasSubstr("not checked: d2h bytes of the copies of a "
                                                  "run-time size (1 copy of a size known only "
                                                  "at run time"));

  // The stated copy's bytes are checked: four bytes more on the device fail the comparison.
  runtime::DeviceCounters more = counters;
  more.d2h_bytes += 4;
  EXPECT_FALSE(vm::CompareLedgerToRun(p->ledger, more, record).agrees());
  // So does a ledger that doubles the stated copy's size.
  CopyLedger bigger = p->ledger;
  for (LedgerEntry& e : bigger.entries) {
    if (e.direction == CopyDirection::kDeviceToHost && !e.bytes.has_unknown()) {
      e.bytes = e.bytes * DimExpr(2);
    }
  }
  EXPECT_FALSE(vm::CompareLedgerToRun(bigger, counters, record).agrees());
  // Without the run's record the `?` copy cannot be told apart: no silent pass.
  EXPECT_FALSE(vm::CompareLedger(p->ledger, counters, record.LedgerBindings(p->ledger)).agrees());
}

INSTANTIATE_TEST_SUITE_P(ExactCounts, LedgerAgreement, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace hetpass
