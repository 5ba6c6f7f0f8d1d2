// Tests of the native creation kernels (creation_kernel.h): every case runs the native kernel
// and the reference interpreter on the same arguments and requires bit-identical results
// (the kernel promises the reference's encodings, so no tolerance), over the dtypes each op
// allows and the edge cases of arange (empty ranges, negative and fractional steps, mixed
// integer / float bounds, integer results of float ramps, wrap-around) and of the fills.
#include "compile_engine/creation_kernel.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Arg;
using ::hetpass::testing::Interpret;
using ::testing::HasSubstr;

absl::StatusOr<Tensor> RunNative(const Function& f, const std::vector<Tensor>& params,
                                 DType out_dtype, const std::vector<int64_t>& out_shape) {
  ASSIGN_OR_RETURN(auto kernel, CompileCreationGroup(f));
  ASSIGN_OR_RETURN(auto instance,
                   kernel->Instantiate(std::vector<const Tensor*>(params.size(), nullptr)));
  Tensor out = Tensor::Zeros(out_dtype, out_shape);
  std::vector<TensorArg> args;
  for (const Tensor& p : params) args.push_back(Arg(p));
  args.push_back(TensorArg{out.mutable_data(), out.dtype(), absl::MakeConstSpan(out.shape())});
  RETURN_IF_ERROR(instance->Run(args));
  return out;
}

// Runs `f` natively and through the reference; both must succeed and agree bit for bit.
void ExpectMatchesReference(const Function& f, const std::vector<Tensor>& params,
                            const std::string& what) {
  ASSERT_TRUE(IsCreationGroup(f)) << what;
  auto want = Interpret(f, params);
  ASSERT_TRUE(want.ok()) << want.status() << " " << what;
  auto got = RunNative(f, params, want->dtype(), want->shape());
  ASSERT_TRUE(got.ok()) << got.status() << " " << what;
  EXPECT_EQ(*got, *want) << what << ": got " << got->DebugString(20) << ", want "
                         << want->DebugString(20);
}

std::unique_ptr<Module> ArangeModule(DType a, DType b, DType c, DType out) {
  return testing::Parse(absl::StrCat(
      "def @f(%a: ", DTypeName(a), "[], %b: ", DTypeName(b), "[], %c: ", DTypeName(c),
      "[]) attributes {primitive = true} {\n  %y = arange(%a, %b, %c) {dtype = ",
      DTypeName(out), "}\n  return %y\n}\n"));
}

// Tests arange over every result dtype with integer, float and mixed bounds: empty ranges,
// negative steps, fractional steps, ranges that do not divide evenly, and float ramps into
// integer results (saturating through SetDouble, as the reference).
TEST(CreationKernel, ArangeMatchesReference) {
  struct Case {
    double start, stop, step;
  };
  const std::vector<Case> int_cases = {{0, 17, 1},  {0, 0, 1},   {5, 2, 1},   {10, -3, -2},
                                       {3, 100, 7}, {-4, 4, 3},  {7, 7, -1},  {0, 1, 1},
                                       {-128, 300, 37}};
  const std::vector<Case> float_cases = {{0, 1, 0.1},    {2.5, -1.25, -0.5}, {0, 0, 0.5},
                                         {-3, 3, 0.75},  {1e6, 1e6 + 3, 0.3}, {0, 5, 1},
                                         {1, 0, 0.25}};
  const std::vector<DType> outs = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16,
                                   DType::kI8,  DType::kI16, DType::kI32, DType::kI64,
                                   DType::kU8,  DType::kU16, DType::kU32, DType::kU64,
                                   DType::kBool};
  const std::vector<DType> int_ins = {DType::kI64, DType::kI32, DType::kI8};
  const std::vector<DType> float_ins = {DType::kF32, DType::kF64};
  for (DType out : outs) {
    for (DType in : int_ins) {
      auto m = ArangeModule(in, in, in, out);
      ASSERT_NE(m, nullptr);
      for (const Case& c : int_cases) {
        ExpectMatchesReference(*m->FindFunction("f"),
                               {Tensor::Scalar(in, c.start), Tensor::Scalar(in, c.stop),
                                Tensor::Scalar(in, c.step)},
                               absl::StrCat("arange ", DTypeName(in), " -> ", DTypeName(out), " ",
                                            c.start, ":", c.stop, ":", c.step));
      }
    }
    for (DType in : float_ins) {
      auto m = ArangeModule(in, in, in, out);
      ASSERT_NE(m, nullptr);
      for (const Case& c : float_cases) {
        ExpectMatchesReference(*m->FindFunction("f"),
                               {Tensor::Scalar(in, c.start), Tensor::Scalar(in, c.stop),
                                Tensor::Scalar(in, c.step)},
                               absl::StrCat("arange ", DTypeName(in), " -> ", DTypeName(out), " ",
                                            c.start, ":", c.stop, ":", c.step));
      }
    }
    // Mixed: integer start with a float step (the double path), float start with an integer
    // step, and an f32 stop with integer start / step (the exact path: stop does not count).
    const std::vector<std::vector<DType>> mixed = {{DType::kI64, DType::kI64, DType::kF32},
                                                   {DType::kF32, DType::kI64, DType::kI64},
                                                   {DType::kI64, DType::kF32, DType::kI64}};
    for (const auto& d : mixed) {
      auto m = ArangeModule(d[0], d[1], d[2], out);
      ASSERT_NE(m, nullptr);
      ExpectMatchesReference(*m->FindFunction("f"),
                             {Tensor::Scalar(d[0], 1), Tensor::Scalar(d[1], 9.5),
                              Tensor::Scalar(d[2], 2)},
                             absl::StrCat("mixed arange -> ", DTypeName(out)));
    }
  }
}

// Tests the int64 path's wrap-around into narrow results (i8 ramps past 127) and u64 bounds
// above INT64_MAX read as the reference reads them.
TEST(CreationKernel, ArangeWrapsAsTheReference) {
  auto m = ArangeModule(DType::kI64, DType::kI64, DType::kI64, DType::kI8);
  ASSERT_NE(m, nullptr);
  ExpectMatchesReference(*m->FindFunction("f"),
                         {Tensor::Scalar(DType::kI64, 100), Tensor::Scalar(DType::kI64, 400),
                          Tensor::Scalar(DType::kI64, 9)},
                         "i8 wrap");
  auto u = ArangeModule(DType::kU64, DType::kU64, DType::kU64, DType::kF64);
  ASSERT_NE(u, nullptr);
  Tensor start = Tensor::Zeros(DType::kU64, {});
  *start.mutable_data_as<uint64_t>() = (uint64_t{1} << 63) + 4096;
  Tensor stop = Tensor::Zeros(DType::kU64, {});
  *stop.mutable_data_as<uint64_t>() = (uint64_t{1} << 63) + 4096 * 5;
  ExpectMatchesReference(*u->FindFunction("f"), {start, stop, Tensor::Scalar(DType::kU64, 4096)},
                         "u64 above INT64_MAX");
}

// Tests the fills over every result dtype and several fill-value dtypes (the exact int64
// path, the double path, saturation of float values into integer results, NaN), shapes with
// zero dims and scalars.
TEST(CreationKernel, FillsMatchReference) {
  const std::vector<DType> outs = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16,
                                   DType::kI8,  DType::kI32, DType::kI64, DType::kU8,
                                   DType::kU64, DType::kBool};
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {2, 3}, {3, 0, 2}, {1, 7, 1, 9}};
  const std::vector<std::pair<DType, double>> values = {
      {DType::kI64, -3}, {DType::kI32, 70000}, {DType::kF32, -2.5}, {DType::kF64, 1e300},
      {DType::kF64, std::nan("")}, {DType::kBool, 1}, {DType::kU8, 200}};
  for (DType out : outs) {
    for (const auto& s : shapes) {
      const std::string rank = absl::StrCat(s.size());
      Tensor shape = Tensor::FromInt64s(DType::kI64, {static_cast<int64_t>(s.size())}, s);
      for (const char* op : {"dyn.zeros", "dyn.ones"}) {
        auto m = testing::Parse(absl::StrCat("def @f(%s: i64[", rank,
                                             "]) attributes {primitive = true} {\n  %y = ", op,
                                             "(%s) {dtype = ", DTypeName(out),
                                             "}\n  return %y\n}\n"));
        ASSERT_NE(m, nullptr);
        ExpectMatchesReference(*m->FindFunction("f"), {shape},
                               absl::StrCat(op, " ", DTypeName(out), " rank ", rank));
      }
      for (const auto& [vt, v] : values) {
        auto m = testing::Parse(absl::StrCat(
            "def @f(%v: ", DTypeName(vt), "[], %s: i64[", rank,
            "]) attributes {primitive = true} {\n  %y = dyn.full(%v, %s) {dtype = ",
            DTypeName(out), "}\n  return %y\n}\n"));
        ASSERT_NE(m, nullptr);
        ExpectMatchesReference(*m->FindFunction("f"), {Tensor::Scalar(vt, v), shape},
                               absl::StrCat("dyn.full ", DTypeName(vt), " ", v, " -> ",
                                            DTypeName(out), " rank ", rank));
      }
    }
  }
}

// Tests that a result the values do not give, a zero step and a negative shape value are
// InvalidArgument naming the function, not a crash or a silent write.
TEST(CreationKernel, RejectsArgumentsThatDoNotFit) {
  auto m = ArangeModule(DType::kI64, DType::kI64, DType::kI64, DType::kI64);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  auto wrong_len = RunNative(f, {Tensor::Scalar(DType::kI64, 0), Tensor::Scalar(DType::kI64, 5),
                                 Tensor::Scalar(DType::kI64, 1)},
                             DType::kI64, {4});
  EXPECT_EQ(wrong_len.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_len.status().message(), HasSubstr("@f"));
  auto zero_step = RunNative(f, {Tensor::Scalar(DType::kI64, 0), Tensor::Scalar(DType::kI64, 5),
                                 Tensor::Scalar(DType::kI64, 0)},
                             DType::kI64, {0});
  EXPECT_EQ(zero_step.status().code(), absl::StatusCode::kInvalidArgument);
  auto wrong_dtype = RunNative(f, {Tensor::Scalar(DType::kI64, 0), Tensor::Scalar(DType::kI64, 5),
                                   Tensor::Scalar(DType::kI64, 1)},
                               DType::kF32, {5});
  EXPECT_EQ(wrong_dtype.status().code(), absl::StatusCode::kInvalidArgument);
  auto z = testing::Parse(
      "def @z(%s: i64[2]) attributes {primitive = true} {\n"
      "  %y = dyn.zeros(%s) {dtype = i64}\n  return %y\n}\n");
  ASSERT_NE(z, nullptr);
  auto negative = RunNative(*z->FindFunction("z"), {Tensor::FromInt64s(DType::kI64, {2}, {2, -1})},
                            DType::kI64, {2, 0});
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  auto mismatch = RunNative(*z->FindFunction("z"), {Tensor::FromInt64s(DType::kI64, {2}, {2, 3})},
                            DType::kI64, {3, 2});
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
}

// Tests that the engine picks the kernel on cpu (f32 fills stay with native.image), and the
// reference with the kernel library off; and that other groups are refused (Unimplemented).
TEST(CreationKernel, EnginePicksItAndRefusesOthers) {
  auto m = testing::Parse(
      "def @a(%a: i64[], %b: i64[], %c: i64[]) attributes {primitive = true} {\n"
      "  %y = arange(%a, %b, %c) {dtype = i64}\n  return %y\n}\n"
      "def @z(%s: i64[2]) attributes {primitive = true} {\n"
      "  %y = dyn.zeros(%s) {dtype = i64}\n  return %y\n}\n"
      "def @g(%s: i64[2]) attributes {primitive = true} {\n"
      "  %y = dyn.zeros(%s)\n  return %y\n}\n"
      "def @two(%a: i64[], %b: i64[], %c: i64[]) attributes {primitive = true} {\n"
      "  %y = arange(%a, %b, %c) {dtype = i64}\n  %z = add(%y, %y)\n  return %z\n}\n");
  ASSERT_NE(m, nullptr);
  CompileEngine engine;
  const std::vector<std::pair<std::string, std::string>> want = {
      {"a", "native arange"}, {"z", "native dyn.zeros"}, {"g", "native fill"}};
  for (const auto& [name, describe] : want) {
    auto k = engine.Lower(*m->FindFunction(name), DeviceKind::kCpu);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_EQ((*k)->Describe(), describe);
  }
  EXPECT_FALSE(IsCreationGroup(*m->FindFunction("two")));
  auto refused = CompileCreationGroup(*m->FindFunction("two"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(refused.status().message(), HasSubstr("@two"));
  CompileEngine reference_only(
      CompileEngineOptions{.use_kernel_library = false, .use_jit = false, .providers = {}});
  auto r = reference_only.Lower(*m->FindFunction("a"), DeviceKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->Describe(), "reference[arange]");
}

}  // namespace
}  // namespace hetpass
