// The per-input dependence of a shape rule (what the host reads of one input to compute output
// shapes): the lattice none < shape, value < shape+value, a two-bit set. op_def.h explains what
// each level means; docs/masks.md why the levels are chosen as they are.
//
// It lives in its own header, below both attributes.h (an invoke's recorded mask is a typed
// attribute, a list of InputDep) and op_def.h (each op input declares one), so that neither
// has to include the other for it.
//
// The one place an integer becomes an InputDep is InputDepFromInt: the text parser's legacy
// integer masks and the executable loader both go through it, so the range check and its
// message exist once.
#ifndef HETPASS_IR_INPUT_DEP_H_
#define HETPASS_IR_INPUT_DEP_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hetpass {

enum class InputDep : uint8_t { kNone = 0, kShape = 1, kValue = 2, kShapeAndValue = 3 };

inline bool NeedsShape(InputDep d) { return (static_cast<int>(d) & 1) != 0; }
inline bool NeedsValue(InputDep d) { return (static_cast<int>(d) & 2) != 0; }
// The least dependence that covers both (bitwise union).
inline InputDep JoinDeps(InputDep a, InputDep b) {
  return static_cast<InputDep>(static_cast<int>(a) | static_cast<int>(b));
}

// "none", "shape", "value", "shape+value": the spelling used by the text IR, messages and docs.
absl::string_view InputDepName(InputDep d);
// The inverse of InputDepName; nullopt for any other word.
std::optional<InputDep> ParseInputDep(absl::string_view name);
// The integer encoding (0..3, as the executable stores it). Anything else is an
// InvalidArgumentError naming the value; callers prefix where it came from.
absl::StatusOr<InputDep> InputDepFromInt(int64_t v);

}  // namespace hetpass

#endif  // HETPASS_IR_INPUT_DEP_H_
