// Tests of the CPU JIT for elementwise / broadcast groups: every supported op against the op
// registry's reference kernels (interpreted binding by binding on hetpass::Tensor) on random
// data, static and symbolic shapes, every broadcasting form, in-place outputs, run-time shape
// errors, Unimplemented fallbacks and vectorised code.
#include "compile_engine/jit/kernels.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Parse;
using ::testing::HasSubstr;

// ---- helpers --------------------------------------------------------------------------------

// A random tensor: floats uniform in [lo, hi]; integers uniform in [lo, hi] (u8 clamped to
// [0, 255]); bools 0/1.
Tensor Random(DType dtype, std::vector<int64_t> shape, std::mt19937& rng, double lo = -4,
              double hi = 4) {
  Tensor t = Tensor::Zeros(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (IsFloat(dtype)) {
      t.SetDouble(i, std::uniform_real_distribution<double>(lo, hi)(rng));
    } else if (dtype == DType::kBool) {
      t.SetInt64(i, std::uniform_int_distribution<int>(0, 1)(rng));
    } else {
      int64_t l = static_cast<int64_t>(lo), h = static_cast<int64_t>(hi);
      if (dtype == DType::kU8) l = std::max<int64_t>(l, 0), h = std::min<int64_t>(h, 255);
      t.SetInt64(i, std::uniform_int_distribution<int64_t>(l, h)(rng));
    }
  }
  return t;
}

// Runs the body of `f` with the registry's reference kernels.
absl::StatusOr<Tensor> Reference(const Function& f, const std::vector<Tensor>& inputs) {
  std::map<const Value*, Tensor> env;
  for (int i = 0; i < f.body().num_params(); ++i) env[f.body().param(i)] = inputs[i];
  for (const auto& node : f.body().nodes()) {
    const OpDef& op = *node->op();
    std::vector<Tensor> ins;
    std::vector<ShapeInput> shape_inputs;
    for (const Value* v : node->operands()) ins.push_back(env.at(v));
    for (const Tensor& t : ins) shape_inputs.push_back(ShapeInput{t.type(), &t});
    ASSIGN_OR_RETURN(std::vector<Type> types, op.InferTypes(node->attrs(), shape_inputs));
    ASSIGN_OR_RETURN(std::vector<Tensor> outs, op.reference()(ins, node->attrs(), types));
    env[node->result(0)] = outs[0];
  }
  return env.at(f.body().results()[0]);
}

TensorArg Arg(const Tensor& t) {
  return TensorArg{const_cast<uint8_t*>(t.data()), t.dtype(), t.shape()};
}

// Instantiates `kernel` and runs it on `inputs` into `out`.
absl::Status RunKernel(const CompiledKernel& kernel, const std::vector<Tensor>& inputs,
                       Tensor& out) {
  std::vector<const Tensor*> constants(inputs.size(), nullptr);
  ASSIGN_OR_RETURN(std::unique_ptr<KernelInstance> instance, kernel.Instantiate(constants));
  std::vector<TensorArg> args;
  for (const Tensor& t : inputs) args.push_back(Arg(t));
  args.push_back(TensorArg{out.mutable_data(), out.dtype(), out.shape()});
  return instance->Run(args);
}

// Element-wise comparison: integers and bools exactly, floats within atol + rtol * |want|
// (NaN matches NaN, infinities must be equal). Reports the first few mismatches.
void ExpectClose(const Tensor& got, const Tensor& want, double rtol, double atol,
                 const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.num_elements() && reported < 5; ++i) {
    bool ok;
    if (IsFloat(want.dtype())) {
      const double g = got.GetDouble(i), w = want.GetDouble(i);
      ok = (std::isnan(g) && std::isnan(w)) || g == w ||
           (std::isfinite(w) && std::fabs(g - w) <= atol + rtol * std::fabs(w));
    } else {
      ok = got.GetInt64(i) == want.GetInt64(i);
    }
    if (!ok) {
      ADD_FAILURE() << what << ": element " << i << ": got " << got.GetDouble(i) << ", want "
                    << want.GetDouble(i);
      ++reported;
    }
  }
}

const Function& OnlyFunction(const Module& m) { return *m.functions().front(); }

// The cuda device's kernel of the same group (docs/cuda.md): its PTX assembles for sm_80 and
// sm_90, and, where a GPU is usable, it computes what the reference computes.
void CheckOnCuda(const Function& f, const std::vector<Tensor>& inputs, const Tensor& want,
                 double rtol, double atol, const std::string& what) {
  absl::Status ptx = testing::NvptxAssembles(f);
  EXPECT_TRUE(ptx.ok()) << ptx;
  if (!ptx.ok() || testing::Cuda().device == nullptr) return;
  absl::StatusOr<std::unique_ptr<CompiledKernel>> kernel = cuda::CompileNvptx(f);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  Tensor got = Tensor::Zeros(want.dtype(), want.shape());
  absl::Status run = testing::RunOnCuda(**kernel, inputs, got, testing::HostParams(f));
  ASSERT_TRUE(run.ok()) << "on cuda: " << run;
  ExpectClose(got, want, rtol, atol, absl::StrCat("on cuda: ", what));
}

// Compiles the single function of `text`, runs it on `inputs` and compares with the reference.
void CheckAgainstReference(const std::string& text, const std::vector<Tensor>& inputs,
                           double rtol = 1e-6, double atol = 0) {
  SCOPED_TRACE(text);
  std::unique_ptr<Module> m = Parse(text);
  ASSERT_NE(m, nullptr);
  const Function& f = OnlyFunction(*m);
  EXPECT_TRUE(IsJitElementwise(f));
  absl::StatusOr<std::unique_ptr<CompiledKernel>> kernel = CompileJitElementwise(f);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<Tensor> want = Reference(f, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  Tensor got = Tensor::Zeros(want->dtype(), want->shape());
  // Poison the output so unwritten elements show.
  if (got.nbytes() > 0) std::memset(got.mutable_data(), 0x7f, got.nbytes());
  absl::Status run = RunKernel(**kernel, inputs, got);
  ASSERT_TRUE(run.ok()) << run;
  ExpectClose(got, *want, rtol, atol, text);
  CheckOnCuda(f, inputs, *want, rtol, atol, text);
}

std::string Func(const std::string& params, const std::string& result_type,
                 const std::string& body) {
  return absl::StrCat("def @f(", params, ") -> ", result_type, " attributes {primitive = true} {\n",
                      body, "}\n");
}

std::string UnaryFunc(const std::string& op, const std::string& type) {
  return Func(absl::StrCat("%a: ", type), type,
              absl::StrCat("  %r = ", op, "(%a) : ", type, "\n  return %r\n"));
}

std::string BinaryFunc(const std::string& op, const std::string& ta, const std::string& tb,
                       const std::string& tr) {
  return Func(absl::StrCat("%a: ", ta, ", %b: ", tb), tr,
              absl::StrCat("  %r = ", op, "(%a, %b) : ", tr, "\n  return %r\n"));
}

bool Transcendental(absl::string_view op) {
  static const std::set<std::string>* ops = new std::set<std::string>{
      "exp", "log", "sqrt", "tanh", "sigmoid", "power", "erf", "sin", "cos", "tan",
      "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"};
  return ops->count(std::string(op)) > 0;
}

// The input range a unary op is tested on: inside its domain, away from poles.
std::pair<double, double> UnaryDomain(absl::string_view op) {
  if (op == "log" || op == "sqrt") return {0.01, 20};
  if (op == "asin" || op == "acos" || op == "atanh") return {-0.99, 0.99};
  if (op == "acosh") return {1, 20};
  if (op == "tan") return {-1.5, 1.5};
  return {-6, 6};
}

constexpr const char* kUnaryOps[] = {
    "nn.relu", "negative", "abs", "exp",  "log",  "sqrt", "tanh", "sigmoid", "floor",
    "ceil",    "round",    "erf", "sin",  "cos",  "tan",  "asin", "acos",    "atan",
    "sinh",    "cosh",     "asinh", "acosh", "atanh"};

// ---- unary ops ------------------------------------------------------------------------------

// Tests that every unary f32 op matches its reference kernel on static and symbolic shapes,
// including sizes that leave vector remainders.
TEST(JitElementwiseTest, UnaryF32OpsMatchReference) {
  std::mt19937 rng(1);
  for (const char* op : kUnaryOps) {
    const auto [lo, hi] = UnaryDomain(op);
    const double rtol = Transcendental(op) ? 1e-5 : 1e-6;
    SCOPED_TRACE(op);
    CheckAgainstReference(UnaryFunc(op, "f32[7, 33]"), {Random(DType::kF32, {7, 33}, rng, lo, hi)},
                          rtol);
    for (int64_t n : {1, 5, 1031}) {
      CheckAgainstReference(UnaryFunc(op, "f32[n, 3]"), {Random(DType::kF32, {n, 3}, rng, lo, hi)},
                            rtol);
      CheckAgainstReference(UnaryFunc(op, "f32[n]"), {Random(DType::kF32, {n}, rng, lo, hi)}, rtol);
    }
  }
}

// Tests the vectorisable f32 expansions of exp, tanh and sigmoid over their whole range and at
// special values (zeros, infinities, NaN, overflow and underflow boundaries, subnormals): within
// 1e-6 relative of the reference (double precision rounded to f32), or 1e-44 absolute where the
// result is subnormal.
TEST(JitElementwiseTest, F32TranscendentalsSweep) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Range {
    const char* op;
    double lo, hi;
  };
  for (const Range& range :
       {Range{"exp", -110, 95}, Range{"tanh", -12, 12}, Range{"sigmoid", -110, 110}}) {
    SCOPED_TRACE(range.op);
    std::vector<double> values = {0.0,    -0.0,  inf,       -inf,  nan,    1e-30,  -1e-30, 1e-40,
                                  -1e-40, 88.72, 88.7228,   88.73, -87.33, -87.34, -103.9, -104.5,
                                  0.55,   -0.55, 0.5499999, 9.0,   -9.0,   1e-4,   0.125};
    const int n = 200000;
    for (int i = 0; i <= n; ++i) values.push_back(range.lo + (range.hi - range.lo) * i / n);
    const int64_t count = static_cast<int64_t>(values.size());
    Tensor in = Tensor::FromDoubles(DType::kF32, {count}, values);
    std::unique_ptr<Module> m = Parse(UnaryFunc(range.op, "f32[n]"));
    ASSERT_NE(m, nullptr);
    auto kernel = CompileJitElementwise(OnlyFunction(*m));
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    absl::StatusOr<Tensor> want = Reference(OnlyFunction(*m), {in});
    ASSERT_TRUE(want.ok());
    Tensor got = Tensor::Zeros(DType::kF32, {count});
    ASSERT_TRUE(RunKernel(**kernel, {in}, got).ok());
    double worst = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double w = want->GetDouble(i), g = got.GetDouble(i);
      if (std::isfinite(w) && std::fabs(w) >= 1.2e-38 && w != 0) {
        worst = std::max(worst, std::fabs(g - w) / std::fabs(w));
      }
    }
    ExpectClose(got, *want, 1e-6, 1e-44, range.op);
    std::printf("%s: worst relative error %.3g over %lld values\n", range.op, worst,
                static_cast<long long>(count));
  }
}

// Tests that unary ops on f64 and integer dtypes match the reference.
TEST(JitElementwiseTest, UnaryOtherDTypesMatchReference) {
  std::mt19937 rng(2);
  for (const char* op : kUnaryOps) {
    const auto [lo, hi] = UnaryDomain(op);
    CheckAgainstReference(UnaryFunc(op, "f64[n, 9]"), {Random(DType::kF64, {4, 9}, rng, lo, hi)},
                          1e-12);
  }
  for (const char* type : {"i8", "i32", "i64", "u8"}) {
    for (const char* op : {"nn.relu", "negative", "abs"}) {
      const DType dt = *ParseDType(type);
      CheckAgainstReference(UnaryFunc(op, absl::StrCat(type, "[n, 17]")),
                            {Random(dt, {5, 17}, rng, -100, 100)});
    }
  }
}

// Tests that relu, maximum and minimum treat NaN as the C++ comparisons of the reference do.
TEST(JitElementwiseTest, NaNSemanticsMatchReference) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = Tensor::FromDoubles(DType::kF32, {8}, {nan, 1, nan, -2, 3, nan, 0, -0.0});
  Tensor b = Tensor::FromDoubles(DType::kF32, {8}, {1, nan, nan, 5, -1, 0, nan, 0});
  CheckAgainstReference(UnaryFunc("nn.relu", "f32[8]"), {a});
  for (const char* op : {"maximum", "minimum"}) {
    CheckAgainstReference(BinaryFunc(op, "f32[8]", "f32[8]", "f32[8]"), {a, b});
  }
  for (const char* op : {"equal", "less", "greater"}) {
    CheckAgainstReference(BinaryFunc(op, "f32[8]", "f32[8]", "bool[8]"), {a, b});
  }
}

// ---- binary ops and broadcasting ------------------------------------------------------------

struct BroadcastCase {
  const char* name;
  const char* ta;
  const char* tb;
  const char* tr;
  std::vector<int64_t> sa;
  std::vector<int64_t> sb;
};

std::vector<BroadcastCase> BroadcastCases() {
  // clang-format off
  return {
      {"same_static", "f32[6, 35]", "f32[6, 35]", "f32[6, 35]", {6, 35}, {6, 35}},
      {"same_dynamic", "f32[n, 35]", "f32[n, 35]", "f32[n, 35]", {9, 35}, {9, 35}},
      {"scalar_rhs", "f32[n, 35]", "f32[]", "f32[n, 35]", {9, 35}, {}},
      {"scalar_lhs", "f32[]", "f32[n, 35]", "f32[n, 35]", {}, {9, 35}},
      {"row", "f32[n, 35]", "f32[35]", "f32[n, 35]", {9, 35}, {35}},
      {"row_first", "f32[35]", "f32[n, 35]", "f32[n, 35]", {35}, {9, 35}},
      {"column", "f32[n, 1]", "f32[n, 35]", "f32[n, 35]", {9, 1}, {9, 35}},
      {"outer", "f32[n, 1]", "f32[1, m]", "f32[n, m]", {9, 1}, {1, 35}},
      {"rank_mismatch", "f32[3, 1, 5]", "f32[4, 1]", "f32[3, 4, 5]", {3, 1, 5}, {4, 1}},
      {"middle", "f32[2, n, 7]", "f32[2, 1, 7]", "f32[2, n, 7]", {2, 6, 7}, {2, 1, 7}},
      // The static guess of the inner strides is wrong at run time: the generic entry runs.
      {"size_one_at_run_time", "f32[n, k]", "f32[n, 1]", "f32[n, k]", {9, 1}, {9, 1}},
      {"broadcast_at_run_time", "f32[n, k]", "f32[n, m]", "f32[n, m]", {9, 1}, {9, 35}},
      {"broadcast_at_run_time_3d", "f32[n, k, j]", "f32[n, m, 5]", "f32[n, m, 5]", {2, 1, 1},
       {2, 3, 5}},
      {"vector_sized", "f32[n]", "f32[n]", "f32[n]", {1000}, {1000}},
  };
  // clang-format on
}

// Tests every f32 binary op with each broadcasting form against the reference.
TEST(JitElementwiseTest, BinaryF32OpsWithBroadcastingMatchReference) {
  std::mt19937 rng(3);
  for (const char* op :
       {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "mod", "fmod"}) {
    for (const BroadcastCase& c : BroadcastCases()) {
      SCOPED_TRACE(absl::StrCat(op, " ", c.name));
      const bool power = std::string(op) == "power";
      Tensor a = Random(DType::kF32, c.sa, rng, power ? 0.1 : -4, 4);
      Tensor b = Random(DType::kF32, c.sb, rng, power ? -2 : 0.5, power ? 2 : 4);
      CheckAgainstReference(BinaryFunc(op, c.ta, c.tb, c.tr), {a, b},
                            Transcendental(op) ? 1e-5 : 1e-6);
    }
  }
}

// Tests arithmetic on f64 and the integer dtypes (wrapping like the reference's truncation).
TEST(JitElementwiseTest, BinaryOtherDTypesMatchReference) {
  std::mt19937 rng(4);
  // Negative values of the unsigned types wrap: u64 gets operands from 2^63 up, where ordering
  // and division must be unsigned.
  for (const char* type : {"f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}) {
    const DType dt = *ParseDType(type);
    for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum", "mod",
                           "fmod"}) {
      SCOPED_TRACE(absl::StrCat(op, " ", type));
      Tensor a = Random(dt, {5, 19}, rng, -100, 100);
      Tensor b = Random(dt, {19}, rng, 1, 9);  // no zero divisors
      CheckAgainstReference(BinaryFunc(op, absl::StrCat(type, "[n, 19]"),
                                       absl::StrCat(type, "[19]"), absl::StrCat(type, "[n, 19]")),
                            {a, b}, 1e-12);
    }
    if (IsFloat(dt)) {
      CheckAgainstReference(BinaryFunc("power", "f64[n]", "f64[]", "f64[n]"),
                            {Random(dt, {50}, rng, 0.1, 3), Random(dt, {}, rng, -2, 2)}, 1e-12);
    }
  }
}

// Tests that integer division truncates toward zero with negative operands, and that
// INT_MIN / -1 wraps as the reference's int64 computation truncated to i32 does.
TEST(JitElementwiseTest, IntegerDivisionEdgeCases) {
  Tensor a = Tensor::FromInt64s(DType::kI32, {6}, {7, -7, 7, -7, INT32_MIN, INT32_MIN});
  Tensor b = Tensor::FromInt64s(DType::kI32, {6}, {2, 2, -2, -2, -1, 1});
  CheckAgainstReference(BinaryFunc("divide", "i32[6]", "i32[6]", "i32[6]"), {a, b});
}

// Tests round's halves to even, and mod / fmod with every sign combination, zero results and
// zero divisors (NaN) on floats.
TEST(JitElementwiseTest, RoundAndFloatModEdgeCases) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CheckAgainstReference(UnaryFunc("round", "f32[9]"),
                        {Tensor::FromDoubles(DType::kF32, {9},
                                             {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, nan, -0.0})});
  Tensor a = Tensor::FromDoubles(DType::kF32, {10}, {7, -7, 7, -7, 6, -6, 0.5, 7, 1e30, nan});
  Tensor b = Tensor::FromDoubles(DType::kF32, {10}, {3, 3, -3, -3, 3, -3, 0.25, 0, 7, 3});
  for (const char* op : {"mod", "fmod"}) {
    SCOPED_TRACE(op);
    CheckAgainstReference(BinaryFunc(op, "f32[10]", "f32[10]", "f32[10]"), {a, b});
  }
}

// Tests integer mod / fmod with every sign combination and INT_MIN % -1 (0, not a trap), on
// signed and unsigned types.
TEST(JitElementwiseTest, IntegerModEdgeCases) {
  Tensor a = Tensor::FromInt64s(DType::kI32, {8}, {7, -7, 7, -7, 6, -6, INT32_MIN, INT32_MIN});
  Tensor b = Tensor::FromInt64s(DType::kI32, {8}, {3, 3, -3, -3, 3, -3, -1, 3});
  for (const char* op : {"mod", "fmod"}) {
    SCOPED_TRACE(op);
    CheckAgainstReference(BinaryFunc(op, "i32[8]", "i32[8]", "i32[8]"), {a, b});
    CheckAgainstReference(BinaryFunc(op, "u8[3]", "u8[3]", "u8[3]"),
                          {Tensor::FromInt64s(DType::kU8, {3}, {200, 7, 0}),
                           Tensor::FromInt64s(DType::kU8, {3}, {7, 200, 5})});
  }
}

// Tests left_shift / right_shift on every integer dtype against the reference, with amounts
// from -2 to bits + 3: out-of-range amounts shift everything out (0, or -1 for a negative signed
// value shifted right) instead of being LLVM poison; right shifts are logical for unsigned
// dtypes (u64 values from 2^63 up included) and arithmetic for signed ones.
TEST(JitElementwiseTest, ShiftsMatchReference) {
  std::mt19937 rng(12);
  for (const char* type : {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}) {
    const DType dt = *ParseDType(type);
    const int bits = DTypeSize(dt) * 8;
    Tensor a = Random(dt, {4, 1}, rng, -1000, 1000);
    a.SetInt64(0, -1);  // all ones
    a.SetInt64(1, 1);
    Tensor b = Tensor::Zeros(dt, {bits + 6});
    for (int i = 0; i < bits + 6; ++i) b.SetInt64(i, i - 2);
    for (const char* op : {"left_shift", "right_shift"}) {
      SCOPED_TRACE(absl::StrCat(op, " ", type));
      CheckAgainstReference(BinaryFunc(op, absl::StrCat(type, "[4, 1]"),
                                       absl::StrCat(type, "[", bits + 6, "]"),
                                       absl::StrCat(type, "[4, ", bits + 6, "]")),
                            {a, b});
    }
  }
  // Spot checks of the semantics themselves (the comparison above only ties JIT to reference).
  auto run = [](const char* op, DType dt, int64_t x, int64_t y) -> int64_t {
    const std::string t = std::string(DTypeName(dt));
    std::unique_ptr<Module> m =
        Parse(BinaryFunc(op, absl::StrCat(t, "[1]"), absl::StrCat(t, "[1]"), absl::StrCat(t, "[1]")));
    auto kernel = CompileJitElementwise(OnlyFunction(*m));
    EXPECT_TRUE(kernel.ok()) << kernel.status();
    Tensor out = Tensor::Zeros(dt, {1});
    EXPECT_TRUE(RunKernel(**kernel, {Tensor::FromInt64s(dt, {1}, {x}), Tensor::FromInt64s(dt, {1}, {y})}, out).ok());
    return out.GetInt64(0);
  };
  EXPECT_EQ(run("left_shift", DType::kU8, 0x81, 1), 0x02);
  EXPECT_EQ(run("left_shift", DType::kU8, 1, 8), 0);
  EXPECT_EQ(run("right_shift", DType::kU16, 0x8000, 15), 1);
  EXPECT_EQ(run("right_shift", DType::kU64, INT64_MIN, 63), 1);   // logical: 2^63 >> 63
  EXPECT_EQ(run("right_shift", DType::kI32, -8, 1), -4);          // arithmetic
  EXPECT_EQ(run("right_shift", DType::kI32, -8, 40), -1);
  EXPECT_EQ(run("left_shift", DType::kU32, 3, 31), int64_t{0x80000000});
}

// Tests that an integer modulo by zero is reported like a division by zero.
TEST(JitElementwiseTest, IntegerModByZeroIsAnError) {
  for (const char* op : {"mod", "fmod"}) {
    std::unique_ptr<Module> m = Parse(BinaryFunc(op, "i32[n]", "i32[n]", "i32[n]"));
    ASSERT_NE(m, nullptr);
    auto kernel = CompileJitElementwise(OnlyFunction(*m));
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    Tensor a = Tensor::FromInt64s(DType::kI32, {3}, {5, 5, 5});
    Tensor b = Tensor::FromInt64s(DType::kI32, {3}, {2, 0, 2});
    Tensor out = Tensor::Zeros(DType::kI32, {3});
    absl::Status s = RunKernel(**kernel, {a, b}, out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << op;
    EXPECT_THAT(s.message(), HasSubstr("integer division by zero")) << op;
  }
}

// Tests that an integer division by zero is reported instead of trapping.
TEST(JitElementwiseTest, IntegerDivisionByZeroIsAnError) {
  std::unique_ptr<Module> m = Parse(BinaryFunc("divide", "i64[n]", "i64[n]", "i64[n]"));
  ASSERT_NE(m, nullptr);
  auto kernel = CompileJitElementwise(OnlyFunction(*m));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  Tensor a = Tensor::FromInt64s(DType::kI64, {40}, std::vector<int64_t>(40, 5));
  std::vector<int64_t> divisors(40, 1);
  divisors[33] = 0;
  Tensor b = Tensor::FromInt64s(DType::kI64, {40}, divisors);
  Tensor out = Tensor::Zeros(DType::kI64, {40});
  absl::Status s = RunKernel(**kernel, {a, b}, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("@f: integer division by zero"));
}

// ---- comparisons, where, cast ---------------------------------------------------------------

// Tests comparisons on every dtype (results are bool) with broadcasting.
TEST(JitElementwiseTest, ComparisonsMatchReference) {
  std::mt19937 rng(5);
  for (const char* type : {"f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
                           "bool"}) {
    const DType dt = *ParseDType(type);
    for (const char* op : {"equal", "less", "greater"}) {
      SCOPED_TRACE(absl::StrCat(op, " ", type));
      // Small ranges so equal elements occur.
      Tensor a = Random(dt, {4, 23}, rng, 0, 3);
      Tensor b = Random(dt, {4, 1}, rng, 0, 3);
      if (IsFloat(dt)) {
        for (int64_t i = 0; i < a.num_elements(); ++i) a.SetDouble(i, std::round(a.GetDouble(i)));
        for (int64_t i = 0; i < b.num_elements(); ++i) b.SetDouble(i, std::round(b.GetDouble(i)));
      }
      CheckAgainstReference(BinaryFunc(op, absl::StrCat(type, "[n, 23]"),
                                       absl::StrCat(type, "[n, 1]"), "bool[n, 23]"),
                            {a, b});
    }
  }
}

// Tests where with a broadcast bool condition, a non-bool condition and broadcast branches.
TEST(JitElementwiseTest, WhereMatchesReference) {
  std::mt19937 rng(6);
  CheckAgainstReference(Func("%c: bool[n, 1], %x: f32[n, 13], %y: f32[]", "f32[n, 13]",
                             "  %r = where(%c, %x, %y) : f32[n, 13]\n  return %r\n"),
                        {Random(DType::kBool, {6, 1}, rng), Random(DType::kF32, {6, 13}, rng),
                         Random(DType::kF32, {}, rng)});
  CheckAgainstReference(
      Func("%c: f32[13], %x: i64[n, 13], %y: i64[n, 1]", "i64[n, 13]",
           "  %r = where(%c, %x, %y) : i64[n, 13]\n  return %r\n"),
      {Random(DType::kF32, {13}, rng, -1, 1), Random(DType::kI64, {3, 13}, rng, -9, 9),
       Random(DType::kI64, {3, 1}, rng, -9, 9)});
  // Condition computed in the group, branches of bool dtype.
  CheckAgainstReference(Func("%a: f32[n], %b: f32[n], %x: bool[n], %y: bool[n]", "bool[n]",
                             "  %c = less(%a, %b) : bool[n]\n"
                             "  %r = where(%c, %x, %y) : bool[n]\n  return %r\n"),
                        {Random(DType::kF32, {77}, rng), Random(DType::kF32, {77}, rng),
                         Random(DType::kBool, {77}, rng), Random(DType::kBool, {77}, rng)});
}

// Tests cast between every pair of supported dtypes, including saturation of out-of-range and
// NaN floats and truncation of wide integers.
TEST(JitElementwiseTest, CastMatchesReference) {
  const std::vector<const char*> types = {"f32", "f64", "i8",  "i16", "i32", "i64",
                                          "u8",  "u16", "u32", "u64", "bool"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const char* from : types) {
    const DType fd = *ParseDType(from);
    Tensor in =
        IsFloat(fd)
            ? Tensor::FromDoubles(fd, {10},
                                  {0.0, -0.0, 1.7, -1.7, 300.5, -129.2, 3e9, -5e18, 1e30, nan})
            : Tensor::FromInt64s(fd, {10}, {0, 1, -1, 127, -128, 255, 256, 70000, -70000, 1});
    if (fd == DType::kI64) in.SetInt64(9, (int64_t{1} << 40) + 12345);
    for (const char* to : types) {
      SCOPED_TRACE(absl::StrCat(from, " -> ", to));
      const std::string t_in = absl::StrCat(from, "[n]"), t_out = absl::StrCat(to, "[n]");
      CheckAgainstReference(
          Func(absl::StrCat("%a: ", t_in), t_out,
               absl::StrCat("  %r = cast(%a) {dtype = ", to, "} : ", t_out, "\n  return %r\n")),
          {in});
    }
  }
}

// ---- nn.bias_add ----------------------------------------------------------------------------

// Tests bias_add along axis 1 (the default) and -1, on 2-D and NCHW data.
TEST(JitElementwiseTest, BiasAddMatchesReference) {
  std::mt19937 rng(7);
  CheckAgainstReference(Func("%x: f32[n, 64], %b: f32[64]", "f32[n, 64]",
                             "  %r = nn.bias_add(%x, %b) : f32[n, 64]\n  return %r\n"),
                        {Random(DType::kF32, {5, 64}, rng), Random(DType::kF32, {64}, rng)});
  CheckAgainstReference(
      Func("%x: f32[n, 3, 4, 5], %b: f32[3]", "f32[n, 3, 4, 5]",
           "  %r = nn.bias_add(%x, %b) {axis = 1} : f32[n, 3, 4, 5]\n  return %r\n"),
      {Random(DType::kF32, {2, 3, 4, 5}, rng), Random(DType::kF32, {3}, rng)});
  CheckAgainstReference(
      Func("%x: f32[n, 3, 4, 5], %b: f32[5]", "f32[n, 3, 4, 5]",
           "  %r = nn.bias_add(%x, %b) {axis = -1} : f32[n, 3, 4, 5]\n  return %r\n"),
      {Random(DType::kF32, {2, 3, 4, 5}, rng), Random(DType::kF32, {5}, rng)});
  CheckAgainstReference(
      Func("%x: i32[n, 7], %b: i32[n]", "i32[n, 7]",
           "  %r = nn.bias_add(%x, %b) {axis = 0} : i32[n, 7]\n  return %r\n"),
      {Random(DType::kI32, {4, 7}, rng, -50, 50), Random(DType::kI32, {4}, rng, -50, 50)});
}

// Tests that a bias whose length differs from the data axis is an error naming the op.
TEST(JitElementwiseTest, BiasLengthMismatchIsAnError) {
  std::unique_ptr<Module> m = Parse(Func("%x: f32[n, k], %b: f32[m]", "f32[n, k]",
                                         "  %r = nn.bias_add(%x, %b) : f32[n, k]\n  return %r\n"));
  ASSERT_NE(m, nullptr);
  auto kernel = CompileJitElementwise(OnlyFunction(*m));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  std::mt19937 rng(8);
  Tensor out = Tensor::Zeros(DType::kF32, {2, 4});
  absl::Status s =
      RunKernel(**kernel, {Random(DType::kF32, {2, 4}, rng), Random(DType::kF32, {3}, rng)}, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("nn.bias_add %r: bias has 3 elements but data axis 1 has 4"));
}

// ---- chains ---------------------------------------------------------------------------------

// Tests groups of 2-5 ops, including intermediates of a smaller rank than the output, a bias
// used both by bias_add and as a plain row (two accesses of one parameter), a value used twice
// (swish) and a cast in the middle.
TEST(JitElementwiseTest, ChainsMatchReference) {
  std::mt19937 rng(9);
  CheckAgainstReference(Func("%a: f32[n, 512], %b: f32[512]", "f32[n, 512]",
                             "  %c = add(%a, %b) : f32[n, 512]\n"
                             "  %d = nn.relu(%c) : f32[n, 512]\n"
                             "  return %d\n"),
                        {Random(DType::kF32, {3, 512}, rng), Random(DType::kF32, {512}, rng)});
  CheckAgainstReference(Func("%x: f32[n, 64], %w: f32[64], %s: f32[]", "f32[n, 64]",
                             "  %a = multiply(%x, %w) : f32[n, 64]\n"
                             "  %b = add(%a, %s) : f32[n, 64]\n"
                             "  %c = tanh(%b) : f32[n, 64]\n"
                             "  %d = multiply(%c, %x) : f32[n, 64]\n"
                             "  return %d\n"),
                        {Random(DType::kF32, {7, 64}, rng), Random(DType::kF32, {64}, rng),
                         Random(DType::kF32, {}, rng)},
                        1e-5);
  CheckAgainstReference(Func("%x: f32[n, 64], %r1: f32[64], %r2: f32[64], %s: f32[]", "f32[n, 64]",
                             "  %c = add(%r1, %r2) : f32[64]\n"
                             "  %d = multiply(%x, %c) : f32[n, 64]\n"
                             "  %e = sigmoid(%d) : f32[n, 64]\n"
                             "  %f = subtract(%e, %s) : f32[n, 64]\n"
                             "  %g = maximum(%f, %x) : f32[n, 64]\n"
                             "  return %g\n"),
                        {Random(DType::kF32, {5, 64}, rng), Random(DType::kF32, {64}, rng),
                         Random(DType::kF32, {64}, rng), Random(DType::kF32, {}, rng)},
                        1e-5);
  CheckAgainstReference(Func("%x: f32[2, 3, 3], %b: f32[3]", "f32[2, 3, 3]",
                             "  %c = nn.bias_add(%x, %b) : f32[2, 3, 3]\n"
                             "  %d = add(%c, %b) : f32[2, 3, 3]\n"
                             "  return %d\n"),
                        {Random(DType::kF32, {2, 3, 3}, rng), Random(DType::kF32, {3}, rng)});
  CheckAgainstReference(Func("%x: f32[n, 100]", "f32[n, 100]",
                             "  %s = sigmoid(%x) : f32[n, 100]\n"
                             "  %r = multiply(%x, %s) : f32[n, 100]\n"
                             "  return %r\n"),
                        {Random(DType::kF32, {3, 100}, rng)}, 1e-5);
  CheckAgainstReference(
      Func("%x: f32[n, 10], %y: i32[10]", "i32[n, 10]",
           "  %c = cast(%x) {dtype = i32} : i32[n, 10]\n"
           "  %d = multiply(%c, %y) : i32[n, 10]\n"
           "  %e = greater(%d, %y) : bool[n, 10]\n"
           "  %f = where(%e, %d, %y) : i32[n, 10]\n"
           "  return %f\n"),
      {Random(DType::kF32, {4, 10}, rng, -20, 20), Random(DType::kI32, {10}, rng, -5, 5)});
}

// Tests a rank-0 group (a single element) and a group returning its parameter unchanged.
TEST(JitElementwiseTest, ScalarAndIdentityGroups) {
  std::mt19937 rng(10);
  CheckAgainstReference(BinaryFunc("add", "f32[]", "f32[]", "f32[]"),
                        {Random(DType::kF32, {}, rng), Random(DType::kF32, {}, rng)});
  CheckAgainstReference(BinaryFunc("multiply", "f32[1, 1]", "f32[1]", "f32[1, 1]"),
                        {Random(DType::kF32, {1, 1}, rng), Random(DType::kF32, {1}, rng)});
  CheckAgainstReference(Func("%a: f32[n, 4]", "f32[n, 4]", "  return %a\n"),
                        {Random(DType::kF32, {3, 4}, rng)});
}

// Tests that an empty output is accepted and nothing is written.
TEST(JitElementwiseTest, EmptyOutput) {
  std::mt19937 rng(11);
  CheckAgainstReference(BinaryFunc("add", "f32[n, 8]", "f32[8]", "f32[n, 8]"),
                        {Random(DType::kF32, {0, 8}, rng), Random(DType::kF32, {8}, rng)});
}

// ---- aliasing -------------------------------------------------------------------------------

// Tests the compile engine's in-place epilogue: bias_add + relu writing over its own input,
// for sizes with and without vector remainders.
TEST(JitElementwiseTest, InPlaceOutputAliasingAnInput) {
  std::unique_ptr<Module> m = Parse(Func("%x: f32[n, k], %b: f32[k]", "f32[n, k]",
                                         "  %c = nn.bias_add(%x, %b) : f32[n, k]\n"
                                         "  %d = nn.relu(%c) : f32[n, k]\n"
                                         "  return %d\n"));
  ASSERT_NE(m, nullptr);
  auto kernel = CompileJitElementwise(OnlyFunction(*m));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  auto instance = (*kernel)->Instantiate({nullptr, nullptr});
  ASSERT_TRUE(instance.ok());
  std::mt19937 rng(12);
  for (std::vector<int64_t> shape :
       std::vector<std::vector<int64_t>>{{4, 512}, {3, 1001}, {1, 7}, {17, 1}}) {
    Tensor x = Random(DType::kF32, shape, rng);
    Tensor b = Random(DType::kF32, {shape[1]}, rng);
    absl::StatusOr<Tensor> want = Reference(OnlyFunction(*m), {x, b});
    ASSERT_TRUE(want.ok()) << want.status();
    Tensor buffer = x;
    uint8_t* data = buffer.mutable_data();  // unshared from x
    std::vector<TensorArg> args = {
        {data, DType::kF32, buffer.shape()}, Arg(b), {data, DType::kF32, buffer.shape()}};
    ASSERT_TRUE((*instance)->Run(args).ok());
    ExpectClose(buffer, *want, 1e-6, 0, "in place");
  }
}

// Tests an in-place output over the second parameter of a group that reads the first one twice.
TEST(JitElementwiseTest, InPlaceOverTheSecondParameter) {
  std::mt19937 rng(13);
  std::unique_ptr<Module> m = Parse(Func("%x: f32[n, 300], %y: f32[n, 300]", "f32[n, 300]",
                                         "  %c = multiply(%x, %y) : f32[n, 300]\n"
                                         "  %d = add(%c, %x) : f32[n, 300]\n"
                                         "  return %d\n"));
  ASSERT_NE(m, nullptr);
  auto kernel = CompileJitElementwise(OnlyFunction(*m));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  Tensor x = Random(DType::kF32, {6, 300}, rng);
  Tensor y = Random(DType::kF32, {6, 300}, rng);
  absl::StatusOr<Tensor> want = Reference(OnlyFunction(*m), {x, y});
  ASSERT_TRUE(want.ok());
  Tensor buffer = y;
  uint8_t* data = buffer.mutable_data();
  auto instance = (*kernel)->Instantiate({nullptr, nullptr});
  ASSERT_TRUE(instance.ok());
  ASSERT_TRUE(
      (*instance)
          ->Run({Arg(x), {data, DType::kF32, buffer.shape()}, {data, DType::kF32, buffer.shape()}})
          .ok());
  ExpectClose(buffer, *want, 1e-6, 0, "in place over the second input");
}

// Tests that a partial overlap between an input and the output is refused.
TEST(JitElementwiseTest, PartialOverlapIsAnError) {
  std::unique_ptr<Module> m = Parse(UnaryFunc("exp", "f32[n]"));
  ASSERT_NE(m, nullptr);
  auto kernel = CompileJitElementwise(OnlyFunction(*m));
  ASSERT_TRUE(kernel.ok());
  std::vector<float> storage(101, 1.0f);
  std::vector<int64_t> shape = {100};
  auto instance = (*kernel)->Instantiate({nullptr});
  ASSERT_TRUE(instance.ok());
  absl::Status s = (*instance)->Run(
      {{storage.data(), DType::kF32, shape}, {storage.data() + 1, DType::kF32, shape}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("argument 0 (%a) overlaps the output"));
}

// ---- run-time shape errors ------------------------------------------------------------------

// Tests that an output whose shape is not the broadcast shape is refused, naming the function
// and the argument.
TEST(JitElementwiseTest, OutputShapeMismatchIsAnError) {
  std::unique_ptr<Module> m =
      Parse(absl::StrCat("def @fused_add_relu(%a: f32[n, 512], %b: f32[512]) -> f32[n, 512] "
                         "attributes {primitive = true} {\n"
                         "  %c = add(%a, %b) : f32[n, 512]\n"
                         "  %d = nn.relu(%c) : f32[n, 512]\n"
                         "  return %d\n}\n"));
  ASSERT_NE(m, nullptr);
  auto kernel = CompileJitElementwise(OnlyFunction(*m));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  std::mt19937 rng(14);
  Tensor a = Random(DType::kF32, {3, 512}, rng), b = Random(DType::kF32, {512}, rng);
  Tensor out = Tensor::Zeros(DType::kF32, {4, 512});
  absl::Status s = RunKernel(**kernel, {a, b}, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("@fused_add_relu: argument 2 (result 0) has shape [4, 512], expected the "
                        "broadcast shape [3, 512]"));
  // Wrong dtype, wrong rank and a static dim that does not fit the declared type.
  Tensor wrong_dtype = Tensor::Zeros(DType::kF64, {3, 512});
  s = RunKernel(**kernel, {a, b}, wrong_dtype);
  EXPECT_THAT(s.message(), HasSubstr("argument 2 (result 0) has dtype f64, expected f32"));
  Tensor out_ok = Tensor::Zeros(DType::kF32, {3, 512});
  s = RunKernel(**kernel, {a, Random(DType::kF32, {511}, rng)}, out_ok);
  EXPECT_THAT(s.message(),
              HasSubstr("argument 1 (%b) has shape [511], which does not fit its type f32[512]"));
  s = RunKernel(**kernel, {a}, out_ok);
  EXPECT_THAT(s.message(), HasSubstr("kernel expects 3 arguments"));
}

// Tests that inputs that do not broadcast together are refused, naming the op.
TEST(JitElementwiseTest, IncompatibleInputShapesAreAnError) {
  std::unique_ptr<Module> m = Parse(BinaryFunc("add", "f32[n, k]", "f32[m]", "f32[n, k]"));
  ASSERT_NE(m, nullptr);
  auto kernel = CompileJitElementwise(OnlyFunction(*m));
  ASSERT_TRUE(kernel.ok());
  std::mt19937 rng(15);
  Tensor out = Tensor::Zeros(DType::kF32, {3, 4});
  absl::Status s =
      RunKernel(**kernel, {Random(DType::kF32, {3, 4}, rng), Random(DType::kF32, {5}, rng)}, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("@f: add %r: operand shapes [3, 4], [5] do not broadcast"));
}

// ---- what the JIT refuses -------------------------------------------------------------------

// Tests that groups with ops or dtypes outside the lowering table are Unimplemented, naming the
// op / dtype, and that IsJitElementwise agrees.
TEST(JitElementwiseTest, UnsupportedGroupsAreUnimplemented) {
  struct Case {
    std::string text;
    const char* message;
  };
  const std::vector<Case> cases = {
      {Func("%x: f32[n, 10]", "f32[n, 10]", "  %r = nn.softmax(%x) : f32[n, 10]\n  return %r\n"),
       "op nn.softmax is not supported by the CPU JIT"},
      {Func("%x: f32[n, 10], %w: f32[4, 10]", "f32[n, 4]",
            "  %d = nn.dense(%x, %w) : f32[n, 4]\n  %r = nn.relu(%d) : f32[n, 4]\n  return %r\n"),
       "op nn.dense is not supported by the CPU JIT"},
      {BinaryFunc("add", "f16[4]", "f16[4]", "f16[4]"),
       "%a has dtype f16, which the CPU JIT does not support"},
      {BinaryFunc("power", "i32[4]", "i32[4]", "i32[4]"), "power on i32 is not supported"},
      {UnaryFunc("exp", "i64[4]"), "exp on i64 is not supported"},
      {BinaryFunc("add", "bool[4]", "bool[4]", "bool[4]"), "add on bool is not supported"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    std::unique_ptr<Module> m = Parse(c.text);
    ASSERT_NE(m, nullptr);
    EXPECT_FALSE(IsJitElementwise(OnlyFunction(*m)));
    auto kernel = CompileJitElementwise(OnlyFunction(*m));
    EXPECT_EQ(kernel.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(kernel.status().message(), HasSubstr(c.message));
  }
}

// ---- generated code -------------------------------------------------------------------------

// Tests that the inner loop of an f32 add + relu is vectorised (vector types in the optimised
// IR) although the output may alias an input, and that the kernel describes itself.
TEST(JitElementwiseTest, AddReluIsVectorised) {
  std::unique_ptr<Module> m = Parse(Func("%a: f32[n, 512], %b: f32[512]", "f32[n, 512]",
                                         "  %c = add(%a, %b) : f32[n, 512]\n"
                                         "  %d = nn.relu(%c) : f32[n, 512]\n"
                                         "  return %d\n"));
  ASSERT_NE(m, nullptr);
  absl::StatusOr<std::string> ir = JitElementwiseOptimizedIr(OnlyFunction(*m));
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_THAT(*ir, HasSubstr("x float>"));
  EXPECT_THAT(*ir, HasSubstr("llvm.loop.parallel_accesses"));
  EXPECT_THAT(*ir, ::testing::Not(HasSubstr("noalias %")));  // no data pointer is noalias
  auto kernel = CompileJitElementwise(OnlyFunction(*m));
  ASSERT_TRUE(kernel.ok());
  EXPECT_EQ((*kernel)->Describe(), "jit[add,relu]");
}

// Tests that the dump option prints the optimised IR.
TEST(JitElementwiseTest, DumpOptionPrintsOptimisedIr) {
  std::unique_ptr<Module> m = Parse(UnaryFunc("nn.relu", "f32[n]"));
  ASSERT_NE(m, nullptr);
  JitElementwiseOptions options;
  options.dump_llvm_ir = true;
  ::testing::internal::CaptureStderr();
  auto kernel = CompileJitElementwise(OnlyFunction(*m), options);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(kernel.ok());
  EXPECT_THAT(err, HasSubstr("optimised LLVM IR of hetpass_jit_f_"));
  EXPECT_THAT(err, HasSubstr("define"));
}

// Tests that kernels compiled and run from several threads at once are all correct (one JIT
// for the process, unique symbols).
TEST(JitElementwiseTest, ConcurrentCompilation) {
  const std::vector<std::string> ops = {"add", "subtract", "multiply", "maximum"};
  std::vector<std::string> failures(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(100 + t);
      const std::string& op = ops[t % ops.size()];
      std::unique_ptr<Module> m =
          ParseModule(BinaryFunc(op, "f32[n, 64]", "f32[64]", "f32[n, 64]")).value_or(nullptr);
      if (m == nullptr) {
        failures[t] = "parse";
        return;
      }
      auto kernel = CompileJitElementwise(OnlyFunction(*m));
      if (!kernel.ok()) {
        failures[t] = kernel.status().ToString();
        return;
      }
      Tensor a = Random(DType::kF32, {9, 64}, rng), b = Random(DType::kF32, {64}, rng);
      auto want = Reference(OnlyFunction(*m), {a, b});
      Tensor out = Tensor::Zeros(DType::kF32, {9, 64});
      absl::Status s = RunKernel(**kernel, {a, b}, out);
      if (!s.ok() || !want.ok() || !(out == *want)) failures[t] = "wrong result for " + op;
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}


// ===== The injective path =====================================================================

namespace injective {

using ::hetpass::testing::Interpret;

// A random shape of `rank` dims drawn from {0, 1, 2, 3, 5} (0 and 1 with low weight).
std::vector<int64_t> RandomShape(int rank, std::mt19937& rng) {
  static constexpr int64_t kDims[] = {0, 1, 1, 2, 3, 3, 5, 5, 2, 3};
  std::vector<int64_t> shape;
  for (int i = 0; i < rank; ++i) shape.push_back(kDims[rng() % 10]);
  return shape;
}

Tensor Ints(DType dtype, const std::vector<int64_t>& values) {
  Tensor t = Tensor::Zeros(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.SetInt64(i, values[i]);
  return t;
}

std::unique_ptr<CompiledKernel> CompileInjective(const Function& f) {
  EXPECT_TRUE(IsJitInjective(f));
  EXPECT_FALSE(IsJitElementwise(f));
  absl::StatusOr<std::unique_ptr<CompiledKernel>> kernel = CompileJitInjective(f);
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  return kernel.ok() ? *std::move(kernel) : nullptr;
}

// Runs the injective kernel of `text` on `inputs` and compares with the reference kernel
// (CompileReferenceKernel): bitwise-equal results (data movement and f32 arithmetic in the same
// order), or an error from both. Returns whether the reference succeeded.
bool Check(const std::string& text, const std::vector<Tensor>& inputs) {
  std::string shapes;
  for (const Tensor& t : inputs) absl::StrAppend(&shapes, t.type().ToString(), " ");
  SCOPED_TRACE(absl::StrCat(text, "inputs: ", shapes));
  // Compiled once per text (the random cases reuse it).
  struct Compiled {
    std::unique_ptr<Module> module;
    std::unique_ptr<CompiledKernel> kernel;
    std::unique_ptr<CompiledKernel> gpu;  // the cuda device's (null without a GPU)
  };
  static auto* cache = new std::map<std::string, Compiled>();
  Compiled& c = (*cache)[text];
  if (c.module == nullptr) {
    c.module = Parse(text);
    EXPECT_NE(c.module, nullptr);
    if (c.module == nullptr) return false;
    c.kernel = CompileInjective(OnlyFunction(*c.module));
    absl::Status ptx = testing::NvptxAssembles(OnlyFunction(*c.module));
    EXPECT_TRUE(ptx.ok()) << ptx;
    if (ptx.ok() && testing::Cuda().device != nullptr) {
      absl::StatusOr<std::unique_ptr<CompiledKernel>> gpu = cuda::CompileNvptx(OnlyFunction(*c.module));
      EXPECT_TRUE(gpu.ok()) << gpu.status();
      if (gpu.ok()) c.gpu = *std::move(gpu);
    }
  }
  const Function& f = OnlyFunction(*c.module);
  if (c.kernel == nullptr) return false;
  const CompiledKernel* kernel = c.kernel.get();
  absl::StatusOr<Tensor> want = Interpret(f, inputs);
  if (!want.ok()) {
    // The shape the reference failed on is unknown here: any output of the declared rank
    // must be refused.
    std::vector<int64_t> shape(f.body().results()[0]->type().shape().size(), 1);
    Tensor got = Tensor::Zeros(f.body().results()[0]->type().dtype(), shape);
    absl::Status run = RunKernel(*kernel, inputs, got);
    EXPECT_FALSE(run.ok()) << "the reference fails with " << want.status();
    EXPECT_EQ(run.code(), absl::StatusCode::kInvalidArgument) << run;
    if (c.gpu != nullptr) {
      absl::Status on_gpu = testing::RunOnCuda(*c.gpu, inputs, got, testing::HostParams(f));
      EXPECT_FALSE(on_gpu.ok()) << "on cuda: the reference fails with " << want.status();
      EXPECT_EQ(on_gpu.code(), absl::StatusCode::kInvalidArgument) << "on cuda: " << on_gpu;
    }
    return false;
  }
  Tensor got = Tensor::Zeros(want->dtype(), want->shape());
  if (got.nbytes() > 0) std::memset(got.mutable_data(), 0x7f, got.nbytes());
  absl::Status run = RunKernel(*kernel, inputs, got);
  EXPECT_TRUE(run.ok()) << run;
  if (run.ok()) ExpectClose(got, *want, 0, 0, text);
  if (c.gpu != nullptr) {
    Tensor on_gpu = Tensor::Zeros(want->dtype(), want->shape());
    absl::Status gpu_run = testing::RunOnCuda(*c.gpu, inputs, on_gpu, testing::HostParams(f));
    EXPECT_TRUE(gpu_run.ok()) << "on cuda: " << gpu_run;
    if (gpu_run.ok()) ExpectClose(on_gpu, *want, 0, 0, absl::StrCat("on cuda: ", text));
  }
  return true;
}

// Tests transpose with every permutation form (explicit, negative axes, empty = reverse) on
// random shapes with 0 and 1 dims, on f32, i64 and bool.
TEST(JitInjectiveTest, TransposeMatchesReference) {
  std::mt19937 rng(101);
  const std::vector<std::pair<std::string, int>> perms = {
      {"[1, 0, 2]", 3}, {"[2, 0, 1]", 3}, {"[0, -1, 1]", 3}, {"[]", 3}, {"[1, 0]", 2},
      {"[3, 1, 0, 2]", 4}};
  for (const auto& [perm, rank] : perms) {
    for (DType dtype : {DType::kF32, DType::kI64, DType::kBool}) {
      std::vector<std::string> dims(rank, "?");
      const std::string type =
          absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(dims, ", "), "]");
      const std::string text = Func(absl::StrCat("%x: ", type), type,
                                    absl::StrCat("  %r = transpose(%x) {axes = ", perm, "} : ",
                                                 type, "\n  return %r\n"));
      for (int i = 0; i < 4; ++i) Check(text, {Random(dtype, RandomShape(rank, rng), rng)});
    }
  }
}

// Tests reshape (0 and -1 targets), dyn.reshape with run-time targets (including ones whose
// element count does not match: an error from both), expand_dims and squeeze. (squeeze without
// axes drops the statically-1 dims; a symbolic dim that is 1 at run time stays, where the
// reference, seeing only constants, would drop it and miss the declared rank: not compared.)
TEST(JitInjectiveTest, ReshapeFamilyMatchesReference) {
  std::mt19937 rng(102);
  for (int i = 0; i < 8; ++i) {
    const std::vector<int64_t> s = RandomShape(3, rng);
    const Tensor x = Random(DType::kF32, s, rng);
    Check(Func("%x: f32[?, ?, ?]", "f32[?, ?]",
               "  %y = reshape(%x) {newshape = [0, -1]} : f32[?, ?]\n"
               "  %r = add(%y, %y) : f32[?, ?]\n  return %r\n"),
          {x});
    Check(Func("%x: f32[?, ?, ?]", "f32[?]",
               "  %r = reshape(%x) {newshape = [-1]} : f32[?]\n  return %r\n"),
          {x});
    const std::string dyn = Func("%x: f32[?, ?, ?], %t: i64[3]", "f32[?, ?, ?]",
                                 "  %y = dyn.reshape(%x, %t) : f32[?, ?, ?]\n"
                                 "  %r = negative(%y) : f32[?, ?, ?]\n  return %r\n");
    Check(dyn, {x, Ints(DType::kI64, {s[1], -1, s[0]})});
    Check(dyn, {x, Ints(DType::kI64, {0, s[2], s[1]})});
    Check(dyn, {x, Ints(DType::kI64, {s[0] + 1, s[1], s[2]})});  // count mismatch unless 0
    Check(Func("%x: f32[?, ?, ?], %t: i32[2]", "f32[?, ?]",
               "  %r = dyn.reshape(%x, %t) : f32[?, ?]\n  return %r\n"),
          {x, Ints(DType::kI32, {-1, s[2]})});
    Check(Func("%x: f32[?, ?]", "f32[?, 1, 1, ?]",
               "  %y = expand_dims(%x) {axis = 1, num_newaxis = 2} : f32[?, 1, 1, ?]\n"
               "  %r = abs(%y) : f32[?, 1, 1, ?]\n  return %r\n"),
          {Random(DType::kF32, RandomShape(2, rng), rng)});
    Check(Func("%x: i64[?]", "i64[?, 1]",
               "  %r = expand_dims(%x) {axis = -1} : i64[?, 1]\n  return %r\n"),
          {Random(DType::kI64, RandomShape(1, rng), rng)});
    std::vector<int64_t> sq = RandomShape(2, rng);
    sq.insert(sq.begin() + 1, 1);
    Check(Func("%x: f32[?, 1, ?]", "f32[?, ?]",
               "  %r = squeeze(%x) {axis = [1]} : f32[?, ?]\n  return %r\n"),
          {Random(DType::kF32, sq, rng)});
    Check(Func("%x: f32[?, 1, 3, 1]", "f32[?, 3]",
               "  %r = squeeze(%x) : f32[?, 3]\n  return %r\n"),
          {Random(DType::kF32, {sq[0] == 1 ? 2 : sq[0], 1, 3, 1}, rng)});
  }
}

// Tests strided_slice with static attributes: negative begin/end, negative strides, clamping
// beyond the dims, axes, and slice_mode "size", on random shapes with 0 and 1 dims.
TEST(JitInjectiveTest, StridedSliceMatchesReference) {
  std::mt19937 rng(103);
  const std::vector<std::string> attrs = {
      "begin = [1, 0], end = [4, 3]",
      "begin = [-1, 0], end = [-100, 5], strides = [-1, 2]",
      "begin = [4, -1], end = [0, -4], strides = [-2, -1]",
      "begin = [0], end = [2147483647], strides = [3]",
      "begin = [-2], end = [-2147483648], strides = [-1], axes = [1]",
      "begin = [1, 0], end = [2, -1], slice_mode = \"size\"",
      "begin = [100, -100], end = [200, 100]",
  };
  for (const std::string& a : attrs) {
    const std::string text = Func("%x: f32[?, ?]", "f32[?, ?]",
                                  absl::StrCat("  %r = strided_slice(%x) {", a,
                                               "} : f32[?, ?]\n  return %r\n"));
    for (int i = 0; i < 6; ++i) Check(text, {Random(DType::kF32, RandomShape(2, rng), rng)});
  }
}

// Tests dyn.strided_slice with random run-time begin/end/strides (i64 and i32), including
// zero strides (an error from both).
TEST(JitInjectiveTest, DynStridedSliceMatchesReference) {
  std::mt19937 rng(104);
  for (DType index : {DType::kI64, DType::kI32}) {
    const std::string it = absl::StrCat(DTypeName(index), "[3]");
    const std::string text =
        Func(absl::StrCat("%x: f32[?, ?, ?], %b: ", it, ", %e: ", it, ", %s: ", it),
             "f32[?, ?, ?]",
             "  %r = dyn.strided_slice(%x, %b, %e, %s) : f32[?, ?, ?]\n  return %r\n");
    int zero_strides = 0, failures = 0;
    for (int i = 0; i < 40; ++i) {
      std::vector<int64_t> b, e, s;
      for (int j = 0; j < 3; ++j) {
        b.push_back(static_cast<int64_t>(rng() % 15) - 7);
        e.push_back(static_cast<int64_t>(rng() % 15) - 7);
        s.push_back(static_cast<int64_t>(rng() % 7) - 3);
        zero_strides += s.back() == 0;
      }
      failures += !Check(text, {Random(DType::kF32, RandomShape(3, rng), rng), Ints(index, b),
                                Ints(index, e), Ints(index, s)});
    }
    EXPECT_GT(zero_strides, 0);
    EXPECT_GT(failures, 0);  // the zero strides
    EXPECT_LT(failures, 40);
  }
}

// Tests take in the three modes on several axes and index ranks, with indices out of range
// (clip and wrap resolve them; fast is an error from both), i64/i32/u8 indices, and an empty
// data axis (an error from both when an index must be resolved).
TEST(JitInjectiveTest, TakeMatchesReference) {
  std::mt19937 rng(105);
  int fast_ok = 0, fast_failed = 0;
  for (const char* mode : {"clip", "wrap", "fast"}) {
    for (int axis : {0, 1, -1}) {
      for (DType index : {DType::kI64, DType::kI32, DType::kU8}) {
        const std::string text = Func(
            absl::StrCat("%x: f32[?, ?], %i: ", DTypeName(index), "[?, ?]"), "f32[?, ?, ?]",
            absl::StrCat("  %r = take(%x, %i) {axis = ", axis, ", mode = \"", mode,
                         "\"} : f32[?, ?, ?]\n  return %r\n"));
        for (int i = 0; i < 5; ++i) {
          const double lo = index == DType::kU8 ? 0 : -8;
          const bool ok = Check(text, {Random(DType::kF32, RandomShape(2, rng), rng),
                                       Random(index, RandomShape(2, rng), rng, lo, 8)});
          if (std::string(mode) == "fast") ++(ok ? fast_ok : fast_failed);
        }
      }
    }
    // Scalar indices on a 1-D i64 tensor (the shape arithmetic the importer emits) and a rank-0
    // result.
    Check(Func("%s: i64[3], %i: i64[]", "i64[]",
               absl::StrCat("  %r = take(%s, %i) {mode = \"", mode, "\"} : i64[]\n  return %r\n")),
          {Ints(DType::kI64, {7, 8, 9}), Tensor::Scalar(DType::kI64, -1)});
  }
  // Both outcomes of mode "fast" were compared (in-range results, out-of-range errors).
  EXPECT_GT(fast_ok, 0);
  EXPECT_GT(fast_failed, 0);
}

// Tests concatenate of 1 to 3 inputs on every axis, with empty pieces, and of i64[1] pieces
// (shape arithmetic).
TEST(JitInjectiveTest, ConcatenateMatchesReference) {
  std::mt19937 rng(106);
  for (int axis : {0, 1, -1}) {
    const std::string text = Func("%a: f32[?, ?], %b: f32[?, ?], %c: f32[?, ?]", "f32[?, ?]",
                                  absl::StrCat("  %r = concatenate(%a, %b, %c) {axis = ", axis,
                                               "} : f32[?, ?]\n  return %r\n"));
    for (int i = 0; i < 8; ++i) {
      std::vector<int64_t> s = RandomShape(2, rng);
      const int a = axis < 0 ? 1 : axis;
      std::vector<Tensor> in;
      for (int k = 0; k < 3; ++k) {
        std::vector<int64_t> sk = s;
        sk[a] = static_cast<int64_t>(rng() % 4);
        in.push_back(Random(DType::kF32, sk, rng));
      }
      Check(text, in);
    }
    // Mismatched non-axis dims: an error from both.
    Check(text, {Random(DType::kF32, {2, 2}, rng), Random(DType::kF32, {3, 3}, rng),
                 Random(DType::kF32, {2, 2}, rng)});
  }
  Check(Func("%a: i64[1], %b: i64[1]", "i64[3]",
             "  %r = concatenate(%a, %b, %a) : i64[3]\n  return %r\n"),
        {Ints(DType::kI64, {4}), Ints(DType::kI64, {-1})});
  Check(Func("%a: f32[?, ?]", "f32[?, ?]", "  %r = concatenate(%a) {axis = 1} : f32[?, ?]\n"
                                           "  return %r\n"),
        {Random(DType::kF32, {2, 3}, rng)});
}

// Tests broadcast_to and dyn.broadcast_to, with targets that do not fit (errors from both).
TEST(JitInjectiveTest, BroadcastToMatchesReference) {
  std::mt19937 rng(107);
  Check(Func("%x: f32[?, 1]", "f32[2, ?, 4]",
             "  %r = broadcast_to(%x) {shape = [2, 3, 4]} : f32[2, 3, 4]\n  return %r\n"),
        {Random(DType::kF32, {3, 1}, rng)});
  const std::string dyn = Func("%x: i64[1, ?], %t: i64[3]", "i64[?, ?, ?]",
                               "  %r = dyn.broadcast_to(%x, %t) : i64[?, ?, ?]\n  return %r\n");
  for (int i = 0; i < 6; ++i) {
    const std::vector<int64_t> s = RandomShape(2, rng);
    const int64_t n = s[1];
    Check(dyn, {Random(DType::kI64, {1, n}, rng, -100, 100), Ints(DType::kI64, {s[0], 2, n})});
    Check(dyn, {Random(DType::kI64, {1, n}, rng, -100, 100), Ints(DType::kI64, {2, 1, n + 1})});
  }
}

// Tests fused chains as the transformer's fuser hands them over.
TEST(JitInjectiveTest, FusedChainsMatchReference) {
  std::mt19937 rng(108);
  // q = transpose(reshape(slice(qkv))) / sqrt(d)
  const std::string attention = Func(
      "%qkv: f32[?, ?, 192], %b: i64[3], %e: i64[3], %s: i64[3], %t: i64[3], %c: f32[]",
      "f32[?, ?, 16]",
      "  %q = dyn.strided_slice(%qkv, %b, %e, %s) : f32[?, ?, ?]\n"
      "  %r = dyn.reshape(%q, %t) : f32[?, ?, 16]\n"
      "  %p = transpose(%r) {axes = [1, 0, 2]} : f32[?, ?, 16]\n"
      "  %d = divide(%p, %c) : f32[?, ?, 16]\n"
      "  return %d\n");
  for (int64_t seq : {1, 7, 12}) {
    for (int64_t batch : {1, 3}) {
      Check(attention, {Random(DType::kF32, {seq, batch, 192}, rng), Ints(DType::kI64, {0, 0, 64}),
                        Ints(DType::kI64, {INT64_MAX, INT64_MAX, 128}), Ints(DType::kI64, {1, 1, 1}),
                        Ints(DType::kI64, {seq, batch * 4, 16}), Tensor::Scalar(DType::kF32, 4.0)});
    }
  }
  // mask = where(reshape(broadcast_to(m)), -inf, 0) * scores
  Check(Func("%m: bool[?, 1, 1, ?], %shape: i64[4], %t: i64[3], %ninf: f32[], %x: f32[1, ?, ?]",
             "f32[?, ?, ?]",
             "  %a = dyn.broadcast_to(%m, %shape) : bool[?, ?, ?, ?]\n"
             "  %b = dyn.reshape(%a, %t) : bool[?, ?, ?]\n"
             "  %c = where(%b, %ninf, %x) : f32[?, ?, ?]\n"
             "  %d = multiply(%c, %x) : f32[?, ?, ?]\n"
             "  return %d\n"),
        {Random(DType::kBool, {3, 1, 1, 5}, rng), Ints(DType::kI64, {3, 4, 5, 5}),
         Ints(DType::kI64, {12, 5, 5}), Tensor::Scalar(DType::kF32, -1e9), Random(DType::kF32, {1, 5, 5}, rng)});
  // embedding: take(tokens) + positions
  Check(Func("%w: f32[100, 64], %ids: i64[?, ?], %pos: f32[?, ?, 64]", "f32[?, ?, 64]",
             "  %g = take(%w, %ids) {mode = \"wrap\"} : f32[?, ?, 64]\n"
             "  %a = add(%g, %pos) : f32[?, ?, 64]\n"
             "  return %a\n"),
        {Random(DType::kF32, {100, 64}, rng), Random(DType::kI64, {3, 12}, rng, -120, 120),
         Random(DType::kF32, {3, 12, 64}, rng)});
  // output projection: transpose(reshape(x)) + residual
  Check(Func("%x: f32[?, 64], %t: i64[3], %res: f32[?, ?, 64]", "f32[?, ?, 64]",
             "  %r = dyn.reshape(%x, %t) : f32[?, ?, 64]\n"
             "  %p = transpose(%r) {axes = [1, 0, 2]} : f32[?, ?, 64]\n"
             "  %a = add(%p, %res) : f32[?, ?, 64]\n"
             "  return %a\n"),
        {Random(DType::kF32, {36, 64}, rng), Ints(DType::kI64, {3, 12, 64}),
         Random(DType::kF32, {12, 3, 64}, rng)});
  // shape arithmetic: reshape(concatenate(expand_dims(take(shape, 0)), n))
  Check(Func("%shape: i64[2], %k: i64[], %n: i64[1]", "i64[2]",
             "  %g = take(%shape, %k) : i64[]\n"
             "  %u = expand_dims(%g) {axis = 0} : i64[1]\n"
             "  %c = concatenate(%u, %n) : i64[2]\n"
             "  %r = reshape(%c) {newshape = [-1]} : i64[2]\n"
             "  return %r\n"),
        {Ints(DType::kI64, {3, 12}), Tensor::Scalar(DType::kI64, 0), Ints(DType::kI64, {12})});
  // elementwise ops on both sides of a transpose, with broadcasting intermediates.
  Check(Func("%x: f32[?, ?], %y: f32[?], %z: f32[?, 1]", "f32[?, ?]",
             "  %a = multiply(%x, %y) : f32[?, ?]\n"
             "  %b = transpose(%a) : f32[?, ?]\n"
             "  %c = add(%b, %z) : f32[?, ?]\n"
             "  %d = nn.relu(%c) : f32[?, ?]\n"
             "  return %d\n"),
        {Random(DType::kF32, {4, 6}, rng), Random(DType::kF32, {6}, rng),
         Random(DType::kF32, {6, 1}, rng)});
}

// Tests larger inner dims (vectorised inner loops with remainders): gathers of rows, slices
// and reshapes followed by elementwise ops.
TEST(JitInjectiveTest, LargerInnerDimsMatchReference) {
  std::mt19937 rng(111);
  const std::string gather = Func("%w: f32[?, ?], %ids: i32[?], %b: f32[?]", "f32[?, ?]",
                                  "  %g = take(%w, %ids) {mode = \"wrap\"} : f32[?, ?]\n"
                                  "  %a = add(%g, %b) : f32[?, ?]\n"
                                  "  return %a\n");
  const std::string slice = Func("%x: f32[?, ?], %b: i64[2], %e: i64[2], %s: i64[2]", "f32[?]",
                                 "  %q = dyn.strided_slice(%x, %b, %e, %s) : f32[?, ?]\n"
                                 "  %r = reshape(%q) {newshape = [-1]} : f32[?]\n"
                                 "  %m = multiply(%r, %r) : f32[?]\n"
                                 "  return %m\n");
  for (int64_t inner : {1, 3, 8, 17, 64, 100}) {
    Check(gather, {Random(DType::kF32, {7, inner}, rng),
                   Random(DType::kI32, {11}, rng, -20, 20), Random(DType::kF32, {inner}, rng)});
    Check(slice, {Random(DType::kF32, {5, inner}, rng), Ints(DType::kI64, {1, 1}),
                  Ints(DType::kI64, {-1, 1000}), Ints(DType::kI64, {1, 1})});
    Check(slice, {Random(DType::kF32, {5, inner}, rng), Ints(DType::kI64, {-1, -1}),
                  Ints(DType::kI64, {-1000, -1000}), Ints(DType::kI64, {-2, -1})});
  }
}

// Tests what the injective path refuses: purely elementwise groups (the other path's),
// run-time operands computed inside the group, and fast-mode take of computed indices; and
// that the elementwise path still refuses injective ops.
TEST(JitInjectiveTest, RefusalsAreUnimplemented) {
  const std::vector<std::string> cases = {
      Func("%x: f32[4]", "f32[4]", "  %r = negative(%x) : f32[4]\n  return %r\n"),
      Func("%x: f32[4], %t: i64[1]", "f32[4]",
           "  %u = negative(%t) : i64[1]\n"
           "  %r = dyn.reshape(%x, %u) : f32[4]\n  return %r\n"),
      Func("%x: f32[4], %i: i64[2]", "f32[2]",
           "  %j = negative(%i) : i64[2]\n"
           "  %r = take(%x, %j) {mode = \"fast\"} : f32[2]\n  return %r\n"),
      Func("%x: f32[n, 10]", "f32[n, 10]", "  %r = nn.softmax(%x) : f32[n, 10]\n  return %r\n"),
  };
  for (const std::string& text : cases) {
    SCOPED_TRACE(text);
    std::unique_ptr<Module> m = Parse(text);
    ASSERT_NE(m, nullptr);
    EXPECT_FALSE(IsJitInjective(OnlyFunction(*m)));
    EXPECT_EQ(CompileJitInjective(OnlyFunction(*m)).status().code(),
              absl::StatusCode::kUnimplemented);
  }
  std::unique_ptr<Module> m =
      Parse(Func("%x: f32[2, 3]", "f32[3, 2]", "  %r = transpose(%x) : f32[3, 2]\n  return %r\n"));
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(IsJitElementwise(OnlyFunction(*m)));
  EXPECT_THAT(CompileJitElementwise(OnlyFunction(*m)).status().message(),
              HasSubstr("op transpose is not supported by the CPU JIT"));
}

// Tests that an output overlapping an input is refused (a transpose cannot run in place), and
// that a wrong output shape is an error.
TEST(JitInjectiveTest, OverlapAndShapeErrors) {
  std::unique_ptr<Module> m = Parse(
      Func("%x: f32[?, ?]", "f32[?, ?]", "  %r = transpose(%x) : f32[?, ?]\n  return %r\n"));
  ASSERT_NE(m, nullptr);
  std::unique_ptr<CompiledKernel> kernel = CompileInjective(OnlyFunction(*m));
  ASSERT_NE(kernel, nullptr);
  std::mt19937 rng(109);
  Tensor x = Random(DType::kF32, {3, 3}, rng);
  auto instance = kernel->Instantiate({nullptr});
  ASSERT_TRUE(instance.ok());
  std::vector<TensorArg> args = {Arg(x), Arg(x)};
  absl::Status s = (*instance)->Run(args);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("overlaps the output"));
  Tensor wrong = Tensor::Zeros(DType::kF32, {3, 4});
  s = RunKernel(*kernel, {x}, wrong);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("expected [3, 3]"));
}

// Tests the entry point for element counts of 2^32 and more (a reshape of a broadcast that is
// never materialised, sliced down to a few elements), where the division multipliers are not
// exact and udiv is used. The reference would materialise 2^33 elements: the expected values
// are computed here.
TEST(JitInjectiveTest, HugeIntermediateUsesTheWideEntry) {
  std::unique_ptr<Module> m =
      Parse(Func("%x: f32[1, ?, 2], %t: i64[3], %u: i64[2]", "f32[?, ?]",
                 "  %a = dyn.broadcast_to(%x, %t) : f32[?, ?, ?]\n"
                 "  %b = dyn.reshape(%a, %u) : f32[?, ?]\n"
                 "  %c = strided_slice(%b) {begin = [1, 131060], end = [3, 131072]} : f32[?, ?]\n"
                 "  return %c\n"));
  ASSERT_NE(m, nullptr);
  std::unique_ptr<CompiledKernel> kernel = CompileInjective(OnlyFunction(*m));
  ASSERT_NE(kernel, nullptr);
  std::mt19937 rng(110);
  const Tensor x = Random(DType::kF32, {1, 65536, 2}, rng);
  Tensor got = Tensor::Zeros(DType::kF32, {2, 12});
  ASSERT_TRUE(RunKernel(*kernel,
                        {x, Ints(DType::kI64, {65536, 65536, 2}), Ints(DType::kI64, {65536, -1})},
                        got)
                  .ok());
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 12; ++j) {
      // b[1 + i][131060 + j] = a at linear index (1 + i) * 131072 + 131060 + j, which is
      // x[0][(131060 + j) / 2][(131060 + j) % 2] = x's element 131060 + j.
      EXPECT_EQ(got.GetDouble(i * 12 + j), x.GetDouble(131060 + j)) << i << ", " << j;
    }
  }
}

}  // namespace injective

}  // namespace
}  // namespace hetpass
