// Shared test fixtures for the seed workloads and the single-flag comparison.
#ifndef HETPASS_TEST_SUPPORT_SEED_MODELS_H_
#define HETPASS_TEST_SUPPORT_SEED_MODELS_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "passes/analysis/baseline_masks.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::testing {

// The seed 3-layer dense+bias MLP (1024-512-256-128) with batch `batch` ("16" or "n"); weights
// are `constant<elided>` (parse with ParseOptions::allow_elided_constants).
inline std::string SeedMlp(const std::string& batch) {
  return absl::StrCat("def @main(%x: f32[", batch, R"(, 1024]) {
  %w1 = constant<elided> : f32[512, 1024]
  %b1 = constant<elided> : f32[512]
  %w2 = constant<elided> : f32[256, 512]
  %b2 = constant<elided> : f32[256]
  %w3 = constant<elided> : f32[128, 256]
  %b3 = constant<elided> : f32[128]
  %0 = nn.dense(%x, %w1)
  %1 = nn.bias_add(%0, %b1) {axis = -1}
  %2 = nn.relu(%1)
  %3 = nn.dense(%2, %w2)
  %4 = nn.bias_add(%3, %b2) {axis = -1}
  %5 = nn.relu(%4)
  %6 = nn.dense(%5, %w3)
  %7 = nn.bias_add(%6, %b3) {axis = -1}
  return %7
}
)");
}

// A data-dependent gather: the rows of %x whose first column is positive (argwhere, a count the
// host reads), through a dense layer, and with `softmax` a softmax after it. Two runs of device
// work with a device-to-host copy between them (device graphs' two stretches).
inline std::string ArgwhereGatherDense(bool softmax) {
  return absl::StrCat(R"(def @main(%x: f32[n, 4], %w: f32[2, 4]) {
  %c0 = constant<0> : i64[]
  %col = take(%x, %c0) {axis = 1}
  %z = constant<0.0> : f32[]
  %pos = greater(%col, %z)
  %nz = argwhere(%pos)
  %rows = squeeze(%nz) {axis = [1]}
  %g = take(%x, %rows) {mode = "wrap"}
  %y = nn.dense(%g, %w)
)", softmax ? "  %s = nn.softmax(%y)\n  return %s\n}\n" : "  return %y\n}\n");
}

// The exact-count programs of the planner tests (5a, 5c-5f). The ledger tests assert their
// copy counts, the VM tests run them and compare the device counters with those ledgers.

// 5a, the seed case: ten dyn.strided_slice with run-time begin/end/strides on a sim tensor.
inline std::string SliceChain() {
  std::string s =
      "def @main(%x: f32[n, 64] @sim, %b: i64[2] @cpu, %e: i64[2] @cpu, %s: i64[2] @cpu) {\n"
      "  %xs = nn.relu(%x) @sim\n";
  std::string prev = "%xs";
  for (int i = 0; i < 10; ++i) {
    absl::StrAppend(&s, "  %y", i, " = dyn.strided_slice(", prev, ", %b, %e, %s) @sim\n");
    prev = absl::StrCat("%y", i);
  }
  return absl::StrCat(s, "  return ", prev, "\n}\n");
}

// 5c: a reshape target from shape arithmetic (known symbolically: no shape function).
inline constexpr char kReshapeFromShapeArithmetic[] = R"(
def @main(%x: f32[n, 1024]) {
  %w = constant<elided> : f32[512, 1024]
  %h = nn.dense(%x, %w)
  %s = shape_of(%h)
  %i = constant<[0]> : i64[1]
  %b = take(%s, %i)
  %k = constant<[8, 64]> : i64[2]
  %t = concatenate(%b, %k)
  %r = dyn.reshape(%h, %t)
  %y = nn.softmax(%r)
  return %y
}
)";

// 5d: argwhere on the accelerator (only its 8-byte count crosses).
inline constexpr char kArgwhereCount[] = R"(
def @main(%x: f32[n, 4] @sim) {
  %e = exp(%x)
  %i = argwhere(%e)
  %f = cast(%i) {dtype = f32}
  return %f
}
)";

// non_max_suppression on the accelerator (only its 8-byte count crosses: its counter runs on
// sim on all five inputs, never copying boxes or scores). One constant feeds both thresholds,
// so the op has five operands but its primitive four parameters.
inline constexpr char kNonMaxSuppressionCount[] = R"(
def @main(%boxes: f32[1, n, 4] @sim, %logits: f32[1, 2, n] @sim) {
  %scores = sigmoid(%logits)
  %max = constant<[2]> : i64[1]
  %half = constant<0.5> : f32[]
  %sel = non_max_suppression(%boxes, %scores, %max, %half, %half) {center_point_box = 1}
  %f = cast(%sel) {dtype = f32}
  return %f
}
)";

// 5e: the ops TVM over-declared, with run-time host values.
inline constexpr char kOverDeclaredOps[] = R"(
def @main(%x: f32[n, 3, 8, 8], %size: i64[2], %pads: i64[8], %reps: i64[4], %k: i64[]) {
  %w = constant<elided> : f32[3, 3, 1, 1]
  %c = nn.conv2d(%x, %w) @sim
  %r = dyn.image.resize2d(%c, %size) @sim
  %zero = constant<0.0> : f32[]
  %p = dyn.nn.pad(%r, %pads, %zero) @sim
  %t = dyn.tile(%p, %reps) @sim
  %flat = constant<[-1]> : i64[1]
  %f = dyn.reshape(%t, %flat) @sim
  %v, %i = dyn.topk(%f, %k) @sim
  return %v
}
)";

// 5f: a tensor two shape functions need (single flag: shape+value) is copied once.
inline constexpr char kShapeAndValueCopiedOnce[] = R"(
def @main(%x: f32[n, 64] @sim, %b: i64[2] @cpu, %e: i64[2] @cpu, %s: i64[2] @cpu) {
  %xs = nn.relu(%x) @sim
  %y0 = dyn.strided_slice(%xs, %b, %e, %s) @sim
  %y1 = dyn.strided_slice(%xs, %e, %b, %s) @sim
  return %y0, %y1
}
)";

// The single-flag baseline's registry used from parsing on, so placement and fusion react to
// its masks too: for tests of how the planner and the fuser treat over-declared masks. Baseline
// *comparisons* keep our placement and fusion instead (PipelineWithBaseline).
inline const OpRegistry& SingleFlag() { return BaselineRegistry(BaselineMasks::kSingleFlag); }


}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_SEED_MODELS_H_
