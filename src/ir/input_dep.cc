// Names and the integer range check of InputDep (input_dep.h).
#include "passes/ir/input_dep.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hetpass {

absl::string_view InputDepName(InputDep d) {
  switch (d) {
    case InputDep::kNone: return "none";
    case InputDep::kShape: return "shape";
    case InputDep::kValue: return "value";
    case InputDep::kShapeAndValue: return "shape+value";
  }
  return "<bad dep>";
}

std::optional<InputDep> ParseInputDep(absl::string_view name) {
  for (InputDep d : {InputDep::kNone, InputDep::kShape, InputDep::kValue,
                     InputDep::kShapeAndValue}) {
    if (name == InputDepName(d)) return d;
  }
  return std::nullopt;
}

absl::StatusOr<InputDep> InputDepFromInt(int64_t v) {
  if (v < 0 || v > static_cast<int64_t>(InputDep::kShapeAndValue)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mask entry ", v, " is not an input dependence (expected 0..3: none, shape, value, "
        "shape+value)"));
  }
  return static_cast<InputDep>(v);
}

}  // namespace hetpass
