// Throughput of the planning pipeline (infer-types, plan-devices, fuse-ops, manifest-alloc)
// on generated graphs: chains of dense/bias_add/relu/elementwise ops over a symbolic batch,
// with a shape subgraph (shape_of -> take -> concatenate -> dyn.reshape) every 50 bindings
// and weights as constants.
//   ./bench/pipeline_bench --benchmark_counters_tabular=true
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "passes/ir/parser.h"
#include "passes/pass/pass_registry.h"

namespace hetpass {
namespace {

std::string Generate(int64_t n) {
  std::string s =
      "def @main(%x: f32[n, 64]) {\n"
      "  %w = constant<elided> : f32[64, 64]\n"
      "  %b = constant<elided> : f32[64]\n"
      "  %i0 = constant<[0]> : i64[1]\n"
      "  %k = constant<[64]> : i64[1]\n"
      "  %v0 = nn.relu(%x)\n";
  for (int64_t i = 1; i < n; ++i) {
    const std::string p = absl::StrCat("%v", i - 1);
    if (i % 50 == 0) {
      absl::StrAppend(&s, "  %s", i, " = shape_of(", p, ")\n  %t", i, " = take(%s", i,
                      ", %i0)\n  %c", i, " = concatenate(%t", i, ", %k)\n  %v", i,
                      " = dyn.reshape(", p, ", %c", i, ")\n");
      continue;
    }
    switch (i % 5) {
      case 0: absl::StrAppend(&s, "  %v", i, " = nn.dense(", p, ", %w)\n"); break;
      case 1: absl::StrAppend(&s, "  %v", i, " = nn.bias_add(", p, ", %b) {axis = -1}\n"); break;
      case 2: absl::StrAppend(&s, "  %v", i, " = nn.relu(", p, ")\n"); break;
      case 3: absl::StrAppend(&s, "  %v", i, " = add(", p, ", %x)\n"); break;
      default: absl::StrAppend(&s, "  %v", i, " = tanh(", p, ")\n"); break;
    }
  }
  return absl::StrCat(s, "  return %v", n - 1, "\n}\n");
}

void BM_Pipeline(benchmark::State& state) {
  const std::string text = Generate(state.range(0));
  ParseOptions o;
  o.allow_elided_constants = true;
  for (auto _ : state) {
    state.PauseTiming();
    auto m = ParseModule(text, o);
    auto pm = ParsePipeline("infer-types,plan-devices,fuse-ops,manifest-alloc");
    if (!m.ok() || !pm.ok()) {
      state.SkipWithError("setup failed");
      break;
    }
    state.ResumeTiming();
    auto r = (*pm)->Run(**m);
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    state.PauseTiming();
    m->reset();
    state.ResumeTiming();
  }
  state.counters["bindings/s"] = benchmark::Counter(static_cast<double>(state.range(0)),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Pipeline)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hetpass
