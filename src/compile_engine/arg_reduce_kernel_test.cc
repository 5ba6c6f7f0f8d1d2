// Tests of the native argmax / argmin kernels (arg_reduce_kernel.h): each case runs the native
// kernel and the reference interpreter on the same data and requires identical results, over
// the data dtypes taken, axis sets (single, several, negative, exclude, all), keepdims, ties
// with and without select_last_index, NaN and the result dtypes.
#include "compile_engine/arg_reduce_kernel.h"

#include <cmath>
#include <cstdint>
#include <string>
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

absl::StatusOr<Tensor> RunNative(const Function& f, const Tensor& data, DType out_dtype,
                                 const std::vector<int64_t>& out_shape) {
  ASSIGN_OR_RETURN(auto kernel, CompileArgReduceGroup(f));
  ASSIGN_OR_RETURN(auto instance, kernel->Instantiate(std::vector<const Tensor*>(1, nullptr)));
  Tensor out = Tensor::Zeros(out_dtype, out_shape);
  std::vector<TensorArg> args = {Arg(data),
                                 TensorArg{out.mutable_data(), out.dtype(),
                                           absl::MakeConstSpan(out.shape())}};
  RETURN_IF_ERROR(instance->Run(args));
  return out;
}

std::unique_ptr<Module> ArgModule(const std::string& op, DType dt, const std::string& dims,
                                  const std::string& attrs) {
  return testing::Parse(absl::StrCat("def @f(%x: ", DTypeName(dt), "[", dims,
                                     "]) attributes {primitive = true} {\n  %y = ", op, "(%x)",
                                     attrs.empty() ? "" : absl::StrCat(" {", attrs, "}"),
                                     "\n  return %y\n}\n"));
}

// Small values so that ties are common; a NaN here and there in the float dtypes.
Tensor Data(DType dt, const std::vector<int64_t>& shape, uint64_t seed, bool nans) {
  Tensor t = Tensor::Zeros(dt, shape);
  uint64_t s = seed;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const int64_t v = static_cast<int64_t>((s >> 33) % 7) - 3;
    if (nans && (s >> 20) % 11 == 0) {
      t.SetDouble(i, std::nan(""));
    } else {
      t.SetDouble(i, static_cast<double>(v) * (IsFloat(dt) ? 0.5 : 1.0));
    }
  }
  return t;
}

// Tests argmax / argmin against the reference over dtypes, axis sets, keepdims, ties and NaN.
TEST(ArgReduceKernel, MatchesReference) {
  const std::vector<std::string> attr_sets = {
      "axis = [1]", "axis = [-1]", "axis = [0]", "axis = [0, 2]", "axis = [1], keepdims = true",
      "axis = [1], select_last_index = true", "axis = [2], exclude = true",
      "", "keepdims = true, select_last_index = true", "axis = [-1], dtype = i64",
      "axis = [2], dtype = i8", "axis = [0, 1, 2], dtype = u64"};
  const std::vector<DType> dts = {DType::kF32, DType::kF64, DType::kI32, DType::kI64};
  int seed = 0;
  for (const char* op : {"argmax", "argmin"}) {
    for (DType dt : dts) {
      for (const std::string& attrs : attr_sets) {
        auto m = ArgModule(op, dt, "a, b, c", attrs);
        ASSERT_NE(m, nullptr) << attrs;
        const Function& f = *m->FindFunction("f");
        ASSERT_TRUE(IsArgReduceGroup(f)) << attrs;
        for (const std::vector<int64_t>& shape :
             std::vector<std::vector<int64_t>>{{2, 3, 4}, {1, 5, 1}, {3, 1, 7}, {0, 2, 3}}) {
          const bool keeps_axis0 = (attrs.find("axis = [1]") == 0 || attrs.find("axis = [-1]") == 0 ||
                                    attrs.find("axis = [2]") == 0) &&
                                   attrs.find("exclude") == std::string::npos;
          if (shape[0] == 0 && !keeps_axis0) {
            continue;  // reducing the empty axis is an error on both sides
          }
          const Tensor x = Data(dt, shape, ++seed, IsFloat(dt));
          const std::string what = absl::StrCat(op, " ", DTypeName(dt), " {", attrs, "} ",
                                                x.type().ToString());
          auto want = Interpret(f, {x});
          ASSERT_TRUE(want.ok()) << want.status() << " " << what;
          auto got = RunNative(f, x, want->dtype(), want->shape());
          ASSERT_TRUE(got.ok()) << got.status() << " " << what;
          EXPECT_EQ(*got, *want) << what << ": got " << got->DebugString(40) << ", want "
                                 << want->DebugString(40);
        }
      }
    }
  }
}

// Tests that a reduced axis of size 0 and a result of the wrong shape are InvalidArgument, and
// that the engine picks the kernel (the reference with the kernel library off).
TEST(ArgReduceKernel, RejectsAndEngineChoice) {
  auto m = ArgModule("argmax", DType::kF32, "a, b", "axis = [1]");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  auto empty = RunNative(f, Tensor::Zeros(DType::kF32, {2, 0}), DType::kI32, {2});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("@f"));
  auto wrong = RunNative(f, Tensor::Zeros(DType::kF32, {2, 3}), DType::kI32, {3});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  auto f16 = ArgModule("argmax", DType::kF16, "a", "");
  ASSERT_NE(f16, nullptr);
  EXPECT_FALSE(IsArgReduceGroup(*f16->FindFunction("f")));
  CompileEngine engine;
  auto k = engine.Lower(f, DeviceKind::kCpu);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ((*k)->Describe(), "native argmax");
  CompileEngine reference_only(
      CompileEngineOptions{.use_kernel_library = false, .use_jit = false, .providers = {}});
  auto r = reference_only.Lower(f, DeviceKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->Describe(), "reference[argmax]");
}

}  // namespace
}  // namespace hetpass
