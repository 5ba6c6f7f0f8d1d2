#include "passes/vm/vm.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/runtime_test_util.h"
#include "support/seed_models.h"

namespace hetpass::vm {
namespace {

using ::hetpass::testing::CompileForVm;
using ::hetpass::testing::RandomTensor;
using ::hetpass::testing::ReferenceRun;
using ::hetpass::testing::SeedMlp;
using ::hetpass::testing::TensorsNear;
using ::hetpass::testing::VmProgram;
using ::testing::HasSubstr;

VmProgram MustCompile(const std::string& text, DeviceKind target) {
  auto p = CompileForVm(text, DefaultPipeline(target));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : VmProgram();
}

std::unique_ptr<VirtualMachine> MustLoad(const Executable& exe) {
  auto vm = VirtualMachine::Load(exe);
  EXPECT_TRUE(vm.ok()) << vm.status();
  return vm.ok() ? *std::move(vm) : nullptr;
}

// Tests the seed MLP, static and dynamic batch, on cpu and sim: outputs equal the unfused
// reference evaluation, and on sim the run-time counters equal the ledger with n bound.
TEST(Vm, MlpMatchesReferenceAndLedger) {
  for (DeviceKind target : {DeviceKind::kCpu, DeviceKind::kSim}) {
    for (const std::string batch : {"16", "n"}) {
      SCOPED_TRACE(absl::StrCat(DeviceName(target), " batch ", batch));
      VmProgram p = MustCompile(SeedMlp(batch), target);
      auto vm = MustLoad(p.executable);
      ASSERT_NE(vm, nullptr);
      const std::vector<int64_t> sizes = batch == "n" ? std::vector<int64_t>{16, 3, 1, 64}
                                                      : std::vector<int64_t>{16};
      for (int64_t n : sizes) {
        const Tensor x = RandomTensor(DType::kF32, {n, 1024}, static_cast<uint32_t>(n));
        auto out = vm->RunWithHostTensors("main", {x});
        ASSERT_TRUE(out.ok()) << out.status();
        auto ref = ReferenceRun(*p.source, {x});
        ASSERT_TRUE(ref.ok()) << ref.status();
        ASSERT_EQ(out->size(), 1u);
        EXPECT_TRUE(TensorsNear((*out)[0], (*ref)[0]));
        const absl::Status agree = CompareWithLedger(p.ledger, vm->LastRunCounters(), {{"n", n}});
        EXPECT_TRUE(agree.ok()) << agree;
        if (target == DeviceKind::kSim) {
          EXPECT_EQ(vm->LastRunCounters().h2d_calls, 1);
          EXPECT_EQ(vm->LastRunCounters().h2d_bytes, n * 1024 * 4);
          EXPECT_EQ(vm->LastRunCounters().d2h_calls, 1);
          EXPECT_EQ(vm->LastRunCounters().d2h_bytes, n * 128 * 4);
          EXPECT_EQ(vm->LastRunCounters().syncs, 1);
          EXPECT_EQ(vm->LastRunCounters().launches, 3);
        } else {
          EXPECT_EQ(vm->LastRunCounters().h2d_calls + vm->LastRunCounters().d2h_calls, 0);
        }
      }
    }
  }
}

// Tests the pooling allocator through the VM: after a first inference, the same or smaller
// shapes make zero raw device allocations; a larger batch needs new memory.
TEST(Vm, SteadyStateMakesNoDeviceAllocations) {
  VmProgram p = MustCompile(SeedMlp("n"), DeviceKind::kSim);
  auto vm = MustLoad(p.executable);
  ASSERT_NE(vm, nullptr);
  auto run = [&](int64_t n) {
    auto out = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {n, 1024}, 3)});
    EXPECT_TRUE(out.ok()) << out.status();
    return vm->LastRunCounters().allocs;
  };
  EXPECT_GT(run(16), 0);
  EXPECT_EQ(run(16), 0);
  EXPECT_EQ(run(16), 0);
  EXPECT_EQ(run(8), 0);
  EXPECT_EQ(run(1), 0);
  EXPECT_GT(run(64), 0);
  EXPECT_EQ(run(64), 0);
  EXPECT_EQ(run(16), 0);
}

// Tests that the dynamic build costs no extra instructions: sizes are programs evaluated inside
// the instructions, symbols are bound by `arg`.
TEST(Vm, DynamicBuildHasStaticInstructionCount) {
  VmProgram s = MustCompile(SeedMlp("16"), DeviceKind::kSim);
  VmProgram d = MustCompile(SeedMlp("n"), DeviceKind::kSim);
  EXPECT_EQ(s.executable.InstructionCount("main"), d.executable.InstructionCount("main"));
  EXPECT_GT(s.executable.InstructionCount("main"), 10);
}

TEST(Vm, ArgumentErrorsNameTheParameter) {
  VmProgram p = MustCompile(SeedMlp("n"), DeviceKind::kSim);
  auto vm = MustLoad(p.executable);
  ASSERT_NE(vm, nullptr);
  struct Case {
    Tensor x;
    std::string message;
  } cases[] = {
      {RandomTensor(DType::kF32, {4, 1000}, 1), "dim 1 is 1000, expected 1024"},
      {RandomTensor(DType::kF32, {4, 1024, 1}, 1), "rank"},
      {RandomTensor(DType::kI64, {4, 1024}, 1), "dtype"},
  };
  for (const Case& c : cases) {
    auto out = vm->RunWithHostTensors("main", {c.x});
    ASSERT_FALSE(out.ok());
    EXPECT_THAT(out.status().message(), HasSubstr("argument 0 (%x) of @main"));
    EXPECT_THAT(out.status().message(), HasSubstr(c.message));
  }
  EXPECT_FALSE(vm->RunWithHostTensors("main", {}).ok());
  EXPECT_THAT(vm->RunWithHostTensors("nope", {}).status().message(), HasSubstr("no function @nope"));
}

// Tests a symbol that two parameters share: the second must agree with the first.
TEST(Vm, RepeatedSymbolIsChecked) {
  VmProgram p = MustCompile(R"(
def @main(%a: f32[n, 4], %b: f32[n, 4]) {
  %c = add(%a, %b)
  return %c
}
)",
                            DeviceKind::kSim);
  auto vm = MustLoad(p.executable);
  ASSERT_NE(vm, nullptr);
  auto ok = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {3, 4}, 1),
                                            RandomTensor(DType::kF32, {3, 4}, 2)});
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto bad = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {3, 4}, 1),
                                             RandomTensor(DType::kF32, {5, 4}, 2)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("argument 1 (%b)"));
  EXPECT_THAT(bad.status().message(), HasSubstr("dim 0 is 5"));
}

// Assumptions (issue 33): the position-embedding broadcast keeps `seq` under `min(128, seq) in
// {1, seq}`, that is `seq <= 128`. The VM checks it once per call, right after the arguments bind `seq`, and a call
// that breaks it fails before any kernel runs, naming the condition, the values and the op.
TEST(Vm, AssumptionsAreCheckedOncePerCallAndFailClearly) {
  VmProgram p = MustCompile(R"(
def @main(%x: f32[seq, 4], %pos: f32[min(128, seq), 4]) {
  %y = add(%x, %pos)
  return %y
}
)",
                            DeviceKind::kSim);
  const std::string listing = p.executable.ToListing();
  EXPECT_THAT(listing, HasSubstr("assume           a0 seq <= 128")) << listing;
  auto vm = MustLoad(p.executable);
  ASSERT_NE(vm, nullptr);
  auto ok = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {100, 4}, 1),
                                            RandomTensor(DType::kF32, {100, 4}, 2)});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(vm->LastRunRecord().assumption_checks, 1);
  EXPECT_EQ(vm->LastRunCounters().launches, 1);
  // 200 rows against the table's 128: the broadcast the program was compiled for is invalid.
  auto bad = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {200, 4}, 1),
                                             RandomTensor(DType::kF32, {128, 4}, 2)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("assumption `seq <= 128` does not hold (seq = 200: 200 > 128); the "
                        "program was compiled assuming it for "));
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr(":2:3: add %y: op 'add': broadcast of [seq, 4] with "
                        "[min(128, seq), 4] (dimension 0)"));
  EXPECT_EQ(vm->LastRunRecord().assumption_checks, 1);
  EXPECT_EQ(vm->LastRunCounters().launches, 0);  // failed before the kernel
}

// The exactness assumption of a shape value seen through a float (issue 33): arange over
// cast(h) to f16 has length h only while f16 holds h exactly (2^11 = 2048). A call with h = 2049
// fails before any kernel runs, naming the cast; h = 2048 runs.
TEST(Vm, ViolatedExactnessAssumptionFailsTheCall) {
  VmProgram p = MustCompile(R"(
def @main(%x: f32[1, h]) {
  %s = shape_of(%x)
  %i = constant<1> : i64[]
  %hh = take(%s, %i) {axis = 0}
  %hf = cast(%hh) {dtype = f16}
  %z = constant<0.0> : f16[]
  %one = constant<1.0> : f16[]
  %r = arange(%z, %hf, %one) {dtype = f16}
  return %r
}
)",
                            DeviceKind::kSim);
  const std::string listing = p.executable.ToListing();
  EXPECT_THAT(listing, HasSubstr("h <= 2048")) << listing;
  auto vm = MustLoad(p.executable);
  ASSERT_NE(vm, nullptr);
  auto ok = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {1, 2048}, 1)});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(vm->LastRunRecord().assumption_checks, 1);
  auto bad = vm->RunWithHostTensors("main", {RandomTensor(DType::kF32, {1, 2049}, 1)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("assumption `h <= 2048` does not hold (h = 2049: 2049 > 2048)"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("holds h as f16, exact up to 2^11"));
  EXPECT_EQ(vm->LastRunCounters().launches, 0);
}

// An assumption over a data-dependent symbol is checked where the allocation binds it, once
// per loop iteration inside a body; the executable keeps its assumptions through a save/load.
TEST(Vm, AssumptionOverADataDependentSymbolIsCheckedWhereItIsBound) {
  VmProgram p = MustCompile(R"(
def @main(%x: f32[n], %k: f32[m]) {
  %zero = constant<0.0> : f32[]
  %pos = greater(%x, %zero)
  %nz = argwhere(%pos)
  %rows = squeeze(%nz) {axis = [1]}
  %g = take(%x, %rows) {mode = "wrap"}
  %y = nn.relu(%g) : f32[m]
  %z = add(%y, %k)
  return %z
}
)",
                            DeviceKind::kSim);
  const std::string listing = p.executable.ToListing();
  EXPECT_THAT(listing, HasSubstr("dyn1 == m")) << listing;
  auto loaded = Executable::Deserialize(p.executable.Serialize());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->assumptions.size(), 1u);
  EXPECT_EQ(loaded->assumptions[0].condition, "dyn1 == m");
  auto vm = MustLoad(*loaded);
  ASSERT_NE(vm, nullptr);
  Tensor x = Tensor::Zeros(DType::kF32, {4});
  for (int64_t i = 0; i < 4; ++i) x.SetDouble(i, i < 3 ? 1.0 + i : -1.0);  // 3 positives
  auto ok = vm->RunWithHostTensors("main", {x, RandomTensor(DType::kF32, {3}, 2)});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(vm->LastRunRecord().assumption_checks, 1);
  auto bad = vm->RunWithHostTensors("main", {x, RandomTensor(DType::kF32, {2}, 2)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("assumption `dyn1 == m` does not hold (dyn1 = 3, m = 2: 3 != 2)"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("%y is declared f32[m]"));
}

// Tests data-dependent symbols at run time: argwhere's count is bound where its output is
// allocated (the listing shows `=dyn1`), the gather and dense after it are allocated from that
// symbol with no shape function, the ledger's bytes over dyn1 are checked exactly, and a loop
// body rebinds its own symbol every iteration (counts 3, 2, 1 over the trips).
TEST(Vm, DataDependentSymbolsAreBoundWhereAllocated) {
  VmProgram p = MustCompile(::hetpass::testing::ArgwhereGatherDense(/*softmax=*/false), DeviceKind::kSim);
  const std::string listing = p.executable.ToListing();
  EXPECT_THAT(listing, HasSubstr("=dyn1"));
  EXPECT_EQ(listing.find("shape_func"), std::string::npos) << listing;
  auto vm = MustLoad(p.executable);
  ASSERT_NE(vm, nullptr);
  for (int64_t positives : {3, 0, 5}) {
    Tensor x = Tensor::Zeros(DType::kF32, {5, 4});
    for (int64_t r = 0; r < 5; ++r) {
      for (int64_t c = 0; c < 4; ++c) x.SetDouble(r * 4 + c, (c == 0 ? (r < positives ? 1.0 : -1.0) : 0.5) * (r + 1));
    }
    const Tensor w = RandomTensor(DType::kF32, {2, 4}, 7);
    auto out = vm->RunWithHostTensors("main", {x, w});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{positives, 2}));
    EXPECT_EQ(vm->LastRunRecord().symbols.at("dyn1"), positives);
    const absl::Status agree =
        CompareWithLedger(p.ledger, vm->LastRunCounters(), vm->LastRunRecord().symbols);
    EXPECT_TRUE(agree.ok()) << agree;
  }

  VmProgram loop = MustCompile(R"(
def @main(%x: f32[3], %trips: i64[]) {
  %go = constant<true> : bool[]
  %one = constant<1.0> : f32[]
  %last, %sums = loop(%trips, %go, %x) (%i: i64[], %c: bool[], %acc: f32[3]) {
    %zero = constant<0.0> : f32[]
    %pos = greater(%acc, %zero)
    %nz = argwhere(%pos)
    %rows = squeeze(%nz) {axis = [1]}
    %g = take(%acc, %rows) {mode = "wrap"}
    %s = sum(%g)
    %next = subtract(%acc, %one)
    yield %c, %next, %s
  }
  return %sums
}
)",
                               DeviceKind::kSim);
  auto lvm = MustLoad(loop.executable);
  ASSERT_NE(lvm, nullptr);
  const Tensor start = Tensor::FromDoubles(DType::kF32, {3}, std::vector<double>{3, 2, 1});
  const Tensor trips = Tensor::FromInt64s(DType::kI64, {}, std::vector<int64_t>{3});
  auto sums = lvm->RunWithHostTensors("main", {start, trips});
  ASSERT_TRUE(sums.ok()) << sums.status();
  // Iteration sums: 3+2+1, then 2+1, then 1 (the counts shrink 3, 2, 1).
  EXPECT_EQ((*sums)[0].ToDoubles(), (std::vector<double>{6, 3, 1}));
}

// Tests that a loop that runs zero times gives each scan output the declared dtype and element
// dims with zero rows (i64[0, 2] here, the stacked type of an i64[2] per iteration), and the
// same type when it runs: never a rank-1 f32 placeholder.
TEST(Vm, ZeroTripLoopScanOutputsKeepTheirType) {
  VmProgram p = MustCompile(R"(
def @main(%x: i64[2], %trips: i64[]) {
  %go = constant<true> : bool[]
  %last, %rows = loop(%trips, %go, %x) (%i: i64[], %c: bool[], %acc: i64[2]) {
    %next = add(%acc, %acc)
    yield %c, %next, %acc
  }
  return %rows
}
)",
                            DeviceKind::kSim);
  auto machine = MustLoad(p.executable);
  ASSERT_NE(machine, nullptr);
  const Tensor x = Tensor::FromInt64s(DType::kI64, {2}, std::vector<int64_t>{1, 2});
  for (int64_t trips : {0, 2}) {
    const Tensor n = Tensor::FromInt64s(DType::kI64, {}, std::vector<int64_t>{trips});
    auto rows = machine->RunWithHostTensors("main", {x, n});
    ASSERT_TRUE(rows.ok()) << rows.status();
    EXPECT_EQ((*rows)[0].type().ToString(), absl::StrCat("i64[", trips, ", 2]"));
  }
}

// Tests that a file whose loop names a scan-output type the executable does not have (the list
// added in format 3) is rejected as corrupt, naming the instruction, instead of being read out
// of bounds when the loop runs zero times.
TEST(Executable, LoaderRejectsALoopScanTypeOutOfRange) {
  VmProgram p = MustCompile(R"(
def @main(%x: i64[2], %trips: i64[]) {
  %go = constant<true> : bool[]
  %last, %rows = loop(%trips, %go, %x) (%i: i64[], %c: bool[], %acc: i64[2]) {
    yield %c, %acc, %acc
  }
  return %rows
}
)",
                            DeviceKind::kCpu);
  Executable broken = p.executable;
  bool found = false;
  for (VmFunction& f : broken.functions) {
    for (const Instruction& in : f.code) {
      if (in.op != Opcode::kLoop) continue;
      f.operands[in.c] = static_cast<int32_t>(broken.types.size());  // one past the last
      found = true;
    }
  }
  ASSERT_TRUE(found);
  auto r = Executable::Deserialize(broken.Serialize());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("(loop): operand out of range"));
}

TEST(Executable, ListingShowsEveryStep) {
  VmProgram p = MustCompile(SeedMlp("n"), DeviceKind::kSim);
  const std::string listing = p.executable.ToListing();
  for (const char* s : {"arg", "const", "alloc_storage", "alloc_tensor", "invoke_kernel",
                        "device_copy", "ret", "n*2048 bytes", "f32[n, 512]"}) {
    EXPECT_THAT(listing, HasSubstr(s));
  }
}

TEST(Executable, SaveLoadRoundTrip) {
  VmProgram p = MustCompile(SeedMlp("n"), DeviceKind::kSim);
  const std::string bytes = p.executable.Serialize();
  auto back = Executable::Deserialize(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToListing(), p.executable.ToListing());
  EXPECT_EQ(back->Serialize(), bytes);
  const std::string path = ::testing::TempDir() + "/mlp.hvm";
  ASSERT_TRUE(p.executable.SaveToFile(path).ok());
  auto loaded = Executable::LoadFromFile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto vm1 = MustLoad(p.executable);
  auto vm2 = MustLoad(*loaded);
  const Tensor x = RandomTensor(DType::kF32, {5, 1024}, 9);
  auto a = vm1->RunWithHostTensors("main", {x});
  auto b = vm2->RunWithHostTensors("main", {x});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0], (*b)[0]);
  EXPECT_FALSE(Executable::LoadFromFile(::testing::TempDir() + "/missing.hvm").ok());
}

// The constants of an executable nobody else holds: a fresh copy (its own bytes).
Executable Exclusive(const Executable& exe) {
  auto copy = Executable::Deserialize(exe.Serialize());
  EXPECT_TRUE(copy.ok()) << copy.status();
  return copy.ok() ? *std::move(copy) : Executable();
}

int NumReleased(const Executable& exe) {
  int n = 0;
  for (const ConstantEntry& c : exe.constants) n += c.value.released() ? 1 : 0;
  return n;
}

// Tests released constants (vm.cc): a VM that is its program's only holder drops the dense
// weights its oneDNN instances prepacked (the biases, read as stored, stay) and computes the
// same results bit for bit; a program held elsewhere, or bytes shared with the caller's
// module, keep every constant; what needs the released bytes later (a second VM of the
// program, saving the executable) fails naming the constant instead of reading freed memory.
TEST(Vm, PrepackedWeightsAreReleasedWhenTheVmIsTheirOnlyHolder) {
  VmProgram p = MustCompile(SeedMlp("n"), DeviceKind::kCpu);
  auto shared = MustLoad(p.executable);  // the bytes are shared with p: nothing released
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(NumReleased(shared->executable()), 0);

  auto own = VirtualMachine::Load(Exclusive(p.executable));
  ASSERT_TRUE(own.ok()) << own.status();
  const Executable& exe = (*own)->executable();
  int weights = 0;
  for (const ConstantEntry& c : exe.constants) {
    if (c.value.rank() != 2) {
      EXPECT_FALSE(c.value.released()) << "bias " << c.value.type().ToString();
      continue;
    }
    ++weights;
    EXPECT_TRUE(c.value.released()) << "weight " << c.value.type().ToString();
  }
  EXPECT_EQ(weights, 3);
  for (int64_t n : {7, 1, 64}) {
    const Tensor x = RandomTensor(DType::kF32, {n, 1024}, static_cast<uint32_t>(n));
    auto a = shared->RunWithHostTensors("main", {x});
    auto b = (*own)->RunWithHostTensors("main", {x});
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*a)[0], (*b)[0]) << "batch " << n;
  }

  auto second = VirtualMachine::Load((*own)->program());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("%w1"));
  EXPECT_THAT(second.status().message(), HasSubstr("was released"));
  const absl::Status saved = exe.SaveToFile(::testing::TempDir() + "/released.hvm");
  EXPECT_EQ(saved.code(), absl::StatusCode::kFailedPrecondition) << saved;
  EXPECT_THAT(saved.message(), HasSubstr("f32[512, 1024]"));

  // A program the caller holds serves any number of VMs: none releases anything.
  auto program = Program::Compile(Exclusive(p.executable));
  ASSERT_TRUE(program.ok()) << program.status();
  auto vm1 = VirtualMachine::Load(*program);
  auto vm2 = VirtualMachine::Load(*program);
  ASSERT_TRUE(vm1.ok() && vm2.ok());
  EXPECT_EQ(NumReleased((*program)->executable()), 0);
}

// Tests that a prepacked weight with another use (here an elementwise add, whose kernel reads
// it as stored) is kept.
TEST(Vm, AWeightWithAnotherUseIsKept) {
  VmProgram p = MustCompile(R"(def @main(%x: f32[n, 64], %y: f32[32, 64]) {
  %w = constant<elided> : f32[32, 64]
  %0 = nn.dense(%x, %w)
  %1 = add(%y, %w)
  return %0, %1
}
)",
                            DeviceKind::kCpu);
  auto vm = VirtualMachine::Load(Exclusive(p.executable));
  ASSERT_TRUE(vm.ok()) << vm.status();
  EXPECT_EQ(NumReleased((*vm)->executable()), 0);
  const Tensor x = RandomTensor(DType::kF32, {3, 64}, 1), y = RandomTensor(DType::kF32, {32, 64}, 2);
  auto out = (*vm)->RunWithHostTensors("main", {x, y});
  ASSERT_TRUE(out.ok()) << out.status();
  auto ref = ReferenceRun(*p.source, {x, y});
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE(TensorsNear((*out)[0], (*ref)[0]));
  EXPECT_TRUE(TensorsNear((*out)[1], (*ref)[1]));
}

// Tests that a truncated or corrupted file is an error, never a crash: every prefix, and a
// flipped bit in many positions (the checksum catches those), and a structurally bad payload
// with a valid checksum (Verify catches that).
TEST(Executable, TruncatedOrCorruptFilesAreErrors) {
  VmProgram p = MustCompile(SeedMlp("n"), DeviceKind::kSim);
  // Small weights keep the file small enough to try every prefix.
  Executable exe = p.executable;
  for (ConstantEntry& c : exe.constants) c.value = Tensor::Zeros(c.value.dtype(), {2});
  const std::string bytes = exe.Serialize();
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto r = Executable::Deserialize(absl::string_view(bytes).substr(0, len));
    ASSERT_FALSE(r.ok()) << len;
  }
  for (size_t i = 0; i < bytes.size(); i += 7) {
    std::string bad = bytes;
    bad[i] ^= 0x20;
    EXPECT_FALSE(Executable::Deserialize(bad).ok()) << i;
  }
  Executable broken = exe;
  broken.functions[0].code[3].a = 1 << 20;  // an index far out of range
  auto r = Executable::Deserialize(broken.Serialize());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("out of range"));
}

// Tests that every saved vm_load_fuzzer reproducer (test/fuzz/regressions/vm_load) is
// rejected with a message that is not an internal error, or deserializes to an executable that
// serializes back to the same bytes and then loads (with the real kernel providers, which the
// fuzz build leaves out) or is rejected the same way. The fuzz build replays them under ASan +
// UBSan.
TEST(Executable, SavedFuzzerReproducers) {
  const std::filesystem::path dir =
      std::filesystem::path(HETPASS_TEST_DATA_DIR) / "fuzz" / "regressions" / "vm_load";
  ASSERT_TRUE(std::filesystem::exists(dir)) << "missing " << dir;
  int replayed = 0;
  auto expect_user_error = [](const absl::Status& s) {
    EXPECT_NE(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_FALSE(s.message().empty());
  };
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".hvm") continue;
    SCOPED_TRACE(entry.path().filename().string());
    ++replayed;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto exe = Executable::Deserialize(bytes);
    if (!exe.ok()) {
      expect_user_error(exe.status());
      continue;
    }
    EXPECT_EQ(exe->Serialize(), bytes);
    auto vm = VirtualMachine::Load(*std::move(exe));
    if (!vm.ok()) expect_user_error(vm.status());
  }
  EXPECT_GE(replayed, 2) << "truncated.hvm and checksum_mismatch.hvm at least";
}

// Tests the seed slice chain on sim: per-input masks fuse ten slices behind one host shape
// function (no copy); the single flag makes ten device-to-host copies of whole tensors. Both
// compute the same result, and both runs agree with their ledgers.
TEST(Vm, SeedSliceChainCopiesMatchLedgerUnderBothMasks) {
  const std::string text = ::hetpass::testing::SliceChain();
  const std::string pipeline = "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc";
  const std::vector<Tensor> inputs = {RandomTensor(DType::kF32, {40, 64}, 1),
                                      Tensor::FromInt64s(DType::kI64, {2}, {1, 2}),
                                      Tensor::FromInt64s(DType::kI64, {2}, {1000, 60}),
                                      Tensor::FromInt64s(DType::kI64, {2}, {1, 1})};
  std::vector<Tensor> results;
  for (const OpRegistry* registry : {&OpRegistry::Global(), &::hetpass::testing::SingleFlag()}) {
    auto p = CompileForVm(text, pipeline, registry);
    ASSERT_TRUE(p.ok()) << p.status();
    auto vm = MustLoad(p->executable);
    ASSERT_NE(vm, nullptr);
    auto out = vm->RunWithHostTensors("main", inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    // The run binds n and the slices' data-dependent dims: every byte is checked.
    const LedgerComparison cmp =
        CompareLedgerToRun(p->ledger, vm->LastRunCounters(), vm->LastRunRecord());
    EXPECT_TRUE(cmp.exact()) << cmp.Summary() << "\n" << cmp.Table();
    results.push_back((*out)[0]);
    const bool single = registry != &OpRegistry::Global();
    EXPECT_EQ(vm->LastRunCounters().d2h_calls, single ? 10 : 0);
    EXPECT_EQ(vm->LastRunCounters().syncs, single ? 10 : 0);
    if (single) {
      // The first copy is the whole relu output, then each shrinking slice.
      EXPECT_GT(vm->LastRunCounters().d2h_bytes, 40 * 64 * 4);
    }
  }
  EXPECT_EQ(results[0], results[1]);
  // 40 rows, slicing rows from 1 and columns 2..60 ten times: 40-10 rows, columns 2..60 then -2 per slice.
  EXPECT_EQ(results[0].shape(), (std::vector<int64_t>{30, 40}));
}

}  // namespace
}  // namespace hetpass::vm

namespace hetpass::vm {
namespace {

// Tests that the loader types each shape-function mask byte with the one range check
// (InputDepFromInt): the masks of a compiled program load back as written, and a byte outside
// 0..3 behind a valid checksum is a located "executable corrupt" error, not a crash.
TEST(Executable, LoaderRejectsAnOutOfRangeMaskByte) {
  auto p = CompileForVm(::hetpass::testing::SliceChain(),
                        "infer-types,plan-devices{outputs=target},fuse-ops,manifest-alloc");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_FALSE(p->executable.shape_funcs.empty());
  ASSERT_FALSE(p->executable.shape_funcs[0].mask.empty());
  auto back = Executable::Deserialize(p->executable.Serialize());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape_funcs[0].mask, p->executable.shape_funcs[0].mask);

  Executable broken = p->executable;
  // Serialize writes each entry's byte as is, so this makes a file with a bad mask byte and a
  // valid checksum (an InputDep holds 4 only through such a cast).
  broken.shape_funcs[0].mask[0] = static_cast<InputDep>(4);
  auto r = Executable::Deserialize(broken.Serialize());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(),
              HasSubstr(absl::StrCat("executable corrupt: shape function 0 (@",
                                     broken.shape_funcs[0].primitive,
                                     "): mask entry 4 is not an input dependence (expected 0..3")));
}

}  // namespace
}  // namespace hetpass::vm
