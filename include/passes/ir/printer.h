// Text IR printer (grammar in parser.h). Output is deterministic: value names that are real
// names (not all digits) are kept, made unique per function with a `_N` suffix; every other
// value is numbered %0, %1, ... in program order. So print(parse(print(m))) == print(m).
#ifndef HETPASS_IR_PRINTER_H_
#define HETPASS_IR_PRINTER_H_

#include <cstdint>
#include <string>

#include "passes/ir/ir.h"

namespace hetpass {

struct PrintOptions {
  // Constants with more elements than this print as hex bytes instead of a number list.
  int64_t max_inline_elements = 16;
  // Print `constant<elided>` for constants above max_inline_elements (golden tests, dumps).
  bool elide_large_constants = false;
};

std::string PrintModule(const Module& module, const PrintOptions& options = {});
std::string PrintFunction(const Function& function, const PrintOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_IR_PRINTER_H_
