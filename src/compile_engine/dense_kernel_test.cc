// Tests of the dense kernel (nn.dense [+ bias_add] [+ relu] on oneDNN) against an interpreter
// of the same primitive function built from the registry's reference kernels, for dynamic M in
// one instance, constant (prepacked) and run-time weights, every optional part, odd sizes and
// every error path: the kernel must never abort on bad arguments.
#include "compile_engine/dense_kernel.h"

#include "passes/compile_engine/compile_engine.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Arg;
using ::hetpass::testing::Interpret;
using ::testing::HasSubstr;

Tensor Random(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0) {
  return ::hetpass::testing::RandomF32(std::move(shape), seed, scale);
}

// ---- helpers -------------------------------------------------------------------------------




// Runs `instance` on `params` into a fresh output of [m, n].
absl::StatusOr<Tensor> RunKernel(KernelInstance& instance, const std::vector<Tensor>& params,
                                 int64_t m, int64_t n) {
  Tensor out = Tensor::Zeros(DType::kF32, {m, n});
  float* o = out.mutable_data_as<float>();
  for (int64_t i = 0; i < out.num_elements(); ++i) o[i] = std::nanf("");
  std::vector<TensorArg> args;
  for (const Tensor& p : params) args.push_back(Arg(p));
  args.push_back(TensorArg{o, DType::kF32, absl::MakeConstSpan(out.shape())});
  RETURN_IF_ERROR(instance.Run(args));
  return out;
}

// Max |got - want| / (1 + |want|); NaN counts as a huge error.
double MaxError(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return 1e30;
  double err = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double e =
        std::abs(got.GetDouble(i) - want.GetDouble(i)) / (1 + std::abs(want.GetDouble(i)));
    err = std::max(err, std::isnan(e) ? 1e30 : e);
  }
  return err;
}

constexpr double kTolerance = 1e-5;

std::unique_ptr<Module> ParseOne(const std::string& text) { return testing::Parse(text); }

// A dense group over K inputs and N outputs; `tail` is the body after %h = nn.dense(...).
std::string DenseFunction(int64_t k, int64_t n, bool bias, bool relu, int axis = -1) {
  std::string params = absl::StrCat("%x: f32[m, ", k, "], %w: f32[", n, ", ", k, "]");
  std::string body = absl::StrCat("  %h = nn.dense(%x, %w) : f32[m, ", n, "]\n");
  std::string last = "%h";
  if (bias) {
    absl::StrAppend(&params, ", %b: f32[", n, "]");
    absl::StrAppend(&body, "  %hb = nn.bias_add(%h, %b) {axis = ", axis, "} : f32[m, ", n, "]\n");
    last = "%hb";
  }
  if (relu) {
    absl::StrAppend(&body, "  %a = nn.relu(", last, ") : f32[m, ", n, "]\n");
    last = "%a";
  }
  return absl::StrCat("def @f(", params, ") -> f32[m, ", n, "] attributes {primitive = true} {\n",
                      body, "  return ", last, "\n}\n");
}

struct Group {
  std::unique_ptr<Module> module;
  const Function* f = nullptr;
  std::unique_ptr<CompiledKernel> kernel;
};

Group Compile(const std::string& text) {
  Group g;
  g.module = ParseOne(text);
  if (g.module == nullptr) return g;
  g.f = g.module->FindFunction("f");
  EXPECT_NE(g.f, nullptr);
  if (g.f == nullptr) return g;
  EXPECT_TRUE(IsDenseGroup(*g.f)) << text;
  auto kernel = CompileDenseGroup(*g.f);
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  if (kernel.ok()) g.kernel = *std::move(kernel);
  return g;
}

std::vector<const Tensor*> Constants(const std::vector<Tensor>& params, std::vector<bool> which) {
  std::vector<const Tensor*> c;
  for (size_t i = 0; i < params.size(); ++i) c.push_back(which[i] ? &params[i] : nullptr);
  return c;
}

// ---- correctness ---------------------------------------------------------------------------

// Tests that one instance with constant (prepacked) weights and bias matches the reference
// for M = 1, 3, 16, 64 in turn, and again for M = 3 (a cached primitive).
TEST(DenseKernelTest, ConstantWeightsMatchReferenceForDynamicM) {
  Group g = Compile(DenseFunction(1024, 512, /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  EXPECT_EQ(g.kernel->Describe(), "onednn matmul[bias,relu] packed");
  const Tensor w = Random({512, 1024}, 1, 1 / 32.0), b = Random({512}, 2, 0.5);
  std::vector<Tensor> load = {Tensor(), w, b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  for (int64_t m : {1, 3, 16, 64, 3}) {
    SCOPED_TRACE(absl::StrCat("M = ", m));
    const std::vector<Tensor> params = {Random({m, 1024}, 10 + m), w, b};
    auto got = RunKernel(**instance, params, m, 512);
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = Interpret(*g.f, params);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_LE(MaxError(*got, *want), kTolerance);
  }
}

// Tests that run-time weights (no constants) are read on every call: new weights each call,
// M = 1, 3, 16, 64 in one instance.
TEST(DenseKernelTest, RunTimeWeightsMatchReferenceForDynamicM) {
  Group g = Compile(DenseFunction(1024, 512, /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  auto instance = g.kernel->Instantiate({nullptr, nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  for (int64_t m : {1, 3, 16, 64}) {
    SCOPED_TRACE(absl::StrCat("M = ", m));
    const std::vector<Tensor> params = {Random({m, 1024}, 20 + m),
                                        Random({512, 1024}, 30 + m, 1 / 32.0),
                                        Random({512}, 40 + m, 0.5)};
    auto got = RunKernel(**instance, params, m, 512);
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = Interpret(*g.f, params);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_LE(MaxError(*got, *want), kTolerance);
  }
}

// Tests that constant weights are packed at load and used from there: the weight argument at
// run time holds zeros, the result is still that of the constant.
TEST(DenseKernelTest, ConstantWeightsArePackedAtLoad) {
  Group g = Compile(DenseFunction(256, 128, /*bias=*/true, /*relu=*/false));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({128, 256}, 3, 1 / 16.0), b = Random({128}, 4);
  std::vector<Tensor> load = {Tensor(), w, b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  const Tensor x = Random({16, 256}, 5);
  auto got = RunKernel(
      **instance, {x, Tensor::Zeros(DType::kF32, {128, 256}), Tensor::Zeros(DType::kF32, {128})},
      16, 128);
  ASSERT_TRUE(got.ok()) << got.status();
  auto want = Interpret(*g.f, {x, w, b});
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxError(*got, *want), kTolerance);
}

// Tests that an instance holds its constant weights once: after the pack at load it keeps no
// share of the bytes as stored (the caller's copy is then unshared and can be freed), reports
// them Absorbed (and nothing else), and runs from the pack with a weight argument that has no
// data, for several M (a layout another M picks is reordered from the pack). oneDNN packs f32
// matmul weights into a blocked layout on the AVX-512 hosts this project builds for.
TEST(DenseKernelTest, PackedWeightsAreHeldOnceAndAbsorbed) {
  Group g = Compile(DenseFunction(1024, 512, /*bias=*/true, /*relu=*/false));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({512, 1024}, 6, 1 / 32.0), b = Random({512}, 7);
  // The weights again (same seed), in bytes of their own that only `load` holds.
  std::vector<Tensor> load = {Tensor(), Random({512, 1024}, 6, 1 / 32.0), b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  EXPECT_FALSE((*instance)->Absorbed(0));
  EXPECT_TRUE((*instance)->Absorbed(1));
  EXPECT_FALSE((*instance)->Absorbed(2));  // the bias is read as stored
  EXPECT_TRUE(load[1].ReleaseIfUnshared());
  EXPECT_FALSE(load[2].ReleaseIfUnshared());
  for (int64_t m : {1, 5, 128}) {
    SCOPED_TRACE(absl::StrCat("M = ", m));
    const Tensor x = Random({m, 1024}, 50 + m);
    Tensor out = Tensor::Zeros(DType::kF32, {m, 512});
    const std::vector<TensorArg> args = {
        Arg(x), TensorArg{nullptr, DType::kF32, absl::MakeConstSpan(w.shape())}, Arg(b),
        TensorArg{out.mutable_data(), DType::kF32, absl::MakeConstSpan(out.shape())}};
    ASSERT_TRUE((*instance)->Run(args).ok());
    auto want = Interpret(*g.f, {x, w, b});
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_LE(MaxError(out, *want), kTolerance);
  }
}

struct Variant {
  bool bias;
  bool relu;
  int axis;
  const char* describe;
};

// Tests every optional part (no bias, no relu, axis = 1) on sizes that are not multiples of
// the library's blocking, with constant and run-time weights.
TEST(DenseKernelTest, OptionalPartsAndOddSizes) {
  const Variant variants[] = {{false, false, -1, "onednn matmul packed"},
                              {false, true, -1, "onednn matmul[relu] packed"},
                              {true, false, 1, "onednn matmul[bias] packed"},
                              {true, true, 1, "onednn matmul[bias,relu] packed"}};
  const int64_t k = 100, n = 37;
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.describe);
    Group g = Compile(DenseFunction(k, n, v.bias, v.relu, v.axis));
    ASSERT_NE(g.kernel, nullptr);
    EXPECT_EQ(g.kernel->Describe(), v.describe);
    for (bool constant : {true, false}) {
      SCOPED_TRACE(constant ? "constant weights" : "run-time weights");
      const Tensor w = Random({n, k}, 6, 0.1), b = Random({n}, 7);
      std::vector<Tensor> load = {Tensor(), w};
      if (v.bias) load.push_back(b);
      std::vector<bool> which(load.size(), constant);
      which[0] = false;
      auto instance = g.kernel->Instantiate(Constants(load, which));
      ASSERT_TRUE(instance.ok()) << instance.status();
      for (int64_t m : {1, 3, 17, 64}) {
        std::vector<Tensor> params = load;
        params[0] = Random({m, k}, 50 + m);
        auto got = RunKernel(**instance, params, m, n);
        ASSERT_TRUE(got.ok()) << got.status();
        auto want = Interpret(*g.f, params);
        ASSERT_TRUE(want.ok()) << want.status();
        EXPECT_LE(MaxError(*got, *want), kTolerance) << "M = " << m;
      }
    }
  }
}

// Tests that parameters may come in any order (the kernel maps them, it does not assume
// data, weight, bias).
TEST(DenseKernelTest, ParameterOrderIsFree) {
  Group g = Compile(R"(
def @f(%b: f32[24], %w: f32[24, 40], %x: f32[m, 40]) -> f32[m, 24] attributes {primitive = true} {
  %h = nn.dense(%x, %w) : f32[m, 24]
  %hb = nn.bias_add(%h, %b) {axis = -1} : f32[m, 24]
  %a = nn.relu(%hb) : f32[m, 24]
  return %a
}
)");
  ASSERT_NE(g.kernel, nullptr);
  const std::vector<Tensor> params = {Random({24}, 8), Random({24, 40}, 9), Random({5, 40}, 10)};
  auto instance = g.kernel->Instantiate(Constants(params, {true, true, false}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  auto got = RunKernel(**instance, params, 5, 24);
  ASSERT_TRUE(got.ok()) << got.status();
  auto want = Interpret(*g.f, params);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_LE(MaxError(*got, *want), kTolerance);
}

// Tests that more distinct M than the cache holds keep working (the cache restarts).
TEST(DenseKernelTest, ManyDistinctBatchSizes) {
  Group g = Compile(DenseFunction(16, 8, /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({8, 16}, 11), b = Random({8}, 12);
  std::vector<Tensor> load = {Tensor(), w, b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  for (int64_t m = 1; m <= dense_kernel_internal::kMaxCachedShapes + 6; ++m) {
    const std::vector<Tensor> params = {Random({m, 16}, 100 + m), w, b};
    auto got = RunKernel(**instance, params, m, 8);
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = Interpret(*g.f, params);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_LE(MaxError(*got, *want), kTolerance) << "M = " << m;
  }
}

// Tests that threads sharing one instance (first use of an M racing, the same M at once, so
// the cached execute arguments are busy and the losers build their own) all get correct
// results. The references are computed first so the threads spend their time in the kernel.
TEST(DenseKernelTest, ConcurrentRunsShareOneInstance) {
  Group g = Compile(DenseFunction(256, 128, /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({128, 256}, 13, 1 / 16.0), b = Random({128}, 14);
  std::vector<Tensor> load = {Tensor(), w, b};
  auto instance = g.kernel->Instantiate(Constants(load, {false, true, true}));
  ASSERT_TRUE(instance.ok()) << instance.status();
  std::vector<std::vector<Tensor>> params;  // params[m - 1], m = 1..8
  std::vector<Tensor> want;
  for (int64_t m = 1; m <= 8; ++m) {
    params.push_back({Random({m, 256}, 200 + m), w, b});
    auto r = Interpret(*g.f, params.back());
    ASSERT_TRUE(r.ok()) << r.status();
    want.push_back(*r);
  }
  std::vector<double> errors(4, 0.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 200; ++rep) {
        const int64_t m = rep % 2 == 0 ? 4 : 1 + (t * 3 + rep) % 8;  // every other run M = 4
        auto got = RunKernel(**instance, params[m - 1], m, 128);
        errors[t] = std::max(errors[t], got.ok() ? MaxError(*got, want[m - 1]) : 1e30);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (double e : errors) EXPECT_LE(e, kTolerance);
}

// Tests the degenerate sizes: M = 0 writes nothing, K = 0 gives relu(bias).
TEST(DenseKernelTest, EmptyDims) {
  Group g = Compile(R"(
def @f(%x: f32[m, k], %w: f32[3, k], %b: f32[3]) -> f32[m, 3] attributes {primitive = true} {
  %h = nn.dense(%x, %w) : f32[m, 3]
  %hb = nn.bias_add(%h, %b) {axis = -1} : f32[m, 3]
  %a = nn.relu(%hb) : f32[m, 3]
  return %a
}
)");
  ASSERT_NE(g.kernel, nullptr);
  auto instance = g.kernel->Instantiate({nullptr, nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  const Tensor b = Tensor::FromDoubles(DType::kF32, {3}, {-1, 2, 0.5});
  auto empty_m =
      RunKernel(**instance,
                {Tensor::Zeros(DType::kF32, {0, 4}), Tensor::Zeros(DType::kF32, {3, 4}), b}, 0, 3);
  EXPECT_TRUE(empty_m.ok()) << empty_m.status();
  auto empty_k =
      RunKernel(**instance,
                {Tensor::Zeros(DType::kF32, {2, 0}), Tensor::Zeros(DType::kF32, {3, 0}), b}, 2, 3);
  ASSERT_TRUE(empty_k.ok()) << empty_k.status();
  EXPECT_EQ(empty_k->ToDoubles(), (std::vector<double>{0, 2, 0.5, 0, 2, 0.5}));
}

// ---- errors --------------------------------------------------------------------------------

// Tests that a K mismatch is InvalidArgument naming the function and both arguments, for
// run-time and for constant weights.
TEST(DenseKernelTest, KMismatchIsInvalidArgument) {
  Group g = Compile(DenseFunction(1024, 512, /*bias=*/true, /*relu=*/true));
  ASSERT_NE(g.kernel, nullptr);
  const Tensor w = Random({512, 1024}, 15, 1 / 32.0), b = Random({512}, 16);
  for (bool constant : {false, true}) {
    std::vector<Tensor> load = {Tensor(), w, b};
    auto instance = g.kernel->Instantiate(Constants(load, {false, constant, constant}));
    ASSERT_TRUE(instance.ok()) << instance.status();
    auto got = RunKernel(**instance, {Random({3, 1000}, 17), w, b}, 3, 512);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(), HasSubstr("@f: nn.dense reduction dims differ"));
    EXPECT_THAT(got.status().message(), HasSubstr("data (%x) is [3, 1000]"));
    EXPECT_THAT(got.status().message(), HasSubstr("weight (%w) is [512, 1024]"));
  }
}

// Tests the other argument errors: dtype, count, rank, bias size, result shape, constants.
TEST(DenseKernelTest, BadArgumentsAreInvalidArgument) {
  Group g = Compile(DenseFunction(8, 4, /*bias=*/true, /*relu=*/false));
  ASSERT_NE(g.kernel, nullptr);
  auto instance = g.kernel->Instantiate({nullptr, nullptr, nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  const Tensor x = Random({2, 8}, 18), w = Random({4, 8}, 19), b = Random({4}, 20);
  auto expect_error = [&](absl::StatusOr<Tensor> got, const std::string& what) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    EXPECT_THAT(got.status().message(), HasSubstr("@f: "));
    EXPECT_THAT(got.status().message(), HasSubstr(what));
  };
  expect_error(RunKernel(**instance, {Tensor::Zeros(DType::kF16, {2, 8}), w, b}, 2, 4),
               "data (%x) must be an f32 tensor of rank 2, got f16[2, 8]");
  expect_error(RunKernel(**instance, {x.Reshaped({1, 2, 8}), w, b}, 2, 4),
               "data (%x) must be an f32 tensor of rank 2, got f32[1, 2, 8]");
  expect_error(RunKernel(**instance, {x, w, Random({5}, 21)}, 2, 4),
               "bias (%b) has 5 elements but weight (%w) has 4 rows");
  expect_error(RunKernel(**instance, {x, w, b}, 3, 4), "result is [3, 4] for data [2, 8] and 4 units");
  expect_error(RunKernel(**instance, {x, w}, 2, 4), "expected 4 arguments");

  // Constants that contradict the declared types fail at load.
  const Tensor bad_w = Random({4, 9}, 22);
  std::vector<Tensor> load = {Tensor(), bad_w, b};
  auto bad = g.kernel->Instantiate(Constants(load, {false, true, false}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("@f: constant weight (%w) is f32[4, 9] but the parameter is declared"));
  auto wrong_count = g.kernel->Instantiate({nullptr});
  EXPECT_EQ(wrong_count.status().code(), absl::StatusCode::kInvalidArgument);

  // With constant weights, a run-time weight argument of another shape is an error too.
  std::vector<Tensor> good = {Tensor(), w, b};
  auto packed = g.kernel->Instantiate(Constants(good, {false, true, false}));
  ASSERT_TRUE(packed.ok()) << packed.status();
  const Tensor x9 = Random({2, 9}, 23);
  expect_error(RunKernel(**packed, {x9, Random({4, 9}, 24), b}, 2, 4),
               "weight (%w) is [4, 9] but the constant bound at load is [4, 8]");
}

// ---- matching ------------------------------------------------------------------------------

// Tests that IsDenseGroup rejects every body other than dense [-> bias_add] [-> relu] over
// f32 parameters, and that CompileDenseGroup says so naming the function.
TEST(DenseKernelTest, IsDenseGroupRejectsOtherBodies) {
  const std::string kHeader =
      "def @f(%x: f32[m, 8], %w: f32[4, 8], %b: f32[4]) -> f32[m, 4] "
      "attributes {primitive = true} {\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not primitive",
       "def @f(%x: f32[m, 8], %w: f32[4, 8]) -> f32[m, 4] {\n"
       "  %h = nn.dense(%x, %w) : f32[m, 4]\n  return %h\n}\n"},
      {"conv2d",
       "def @f(%x: f32[1, 3, 8, 8], %w: f32[4, 3, 3, 3]) -> f32[1, 4, 6, 6] "
       "attributes {primitive = true} {\n"
       "  %c = nn.conv2d(%x, %w) : f32[1, 4, 6, 6]\n  return %c\n}\n"},
      {"relu before bias_add", kHeader + "  %h = nn.dense(%x, %w) : f32[m, 4]\n"
                                         "  %a = nn.relu(%h) : f32[m, 4]\n"
                                         "  %hb = nn.bias_add(%a, %b) {axis = -1} : f32[m, 4]\n"
                                         "  return %hb\n}\n"},
      {"dense then sigmoid", kHeader + "  %h = nn.dense(%x, %w) : f32[m, 4]\n"
                                       "  %s = sigmoid(%h) : f32[m, 4]\n  return %s\n}\n"},
      {"two relus", kHeader + "  %h = nn.dense(%x, %w) : f32[m, 4]\n"
                              "  %a = nn.relu(%h) : f32[m, 4]\n"
                              "  %a2 = nn.relu(%a) : f32[m, 4]\n  return %a2\n}\n"},
      {"returns the dense, not the relu", kHeader +
                                              "  %h = nn.dense(%x, %w) : f32[m, 4]\n"
                                              "  %a = nn.relu(%h) : f32[m, 4]\n  return %h\n}\n"},
      {"bias_add on axis 0",
       "def @f(%x: f32[4, 8], %w: f32[4, 8], %b: f32[4]) -> f32[4, 4] "
       "attributes {primitive = true} {\n"
       "  %h = nn.dense(%x, %w) : f32[4, 4]\n"
       "  %hb = nn.bias_add(%h, %b) {axis = 0} : f32[4, 4]\n  return %hb\n}\n"},
      {"computed bias", kHeader + "  %h = nn.dense(%x, %w) : f32[m, 4]\n"
                                  "  %e = exp(%b) : f32[4]\n"
                                  "  %hb = nn.bias_add(%h, %e) {axis = -1} : f32[m, 4]\n"
                                  "  return %hb\n}\n"},
      {"f16",
       "def @f(%x: f16[m, 8], %w: f16[4, 8]) -> f16[m, 4] attributes {primitive = true} {\n"
       "  %h = nn.dense(%x, %w) : f16[m, 4]\n  return %h\n}\n"},
      {"data is the weight",
       "def @f(%x: f32[8, 8]) -> f32[8, 8] attributes {primitive = true} {\n"
       "  %h = nn.dense(%x, %x) : f32[8, 8]\n  return %h\n}\n"},
      {"relu only",
       "def @f(%x: f32[m, 8]) -> f32[m, 8] attributes {primitive = true} {\n"
       "  %a = nn.relu(%x) : f32[m, 8]\n  return %a\n}\n"},
  };
  for (const auto& [name, text] : cases) {
    SCOPED_TRACE(name);
    auto m = ParseOne(text);
    ASSERT_NE(m, nullptr);
    const Function* f = m->FindFunction("f");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(IsDenseGroup(*f));
    auto kernel = CompileDenseGroup(*f);
    EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(kernel.status().message(), HasSubstr("@f: not a dense group"));
  }
}

// Tests the thread-count setting: 1 unless HETPASS_NUM_THREADS is a positive integer.
TEST(DenseKernelTest, ThreadCount) {
  using dense_kernel_internal::ParseThreadCount;
  EXPECT_EQ(ParseThreadCount(nullptr), 1);
  EXPECT_EQ(ParseThreadCount(""), 1);
  EXPECT_EQ(ParseThreadCount("0"), 1);
  EXPECT_EQ(ParseThreadCount("-2"), 1);
  EXPECT_EQ(ParseThreadCount("2x"), 1);
  EXPECT_EQ(ParseThreadCount("four"), 1);
  EXPECT_EQ(ParseThreadCount("4"), 4);
  EXPECT_EQ(ParseThreadCount("100000"), 1024);
  EXPECT_EQ(KernelLibraryThreads(), ParseThreadCount(std::getenv("HETPASS_NUM_THREADS")));
}


// Tests `add` of a 1-D [N] parameter as the bias (ONNX MatMul + Add), either operand order.
TEST(DenseKernelTest, AddOfVectorIsTheBias) {
  for (const char* add : {"add(%h, %b)", "add(%b, %h)"}) {
    auto m = ParseOne(absl::StrCat(
        "def @f(%x: f32[m, 8], %w: f32[4, 8], %b: f32[4]) -> f32[m, 4] attributes {primitive = true} {\n"
        "  %h = nn.dense(%x, %w) : f32[m, 4]\n  %s = ", add, " : f32[m, 4]\n  return %s\n}\n"));
    ASSERT_NE(m, nullptr);
    const Function& f = *m->FindFunction("f");
    ASSERT_TRUE(IsDenseGroup(f)) << add;
    auto fast = CompileDenseGroup(f);
    auto reference = CompileReferenceKernel(f);
    ASSERT_TRUE(fast.ok() && reference.ok());
    auto a = (*fast)->Instantiate({nullptr, nullptr, nullptr});
    auto r = (*reference)->Instantiate({nullptr, nullptr, nullptr});
    ASSERT_TRUE(a.ok() && r.ok());
    const Tensor x = Random({3, 8}, 41), w = Random({4, 8}, 42), b = Random({4}, 43);
    Tensor got = Tensor::Zeros(DType::kF32, {3, 4}), want = got;
    ASSERT_TRUE((*a)->Run({Arg(x), Arg(w), Arg(b), TensorArg{got.mutable_data(), DType::kF32, got.shape()}}).ok());
    ASSERT_TRUE((*r)->Run({Arg(x), Arg(w), Arg(b), TensorArg{want.mutable_data(), DType::kF32, want.shape()}}).ok());
    EXPECT_LE(MaxError(got, want), kTolerance) << add;
  }
  // A broadcast [1] vector is not a bias.
  auto m = ParseOne(
      "def @f(%x: f32[m, 8], %w: f32[4, 8], %b: f32[1]) -> f32[m, 4] attributes {primitive = true} {\n"
      "  %h = nn.dense(%x, %w) : f32[m, 4]\n  %s = add(%h, %b) : f32[m, 4]\n  return %s\n}\n");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(IsDenseGroup(*m->FindFunction("f")));
}

// Tests data of rank 3 ([batch, seq, K], a transformer's projections): one GEMM over the
// flattened leading dims, with bias and ReLU, against the reference kernels, for several seq.
TEST(DenseKernelTest, LeadingDimsAreFlattened) {
  auto m = ParseOne(
      "def @f(%x: f32[2, s, 8], %w: f32[4, 8], %b: f32[4]) -> f32[2, s, 4] attributes {primitive = true} {\n"
      "  %h = nn.dense(%x, %w) : f32[2, s, 4]\n"
      "  %hb = nn.bias_add(%h, %b) {axis = 2} : f32[2, s, 4]\n"
      "  %a = nn.relu(%hb) : f32[2, s, 4]\n  return %a\n}\n");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  ASSERT_TRUE(IsDenseGroup(f));
  auto fast = CompileDenseGroup(f);
  auto reference = CompileReferenceKernel(f);
  ASSERT_TRUE(fast.ok() && reference.ok());
  const Tensor w = Random({4, 8}, 31), b = Random({4}, 32);
  auto a = (*fast)->Instantiate({nullptr, &w, &b});
  auto r = (*reference)->Instantiate({nullptr, nullptr, nullptr});
  ASSERT_TRUE(a.ok() && r.ok());
  for (int64_t seq : {1, 5, 7}) {
    const Tensor x = Random({2, seq, 8}, 33 + seq);
    Tensor got = Tensor::Zeros(DType::kF32, {2, seq, 4}), want = got;
    ASSERT_TRUE((*a)->Run({Arg(x), Arg(w), Arg(b), TensorArg{got.mutable_data(), DType::kF32, got.shape()}}).ok());
    ASSERT_TRUE((*r)->Run({Arg(x), Arg(w), Arg(b), TensorArg{want.mutable_data(), DType::kF32, want.shape()}}).ok());
    EXPECT_LE(MaxError(got, want), kTolerance) << "seq " << seq;
  }
}

}  // namespace
}  // namespace hetpass
