// Throughput of the planning pipeline (infer-types, plan-devices, fuse-ops, manifest-alloc)
// on generated graphs: chains of dense/bias_add/relu/elementwise ops over a symbolic batch,
// with a shape subgraph (shape_of -> take -> concatenate -> dyn.reshape) every 50 bindings
// and weights as constants. BM_DefaultPipeline and BM_VerifyModule take bench/scale's model
// (the residual MLP, 1.5 bindings per op) through the default sim pipeline with the verifier
// after every pass, as `hetpass run` does, and time the verifier alone on its result: the
// passes stage of bench/scale in one process, without its process-to-process noise.
//   ./bench/pipeline_bench --benchmark_counters_tabular=true
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "passes/ir/parser.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/pass/verify_module.h"
#include "passes/support/status_macros.h"
#include "passes/vm/vm.h"

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

// Times `pipeline` over a fresh parse of `text` per iteration (parse and teardown untimed);
// the counter rates `bindings` per second.
void TimePipeline(benchmark::State& state, const std::string& text, const std::string& pipeline,
                  bool verify_each, double bindings) {
  ParseOptions o;
  o.allow_elided_constants = true;
  for (auto _ : state) {
    state.PauseTiming();
    auto m = ParseModule(text, o);
    auto pm = ParsePipeline(pipeline);
    if (!m.ok() || !pm.ok()) {
      state.SkipWithError("setup failed");
      break;
    }
    (*pm)->options().verify_each = verify_each;
    state.ResumeTiming();
    auto r = (*pm)->Run(**m);
    if (!r.ok()) state.SkipWithError(std::string(r.status().message()).c_str());
    state.PauseTiming();
    m->reset();
    state.ResumeTiming();
  }
  state.counters["bindings/s"] =
      benchmark::Counter(bindings, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Pipeline(benchmark::State& state) {
  TimePipeline(state, Generate(state.range(0)), "infer-types,plan-devices,fuse-ops,manifest-alloc",
               /*verify_each=*/false, static_cast<double>(state.range(0)));
}

BENCHMARK(BM_Pipeline)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

// bench/scale/scale.py's generate(ops, 16).
std::string GenerateScale(int64_t ops) {
  std::string s = "def @main(%x: f32[n, 16]) {\n";
  std::string prev = "%x";
  for (int64_t i = 0; i < ops / 4; ++i) {
    absl::StrAppend(&s, "  %w", i, " = constant<elided> : f32[16, 16]\n  %c", i,
                    " = constant<elided> : f32[16]\n  %d", i, " = nn.dense(", prev, ", %w", i,
                    ")\n  %b", i, " = nn.bias_add(%d", i, ", %c", i, ") {axis = -1}\n  %r", i,
                    " = tanh(%b", i, ")\n  %h", i, " = add(%r", i, ", ", prev, ")\n");
    prev = absl::StrCat("%h", i);
  }
  return absl::StrCat(s, "  return ", prev, "\n}\n");
}

absl::StatusOr<std::unique_ptr<Module>> RunDefault(const std::string& text, bool verify_each) {
  ParseOptions o;
  o.allow_elided_constants = true;
  ASSIGN_OR_RETURN(auto m, ParseModule(text, o));
  ASSIGN_OR_RETURN(auto pm, ParsePipeline(vm::DefaultPipeline(DeviceKind::kSim)));
  pm->options().verify_each = verify_each;
  RETURN_IF_ERROR(pm->Run(*m).status());
  return m;
}

void BM_DefaultPipeline(benchmark::State& state) {
  TimePipeline(state, GenerateScale(state.range(0)), vm::DefaultPipeline(DeviceKind::kSim),
               /*verify_each=*/state.range(1) != 0, 1.5 * static_cast<double>(state.range(0)));
}

void BM_VerifyModule(benchmark::State& state) {
  auto m = RunDefault(GenerateScale(state.range(0)), /*verify_each=*/false);
  if (!m.ok()) {
    state.SkipWithError(std::string(m.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::Status s = VerifyModule(**m, VerifyOptions{.require_types = true});
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
  state.counters["bindings/s"] = benchmark::Counter(1.5 * static_cast<double>(state.range(0)),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

// Args: ops, verify after every pass.
BENCHMARK(BM_DefaultPipeline)->Args({100'000, 1})->Args({100'000, 0})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VerifyModule)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hetpass
