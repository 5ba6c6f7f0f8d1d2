// CPU JIT throughput for fused elementwise groups: run time of typical epilogues (bias + relu,
// in place and out of place, swish with exp, tanh) in bytes moved per second, and compile time
// of one kernel (module build + O3 + machine code). A plain memcpy of the same bytes is the
// bandwidth ceiling to compare with. Injective groups (the transformer's attention input:
// dyn.strided_slice -> dyn.reshape -> transpose -> divide) against the reference kernels.
//   ./bench/jit_bench --benchmark_counters_tabular=true
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "benchmark/benchmark.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/ir/parser.h"
// The JIT is internal to the compile engine (src/); the bench target only sees include/.
#include "compile_engine/jit/kernels.h"

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

const std::string kAttentionInput =
    "def @g(%qkv: f32[?, ?, 192], %b: i64[3], %e: i64[3], %s: i64[3], %t: i64[3], %c: f32[]) "
    "-> f32[?, ?, 16] attributes {primitive = true} {\n"
    "  %q = dyn.strided_slice(%qkv, %b, %e, %s) : f32[?, ?, ?]\n"
    "  %r = dyn.reshape(%q, %t) : f32[?, ?, 16]\n"
    "  %p = transpose(%r) {axes = [1, 0, 2]} : f32[?, ?, 16]\n"
    "  %d = divide(%p, %c) : f32[?, ?, 16]\n"
    "  return %d\n}\n";

// q = transpose(reshape(qkv[:, :, 64:128])) / 4 for qkv: f32[seq, 3, 192] (4 heads of 16).
void RunAttentionInput(benchmark::State& state, bool jit) {
  const int64_t seq = state.range(0), batch = 3;
  std::unique_ptr<Module> m = *ParseModule(kAttentionInput);
  const Function& f = *m->functions().front();
  std::unique_ptr<CompiledKernel> kernel =
      jit ? *CompileJitInjective(f) : *CompileReferenceKernel(f);
  std::unique_ptr<KernelInstance> instance =
      *kernel->Instantiate(std::vector<const Tensor*>(6, nullptr));
  std::vector<float> qkv(seq * batch * 192, 0.5f), out(seq * batch * 64);
  std::vector<int64_t> begin = {0, 0, 64}, end = {INT64_MAX, INT64_MAX, 128}, step = {1, 1, 1},
                       target = {seq, batch * 4, 16};
  float c = 4;
  const std::vector<int64_t> qkv_shape = {seq, batch, 192}, three = {3}, scalar = {},
                             out_shape = {batch * 4, seq, 16};
  const std::vector<TensorArg> args = {
      {qkv.data(), DType::kF32, qkv_shape}, {begin.data(), DType::kI64, three},
      {end.data(), DType::kI64, three},     {step.data(), DType::kI64, three},
      {target.data(), DType::kI64, three},  {&c, DType::kF32, scalar},
      {out.data(), DType::kF32, out_shape}};
  for (auto _ : state) {
    absl::Status s = instance->Run(args);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * seq * batch * 64);
}

void BM_AttentionInputJit(benchmark::State& state) { RunAttentionInput(state, true); }
void BM_AttentionInputReference(benchmark::State& state) { RunAttentionInput(state, false); }

// 1 row: call overhead; 64 rows: 128 KB, cache resident; 8192 rows: 16 MB, memory bound.
BENCHMARK(BM_BiasRelu)->Arg(1)->Arg(64)->Arg(8192);
BENCHMARK(BM_BiasReluInPlace)->Arg(1)->Arg(64)->Arg(8192);
BENCHMARK(BM_Swish)->Arg(64)->Arg(8192);
BENCHMARK(BM_Tanh)->Arg(64)->Arg(8192);
BENCHMARK(BM_Memcpy)->Arg(64)->Arg(8192);
BENCHMARK(BM_AttentionInputJit)->Arg(12)->Arg(128);
BENCHMARK(BM_AttentionInputReference)->Arg(12)->Arg(128);
BENCHMARK(BM_CompileBiasRelu)->ArgName("static")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hetpass
