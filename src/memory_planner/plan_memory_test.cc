// plan-memory: the size comparison, and planned programs run on the VM (the seed MLP and a
// shared model) with unchanged outputs and copies, peak device bytes within 1.1x of the run's
// liveness lower bound, and no device allocation in the second run. Golden IR cases (sharing,
// overlap, symbols, in place, regions, results): test/ir/memory_planner/plan_memory.hir.
#include "passes/memory_planner/plan_memory.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/parser.h"
#include "passes/pass/pass_registry.h"
#include "passes/vm/vm.h"
#include "support/runtime_test_util.h"
#include "support/seed_models.h"

namespace hetpass {
namespace {

using testing::ExpectSameCopies;

DimExpr Dim(absl::string_view text) {
  auto d = ParseDimExpr(text);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : DimExpr();
}

// Tests the symbolic comparison that decides sharing: equal sizes cover each other, n*8 covers
// n*4 (the difference n*4 is a non-negative polynomial), n and m are unrelated.
TEST(PlanMemory, SizeCovers) {
  EXPECT_TRUE(SizeCovers(Dim("n*4"), Dim("n*4")));
  EXPECT_TRUE(SizeCovers(Dim("n*8"), Dim("n*4")));
  EXPECT_FALSE(SizeCovers(Dim("n*4"), Dim("n*8")));
  EXPECT_FALSE(SizeCovers(Dim("n"), Dim("m")));
  EXPECT_FALSE(SizeCovers(Dim("m"), Dim("n")));
  EXPECT_TRUE(SizeCovers(Dim("n*m*4 + 64"), Dim("n*m*4")));
  EXPECT_TRUE(SizeCovers(Dim("4096"), Dim("64")));
  EXPECT_FALSE(SizeCovers(Dim("64"), Dim("n")));
  EXPECT_TRUE(SizeCovers(Dim("n*4 + ((h + 1) // 2)*4"), Dim("n*4")));
  EXPECT_FALSE(SizeCovers(Dim("n*4 - 4"), Dim("n*4")));
  EXPECT_FALSE(SizeCovers(Dim("?"), Dim("4")));
}

struct Measured {
  std::vector<Tensor> outputs;
  runtime::DeviceCounters counters;
  vm::MemoryStats sim;
  int64_t second_run_allocs = -1;
};

// Runs `exe` twice on `inputs` with the memory trace on; the first run's figures.
Measured RunTwice(vm::Executable exe, const std::vector<Tensor>& inputs) {
  Measured m;
  vm::VmOptions options;
  options.trace_memory = true;
  auto machine = vm::VirtualMachine::Load(std::move(exe), options);
  EXPECT_TRUE(machine.ok()) << machine.status();
  if (!machine.ok()) return m;
  auto out = (*machine)->RunWithHostTensors("main", inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return m;
  m.outputs = *out;
  m.counters = (*machine)->LastRunCounters();
  for (const vm::MemoryStats& s : (*machine)->LastRunMemory()) {
    if (s.device == DeviceKind::kSim) m.sim = s;
  }
  auto again = (*machine)->RunWithHostTensors("main", inputs);
  EXPECT_TRUE(again.ok()) << again.status();
  m.second_run_allocs = (*machine)->LastRunCounters().allocs;
  return m;
}

std::string WithoutPlanMemory(const std::string& pipeline) {
  const size_t at = pipeline.rfind(",plan-memory");
  EXPECT_NE(at, std::string::npos) << pipeline;
  return pipeline.substr(0, at);
}

// Tests the dynamic-batch seed MLP on sim: the default pipeline (with plan-memory) gives the
// same outputs and copies as without it, peak device bytes within 1.1x of the liveness lower
// bound, and a second run with the same shapes allocates nothing.
TEST(PlanMemory, SeedMlpOnSim) {
  const std::string pipeline = vm::DefaultPipeline(DeviceKind::kSim);
  auto planned = testing::CompileForVm(testing::SeedMlp("n"), pipeline);
  auto plain = testing::CompileForVm(testing::SeedMlp("n"), WithoutPlanMemory(pipeline));
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (int64_t n : {16, 3}) {
    SCOPED_TRACE(absl::StrCat("n = ", n));
    const Tensor x = testing::RandomTensor(DType::kF32, {n, 1024}, static_cast<uint32_t>(n));
    Measured before = RunTwice(plain->executable, {x});
    Measured after = RunTwice(planned->executable, {x});
    ASSERT_EQ(after.outputs.size(), 1u);
    ASSERT_EQ(before.outputs.size(), 1u);
    EXPECT_TRUE(testing::TensorsNear(after.outputs[0], before.outputs[0]));
    ExpectSameCopies(after.counters, before.counters);
    EXPECT_GT(after.sim.liveness_lower_bound_bytes, 0);
    EXPECT_LE(after.sim.peak_bytes * 10, after.sim.liveness_lower_bound_bytes * 11)
        << "peak " << after.sim.peak_bytes << " B, lower bound "
        << after.sim.liveness_lower_bound_bytes << " B";
    EXPECT_LE(after.sim.peak_bytes, before.sim.peak_bytes);
    EXPECT_EQ(after.second_run_allocs, 0);
  }
}

// Tests a shared model end to end on sim (both test sets, one compilation each): the outputs
// match the stored reference, copies are those of the pipeline without plan-memory, peak device
// bytes are within 1.1x of the liveness lower bound, and the second run allocates nothing.
TEST(PlanMemory, ResnetTinyOnSimWithinTenPercentOfLowerBound) {
  const std::string dir = absl::StrCat(HETPASS_SHARED_DIR, "/models/resnet_tiny_dynamic_batch");
  ASSERT_TRUE(std::filesystem::exists(dir + "/model.onnx")) << "missing shared model " << dir;
  const std::string pipeline = vm::DefaultPipeline(DeviceKind::kSim);
  auto compile = [&](const std::string& p) -> vm::Executable {
    auto m = ImportOnnxFile(dir + "/model.onnx");
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return {};
    auto pm = ParsePipeline(p, {});
    EXPECT_TRUE(pm.ok()) << pm.status();
    if (!pm.ok()) return {};
    auto run = (*pm)->Run(**m);
    EXPECT_TRUE(run.ok()) << run.status();
    auto exe = vm::CompileModule(**m);
    EXPECT_TRUE(exe.ok()) << exe.status();
    return exe.ok() ? *std::move(exe) : vm::Executable();
  };
  const vm::Executable planned = compile(pipeline);
  const vm::Executable plain = compile(WithoutPlanMemory(pipeline));
  for (const char* set : {"test_data_set_0", "test_data_set_1"}) {
    SCOPED_TRACE(set);
    auto input = ReadOnnxTensorFile(absl::StrCat(dir, "/", set, "/input_0.pb"));
    auto want = ReadOnnxTensorFile(absl::StrCat(dir, "/", set, "/output_0.pb"));
    ASSERT_TRUE(input.ok()) << input.status();
    ASSERT_TRUE(want.ok()) << want.status();
    Measured before = RunTwice(plain, {*input});
    Measured after = RunTwice(planned, {*input});
    ASSERT_EQ(after.outputs.size(), 1u);
    EXPECT_TRUE(testing::TensorsNear(after.outputs[0], *want, 1e-3));
    ExpectSameCopies(after.counters, before.counters);
    EXPECT_LE(after.sim.peak_bytes * 10, after.sim.liveness_lower_bound_bytes * 11)
        << "peak " << after.sim.peak_bytes << " B, lower bound "
        << after.sim.liveness_lower_bound_bytes << " B";
    EXPECT_LT(after.sim.peak_bytes, before.sim.peak_bytes);
    EXPECT_EQ(after.second_run_allocs, 0);
  }
}

}  // namespace
}  // namespace hetpass
