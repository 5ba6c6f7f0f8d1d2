// Where each symbol of a function comes from (`hetpass-opt --explain-symbols`, issue 33).
//
// A symbol in a function's types is either an input's (bound by a parameter's dims) or fresh:
// named by infer-types for a dim no rule could express over the inputs' symbols (`dynN`). A
// fresh symbol should exist only where a size truly depends on tensor contents (NonZero, NMS,
// TopK of a data k, a loop's trip count); every other one is a weakness of the symbolic
// reasoning that costs a shape function at run time, a `?` byte total in the ledger and a
// memory plan that cannot share. This lists each fresh symbol with the binding that introduces
// it and why, so both kinds can be told apart and counted.
#ifndef HETPASS_ANALYSIS_SYMBOL_ORIGINS_H_
#define HETPASS_ANALYSIS_SYMBOL_ORIGINS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/ir/ir.h"

namespace hetpass {

struct SymbolOrigin {
  std::string symbol;    // "dyn3"
  std::string value;     // the first value whose type has it as a dim, as printed: "%nz"
  std::string op;        // the op (or `loop`, `if`, `invoke @f`) that defines that value
  std::string location;  // FormatLocation of that binding
  // kData: the op's output size depends on tensor contents (OpDef::data_dependent_output_shape:
  // argwhere, NMS, unique...), or the value is a loop's result (the trip count may depend on
  // data). kValue: the size is an input's values (a `value` input: TopK's k, a reshape target)
  // that inference could not follow back to the inputs' symbols. kRule: the op's shape rule
  // could not say it over the inputs' symbols.
  enum class Kind { kData, kValue, kRule } kind = Kind::kRule;
  // kValue: the tensor whose contents the values depend on ("%k of reduce_max (m:4:3)",
  // "%target (a parameter's contents)"), found by walking back from the value inputs past
  // shape arithmetic; empty when shapes and constants alone make them (a gap in inference).
  // kRule: the operand whose `?` dim the rule was fed ("%r of if (m:9:3)"), if any.
  std::string data_source;
  std::string reason;
};

// The fresh symbols of `function` (those no parameter's type binds), in program order of the
// binding that first has each one as a whole dim (nested regions included). Error if the
// function does not exist.
absl::StatusOr<std::vector<SymbolOrigin>> ExplainSymbols(const Module& module,
                                                         absl::string_view function = "main");

// One line per symbol, then a count per kind.
std::string SymbolOriginsText(const std::vector<SymbolOrigin>& origins);

}  // namespace hetpass

#endif  // HETPASS_ANALYSIS_SYMBOL_ORIGINS_H_
