// Front-end throughput: parse, infer-types and print on generated functions of 10k, 100k and
// 1M bindings (a mix of dense, bias_add, elementwise and shape arithmetic over a symbolic
// batch). Counters report bindings per second; run with --benchmark_filter to pick sizes.
//   ./bench/ir_bench --benchmark_counters_tabular=true
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "passes/ir/dim_expr.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/transforms/infer_types.h"

namespace hetpass {
namespace {

// A function of `n` bindings. Every binding uses the previous one (a deep chain, the worst
// case for layout tools later) and, every few, an older value or a parameter. Values are
// numbered (%12, the printer's form for unnamed values) or, with `named`, called %v12 (kept
// names, as an importer that keeps node names produces).
std::string Generate(int64_t n, bool named = false) {
  const char* p = named ? "%v" : "%";
  std::string s =
      absl::StrCat("def @main(%x: f32[n, 64], %w: f32[64, 64], %b: f32[64]) {\n  ", p,
                   "0 = nn.relu(%x)\n");
  s.reserve(static_cast<size_t>(n) * 40);
  for (int64_t i = 1; i < n; ++i) {
    const std::string prev = absl::StrCat(p, i - 1);
    const std::string older = absl::StrCat(p, i / 2);
    switch (i % 6) {
      case 0: absl::StrAppend(&s, "  ", p, i, " = nn.dense(", prev, ", %w)\n"); break;
      case 1: absl::StrAppend(&s, "  ", p, i, " = nn.bias_add(", prev, ", %b) {axis = -1}\n"); break;
      case 2: absl::StrAppend(&s, "  ", p, i, " = add(", prev, ", ", older, ")\n"); break;
      case 3: absl::StrAppend(&s, "  ", p, i, " = nn.relu(", prev, ")\n"); break;
      case 4: absl::StrAppend(&s, "  ", p, i, " = multiply(", prev, ", %x)\n"); break;
      default: absl::StrAppend(&s, "  ", p, i, " = tanh(", prev, ")\n"); break;
    }
  }
  absl::StrAppend(&s, "  return ", p, n - 1, "\n}\n");
  return s;
}

void BM_Parse(benchmark::State& state) {
  const std::string text = Generate(state.range(0), /*named=*/state.range(1) != 0);
  for (auto _ : state) {
    auto m = ParseModule(text);
    if (!m.ok()) state.SkipWithError(std::string(m.status().message()).c_str());
    benchmark::DoNotOptimize(m);
    state.PauseTiming();
    m->reset();  // destruction is not parsing: free outside the timed region
    state.ResumeTiming();
  }
  state.counters["bindings/s"] =
      benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_InferTypes(benchmark::State& state) {
  const std::string text = Generate(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    auto m = ParseModule(text);
    auto pass = CreateInferTypesPass();
    state.ResumeTiming();
    auto r = pass->Run(**m);
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    state.PauseTiming();
    m->reset();  // free outside the timed region
    state.ResumeTiming();
  }
  state.counters["bindings/s"] =
      benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Print(benchmark::State& state) {
  auto m = ParseModule(Generate(state.range(0)));
  (void)CreateInferTypesPass()->Run(**m);
  for (auto _ : state) {
    std::string out = PrintModule(**m);
    benchmark::DoNotOptimize(out);
  }
  state.counters["bindings/s"] =
      benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate);
}

// The simplifier (issue 33): the lengths of `depth` chained clamped slices, each `x[2:][:-1]`
// on the previous length (two Max and one Min per step, every one of them proved or refuted by
// the bounded prover), then the window expression rebuilt under a fact. Counters:
// constructions (Min/Max/FloorDiv calls) and Simplify calls per second.
void BM_DimConstructSlices(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  const DimExpr n = DimExpr::Symbol("n");
  for (auto _ : state) {
    DimExpr len = n;
    for (int i = 0; i < depth; ++i) {
      const DimExpr tail = DimExpr::Max(0, len - 2);                    // x[2:]
      const DimExpr head = DimExpr::Min(tail, DimExpr::Max(0, tail - 1));  // [:-1]
      len = DimExpr::FloorDiv(head + 1, 2);                             // [::2]
    }
    benchmark::DoNotOptimize(len);
  }
  state.counters["constructions/s"] = benchmark::Counter(
      static_cast<double>(4 * depth), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DimSimplifyWithFacts(benchmark::State& state) {
  const DimExpr d = DimExpr::Symbol("dyn2");
  const DimExpr clamped = DimExpr::Max(0, d - 2);
  const DimExpr w = DimExpr::Min(d, clamped) +
                    DimExpr::Max(0, d - DimExpr::Min(DimExpr(2147483647), clamped));
  DimFacts facts;
  facts.AddLessEqual(d, 2147483647);
  for (auto _ : state) {
    DimExpr s = w.Simplify(facts);
    benchmark::DoNotOptimize(s);
  }
  state.counters["simplify/s"] =
      benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_DimConstructSlices)->Arg(1)->Arg(8)->Arg(64);
BENCHMARK(BM_DimSimplifyWithFacts);

BENCHMARK(BM_Parse)
    ->ArgsProduct({{10'000, 100'000, 1'000'000}, {0, 1}})
    ->ArgNames({"bindings", "named"})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_InferTypes)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Print)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hetpass
