// Text IR printer (grammar in parser.h). Output is deterministic: value names that are real
// names (not all digits) are kept, made unique per function with a `_N` suffix; every other
// value is numbered %0, %1, ... in program order. So print(parse(print(m))) == print(m).
#ifndef HETPASS_IR_PRINTER_H_
#define HETPASS_IR_PRINTER_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "passes/ir/ir.h"

namespace hetpass {

struct PrintOptions {
  // Constants with more elements than this print as hex bytes instead of a number list.
  int64_t max_inline_elements = 16;
  // Print `constant<elided>` for constants above max_inline_elements (golden tests, dumps).
  bool elide_large_constants = false;
  // Print where each node came from as `loc("file":line:col)` (with its source name after a
  // comma when it has one), the file being the node's own or its module's source name. The VM
  // compiler prints an executable's primitives this way, so a shape error at run time names
  // the user's file and line. Off by default: dumps stay diffable across edits of the input.
  bool source_locations = false;
};

std::string PrintModule(const Module& module, const PrintOptions& options = {});

// The names PrintFunction gives a function's values ("%x", "%7"), for tools that refer to
// values the way the printed IR does (copy ledger, pass-viz, diagnostics).
// `lazy`: the names are assigned on the first Name/AppendTo, from the function as it is then.
// For a pass that keeps one for its error messages and reports them before it changes the
// function (at 100k bindings, assigning them eagerly cost plan-devices a fifth of its time).
class ValueNames {
 public:
  explicit ValueNames(const Function& function, bool lazy = false) : function_(&function) {
    if (!lazy) Assign();
  }
  // "%<undefined>" for a value that is not defined in the function.
  std::string Name(const Value* v) const;
  void AppendTo(std::string* out, const Value* v) const;

 private:
  void Assign() const;
  struct Slot {
    int64_t number = -1;  // >= 0: printed as %<number>
    uint32_t kept = 0;    // else: index into kept_names_
  };
  void Define(const Value* v) const;
  void DefineBlock(const Block& block) const;
  const Function* function_;
  mutable bool assigned_ = false;
  mutable absl::flat_hash_map<const Value*, Slot> slots_;
  mutable std::vector<std::string> kept_names_;
  mutable absl::flat_hash_set<std::string> used_;  // kept names only
  mutable int64_t next_number_ = 0;
};
std::string PrintFunction(const Function& function, const PrintOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_IR_PRINTER_H_
