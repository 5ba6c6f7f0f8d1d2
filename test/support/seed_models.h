// Shared test fixtures for the seed workloads and the single-flag comparison.
#ifndef HETPASS_TEST_SUPPORT_SEED_MODELS_H_
#define HETPASS_TEST_SUPPORT_SEED_MODELS_H_

#include <string>

#include "absl/strings/str_cat.h"
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

// The registry with the single per-op flag of older systems (OpRegistry::SingleFlagOverride).
inline const OpRegistry& SingleFlag() {
  static const OpRegistry* r = OpRegistry::Global().SingleFlagOverride().release();
  return *r;
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_SEED_MODELS_H_
