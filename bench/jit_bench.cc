// CPU JIT throughput for fused elementwise groups: run time of typical epilogues (bias + relu,
// in place and out of place, swish with exp, tanh) in bytes moved per second, and compile time
// of one kernel (module build + O3 + machine code). A plain memcpy of the same bytes is the
// bandwidth ceiling to compare with.
//   ./bench/jit_bench --benchmark_counters_tabular=true
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "benchmark/benchmark.h"
#include "passes/ir/parser.h"
// The JIT is internal to the compile engine (src/); the bench target only sees include/.
#include "compile_engine/jit_elementwise.h"

namespace hetpass {
namespace {

constexpr int64_t kCols = 512;

std::string Group(const std::string& body_ops) {
  return absl::StrCat(
      "def @g(%x: f32[n, 512], %b: f32[512]) -> f32[n, 512] attributes {primitive = true} {\n",
      body_ops, "}\n");
}

const std::string kBiasRelu = Group(
    "  %c = nn.bias_add(%x, %b) {axis = -1} : f32[n, 512]\n"
    "  %d = nn.relu(%c) : f32[n, 512]\n  return %d\n");
const std::string kSwish = Group(
    "  %c = add(%x, %b) : f32[n, 512]\n  %s = sigmoid(%c) : f32[n, 512]\n"
    "  %d = multiply(%c, %s) : f32[n, 512]\n  return %d\n");
const std::string kTanh =
    Group("  %c = add(%x, %b) : f32[n, 512]\n  %d = tanh(%c) : f32[n, 512]\n  return %d\n");

std::unique_ptr<CompiledKernel> Compile(const std::string& text, std::unique_ptr<Module>& m) {
  m = *ParseModule(text);
  return *CompileJitElementwise(*m->functions().front());
}

void RunGroup(benchmark::State& state, const std::string& text, bool in_place) {
  const int64_t rows = state.range(0);
  std::unique_ptr<Module> m;
  std::unique_ptr<CompiledKernel> kernel = Compile(text, m);
  std::unique_ptr<KernelInstance> instance = *kernel->Instantiate({nullptr, nullptr});
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-4, 4);
  std::vector<float> x(rows * kCols), b(kCols), out(rows * kCols);
  for (float& v : x) v = dist(rng);
  for (float& v : b) v = dist(rng);
  const std::vector<int64_t> shape = {rows, kCols}, bias_shape = {kCols};
  float* dst = in_place ? x.data() : out.data();
  const std::vector<TensorArg> args = {{x.data(), DType::kF32, shape},
                                       {b.data(), DType::kF32, bias_shape},
                                       {dst, DType::kF32, shape}};
  for (auto _ : state) {
    absl::Status s = instance->Run(args);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  // Bytes read and written per call (the bias is cache resident).
  state.SetBytesProcessed(state.iterations() * rows * kCols * 4 * 2);
  state.SetItemsProcessed(state.iterations() * rows * kCols);
}

void BM_BiasRelu(benchmark::State& state) { RunGroup(state, kBiasRelu, false); }
void BM_BiasReluInPlace(benchmark::State& state) { RunGroup(state, kBiasRelu, true); }
void BM_Swish(benchmark::State& state) { RunGroup(state, kSwish, false); }
void BM_Tanh(benchmark::State& state) { RunGroup(state, kTanh, false); }

void BM_Memcpy(benchmark::State& state) {
  const int64_t n = state.range(0) * kCols;
  std::vector<float> x(n, 1.0f), out(n);
  for (auto _ : state) {
    std::memcpy(out.data(), x.data(), n * 4);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 4 * 2);
  state.SetItemsProcessed(state.iterations() * n);
}

// Symbolic shapes need the fast and the generic entry; static ones only the fast one.
void BM_CompileBiasRelu(benchmark::State& state) {
  std::string text = kBiasRelu;
  if (state.range(0) == 1) text = absl::StrReplaceAll(text, {{"f32[n, 512]", "f32[64, 512]"}});
  std::unique_ptr<Module> m = *ParseModule(text);
  for (auto _ : state) {
    auto kernel = CompileJitElementwise(*m->functions().front());
    if (!kernel.ok()) state.SkipWithError(std::string(kernel.status().message()).c_str());
  }
}

// 1 row: call overhead; 64 rows: 128 KB, cache resident; 8192 rows: 16 MB, memory bound.
BENCHMARK(BM_BiasRelu)->Arg(1)->Arg(64)->Arg(8192);
BENCHMARK(BM_BiasReluInPlace)->Arg(1)->Arg(64)->Arg(8192);
BENCHMARK(BM_Swish)->Arg(64)->Arg(8192);
BENCHMARK(BM_Tanh)->Arg(64)->Arg(8192);
BENCHMARK(BM_Memcpy)->Arg(64)->Arg(8192);
BENCHMARK(BM_CompileBiasRelu)->ArgName("static")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hetpass
