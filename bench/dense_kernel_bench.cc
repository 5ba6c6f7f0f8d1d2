// The seed MLP (1024-512-256-128, dense+bias+ReLU, dense+bias+ReLU, dense+bias) through the
// dense kernel (CompileDenseGroup: oneDNN matmul with fused bias/ReLU, weights prepacked at
// Instantiate), at M = 1, 16, 64 on one thread: the figure to hold against the bare-library
// numbers of bench/gemm_libs/compare.sh (oneDNN `packed`) and ONNX Runtime's 63 / 253 / 963 us.
// The difference to the bare library is the kernel's own overhead: argument checks, the
// per-instance primitive cache lookup, memory-object creation per call.
//   taskset -c 1 ./bench/dense_kernel_bench --benchmark_repetitions=3
// BM_SeedMlpRunTimeWeights: the same with weights passed at run time (no prepacking).
// Compare the median_us counter (median per forward) with compare.sh's medians; the Time
// column is a mean and absorbs preemptions on a shared core.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compile_engine/dense_kernel.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "passes/ir/parser.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

constexpr int64_t kDims[4] = {1024, 512, 256, 128};

std::string LayerText(int64_t k, int64_t n, bool relu) {
  std::string s = absl::StrCat("def @f(%x: f32[m, ", k, "], %w: f32[", n, ", ", k, "], %b: f32[", n,
                               "]) -> f32[m, ", n, "] attributes {primitive = true} {\n",
                               "  %h = nn.dense(%x, %w) : f32[m, ", n, "]\n",
                               "  %hb = nn.bias_add(%h, %b) {axis = -1} : f32[m, ", n, "]\n");
  if (relu)
    absl::StrAppend(&s, "  %a = nn.relu(%hb) : f32[m, ", n, "]\n  return %a\n}\n");
  else
    absl::StrAppend(&s, "  return %hb\n}\n");
  return s;
}

Tensor Random(std::vector<int64_t> shape, uint64_t seed, double scale) {
  return testing::RandomF32(std::move(shape), seed, scale);
}

struct Layer {
  std::unique_ptr<Module> module;
  std::unique_ptr<CompiledKernel> kernel;
  std::unique_ptr<KernelInstance> instance;
  Tensor w, b;
  int64_t n = 0;
};

void RunMlp(benchmark::State& state, bool constant_weights) {
  const int64_t m = state.range(0);
  std::vector<Layer> layers(3);
  for (int l = 0; l < 3; ++l) {
    Layer& L = layers[l];
    L.n = kDims[l + 1];
    auto module = ParseModule(LayerText(kDims[l], L.n, l < 2));
    if (!module.ok()) return state.SkipWithError(module.status().ToString().c_str());
    L.module = *std::move(module);
    auto kernel = CompileDenseGroup(*L.module->FindFunction("f"));
    if (!kernel.ok()) return state.SkipWithError(kernel.status().ToString().c_str());
    L.kernel = *std::move(kernel);
    L.w = Random({L.n, kDims[l]}, 100 + l, 1.0 / 32);
    L.b = Random({L.n}, 200 + l, 0.5);
    std::vector<const Tensor*> constants = {nullptr, nullptr, nullptr};
    if (constant_weights) constants = {nullptr, &L.w, &L.b};
    auto instance = L.kernel->Instantiate(constants);
    if (!instance.ok()) return state.SkipWithError(instance.status().ToString().c_str());
    L.instance = *std::move(instance);
  }
  const Tensor x = Random({m, kDims[0]}, 7, 1.0);
  std::vector<Tensor> acts = {Tensor::Zeros(DType::kF32, {m, kDims[1]}),
                              Tensor::Zeros(DType::kF32, {m, kDims[2]}),
                              Tensor::Zeros(DType::kF32, {m, kDims[3]})};
  // Argument lists built once (the VM passes spans it keeps too).
  std::vector<std::vector<TensorArg>> args(3);
  for (int l = 0; l < 3; ++l) {
    const Tensor& in = l == 0 ? x : acts[l - 1];
    Tensor& out = acts[l];
    args[l] = {
        TensorArg{const_cast<uint8_t*>(in.data()), DType::kF32, in.shape()},
        TensorArg{const_cast<uint8_t*>(layers[l].w.data()), DType::kF32, layers[l].w.shape()},
        TensorArg{const_cast<uint8_t*>(layers[l].b.data()), DType::kF32, layers[l].b.shape()},
        TensorArg{out.mutable_data(), DType::kF32, out.shape()}};
  }
  state.SetLabel(layers[0].kernel->Describe());
  // Per-forward times too: their median (counter median_us) ignores the forwards a busy core
  // preempted, as bench/gemm_libs does, so the two are comparable on a shared VM.
  std::vector<double> us;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < 3; ++l) {
      absl::Status s = layers[l].instance->Run(args[l]);
      if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
    }
    benchmark::ClobberMemory();
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  state.counters["median_us"] = us.empty() ? 0.0 : us[us.size() / 2];
  state.counters["threads"] = KernelLibraryThreads();
}

void BM_SeedMlp(benchmark::State& state) { RunMlp(state, /*constant_weights=*/true); }
void BM_SeedMlpRunTimeWeights(benchmark::State& state) { RunMlp(state, false); }

BENCHMARK(BM_SeedMlp)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_SeedMlpRunTimeWeights)
    ->Arg(1)
    ->Arg(16)
    ->Arg(64)
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.5);

}  // namespace
}  // namespace hetpass
