// Tests of the pooling kernel (nn.max_pool2d / nn.avg_pool2d on oneDNN) against the compile
// engine's reference kernel of the same primitive function (the registry's reference pools):
// a sweep of windows (kernel 1..3, stride 1..3, 1/2/4-value and asymmetric padding, dilation,
// ceil_mode, count_include_pad, odd sizes, batch 2), every case lowered by the cpu engine so
// that a refused case must show up as the reference kernel; max pools exact to the bit
// (-inf / -FLT_MAX / NaN inputs and windows entirely in the padding included), averages within
// 1e-6 relative; symbolic H, W with shapes that fall back to the reference inside the kernel;
// the blocked layouts NCHW<4|8|16>c (block-conv-layout's); the refusals (f64, the ceil_mode
// overhang of count_include_pad, with-indices); error paths.
#include "compile_engine/pool_kernel.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/support/status_macros.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Arg;
using ::hetpass::testing::Interpret;
using ::hetpass::testing::RunOnNaNFilled;
using ::testing::HasSubstr;

// ---- helpers -------------------------------------------------------------------------------

enum class Kind { kMax, kAvgExclude, kAvgInclude };

// One pooling problem; attributes in the text form the registry takes.
struct PoolCase {
  Kind kind = Kind::kMax;
  std::string pool_size = "[3, 3]";
  std::string strides = "[1, 1]";
  std::string padding = "[0, 0]";
  std::string dilation = "[1, 1]";
  bool ceil_mode = false;
  std::string data_type = "f32[2, 3, 7, 9]";
  std::string layout = "";  // empty: the default (NCHW)
};

std::string Describe(const PoolCase& k) {
  const char* kind = k.kind == Kind::kMax          ? "max"
                     : k.kind == Kind::kAvgExclude ? "avg"
                                                   : "avg(include_pad)";
  return absl::StrCat(kind, " pool_size=", k.pool_size, " strides=", k.strides,
                      " padding=", k.padding, " dilation=", k.dilation,
                      k.ceil_mode ? " ceil_mode" : "", " on ", k.data_type,
                      k.layout.empty() ? "" : " layout=", k.layout);
}

std::string PoolFunction(const PoolCase& k) {
  const char* op = k.kind == Kind::kMax ? "nn.max_pool2d" : "nn.avg_pool2d";
  std::string attrs = absl::StrCat("pool_size = ", k.pool_size, ", strides = ", k.strides,
                                   ", padding = ", k.padding, ", dilation = ", k.dilation,
                                   ", ceil_mode = ", k.ceil_mode ? "true" : "false");
  if (!k.layout.empty()) absl::StrAppend(&attrs, ", layout = \"", k.layout, "\"");
  if (k.kind != Kind::kMax) {
    absl::StrAppend(&attrs,
                    ", count_include_pad = ", k.kind == Kind::kAvgInclude ? "true" : "false");
  }
  return absl::StrCat("def @f(%x: ", k.data_type, ") attributes {primitive = true} {\n  %y = ", op,
                      "(%x) {", attrs, "}\n  return %y\n}\n");
}

// Data for `kind`: anything for max; in [1, 2) for averages, so that a relative tolerance is
// meaningful (no cancellation).
Tensor Data(std::vector<int64_t> shape, uint64_t seed, Kind kind) {
  Tensor t = ::hetpass::testing::RandomF32(std::move(shape), seed);
  if (kind != Kind::kMax) {
    float* p = t.mutable_data_as<float>();
    for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = 1.5f + 0.5f * p[i];
  }
  return t;
}

// Max pools: bit-exact (NaN equal to NaN). Averages: |got - want| <= 1e-6 |want|.
void ExpectMatches(const Tensor& got, const Tensor& want, Kind kind) {
  ASSERT_EQ(got.shape(), want.shape());
  const float* g = got.data_as<float>();
  const float* w = want.data_as<float>();
  int reported = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const bool ok = kind == Kind::kMax
                        ? (std::memcmp(&g[i], &w[i], sizeof(float)) == 0 ||
                           (std::isnan(g[i]) && std::isnan(w[i])))
                        : std::abs(static_cast<double>(g[i]) - w[i]) <= 1e-6 * std::abs(w[i]);
    if (!ok && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << g[i] << ", want " << w[i];
  }
}

struct Lowered {
  std::unique_ptr<Module> module;
  const Function* f = nullptr;
  std::shared_ptr<const CompiledKernel> kernel;  // what the cpu engine picked
};

Lowered Lower(CompileEngine& engine, const std::string& text,
              DeviceKind device = DeviceKind::kCpu) {
  Lowered l;
  l.module = testing::Parse(text);
  if (l.module == nullptr) {
    ADD_FAILURE() << text;
    return l;
  }
  l.f = l.module->FindFunction("f");
  auto k = engine.Lower(*l.f, device);
  EXPECT_TRUE(k.ok()) << k.status();
  if (k.ok()) l.kernel = *k;
  return l;
}

// Lowers `k` on the cpu; when the pool kernel takes it, checks it against the reference on
// `shapes` (the data's concrete shapes). Returns whether the pool kernel took it.
bool CheckCase(CompileEngine& engine, const PoolCase& k,
               const std::vector<std::vector<int64_t>>& shapes, uint64_t seed) {
  SCOPED_TRACE(Describe(k));
  Lowered l = Lower(engine, PoolFunction(k));
  if (l.kernel == nullptr) return false;
  const bool native = l.kernel->Describe().rfind("onednn ", 0) == 0;
  EXPECT_EQ(native, IsPoolGroup(*l.f));
  if (!native) {
    EXPECT_THAT(l.kernel->Describe(), HasSubstr("reference[nn."));
    return false;
  }
  for (const std::vector<int64_t>& shape : shapes) {
    SCOPED_TRACE(absl::StrCat("data [", absl::StrJoin(shape, ", "), "]"));
    const Tensor x = Data(shape, ++seed, k.kind);
    auto want = Interpret(*l.f, {x});
    if (!want.ok()) {
      ADD_FAILURE() << want.status();
      continue;
    }
    auto got = RunOnNaNFilled(*l.kernel, x, want->shape());
    if (!got.ok()) {
      ADD_FAILURE() << got.status();
      continue;
    }
    ExpectMatches(*got, *want, k.kind);
  }
  return true;
}

// ---- correctness ---------------------------------------------------------------------------

// Tests a sweep of windows for each kind of pool: every kernel 1..3 (square and not), stride
// 1..3, padding of 1, 2 and 4 values (asymmetric, and padding that leaves windows entirely in
// the padding), dilation 1 and 2, ceil_mode off and on, on odd sizes with batch 2; each case
// either runs on oneDNN and matches the reference, or is refused and runs on the reference.
TEST(PoolKernelTest, AttributeSweepMatchesReference) {
  CompileEngine engine;
  const std::vector<std::string> pool_sizes = {"[1, 1]", "[2, 2]", "[3, 3]", "[3, 2]", "[1, 3]"};
  const std::vector<std::string> strides = {"[1, 1]", "[2, 2]", "[3, 3]", "[2, 1]"};
  const std::vector<std::string> paddings = {"[0, 0]", "[1]", "[1, 0]", "[0, 1, 2, 1]",
                                             "[2, 0, 0, 2]"};
  int taken[3] = {0, 0, 0}, cases = 0;
  uint64_t seed = 1;
  for (Kind kind : {Kind::kMax, Kind::kAvgExclude, Kind::kAvgInclude}) {
    for (const std::string& pool : pool_sizes) {
      for (const std::string& stride : strides) {
        for (const std::string& padding : paddings) {
          for (const char* dilation : {"[1, 1]", "[2, 2]"}) {
            for (bool ceil_mode : {false, true}) {
              PoolCase k{kind, pool, stride, padding, dilation, ceil_mode, "f32[2, 3, 7, 9]"};
              ++cases;
              if (CheckCase(engine, k, {{2, 3, 7, 9}}, seed += 7)) ++taken[static_cast<int>(kind)];
            }
          }
        }
      }
    }
  }
  // Max pools are always taken (the -FLT_MAX fix-up makes every shape exact); averages only
  // where the divisor is provably the reference's, which is most of the sweep.
  const int per_kind = cases / 3;
  EXPECT_EQ(taken[0], per_kind);
  EXPECT_GT(taken[1], per_kind / 2);
  EXPECT_GT(taken[2], per_kind / 2);
  EXPECT_LT(taken[2], per_kind);  // ceil_mode overhangs are refused
}

// Tests symbolic N, H, W: one instance run at several shapes, including those a static shape
// would have refused (an exclude-pad window entirely in the padding, a ceil_mode window past
// the input): those calls run the registry's reference kernel inside the pool kernel.
TEST(PoolKernelTest, SymbolicShapesMatchReferenceIncludingFallbackShapes) {
  CompileEngine engine;
  const std::vector<PoolCase> cases = {
      {Kind::kMax, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false, "f32[n, 4, h, w]"},
      {Kind::kMax, "[1, 1]", "[2, 2]", "[0, 0, 2, 2]", "[1, 1]", true, "f32[n, 4, h, w]"},
      {Kind::kAvgExclude, "[1, 1]", "[2, 2]", "[0, 0, 1, 1]", "[1, 1]", true, "f32[n, 4, h, w]"},
      {Kind::kAvgExclude, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", true, "f32[n, 4, h, w]"},
      {Kind::kAvgInclude, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false, "f32[n, 4, h, w]"},
      {Kind::kAvgExclude, "[2, 2]", "[1, 1]", "[0, 0]", "[2, 2]", false, "f32[n, 4, h, w]"},
  };
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 4, 8, 8}, {3, 4, 5, 7}, {2, 4, 4, 4}, {1, 4, 9, 6}, {1, 4, 8, 8}};
  uint64_t seed = 100;
  for (const PoolCase& k : cases) {
    EXPECT_TRUE(CheckCase(engine, k, shapes, seed += 10)) << Describe(k);
  }
}

// Tests that a 3x3 stride-2 max pool (a ResNet / ShuffleNet stem) runs on oneDNN and matches
// the reference at the zoo's ShuffleNet size and at batch 4.
TEST(PoolKernelTest, StemMaxPoolRunsOnOnednn) {
  CompileEngine engine;
  const PoolCase k{Kind::kMax, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false, "f32[n, 16, h, w]"};
  Lowered l = Lower(engine, PoolFunction(k));
  ASSERT_NE(l.kernel, nullptr);
  EXPECT_EQ(l.kernel->Describe(), "onednn max_pool2d");
  EXPECT_TRUE(CheckCase(engine, k, {{1, 16, 48, 64}, {4, 16, 56, 56}}, 7));
  const PoolCase avg{Kind::kAvgInclude, "[3, 3]", "[2, 2]",          "[1, 1]",
                     "[1, 1]",          false,    "f32[n, 16, h, w]"};
  Lowered a = Lower(engine, PoolFunction(avg));
  ASSERT_NE(a.kernel, nullptr);
  EXPECT_EQ(a.kernel->Describe(), "onednn avg_pool2d[include_pad]");
  EXPECT_TRUE(CheckCase(engine, avg, {{1, 16, 48, 64}, {4, 16, 56, 56}}, 8));
}

// Tests max pooling on values oneDNN's starting point (-FLT_MAX) would hide: windows of -inf
// only, windows whose maximum is -FLT_MAX, NaN among values (skipped by both) and NaN only,
// and windows entirely in the padding: the result is the reference's, bit for bit.
TEST(PoolKernelTest, MaxPoolKeepsInfinityLowestAndNaNAsReference) {
  CompileEngine engine;
  const PoolCase k{Kind::kMax, "[2, 2]", "[2, 2]",         "[0, 0, 2, 2]",
                   "[1, 1]",   true,     "f32[1, 2, 6, 6]"};
  Lowered l = Lower(engine, PoolFunction(k));
  ASSERT_NE(l.kernel, nullptr);
  ASSERT_EQ(l.kernel->Describe(), "onednn max_pool2d");
  Tensor x = ::hetpass::testing::RandomF32({1, 2, 6, 6}, 3);
  float* p = x.mutable_data_as<float>();
  const float inf = std::numeric_limits<float>::infinity();
  const float lowest = std::numeric_limits<float>::lowest();
  auto at = [&](int c, int h, int w) -> float& { return p[(c * 6 + h) * 6 + w]; };
  at(0, 0, 0) = at(0, 0, 1) = at(0, 1, 0) = at(0, 1, 1) = -inf;  // window (0, 0): -inf only
  at(0, 0, 2) = at(0, 0, 3) = at(0, 1, 2) = -inf;                // window (0, 1): -FLT_MAX max
  at(0, 1, 3) = lowest;
  at(0, 2, 0) = std::nanf("");  // window (1, 0): NaN among values
  at(1, 0, 0) = at(1, 0, 1) = at(1, 1, 0) = at(1, 1, 1) = std::nanf("");  // NaN only
  at(1, 2, 2) = at(1, 2, 3) = at(1, 3, 2) = at(1, 3, 3) = lowest;         // -FLT_MAX only
  auto want = Interpret(*l.f, {x});
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = RunOnNaNFilled(*l.kernel, x, want->shape());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectMatches(*got, *want, Kind::kMax);
  // The reference's values, spelled out: the last row and column of windows are all padding.
  const float* g = got->data_as<float>();
  EXPECT_EQ(g[0], -inf);
  EXPECT_EQ(g[1], lowest);
  EXPECT_EQ(g[3], -inf);   // (0, 3): past the input
  EXPECT_EQ(g[16], -inf);  // channel 1, (0, 0): NaN only
  EXPECT_EQ(g[16 + 5], lowest);
}

// Tests pooling in the blocked layouts block-conv-layout writes (NCHW<b>c, data [N, C/b, H, W,
// b]): oneDNN pools nChw<b>c in place and matches the reference for each kind over windows that
// pad, dilate and overhang, for b = 4, 8, 16, at static and symbolic sizes; the -FLT_MAX fix-up
// finds the right lane of a blocked pixel.
TEST(PoolKernelTest, BlockedLayoutsMatchReference) {
  CompileEngine engine;
  int cases = 0;
  uint64_t seed = 300;
  for (int64_t b : {4, 8, 16}) {
    const std::string layout = absl::StrCat("NCHW", b, "c");
    for (Kind kind : {Kind::kMax, Kind::kAvgExclude, Kind::kAvgInclude}) {
      for (const char* padding : {"[1, 1]", "[0, 1, 2, 1]"}) {
        for (bool ceil_mode : {false, true}) {
          for (const char* dilation : {"[1, 1]", "[2, 1]"}) {
            PoolCase k{kind,     "[3, 3]",  "[2, 2]", padding, dilation, ceil_mode,
                       absl::StrCat("f32[2, 2, 7, 9, ", b, "]"), layout};
            if (kind == Kind::kAvgInclude && ceil_mode) continue;  // refused as in NCHW
            EXPECT_TRUE(CheckCase(engine, k, {{2, 2, 7, 9, b}}, seed += 3)) << Describe(k);
            ++cases;
          }
        }
      }
    }
    const PoolCase sym{Kind::kMax, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false,
                       absl::StrCat("f32[n, 3, h, w, ", b, "]"), layout};
    EXPECT_TRUE(CheckCase(engine, sym, {{1, 3, 8, 8, b}, {2, 3, 5, 11, b}}, seed += 3));
  }
  EXPECT_EQ(cases, 3 * 20);  // per block: 8 max, 8 exclude-pad, 4 include-pad averages
  // The stem of a blocked ResNet: described with its layout.
  const PoolCase stem{Kind::kMax, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false,
                      "f32[n, 4, h, w, 16]", "NCHW16c"};
  Lowered l = Lower(engine, PoolFunction(stem));
  ASSERT_NE(l.kernel, nullptr);
  EXPECT_EQ(l.kernel->Describe(), "onednn max_pool2d[NCHW16c]");
  EXPECT_TRUE(CheckCase(engine, stem, {{1, 4, 112, 112, 16}}, 9));

  // -FLT_MAX and windows in the padding, in lane 5 of channel block 1 only.
  const PoolCase pad{Kind::kMax, "[2, 2]", "[2, 2]", "[0, 0, 2, 2]", "[1, 1]", true,
                     "f32[1, 2, 4, 4, 8]", "NCHW8c"};
  Lowered lp = Lower(engine, PoolFunction(pad));
  ASSERT_NE(lp.kernel, nullptr);
  ASSERT_EQ(lp.kernel->Describe(), "onednn max_pool2d[NCHW8c]");
  Tensor x = ::hetpass::testing::RandomF32({1, 2, 4, 4, 8}, 5);
  float* p = x.mutable_data_as<float>();
  const float inf = std::numeric_limits<float>::infinity();
  auto at = [&](int h, int w) -> float& { return p[((1 * 4 + h) * 4 + w) * 8 + 5]; };
  at(0, 0) = at(0, 1) = at(1, 0) = at(1, 1) = -inf;
  at(0, 2) = at(0, 3) = at(1, 2) = -inf;
  at(1, 3) = std::numeric_limits<float>::lowest();
  auto want = Interpret(*lp.f, {x});
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = RunOnNaNFilled(*lp.kernel, x, want->shape());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectMatches(*got, *want, Kind::kMax);
  const float* g = got->data_as<float>();  // [1, 2, 3, 3, 8]: block 1 starts at 72
  EXPECT_EQ(g[72 + 5], -inf);
  EXPECT_EQ(g[72 + 8 + 5], std::numeric_limits<float>::lowest());
  EXPECT_EQ(g[72 + 16 + 5], -inf);  // (0, 2): past the input
  EXPECT_EQ(g[72 + 4], g[72 + 4]);  // the neighbouring lane is an ordinary value
  EXPECT_GT(g[72 + 4], -inf);
}

// ---- refusals ------------------------------------------------------------------------------

// Tests that what the kernel cannot compute exactly is refused and runs on the reference
// kernel, as the kernel's description (and so `hetpass run --profile`) says: f64 data, an
// average whose ceil_mode window overhangs the padding with count_include_pad (static sizes),
// the same over symbolic sizes (the overhang cannot be ruled out), a static shape with an
// exclude-pad window entirely in the padding, and max_pool2d_with_indices.
TEST(PoolKernelTest, RefusedCasesFallBackToReference) {
  CompileEngine engine;
  const std::vector<std::string> refused = {
      PoolFunction({Kind::kMax, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false, "f64[1, 3, 8, 8]"}),
      PoolFunction(
          {Kind::kAvgInclude, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false, "f64[1, 3, 8, 8]"}),
      // 6 columns, 2x2 stride 2 ceil_mode: 3 windows, [4, 6) fits; 7 columns: 4 windows, the
      // last [6, 8) reaches one column past the input, which the reference does not count.
      PoolFunction(
          {Kind::kAvgInclude, "[2, 2]", "[2, 2]", "[0, 0]", "[1, 1]", true, "f32[1, 3, 7, 7]"}),
      PoolFunction(
          {Kind::kAvgInclude, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", true, "f32[1, 3, h, w]"}),
      PoolFunction({Kind::kAvgExclude, "[1, 1]", "[2, 2]", "[0, 0, 1, 1]", "[1, 1]", true,
                    "f32[1, 3, 4, 4]"}),
      "def @f(%x: f32[1, 3, 8, 8]) attributes {primitive = true} {\n"
      "  %y, %i = nn.max_pool2d_with_indices(%x) {pool_size = [2, 2], strides = [2, 2]}\n"
      "  return %y, %i\n}\n",
  };
  for (const std::string& text : refused) {
    SCOPED_TRACE(text);
    for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kSim}) {
      Lowered l = Lower(engine, text, device);
      ASSERT_NE(l.kernel, nullptr);
      EXPECT_FALSE(IsPoolGroup(*l.f));
      EXPECT_THAT(l.kernel->Describe(), HasSubstr("reference[nn."));
    }
  }
  // The same average without the overhang (6 columns) is provably the reference's: taken.
  Lowered ok = Lower(engine, PoolFunction({Kind::kAvgInclude, "[2, 2]", "[2, 2]", "[0, 0]",
                                           "[1, 1]", true, "f32[1, 3, 6, 6]"}));
  ASSERT_NE(ok.kernel, nullptr);
  EXPECT_EQ(ok.kernel->Describe(), "onednn avg_pool2d[include_pad]");
}

// Tests that a pool with an elementwise consumer in its group is not taken (single-op groups
// only), and that CompilePoolGroup explains why it refuses.
TEST(PoolKernelTest, OnlySinglePoolGroups) {
  auto m = testing::Parse(
      "def @f(%x: f32[1, 3, 8, 8]) attributes {primitive = true} {\n"
      "  %y = nn.max_pool2d(%x) {pool_size = [2, 2], strides = [2, 2]}\n"
      "  %z = nn.relu(%y)\n  return %z\n}\n");
  ASSERT_NE(m, nullptr);
  const Function& f = *m->FindFunction("f");
  EXPECT_FALSE(IsPoolGroup(f));
  auto k = CompilePoolGroup(f);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(k.status().message(), HasSubstr("not a pool group"));
}

// ---- errors --------------------------------------------------------------------------------

// Tests that arguments that do not match the function are InvalidArgument naming it, never a
// crash: wrong count, dtype, rank, and a result of the wrong shape.
TEST(PoolKernelTest, BadArgumentsAreErrors) {
  auto m = testing::Parse(
      PoolFunction({Kind::kMax, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false, "f32[n, 3, h, w]"}));
  ASSERT_NE(m, nullptr);
  auto kernel = CompilePoolGroup(*m->FindFunction("f"));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  auto instance = (*kernel)->Instantiate(std::vector<const Tensor*>{nullptr});
  ASSERT_TRUE(instance.ok()) << instance.status();
  const Tensor x = ::hetpass::testing::RandomF32({1, 3, 8, 8}, 1);
  Tensor y = Tensor::Zeros(DType::kF32, {1, 3, 4, 4});
  Tensor bad_y = Tensor::Zeros(DType::kF32, {1, 3, 3, 4});
  Tensor x64 = Tensor::Zeros(DType::kF64, {1, 3, 8, 8});
  Tensor x3 = ::hetpass::testing::RandomF32({3, 8, 8}, 1);
  auto run = [&](std::vector<TensorArg> args) { return (*instance)->Run(args); };
  TensorArg out{y.mutable_data(), DType::kF32, absl::MakeConstSpan(y.shape())};
  EXPECT_TRUE(run({Arg(x), out}).ok());
  for (const absl::Status& s : {run({Arg(x)}), run({Arg(x64), out}), run({Arg(x3), out}),
                                run({Arg(x), TensorArg{bad_y.mutable_data(), DType::kF32,
                                                       absl::MakeConstSpan(bad_y.shape())}})}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr("@f"));
  }
  // Blocked: data whose last dim is not the block is refused, naming the layout.
  auto mb = testing::Parse(PoolFunction({Kind::kMax, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", false,
                                         "f32[n, 1, h, w, 8]", "NCHW8c"}));
  ASSERT_NE(mb, nullptr);
  auto blocked = CompilePoolGroup(*mb->FindFunction("f"));
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  auto bi = (*blocked)->Instantiate(std::vector<const Tensor*>{nullptr});
  ASSERT_TRUE(bi.ok()) << bi.status();
  const Tensor x4 = ::hetpass::testing::RandomF32({1, 2, 8, 8, 4}, 1);
  Tensor y4 = Tensor::Zeros(DType::kF32, {1, 2, 4, 4, 4});
  const absl::Status s = (*bi)->Run(
      std::vector<TensorArg>{Arg(x4), TensorArg{y4.mutable_data(), DType::kF32,
                                                absl::MakeConstSpan(y4.shape())}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("not in NCHW8c"));
}

}  // namespace
}  // namespace hetpass
