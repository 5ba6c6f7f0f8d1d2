#include "compile_engine/reduce_kernel.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Arg;
using ::hetpass::testing::Interpret;
using ::hetpass::testing::RandomF32;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Symbolic dims d0, d1, ... so one compiled kernel serves every shape of that rank.
std::string SymbolicDims(int rank, absl::string_view prefix = "d") {
  std::vector<std::string> d;
  for (int i = 0; i < rank; ++i) d.push_back(absl::StrCat(prefix, i));
  return absl::StrCat("[", absl::StrJoin(d, ", "), "]");
}

// `def @f(%x: f32[d0..], %c: f32[]) { body }` with the body given as text.
std::unique_ptr<Module> Group(int rank, const std::string& body) {
  return testing::Parse(absl::StrCat("def @f(%x: f32", SymbolicDims(rank),
                                     ", %c: f32[]) attributes {primitive = true} {\n", body,
                                     "}\n"));
}

// Equal within `tol` relative (as TensorsNear), NaN matching NaN, infinities exactly.
::testing::AssertionResult SameValues(const Tensor& got, const Tensor& want, double tol) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "got " << got.type().ToString() << ", want " << want.type().ToString();
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double a = got.GetDouble(i), b = want.GetDouble(i);
    const bool ok = std::isnan(b)   ? std::isnan(a)
                    : std::isinf(b) ? a == b
                                    : std::abs(a - b) <= tol * (1.0 + std::abs(b));
    if (!ok) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", want " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs the native kernel of `f` on `params`, the result shaped `out_shape`.
absl::StatusOr<Tensor> RunNative(const Function& f, const std::vector<Tensor>& params,
                                 const std::vector<int64_t>& out_shape,
                                 DType out_dtype = DType::kF32) {
  ASSIGN_OR_RETURN(auto kernel, CompileReduceOrSoftmaxGroup(f));
  ASSIGN_OR_RETURN(auto instance,
                   kernel->Instantiate(std::vector<const Tensor*>(params.size(), nullptr)));
  Tensor out = Tensor::Zeros(out_dtype, out_shape);
  std::vector<TensorArg> args;
  for (const Tensor& p : params) args.push_back(Arg(p));
  args.push_back(TensorArg{out.mutable_data(), out.dtype(), absl::MakeConstSpan(out.shape())});
  RETURN_IF_ERROR(instance->Run(args));
  return out;
}

// Compares the native kernel with the reference kernel on `params`. The reference refuses
// only max / min of an empty axis (nothing to compare then: false); any other refusal fails.
bool ExpectMatchesReference(const Function& f, const std::vector<Tensor>& params, double tol,
                            const std::string& what) {
  auto want = Interpret(f, params);
  if (!want.ok()) {
    EXPECT_THAT(std::string(want.status().message()), HasSubstr("cannot reduce axis")) << what;
    return false;
  }
  auto got = RunNative(f, params, want->shape());
  EXPECT_TRUE(got.ok()) << got.status() << " " << what;
  if (!got.ok()) return false;
  EXPECT_TRUE(SameValues(*got, *want, tol)) << what;
  return true;
}

std::string Shape(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ","), "]");
}

// The reference's reduced-axis mask (reduce.cc), to know which cases the kernel must take.
std::vector<bool> ReducedMask(const std::vector<int64_t>& axes, bool exclude, int rank) {
  std::vector<bool> reduced(rank, axes.empty() && !exclude);
  for (int64_t a : axes) reduced[a < 0 ? a + rank : a] = true;
  if (exclude) reduced.flip();
  return reduced;
}

bool AdjacentMask(const std::vector<bool>& m) {
  int runs = 0;
  for (size_t i = 0; i < m.size(); ++i) runs += m[i] && (i == 0 || !m[i - 1]);
  return runs <= 1;
}

// Tests the reduction kernel against the reference on random shapes (rank 0..4, dims of 0, 1
// and more), random axis lists (negative, empty), keepdims and exclude, every reduction and
// several prologues / epilogues; non-adjacent axis sets and axes given twice (which the
// registry rejects) must not be matched.
TEST(ReduceKernel, MatchesReferenceOnRandomGroups) {
  const std::vector<std::string> reductions = {"sum", "mean", "prod", "max", "min"};
  // {prologue, epilogue}: %v is the value, %r the reduction's result.
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"", ""},
      {"  %v = power(%x, %c)\n", ""},
      {"  %v = multiply(%c, %x)\n  %w = abs(%v)\n", ""},
      {"  %v = subtract(%c, %x)\n", "  %z = divide(%r, %c)\n"},
      {"  %v = multiply(%x, %x)\n", "  %z = add(%r, %c)\n  %z2 = negative(%z)\n"},
  };
  const std::vector<int64_t> dim_choices = {0, 1, 1, 2, 3, 5, 17};
  std::mt19937 rng(7);
  int matched = 0, refused = 0, compared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int rank = static_cast<int>(rng() % 5);
    std::vector<int64_t> shape;
    for (int i = 0; i < rank; ++i) shape.push_back(dim_choices[rng() % dim_choices.size()]);
    std::vector<int64_t> axes;
    const int n_axes = rank == 0 ? 0 : static_cast<int>(rng() % (rank + 1));
    for (int i = 0; i < n_axes; ++i) {
      const int64_t a = rng() % rank;
      axes.push_back(rng() % 2 ? a : a - rank);
    }
    const bool exclude = rng() % 4 == 0, keepdims = rng() % 2 == 0;
    const std::string& red = reductions[rng() % reductions.size()];
    const auto& [prologue, epilogue] = steps[rng() % steps.size()];
    std::string in = "%x";
    if (!prologue.empty()) in = prologue.find("%w") != std::string::npos ? "%w" : "%v";
    std::string out = "%r";
    if (!epilogue.empty()) out = epilogue.find("%z2") != std::string::npos ? "%z2" : "%z";
    const std::string body = absl::StrCat(
        prologue, "  %r = ", red, "(", in, ") {axis = [", absl::StrJoin(axes, ", "),
        "], keepdims = ", keepdims ? "true" : "false", ", exclude = ", exclude ? "true" : "false",
        "}\n", epilogue, "  return ", out, "\n");
    auto m = Group(rank, body);
    ASSERT_NE(m, nullptr) << body;
    const Function& f = *m->FindFunction("f");
    const std::string what = absl::StrCat(Shape(shape), "\n", body);
    std::vector<bool> listed(rank, false);
    bool twice = false;
    for (int64_t a : axes) {
      twice = twice || listed[a < 0 ? a + rank : a];
      listed[a < 0 ? a + rank : a] = true;
    }
    if (twice || !AdjacentMask(ReducedMask(axes, exclude, rank))) {  // the registry rejects twice
      EXPECT_FALSE(IsReduceGroup(f)) << what;
      ++refused;
      continue;
    }
    ASSERT_TRUE(IsReduceGroup(f)) << what;
    ++matched;
    // Scalars away from 1 keep prod finite-ish; 2 exercises power's square path, 3 std::pow.
    const float c = std::vector<float>{2.0f, 3.0f, -0.5f, 1.25f}[rng() % 4];
    compared += ExpectMatchesReference(
        f, {RandomF32(shape, trial + 1, 2.0), Tensor::Scalar(DType::kF32, c)}, 1e-6, what);
  }
  EXPECT_GT(compared, 200);
  EXPECT_GT(matched, 250);
  EXPECT_GT(refused, 10);
}

// Tests long lines (more than one prologue chunk), layer norm's variance and global average
// pooling's mean over H, W of NCHW (a middle-axes view with inner 1 and inner > 1).
TEST(ReduceKernel, LongLinesAndModelShapes) {
  struct Case {
    std::string axes;
    bool keepdims;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {"[-1]", true, {3, 12, 64}}, {"[-1]", true, {2, 1000}}, {"[2, 3]", false, {4, 8, 7, 7}},
      {"[1]", false, {3, 600, 5}}, {"[0]", true, {300, 300}}, {"[1, 2]", true, {2, 3, 4, 5}},
  };
  for (const std::string red : {"mean", "sum", "max", "min"}) {
    for (const Case& c : cases) {
      const int rank = static_cast<int>(c.shape.size());
      auto m = Group(
          rank, absl::StrCat("  %v = power(%x, %c)\n  %r = ", red, "(%v) {axis = ", c.axes,
                             ", keepdims = ", c.keepdims ? "true" : "false", "}\n  return %r\n"));
      ASSERT_NE(m, nullptr);
      const Function& f = *m->FindFunction("f");
      ASSERT_TRUE(IsReduceGroup(f));
      ExpectMatchesReference(f, {RandomF32(c.shape, 3), Tensor::Scalar(DType::kF32, 2.0)}, 1e-6,
                             absl::StrCat(red, " ", Shape(c.shape), " axis ", c.axes));
    }
  }
}

// Tests NaN and infinities: a NaN counts in max / min only when it comes first (the
// reference's std::max), sums and means propagate it, +inf - inf is NaN; along the last axis
// (lanes) and a middle axis.
TEST(ReduceKernel, NaNAndInfinitiesAsTheReference) {
  const std::vector<std::vector<float>> lines = {
      {kNaN, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
      {1, kNaN, 2, 3, 4, 5, 6, 7, 8, 9, 10},
      {1, 2, 3, 4, 5, 6, 7, 8, 9, kNaN, -20},
      {kInf, 1, -kInf, 2, 3, 4, 5, 6, 7, 8, 9},
      {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf},
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, kInf},
  };
  const int64_t len = static_cast<int64_t>(lines[0].size());
  const int64_t rows = static_cast<int64_t>(lines.size());
  Tensor last = Tensor::Zeros(DType::kF32, {rows, len});   // lines along the last axis
  Tensor first = Tensor::Zeros(DType::kF32, {len, rows});  // lines along axis 0 (inner > 1)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < len; ++k) {
      last.mutable_data_as<float>()[r * len + k] = lines[r][k];
      first.mutable_data_as<float>()[k * rows + r] = lines[r][k];
    }
  }
  for (const std::string red : {"sum", "mean", "prod", "max", "min"}) {
    for (const auto& [axis, x] : {std::pair{-1, &last}, std::pair{0, &first}}) {
      auto m = Group(2, absl::StrCat("  %r = ", red, "(%x) {axis = [", axis, "]}\n  return %r\n"));
      ASSERT_NE(m, nullptr);
      ExpectMatchesReference(*m->FindFunction("f"), {*x, Tensor::Scalar(DType::kF32, 0)}, 1e-6,
                             absl::StrCat(red, " axis ", axis));
    }
  }
}

// Tests empty reductions (a zero-size reduced axis): 0 for sum and mean, 1 for prod, exactly
// as the reference, and the epilogue still applied; and empty outputs.
TEST(ReduceKernel, EmptyExtents) {
  for (const std::string red : {"sum", "mean", "prod"}) {
    auto m = Group(
        3, absl::StrCat("  %r = ", red, "(%x) {axis = [1]}\n  %z = add(%r, %c)\n  return %z\n"));
    ASSERT_NE(m, nullptr);
    const Function& f = *m->FindFunction("f");
    const std::vector<Tensor> params = {Tensor::Zeros(DType::kF32, {2, 0, 3}),
                                        Tensor::Scalar(DType::kF32, 0.5)};
    auto got = RunNative(f, params, {2, 3});
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = Interpret(f, params);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_TRUE(SameValues(*got, *want, 0)) << red;
    EXPECT_EQ(got->GetDouble(0), red == "prod" ? 1.5 : 0.5) << red;
    ExpectMatchesReference(f, {Tensor::Zeros(DType::kF32, {0, 4, 3}), params[1]}, 0, red);
  }
}

// Tests softmax on every axis of random shapes (rank 1..4, dims 0, 1 and more, negative axes),
// long rows, and rows with NaN / +inf / all -inf (NaN throughout, as the reference).
TEST(SoftmaxKernel, MatchesReferenceOnEveryAxis) {
  const std::vector<int64_t> dim_choices = {0, 1, 2, 3, 5, 12, 17};
  std::mt19937 rng(11);
  for (int trial = 0; trial < 150; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> shape;
    for (int i = 0; i < rank; ++i) shape.push_back(dim_choices[rng() % dim_choices.size()]);
    const int axis = static_cast<int>(rng() % rank) - (rng() % 2 ? rank : 0);
    auto m = testing::Parse(absl::StrCat("def @f(%x: f32", SymbolicDims(rank),
                                         ") attributes {primitive = true} {\n"
                                         "  %y = nn.softmax(%x) {axis = ",
                                         axis, "}\n  return %y\n}\n"));
    ASSERT_NE(m, nullptr);
    const Function& f = *m->FindFunction("f");
    ASSERT_TRUE(IsSoftmaxGroup(f));
    ExpectMatchesReference(f, {RandomF32(shape, trial, 8.0)}, 1e-6,
                           absl::StrCat(Shape(shape), " axis ", axis));
  }
  for (const int axis : {-1, 0}) {
    auto m = testing::Parse(absl::StrCat(
        "def @f(%x: f32[a, b]) attributes {primitive = true} {\n  %y = nn.softmax(%x) {axis = ",
        axis, "}\n  return %y\n}\n"));
    ASSERT_NE(m, nullptr);
    const Function& f = *m->FindFunction("f");
    ExpectMatchesReference(f, {RandomF32({3, 1000}, 5, 30.0)}, 1e-6, "long rows");
    ExpectMatchesReference(f, {RandomF32({1000, 3}, 6, 30.0)}, 1e-6, "long columns");
    ExpectMatchesReference(f, {RandomF32({7, 600}, 7, 30.0)}, 1e-6, "more than a block");
    Tensor special = RandomF32({6, 7}, 9);
    float* p = special.mutable_data_as<float>();
    p[0 * 7 + 3] = kNaN;                               // row 0: NaN
    p[1 * 7 + 0] = kInf;                               // row 1: +inf
    for (int k = 0; k < 7; ++k) p[2 * 7 + k] = -kInf;  // row 2: all -inf
    p[3 * 7 + 6] = -kInf;                              // row 3: one -inf (gives 0)
    p[4 * 7 + 2] = 80;                                 // row 4: the rest underflow
    ExpectMatchesReference(f, {special}, 1e-6, absl::StrCat("special values, axis ", axis));
  }
}

// Tests that the compile engine picks these kernels, and only with the kernel library on.
TEST(ReduceKernel, EnginePicksThem) {
  auto m = testing::Parse(
      "def @f(%x: f32[n, s, 64], %c: f32[]) attributes {primitive = true} {\n"
      "  %v = power(%x, %c)\n  %r = mean(%v) {axis = [-1], keepdims = true}\n  return %r\n}\n"
      "def @g(%x: f32[n, s, s]) attributes {primitive = true} {\n"
      "  %y = nn.softmax(%x)\n  return %y\n}\n");
  ASSERT_NE(m, nullptr);
  CompileEngine engine;
  auto f = engine.Lower(*m->FindFunction("f"), DeviceKind::kCpu);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->Describe(), "native reduce[power,mean]");
  auto g = engine.Lower(*m->FindFunction("g"), DeviceKind::kCpu);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->Describe(), "native softmax");
  CompileEngine reference_only(CompileEngineOptions{.use_kernel_library = false, .use_jit = false, .providers = {}});
  auto r = reference_only.Lower(*m->FindFunction("f"), DeviceKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->Describe(), "reference[power,mean]");
}

// Tests what the matchers refuse: non-adjacent axes, argmax, other dtypes, two reductions,
// a non-scalar operand, a step outside the set, power with the scalar as base, softmax of a
// step; and that compiling one of those is Unimplemented naming the function.
TEST(ReduceKernel, MatchesOnlyItsGroups) {
  const std::vector<std::string> refused = {
      "def @f(%x: f32[a, b, c]) attributes {primitive = true} {\n"
      "  %r = sum(%x) {axis = [0, 2]}\n  return %r\n}\n",
      "def @f(%x: f32[a, b]) attributes {primitive = true} {\n"
      "  %r = argmax(%x) {axis = [1]}\n  return %r\n}\n",
      "def @f(%x: i64[a, b]) attributes {primitive = true} {\n"
      "  %r = sum(%x) {axis = [1]}\n  return %r\n}\n",
      "def @f(%x: f32[a, b]) attributes {primitive = true} {\n"
      "  %r = sum(%x) {axis = [1]}\n  %s = sum(%r)\n  return %s\n}\n",
      "def @f(%x: f32[a, 4], %w: f32[4]) attributes {primitive = true} {\n"
      "  %v = multiply(%x, %w)\n  %r = sum(%v) {axis = [1]}\n  return %r\n}\n",
      "def @f(%x: f32[a, 4]) attributes {primitive = true} {\n"
      "  %v = exp(%x)\n  %r = sum(%v) {axis = [1]}\n  return %r\n}\n",
      "def @f(%x: f32[a, 4], %c: f32[]) attributes {primitive = true} {\n"
      "  %v = power(%c, %x)\n  %r = sum(%v) {axis = [1]}\n  return %r\n}\n",
      "def @f(%x: f32[a, 4], %c: f32[1, 1, 1]) attributes {primitive = true} {\n"
      "  %v = add(%x, %c)\n  %r = sum(%v) {axis = [1]}\n  return %r\n}\n",
      "def @f(%x: f32[a, 4], %c: f32[]) attributes {primitive = true} {\n"
      "  %v = multiply(%x, %c)\n  %y = nn.softmax(%v)\n  return %y\n}\n",
      "def @f(%x: f64[a, 4]) attributes {primitive = true} {\n"
      "  %y = nn.softmax(%x)\n  return %y\n}\n",
  };
  for (const std::string& text : refused) {
    auto m = testing::Parse(text);
    ASSERT_NE(m, nullptr) << text;
    const Function& f = *m->FindFunction("f");
    EXPECT_FALSE(IsReduceGroup(f)) << text;
    EXPECT_FALSE(IsSoftmaxGroup(f)) << text;
    auto k = CompileReduceOrSoftmaxGroup(f);
    ASSERT_FALSE(k.ok()) << text;
    EXPECT_TRUE(absl::IsUnimplemented(k.status())) << k.status();
    EXPECT_THAT(k.status().message(), HasSubstr("@f: not a reduction group")) << text;
  }
  // A scalar of shape [1, 1] next to a rank-2 value is fine.
  auto ok = testing::Parse(
      "def @f(%x: f32[a, 4], %c: f32[1, 1]) attributes {primitive = true} {\n"
      "  %v = add(%x, %c)\n  %r = max(%v) {axis = [1]}\n  return %r\n}\n");
  ASSERT_NE(ok, nullptr);
  EXPECT_TRUE(IsReduceGroup(*ok->FindFunction("f")));
  Tensor c = Tensor::Zeros(DType::kF32, {1, 1});
  c.mutable_data_as<float>()[0] = 3;
  ExpectMatchesReference(*ok->FindFunction("f"), {RandomF32({5, 4}, 1), c}, 0, "[1, 1] scalar");
}

// Tests that run-time arguments that do not fit are InvalidArgument naming the function and
// the argument.
TEST(ReduceKernel, BadArgumentsAreErrors) {
  auto m = Group(3,
                 "  %v = power(%x, %c)\n  %r = mean(%v) {axis = [-1], keepdims = true}\n"
                 "  return %r\n");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  const Tensor two = Tensor::Scalar(DType::kF32, 2);
  auto expect_error = [&](const absl::StatusOr<Tensor>& r, const std::string& text) {
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(text));
  };
  expect_error(RunNative(f, {RandomF32({2, 3}, 1), two}, {2, 1}),
               "@f: data (%x) must be an f32 tensor of rank 3, got f32[2, 3]");
  expect_error(RunNative(f, {Tensor::Zeros(DType::kI64, {2, 3, 4}), two}, {2, 3, 1}),
               "@f: data (%x) must be an f32 tensor of rank 3, got i64[2, 3, 4]");
  expect_error(RunNative(f, {RandomF32({2, 3, 4}, 1), two}, {2, 3, 4}),
               "@f: result must be f32[2, 3, 1], got f32[2, 3, 4]");
  expect_error(RunNative(f, {RandomF32({2, 3, 4}, 1), two}, {2, 3, 1}, DType::kI32),
               "@f: result must be f32[2, 3, 1], got i32[2, 3, 1]");
  expect_error(RunNative(f, {RandomF32({2, 3, 4}, 1), RandomF32({2}, 2)}, {2, 3, 1}),
               "@f: scalar (%c) must be a one-element f32 tensor of rank 0, got f32[2]");
  expect_error(RunNative(f, {RandomF32({2, 3, 4}, 1)}, {2, 3, 1}),
               "@f: expected 3 arguments (2 parameters, 1 result), got 2");

  auto s = testing::Parse(
      "def @s(%x: f32[a, b]) attributes {primitive = true} {\n"
      "  %y = nn.softmax(%x) {axis = 0}\n  return %y\n}\n");
  ASSERT_NE(s, nullptr);
  const Function& sf = *s->FindFunction("s");
  auto r = RunNative(sf, {RandomF32({2, 3}, 1)}, {3, 2});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("@s: result must be f32[2, 3], got f32[3, 2]"));
  r = RunNative(sf, {RandomF32({2, 3, 1}, 1)}, {2, 3, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("@s: data (%x) must be an f32 tensor of rank 2, got f32[2, 3, 1]"));
}

}  // namespace
}  // namespace hetpass
