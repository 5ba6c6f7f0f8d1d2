// Text IR parser. The grammar (the printer emits exactly this form; see docs/text_ir.md):
//
//   module    := function*
//   function  := 'def' '@' NAME '(' [param {',' param}] ')' ['->' type {',' type}] '{' body '}'
//   param     := VALUE ':' type
//   body      := binding* ('return' | 'yield') [VALUE {',' VALUE}]
//   binding   := VALUE {',' VALUE} '=' expr [':' type {',' type}] ['@' DEVICE] [loc]
//   expr      := OPNAME '(' [VALUE {',' VALUE}] ')' [attrs]     op call (OPNAME may contain '.')
//              | 'constant' '<' literal '>'                      the type after ':' is required
//              | 'tuple' '(' [VALUE {',' VALUE}] ')'
//              | 'get_item' '(' VALUE ')' attrs                   attrs = {index = N}
//              | 'invoke' '@' NAME '(' [VALUE {',' VALUE}] ')'
//              | 'if' '(' VALUE ')' '{' body '}' 'else' '{' body '}'
//              | 'loop' '(' VALUE {',' VALUE} ')' '(' [param {',' param}] ')' '{' body '}'
//   attrs     := '{' NAME '=' attr {',' NAME '=' attr} '}'
//   attr      := INT | FLOAT | 'true' | 'false' | STRING | '[' [num {',' num}] ']' | 'f[]' | DTYPE
//   literal   := number | '[' [number {',' number}] ']' | HEX ('0x' raw little-endian bytes)
//              | 'elided' (only with ParseOptions::allow_elided_constants: zeros)
//   type      := DTYPE '[' [dim {',' dim}] ']' | '(' [type {',' type}] ')'
//   dim       := INT | NAME | '?' | dim ('+'|'-'|'*'|'//'|'%') dim | '-' dim | '(' dim ')'
//              | ('min'|'max') '(' dim ',' dim ')'
//   loc       := 'loc' '(' STRING ')'                             source node name (ONNX)
//   VALUE     := '%' (NAME | INT)        NAME := [A-Za-z_][A-Za-z0-9_]*   comments: '//' to EOL
//
// Errors are InvalidArgument with "<source>:<line>:<col>: <message>"; the message names what
// was expected and what was found. Op names are resolved in the registry of ParseOptions; op
// attributes are checked against the op's schema (defaults filled in).
#ifndef HETPASS_IR_PARSER_H_
#define HETPASS_IR_PARSER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/ir/ir.h"

namespace hetpass {

class OpRegistry;

struct ParseOptions {
  const OpRegistry* registry = nullptr;  // nullptr: OpRegistry::Global()
  std::string source_name;               // used in error locations; "<input>" if empty
  bool allow_elided_constants = false;   // accept `constant<elided>` (filled with zeros)
  // How the caller's user turns allow_elided_constants on, named in the error that refuses an
  // elided constant (a tool sets its flag: "--allow-elided-constants").
  std::string allow_elided_constants_hint = "ParseOptions::allow_elided_constants";
  // When set, receives the number of elided constants accepted, so that a tool can say its
  // results come from all-zero weights.
  int64_t* elided_constants = nullptr;
  // An elided constant is materialised as zeros: a larger one is an error, not an allocation
  // (the type alone decides the size, so a few bytes of text could ask for any amount).
  int64_t max_elided_bytes = int64_t{1} << 30;
};

absl::StatusOr<std::unique_ptr<Module>> ParseModule(absl::string_view text,
                                                    const ParseOptions& options = {});
absl::StatusOr<Type> ParseType(absl::string_view text);
absl::StatusOr<DimExpr> ParseDimExpr(absl::string_view text);

}  // namespace hetpass

#endif  // HETPASS_IR_PARSER_H_
