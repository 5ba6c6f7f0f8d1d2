// Two ResNet-like convolutions (conv2d + bias_add + relu, shared/models/resnet_tiny_dynamic_batch
// shapes) through the conv kernel (CompileConvGroup: oneDNN convolution with fused bias/ReLU,
// weights prepacked at Instantiate) against the compile engine's reference kernel (the
// registry's scalar conv, bias_add and relu run op by op), at batch 1 and 4 on one thread:
// the figure that says what routing conv groups to the kernel library buys.
//   taskset -c 1 ./bench/conv_kernel_bench --benchmark_repetitions=3
// Args: {case, N}; case 0 = stem 3->16 3x3 pad 1 on 32x32, case 1 = 16->32 3x3 stride 2 pad 1
// on 32x32 (both kernels); cases 2..7 = the other convolution shapes of resnet_tiny (oneDNN
// only: the reference takes seconds). resnet_tiny runs, per forward, case 0 once, 2 four times,
// 1, 4, 6 and 7 once each, 3 three times, 5 three times (15 convolutions).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "compile_engine/conv_kernel.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/ir/parser.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

struct Case {
  int64_t c, oc, k, stride, h;
};
constexpr Case kCases[] = {
    {3, 16, 3, 1, 32},  {16, 32, 3, 2, 32}, {16, 16, 3, 1, 32}, {32, 32, 3, 1, 16},
    {16, 32, 1, 2, 32}, {64, 64, 3, 1, 8},  {32, 64, 3, 2, 16}, {32, 64, 1, 2, 16},
};

std::string ConvText(const Case& k) {
  const int64_t pad = k.k / 2;
  return absl::StrCat(
      "def @f(%x: f32[n, ", k.c, ", ", k.h, ", ", k.h, "], %w: f32[", k.oc, ", ", k.c, ", ", k.k,
      ", ", k.k, "], %b: f32[", k.oc, "]) attributes {primitive = true} {\n",
      "  %h = nn.conv2d(%x, %w) {strides = [", k.stride, ", ", k.stride, "], padding = [", pad,
      ", ", pad, "]}\n", "  %hb = nn.bias_add(%h, %b) {axis = 1}\n",
      "  %a = nn.relu(%hb)\n  return %a\n}\n");
}

Tensor Random(std::vector<int64_t> shape, uint64_t seed, double scale) {
  return testing::RandomF32(std::move(shape), seed, scale);
}

void RunConv(benchmark::State& state, bool reference) {
  const Case& k = kCases[state.range(0)];
  const int64_t n = state.range(1);
  auto module = ParseModule(ConvText(k));
  if (!module.ok()) return state.SkipWithError(module.status().ToString().c_str());
  const Function& f = *(*module)->FindFunction("f");
  auto kernel = reference ? CompileReferenceKernel(f) : CompileConvGroup(f);
  if (!kernel.ok()) return state.SkipWithError(kernel.status().ToString().c_str());
  const Tensor x = Random({n, k.c, k.h, k.h}, 1, 1.0);
  const Tensor w = Random({k.oc, k.c, k.k, k.k}, 2, 0.2);
  const Tensor b = Random({k.oc}, 3, 0.5);
  auto instance = (*kernel)->Instantiate({nullptr, &w, &b});
  if (!instance.ok()) return state.SkipWithError(instance.status().ToString().c_str());
  const int64_t oh = (k.h + 2 * (k.k / 2) - k.k) / k.stride + 1;
  Tensor y = Tensor::Zeros(DType::kF32, {n, k.oc, oh, oh});
  const TensorArg args[] = {
      {const_cast<uint8_t*>(x.data()), DType::kF32, absl::MakeConstSpan(x.shape())},
      {const_cast<uint8_t*>(w.data()), DType::kF32, absl::MakeConstSpan(w.shape())},
      {const_cast<uint8_t*>(b.data()), DType::kF32, absl::MakeConstSpan(b.shape())},
      {y.mutable_data(), DType::kF32, absl::MakeConstSpan(y.shape())}};
  for (auto _ : state) {
    absl::Status s = (*instance)->Run(args);
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(y.data());
  }
  const double macs = static_cast<double>(n) * k.oc * oh * oh * k.c * k.k * k.k;
  state.counters["GFLOPS"] = benchmark::Counter(
      2 * macs, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel((*kernel)->Describe());
}

void BM_ConvOnednn(benchmark::State& state) { RunConv(state, /*reference=*/false); }
void BM_ConvReference(benchmark::State& state) { RunConv(state, /*reference=*/true); }

BENCHMARK(BM_ConvOnednn)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {1, 4}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ConvReference)->ArgsProduct({{0, 1}, {1, 4}})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hetpass
