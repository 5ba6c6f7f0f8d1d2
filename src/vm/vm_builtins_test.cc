// The VM's sequence and optional builtins (ir/builtins.def) through the whole pipeline, on cpu
// and sim: values, negative positions, the run-time errors of bad positions and absent values,
// and that on sim no element data is copied to insert or index (the copies equal the ledger).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/vm/vm.h"
#include "support/runtime_test_util.h"

namespace hetpass::vm {
namespace {

using ::hetpass::testing::CompileForVm;
using ::hetpass::testing::VmProgram;
using ::testing::HasSubstr;

constexpr char kSequenceOps[] = R"(
def @main(%a: f32[2], %b: f32[2], %p: i64[]) {
  %s = seq.construct(%a, %b)
  %s2 = seq.insert(%s, %b, %p)
  %x = seq.at(%s2, %p)
  %s3 = seq.erase(%s2)
  %n = seq.length(%s3)
  %y = add(%x, %x)
  return %s3, %y, %n
}
)";

HostValue F32(std::vector<double> v) {
  return HostValue::FromTensor(Tensor::FromDoubles(DType::kF32, {static_cast<int64_t>(v.size())}, v));
}
HostValue I64(int64_t v) { return HostValue::FromTensor(Tensor::FromInt64s(DType::kI64, {}, {v})); }

std::vector<double> Values(const HostValue& v) {
  std::vector<double> out;
  for (int64_t i = 0; i < v.tensor.num_elements(); ++i) out.push_back(v.tensor.GetDouble(i));
  return out;
}

std::unique_ptr<VirtualMachine> Load(const std::string& text, DeviceKind target, VmProgram* p) {
  auto compiled = CompileForVm(text, DefaultPipeline(target));
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  if (!compiled.ok()) return nullptr;
  *p = *std::move(compiled);
  auto vm = VirtualMachine::Load(p->executable);
  EXPECT_TRUE(vm.ok()) << vm.status();
  return vm.ok() ? *std::move(vm) : nullptr;
}

// Tests construct, insert at a position (also negative), at, erase of the last and length.
TEST(VmBuiltins, SequenceOpsOnCpuAndSim) {
  for (DeviceKind target : {DeviceKind::kCpu, DeviceKind::kSim}) {
    SCOPED_TRACE(DeviceName(target));
    VmProgram p;
    auto vm = Load(kSequenceOps, target, &p);
    ASSERT_NE(vm, nullptr);
    // p = 0: [b, a, b] -> at 0 = b, erase last -> [b, a]. p = -1: insert before the last
    // element -> [a, b, b] -> at -1 = b -> [a, b].
    for (int64_t pos : {0, -1}) {
      auto out = vm->RunWithHostValues("main", {F32({1, 2}), F32({3, 4}), I64(pos)});
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), 3u);
      const HostValue& s = (*out)[0];
      ASSERT_EQ(s.kind, HostValue::Kind::kSequence);
      ASSERT_EQ(s.elements.size(), 2u);
      const std::vector<double> a{1, 2}, b{3, 4};
      EXPECT_EQ(Values(s.elements[0]), pos == 0 ? b : a);
      EXPECT_EQ(Values(s.elements[1]), pos == 0 ? a : b);
      EXPECT_EQ(Values((*out)[1]), (std::vector<double>{6, 8}));
      EXPECT_EQ(Values((*out)[2]), std::vector<double>{2});
      const absl::Status agree = CompareWithLedger(p.ledger, vm->LastRunCounters(), {});
      EXPECT_TRUE(agree.ok()) << agree;
      if (target == DeviceKind::kSim) {
        // Only the results come back: two elements, the sum and the length; nothing moves to
        // the device during the run but (perhaps) the position.
        EXPECT_LE(vm->LastRunCounters().h2d_bytes, 8);
      }
    }
  }
}

// Tests that a position out of range is an error naming the builtin, the position and the
// length, not a crash.
TEST(VmBuiltins, PositionOutOfRangeIsAnError) {
  VmProgram p;
  auto vm = Load(kSequenceOps, DeviceKind::kCpu, &p);
  ASSERT_NE(vm, nullptr);
  auto out = vm->RunWithHostValues("main", {F32({1, 2}), F32({3, 4}), I64(5)});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("seq.insert: position 5 is out of range for a sequence of length 2 "
                        "(valid: -2..2)"));
  out = vm->RunWithHostValues("main", {F32({1, 2}), F32({3, 4}), I64(-4)});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("position -4 is out of range"));
}

// Tests seq.at and seq.erase on an empty sequence.
TEST(VmBuiltins, EmptySequenceErrors) {
  VmProgram p;
  auto vm = Load(R"(
def @main(%p: i64[]) {
  %e = seq.empty() : seq<f32[2]>
  %x = seq.at(%e, %p)
  return %x
}
)",
                 DeviceKind::kCpu, &p);
  ASSERT_NE(vm, nullptr);
  auto out = vm->RunWithHostValues("main", {I64(0)});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("seq.at: position 0 is out of range for a sequence of length 0"));
  auto erase = Load(R"(
def @main(%s: seq<f32[2]>) {
  %r = seq.erase(%s)
  return %r
}
)",
                    DeviceKind::kCpu, &p);
  ASSERT_NE(erase, nullptr);
  HostValue empty;
  empty.kind = HostValue::Kind::kSequence;
  out = erase->RunWithHostValues("main", {empty});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("seq.erase: the sequence is empty"));
}

// Tests opt.has / opt.get on a present and an absent optional argument, and opt.some/none.
TEST(VmBuiltins, Optionals) {
  for (DeviceKind target : {DeviceKind::kCpu, DeviceKind::kSim}) {
    SCOPED_TRACE(DeviceName(target));
    VmProgram p;
    auto vm = Load(R"(
def @main(%o: opt<f32[2]>) {
  %h = opt.has(%o)
  %v = opt.get(%o)
  %s = opt.some(%v)
  %z = opt.none() : opt<f32[2]>
  return %h, %s, %z
}
)",
                   target, &p);
    ASSERT_NE(vm, nullptr);
    HostValue present;
    present.kind = HostValue::Kind::kOptional;
    present.elements.push_back(F32({5, 6}));
    auto out = vm->RunWithHostValues("main", {present});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values((*out)[0]), std::vector<double>{1});
    ASSERT_EQ((*out)[1].kind, HostValue::Kind::kOptional);
    ASSERT_EQ((*out)[1].elements.size(), 1u);
    EXPECT_EQ(Values((*out)[1].elements[0]), (std::vector<double>{5, 6}));
    EXPECT_TRUE((*out)[2].elements.empty());
    HostValue absent;
    absent.kind = HostValue::Kind::kOptional;
    out = vm->RunWithHostValues("main", {absent});
    ASSERT_FALSE(out.ok());
    EXPECT_THAT(out.status().message(), HasSubstr("opt.get: the optional holds no value"));
  }
}

// Tests that an argument of the wrong kind or element type is refused by `arg`.
TEST(VmBuiltins, ContainerArgumentsAreChecked) {
  VmProgram p;
  auto vm = Load("def @main(%s: seq<f32[2]>) {\n  %n = seq.length(%s)\n  return %n\n}\n",
                 DeviceKind::kCpu, &p);
  ASSERT_NE(vm, nullptr);
  auto out = vm->RunWithHostValues("main", {F32({1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("expected a sequence seq<f32[2]>"));
  HostValue s;
  s.kind = HostValue::Kind::kSequence;
  s.elements.push_back(F32({1, 2, 3}));
  out = vm->RunWithHostValues("main", {s});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("element 0"));
  s.elements[0] = F32({1, 2});
  s.elements.push_back(F32({3, 4}));
  out = vm->RunWithHostValues("main", {s});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), std::vector<double>{2});
}

// Tests that on sim a tensor computed on the device goes through a sequence without a copy:
// the run makes exactly the copies of the same program without the sequence.
TEST(VmBuiltins, SequencesAddNoCopiesOnSim) {
  const std::string with_seq = R"(
def @main(%a: f32[4], %p: i64[]) {
  %b = nn.relu(%a)
  %s = seq.construct(%b, %b)
  %x = seq.at(%s, %p)
  %y = add(%x, %x)
  return %y
}
)";
  const std::string without = R"(
def @main(%a: f32[4], %p: i64[]) {
  %b = nn.relu(%a)
  %y = add(%b, %b)
  return %y
}
)";
  runtime::DeviceCounters counts[2];
  for (int k = 0; k < 2; ++k) {
    VmProgram p;
    auto vm = Load(k == 0 ? with_seq : without, DeviceKind::kSim, &p);
    ASSERT_NE(vm, nullptr);
    auto out = vm->RunWithHostValues("main", {F32({-1, 2, -3, 4}), I64(1)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values((*out)[0]), (std::vector<double>{0, 4, 0, 8}));
    const absl::Status agree = CompareWithLedger(p.ledger, vm->LastRunCounters(), {});
    EXPECT_TRUE(agree.ok()) << agree;
    counts[k] = vm->LastRunCounters();
  }
  EXPECT_EQ(counts[0].d2h_bytes, counts[1].d2h_bytes);
  // The position crosses to the host if it was staged on the device; nothing else more.
  EXPECT_LE(counts[0].d2h_calls, counts[1].d2h_calls + 1);
  EXPECT_EQ(counts[0].h2d_bytes, counts[1].h2d_bytes);
  EXPECT_GT(counts[0].launches, 0);
}

// Tests that a parameter's container survives saving and loading the executable, and that the
// listing names the builtins.
TEST(VmBuiltins, ContainerParametersSurviveSerialization) {
  auto p = CompileForVm("def @main(%s: opt<seq<?>>, %t: seq<f32[2]>) {\n  %h = opt.has(%s)\n"
                        "  %n = seq.length(%t)\n  return %h, %n\n}\n",
                        DefaultPipeline(DeviceKind::kCpu));
  ASSERT_TRUE(p.ok()) << p.status();
  auto back = Executable::Deserialize(p->executable.Serialize());
  ASSERT_TRUE(back.ok()) << back.status();
  const VmFunction& f = back->functions[back->FindFunction("main")];
  ASSERT_EQ(f.params.size(), 2u);
  EXPECT_EQ(f.params[0].container, ArgSpec::kOptionalSequence);
  EXPECT_TRUE(f.params[0].any_element);
  EXPECT_EQ(f.params[1].container, ArgSpec::kSequence);
  EXPECT_FALSE(f.params[1].any_element);
  EXPECT_THAT(back->ToListing(), HasSubstr("opt.has("));
}

}  // namespace
}  // namespace hetpass::vm
