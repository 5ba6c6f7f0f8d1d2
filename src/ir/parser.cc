// Text IR parser: a hand-written lexer and a recursive-descent parser for the grammar documented
// in parser.h (and docs/text_ir.md).
//
// Design notes
//   - The lexer (ir/lexer.h): tokens are views into the source text; it never allocates. Value names, symbol
//     names and op names are looked up through string_view keys.
//   - `//` starts a comment except inside the brackets of a shape (and in ParseDimExpr), where
//     it is floor division: the parser tells the lexer which mode to use for the next token.
//   - Values are scoped: a region (if/loop body) sees the values of its enclosing blocks, and
//     its own values are hidden again when it closes. A name may be reused in a sibling region,
//     never while the first definition is visible (no shadowing).
//   - A use of a name that is not defined yet does not fail at once: the parser records the
//     first such use and keeps going to the end of the function, so it can say "used before its
//     definition" rather than "undefined" when the definition comes later.
//   - Every recursion (regions, parenthesised dims, tuple types, unary minus) counts against
//     kMaxNesting (regions also against kMaxRegionNesting), so no input can exhaust the stack. No
//     input aborts: integer literals are range-checked, allocations are bounded by the input size
//     (or by ParseOptions::max_elided_bytes).
//
// Extensions beyond the grammar in parser.h (both needed to print every valid module):
//   - a parameter's `: type` may be omitted (the parameter is then untyped);
//   - a binding may bind no result (`invoke @f(%x)`), for callees and ops without results.
#include "passes/ir/parser.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/lexer.h"
#include "passes/ir/op_def.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

using ir_text::DescribeToken;
using ir_text::HexValue;
using ir_text::IsDigit;
using ir_text::IsHexDigit;
using ir_text::IsIdentChar;
using ir_text::IsIdentStart;
using ir_text::Lexer;
using ir_text::Tok;
using ir_text::Token;

constexpr int kMaxNesting = 1000;
// Regions recurse through several large frames (about 1.5 KB per level in release builds, over
// 8 KB with AddressSanitizer), so they get a tighter limit; real models nest a handful deep.
constexpr int kMaxRegionNesting = 256;


// Literal number as written (before it meets the type that gives it meaning).
struct LitNum {
  enum class Kind : uint8_t { kInt, kFloat, kBool } kind = Kind::kInt;
  int64_t i = 0;
  double d = 0;
  Token tok;
};

std::string DeviceList() {
  std::vector<std::string> names;
#define HETPASS_DEVICE(e, name, accel) \
  if (absl::string_view(name) != "") names.push_back(absl::StrCat("@", name));
#include "passes/ir/devices.def"
#undef HETPASS_DEVICE
  return absl::StrJoin(names, ", ");
}

bool AttrTypeAccepts(AttrType want, AttrType have) {
  return want == have || (want == AttrType::kFloat && have == AttrType::kInt) ||
         (want == AttrType::kFloatList && have == AttrType::kIntList);
}

absl::string_view Plural(int64_t n, absl::string_view one, absl::string_view many) {
  return n == 1 ? one : many;
}

// ---------------------------------------------------------------------------------------------
// Parser

class Parser {
 public:
  Parser(absl::string_view text, const ParseOptions& options, bool dim_mode)
      : lexer_(text),
        registry_(options.registry != nullptr ? options.registry : nullptr),
        options_(options),
        source_(options.source_name.empty() ? "<input>" : options.source_name),
        dim_mode_(dim_mode) {
    placeholder_ = placeholder_block_.AddParam(Type());
    tok_ = lexer_.Next(dim_mode_);
  }

  absl::StatusOr<std::unique_ptr<Module>> ParseModule();
  absl::StatusOr<Type> ParseStandaloneType();
  absl::StatusOr<DimExpr> ParseStandaloneDim();

 private:
  // ---- tokens and errors ----
  void Advance() { tok_ = lexer_.Next(dim_mode_); }
  bool Is(Tok k) const { return tok_.kind == k; }
  bool IsIdent(absl::string_view word) const {
    return tok_.kind == Tok::kIdent && tok_.text == word;
  }
  Token Peek() {
    Lexer copy = lexer_;
    return copy.Next(dim_mode_);
  }

  absl::Status MakeError(int line, int col, absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ":", line, ":", col, ": ", message));
  }
  // Every error goes through here: an earlier unresolved use of a value takes precedence.
  absl::Status ErrorAt(const Token& t, absl::string_view message) const {
    if (pending_.active) return PendingError();
    if (t.kind == Tok::kError) return LexError(t);
    return MakeError(t.line, t.col, message);
  }
  absl::Status ErrorAtLoc(const Location& loc, absl::string_view message) const {
    if (pending_.active) return PendingError();
    return MakeError(loc.line, loc.col, message);
  }
  absl::Status LexError(const Token& t) const {
    if (t.text.empty() || std::strcmp(t.error, "unexpected character") != 0) {
      return MakeError(t.line, t.col, t.error);
    }
    return MakeError(t.line, t.col, absl::StrCat("unexpected character '", t.text, "'"));
  }
  // "expected <what>, found <current token>"
  absl::Status Expected(absl::string_view what) const {
    return ErrorAt(tok_, absl::StrCat("expected ", what, ", found ", DescribeToken(tok_)));
  }
  absl::Status Expect(Tok kind, absl::string_view what) {
    if (!Is(kind)) return Expected(what);
    Advance();
    return absl::OkStatus();
  }

  // ---- nesting ----
  class Nesting {
   public:
    explicit Nesting(Parser* p, bool region = false) : p_(p), region_(region) {
      ++p_->depth_;
      if (region_) ++p_->region_depth_;
    }
    ~Nesting() {
      --p_->depth_;
      if (region_) --p_->region_depth_;
    }
    absl::Status Check() const {
      if (p_->region_depth_ > kMaxRegionNesting) {
        return p_->ErrorAt(p_->tok_, absl::StrCat("regions are nested deeper than ",
                                                  kMaxRegionNesting, " levels"));
      }
      if (p_->depth_ <= kMaxNesting) return absl::OkStatus();
      return p_->ErrorAt(p_->tok_, absl::StrCat("nesting is deeper than ", kMaxNesting, " levels"));
    }

   private:
    Parser* p_;
    bool region_;
  };

  // ---- values and scopes ----
  struct Entry {
    Value* value = nullptr;  // nullptr: no such name (yet)
    int line = 0;
    int col = 0;
    bool visible = false;
  };
  struct PendingUse {
    bool active = false;
    bool defined_later = false;
    Token tok;
  };
  absl::Status PendingError() const {
    return MakeError(
        pending_.tok.line, pending_.tok.col,
        pending_.defined_later
            ? absl::StrCat("value '", pending_.tok.text, "' used before its definition")
            : absl::StrCat("undefined value '", pending_.tok.text, "'"));
  }
  void PushScope() { scope_marks_.push_back(scope_names_.size()); }
  void PopScope() {
    const size_t mark = scope_marks_.back();
    scope_marks_.pop_back();
    for (size_t i = mark; i < scope_names_.size(); ++i) SlotFor(scope_names_[i]).visible = false;
    scope_names_.resize(mark);
  }
  absl::Status Define(const Token& name, Value* v);
  absl::StatusOr<Value*> Use(const Token& name);
  // Numeric names (%0, %17: the printer's) index a vector; other names a hash map.
  bool NumericIndex(absl::string_view key, size_t* index) const {
    if (key.size() > 9 || !IsDigit(key[0]) || (key[0] == '0' && key.size() > 1)) return false;
    size_t v = 0;
    for (char c : key) v = v * 10 + static_cast<size_t>(c - '0');
    if (v > numbered_.size() + 4096) return false;  // keep the table dense
    *index = v;
    return true;
  }
  Entry* FindEntry(absl::string_view key) {
    size_t i;
    if (NumericIndex(key, &i)) {
      if (i < numbered_.size() && numbered_[i].value != nullptr) return &numbered_[i];
    }
    auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second;
  }
  Entry& SlotFor(absl::string_view key) {
    size_t i;
    if (NumericIndex(key, &i) && values_.find(key) == values_.end()) {
      if (i >= numbered_.size()) numbered_.resize(i + 1);
      return numbered_[i];
    }
    return values_[key];
  }
  void ResetFunctionState() {
    values_.clear();
    numbered_.clear();
    scope_names_.clear();
    scope_marks_.clear();
  }

  // ---- grammar ----
  absl::Status ParseFunction(Module& module);
  absl::Status ParseParam(Block& block);
  absl::Status ParseBody(Block& block, absl::string_view owner, bool in_region, Token* end);
  absl::Status ParseBinding(Block& block);
  absl::Status ParseOperands(Node& node, absl::string_view what);
  absl::Status ParseCall(Node** out, const Token& head, int* num_results);
  absl::Status ParseIf(Node& node, const Location& loc, int num_names);
  absl::Status ParseLoop(Node& node, const Token& head, const Location& loc, int num_names);
  absl::Status ParseAttrDict();
  // `@cpu`, `@sim`, ... (the current token is a kGlobal).
  absl::StatusOr<DeviceKind> ParseDeviceToken() {
    const std::optional<DeviceKind> device = ParseDevice(tok_.text.substr(1));
    if (!device) {
      return ErrorAt(tok_, absl::StrCat("unknown device '", tok_.text, "' (expected one of ",
                                        DeviceList(), ")"));
    }
    Advance();
    return *device;
  }
  absl::StatusOr<AttrValue> ParseAttrValue();
  absl::StatusOr<AttrValue> ParseDepList();
  absl::Status ParseNumber(LitNum* out, absl::string_view what);
  absl::Status ParseLiteral();
  absl::StatusOr<Tensor> BuildConstant(const Type& type, const Token& type_tok);
  absl::StatusOr<Type> ParseType();
  absl::StatusOr<DimExpr> ParseDimSum();
  absl::Status ParseAssumption(Function& f);
  absl::StatusOr<DimExpr> ParseDimTerm();
  absl::StatusOr<DimExpr> ParseDimProductFrom(DimExpr lhs);
  absl::StatusOr<DimExpr> ParseDimPrimary();
  absl::StatusOr<int64_t> ParseIntToken(const Token& t, bool negative);
  absl::StatusOr<double> ParseFloatToken(const Token& t);
  absl::StatusOr<std::string> DecodeString(const Token& t);

  Lexer lexer_;
  Token tok_;
  const OpRegistry* registry_;
  const ParseOptions& options_;
  std::string source_;
  bool dim_mode_;
  int depth_ = 0;
  int region_depth_ = 0;

  absl::flat_hash_map<absl::string_view, Entry> values_;
  std::vector<Entry> numbered_;
  std::vector<absl::string_view> scope_names_;
  std::vector<size_t> scope_marks_;
  PendingUse pending_;
  Block placeholder_block_;
  Value* placeholder_;

  absl::flat_hash_map<absl::string_view, DimExpr> symbols_;
  absl::flat_hash_map<absl::string_view, Type> type_cache_;
  absl::flat_hash_set<absl::string_view> function_names_;
  std::vector<std::pair<Node*, Token>> invokes_;

  // Scratch space reused by every binding (no per-binding allocation).
  struct AttrEntry {
    Token name;
    AttrValue value;
    Token value_tok;
  };
  std::vector<AttrEntry> attr_scratch_;
  absl::Status TypeInvokeMask(AttrEntry& e);
  enum class LitForm : uint8_t { kScalar, kList, kHex, kElided };
  LitForm lit_form_ = LitForm::kScalar;
  Token lit_tok_;
  std::vector<LitNum> lit_nums_;
};

// ---------------------------------------------------------------------------------------------
// Values

absl::Status Parser::Define(const Token& name, Value* v) {
  const absl::string_view key = name.text.substr(1);
  Entry& e = SlotFor(key);
  if (e.value != nullptr && e.visible) {
    return ErrorAt(name, absl::StrFormat("redefinition of value '%s' (first defined at %d:%d)",
                                         name.text, e.line, e.col));
  }
  e = Entry{v, name.line, name.col, true};
  scope_names_.push_back(key);
  if (pending_.active && pending_.tok.text == name.text) pending_.defined_later = true;
  // Numeric names are kept for error messages; the printer renumbers them.
  v->set_name(std::string(key));
  return absl::OkStatus();
}

absl::StatusOr<Value*> Parser::Use(const Token& name) {
  if (const Entry* e = FindEntry(name.text.substr(1))) {
    if (e->visible) return e->value;
    return ErrorAt(name, absl::StrFormat("value '%s' is not visible here: it is defined inside a "
                                         "region at %d:%d",
                                         name.text, e->line, e->col));
  }
  if (!pending_.active) {
    pending_.active = true;
    pending_.defined_later = false;
    pending_.tok = name;
  }
  return placeholder_;
}

// ---------------------------------------------------------------------------------------------
// Module, functions, bodies

absl::StatusOr<std::unique_ptr<Module>> Parser::ParseModule() {
  if (registry_ == nullptr) registry_ = &OpRegistry::Global();
  auto module = std::make_unique<Module>();
  module->set_source_name(options_.source_name);
  while (!Is(Tok::kEof)) {
    if (!IsIdent("def")) return Expected("'def' to start a function");
    RETURN_IF_ERROR(ParseFunction(*module));
  }
  for (const auto& [node, tok] : invokes_) {
    if (!function_names_.contains(node->callee())) {
      return ErrorAt(tok, absl::StrCat("invoke of undefined function '", tok.text, "'"));
    }
  }
  return module;
}

absl::Status Parser::ParseFunction(Module& module) {
  const Token def = tok_;
  Advance();
  if (!Is(Tok::kGlobal)) return Expected("a function name like '@main' after 'def'");
  const Token name = tok_;
  if (!function_names_.insert(name.text.substr(1)).second) {
    return ErrorAt(name, absl::StrCat("redefinition of function '", name.text, "'"));
  }
  Function* f = module.AddFunction(std::string(name.text.substr(1)));
  f->set_loc(Location{def.line, def.col, "", ""});
  Advance();
  RETURN_IF_ERROR(Expect(Tok::kLParen, absl::StrCat("'(' after function name '", name.text, "'")));
  if (!Is(Tok::kRParen)) {
    while (true) {
      RETURN_IF_ERROR(ParseParam(f->body()));
      if (!Is(Tok::kComma)) break;
      Advance();
    }
  }
  RETURN_IF_ERROR(
      Expect(Tok::kRParen, absl::StrCat("',' or ')' in the parameters of '", name.text, "'")));
  if (Is(Tok::kArrow)) {
    Advance();
    std::vector<Type> results;
    while (true) {
      ASSIGN_OR_RETURN(Type t, ParseType());
      results.push_back(std::move(t));
      if (!Is(Tok::kComma)) break;
      Advance();
    }
    f->set_result_types(std::move(results));
  }
  while (IsIdent("assume")) RETURN_IF_ERROR(ParseAssumption(*f));
  if (IsIdent("attributes")) {
    Advance();
    if (!Is(Tok::kLBrace)) return Expected("'{' after 'attributes'");
    RETURN_IF_ERROR(ParseAttrDict());
    for (AttrEntry& e : attr_scratch_) f->mutable_attrs().Set(e.name.text, std::move(e.value));
  }
  RETURN_IF_ERROR(
      Expect(Tok::kLBrace, absl::StrCat("'{' to open the body of function '", name.text, "'")));
  RETURN_IF_ERROR(ParseBody(f->body(), name.text, /*in_region=*/false, nullptr));
  RETURN_IF_ERROR(Expect(Tok::kRBrace, absl::StrCat("'}' to close function '", name.text, "'")));
  if (pending_.active) return PendingError();
  ResetFunctionState();
  return absl::OkStatus();
}

// assume := 'assume' '(' dim ('==' | '<=') dim ',' STRING ')'
//          | 'assume' '(' dim 'in' '{' '1' ',' dim '}' ',' STRING ')'
absl::Status Parser::ParseAssumption(Function& f) {
  const Token head = tok_;
  Advance();
  if (!Is(Tok::kLParen)) return Expected("'(' after 'assume'");
  const bool saved = dim_mode_;
  dim_mode_ = true;
  Advance();
  Assumption a;
  ASSIGN_OR_RETURN(a.lhs, ParseDimSum());
  if (Is(Tok::kEqual) || Is(Tok::kLess)) {
    a.kind = Is(Tok::kEqual) ? Assumption::Kind::kEq : Assumption::Kind::kLe;
    Advance();
    if (!Is(Tok::kEqual)) return Expected("'==' or '<=' in 'assume(...)'");
    Advance();
    ASSIGN_OR_RETURN(a.rhs, ParseDimSum());
  } else if (IsIdent("in")) {
    a.kind = Assumption::Kind::kBroadcast;
    Advance();
    RETURN_IF_ERROR(Expect(Tok::kLBrace, "'{1, dim}' after 'in'"));
    if (!Is(Tok::kInt) || tok_.text != "1") return Expected("'1' in 'in {1, dim}'");
    Advance();
    RETURN_IF_ERROR(Expect(Tok::kComma, "',' after the 1 in 'in {1, dim}'"));
    ASSIGN_OR_RETURN(a.rhs, ParseDimSum());
    RETURN_IF_ERROR(Expect(Tok::kRBrace, "'}' after 'in {1, dim'"));
  } else {
    return Expected("'==', '<=' or 'in' in 'assume(...)'");
  }
  dim_mode_ = saved;
  RETURN_IF_ERROR(Expect(Tok::kComma, "',' and a reason string after the condition"));
  if (!Is(Tok::kString)) return Expected("a reason string in 'assume(...)'");
  ASSIGN_OR_RETURN(a.reason, DecodeString(tok_));
  Advance();
  RETURN_IF_ERROR(Expect(Tok::kRParen, "')' after the reason of 'assume'"));
  if (a.lhs.has_unknown() || a.rhs.has_unknown()) {
    return ErrorAt(head, absl::StrCat("'assume(", a.Condition(), ")' has an unknown dim '?'"));
  }
  if (!a.Satisfiable()) {
    return ErrorAt(head, absl::StrCat("'assume(", a.Condition(), ")' can never hold"));
  }
  f.AddAssumption(std::move(a));
  return absl::OkStatus();
}

absl::Status Parser::ParseParam(Block& block) {
  if (!Is(Tok::kValue)) return Expected("a parameter name like '%x'");
  const Token name = tok_;
  Advance();
  Type type;
  if (Is(Tok::kColon)) {
    Advance();
    ASSIGN_OR_RETURN(type, ParseType());
  }
  Value* param = block.AddParam(std::move(type));
  if (Is(Tok::kGlobal)) {
    ASSIGN_OR_RETURN(DeviceKind device, ParseDeviceToken());
    param->set_param_device(device);
  }
  return Define(name, param);
}

absl::Status Parser::ParseBody(Block& block, absl::string_view owner, bool in_region, Token* end) {
  const absl::string_view terminator = in_region ? "yield" : "return";
  while (true) {
    if (Is(Tok::kValue)) {
      RETURN_IF_ERROR(ParseBinding(block));
      continue;
    }
    if (IsIdent("return") || IsIdent("yield")) break;
    if (Is(Tok::kIdent)) {  // a binding without results: `invoke @f(%x)`
      RETURN_IF_ERROR(ParseBinding(block));
      continue;
    }
    if (Is(Tok::kRBrace) || Is(Tok::kEof)) {
      return ErrorAt(
          tok_, absl::StrCat(in_region ? "region of '" : "function '", owner, "' must end with '",
                             terminator, "', found ", DescribeToken(tok_)));
    }
    return Expected(absl::StrCat("a binding or '", terminator, "'"));
  }
  if (tok_.text != terminator) {
    return ErrorAt(tok_, in_region ? absl::StrCat("'return' inside the region of '", owner,
                                                  "'; region bodies end with 'yield'")
                                   : absl::StrCat("'yield' outside of a region; function '", owner,
                                                  "' must end with 'return'"));
  }
  if (end != nullptr) *end = tok_;
  Advance();
  std::vector<Value*> results;
  if (Is(Tok::kValue)) {
    while (true) {
      if (!Is(Tok::kValue))
        return Expected(absl::StrCat("a value after ',' in '", terminator, "'"));
      ASSIGN_OR_RETURN(Value * v, Use(tok_));
      results.push_back(v);
      Advance();
      if (!Is(Tok::kComma)) break;
      Advance();
    }
  }
  block.set_results(std::move(results));
  if (!Is(Tok::kRBrace)) {
    return Expected(absl::StrCat("'}' after '", terminator, "' and its values"));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseOperands(Node& node, absl::string_view what) {
  RETURN_IF_ERROR(Expect(Tok::kLParen, absl::StrCat("'(' after '", what, "'")));
  if (Is(Tok::kRParen)) {
    Advance();
    return absl::OkStatus();
  }
  while (true) {
    if (!Is(Tok::kValue)) {
      return Expected(absl::StrCat("a value like '%x' in the operands of '", what, "'"));
    }
    ASSIGN_OR_RETURN(Value * v, Use(tok_));
    node.AddOperand(v);
    Advance();
    if (Is(Tok::kComma)) {
      Advance();
      continue;
    }
    return Expect(Tok::kRParen, absl::StrCat("')' after operands of '", what, "'"));
  }
}

// ---------------------------------------------------------------------------------------------
// Bindings

absl::Status Parser::ParseBinding(Block& block) {
  absl::InlinedVector<Token, 4> names;
  const Token first = tok_;
  if (Is(Tok::kValue)) {
    while (true) {
      names.push_back(tok_);
      Advance();
      if (!Is(Tok::kComma)) break;
      Advance();
      if (!Is(Tok::kValue)) return Expected("a result name after ','");
    }
    RETURN_IF_ERROR(Expect(Tok::kEqual, "'=' after the result names"));
  }
  const int num_names = static_cast<int>(names.size());
  const Location loc{first.line, first.col, "", ""};
  if (!Is(Tok::kIdent))
    return Expected(
        "an op name or 'constant', 'tuple', 'get_item', "
        "'invoke', 'if', 'loop'");
  const Token head = tok_;
  auto count_error = [&](int want) {
    const bool keyword = head.text == "constant" || head.text == "tuple" || head.text == "get_item";
    return ErrorAtLoc(loc, absl::StrFormat("%s'%s' has %d %s but %d %s bound", keyword ? "" : "op ",
                                           head.text, want, Plural(want, "result", "results"),
                                           num_names, Plural(num_names, "name is", "names are")));
  };

  std::unique_ptr<Node> node;
  int num_results = num_names;
  bool is_constant = false;
  // seq.empty and opt.none have no operand to type them: their type is declared.
  bool needs_type = false;
  if (const std::optional<Builtin> builtin = ParseBuiltin(head.text)) {
    node = std::make_unique<Node>(NodeKind::kBuiltin);
    node->set_builtin(*builtin);
    Advance();
    RETURN_IF_ERROR(ParseOperands(*node, head.text));
    if (!BuiltinAcceptsOperandCount(*builtin, node->num_operands())) {
      return ErrorAt(head, absl::StrFormat("'%s' does not take %d %s", head.text, node->num_operands(),
                                           Plural(node->num_operands(), "operand", "operands")));
    }
    needs_type = *builtin == Builtin::kSeqEmpty || *builtin == Builtin::kOptNone;
    if (num_names != 1) return count_error(1);
  } else if (head.text == "constant") {
    is_constant = true;
    node = std::make_unique<Node>(NodeKind::kConstant);
    Advance();
    RETURN_IF_ERROR(Expect(Tok::kLess, "'<' after 'constant'"));
    RETURN_IF_ERROR(ParseLiteral());
    RETURN_IF_ERROR(Expect(Tok::kGreater, "'>' after the constant literal"));
    if (num_names != 1) return count_error(1);
  } else if (head.text == "tuple") {
    node = std::make_unique<Node>(NodeKind::kTuple);
    Advance();
    RETURN_IF_ERROR(ParseOperands(*node, "tuple"));
    if (num_names != 1) return count_error(1);
  } else if (head.text == "get_item") {
    node = std::make_unique<Node>(NodeKind::kGetItem);
    Advance();
    RETURN_IF_ERROR(ParseOperands(*node, "get_item"));
    if (node->num_operands() != 1) {
      return ErrorAt(head,
                     absl::StrFormat("'get_item' takes 1 operand, found %d", node->num_operands()));
    }
    if (!Is(Tok::kLBrace)) return Expected("'{index = N}' after 'get_item(...)'");
    const Token brace = tok_;
    RETURN_IF_ERROR(ParseAttrDict());
    if (attr_scratch_.size() != 1 || attr_scratch_[0].name.text != "index" ||
        TypeOf(attr_scratch_[0].value) != AttrType::kInt) {
      return ErrorAt(brace, "'get_item' takes exactly one attribute, {index = N} with N an int");
    }
    const int64_t index = std::get<int64_t>(attr_scratch_[0].value);
    if (index < 0) {
      return ErrorAt(attr_scratch_[0].value_tok,
                     absl::StrCat("tuple index must not be negative, found ", index));
    }
    node->mutable_attrs().Set("index", index);
    if (num_names != 1) return count_error(1);
  } else if (head.text == "invoke") {
    node = std::make_unique<Node>(NodeKind::kInvoke);
    Advance();
    if (!Is(Tok::kGlobal)) return Expected("a function name like '@f' after 'invoke'");
    const Token callee = tok_;
    node->set_callee(std::string(callee.text.substr(1)));
    Advance();
    RETURN_IF_ERROR(ParseOperands(*node, callee.text));
    if (Is(Tok::kLBrace)) {
      RETURN_IF_ERROR(ParseAttrDict());
      for (AttrEntry& e : attr_scratch_) {
        if (e.name.text == kShapeFuncMaskAttr) RETURN_IF_ERROR(TypeInvokeMask(e));
        node->mutable_attrs().Set(e.name.text, std::move(e.value));
      }
    }
    invokes_.emplace_back(node.get(), callee);
  } else if (head.text == "if") {
    node = std::make_unique<Node>(NodeKind::kIf);
    RETURN_IF_ERROR(ParseIf(*node, loc, num_names));
  } else if (head.text == "loop") {
    node = std::make_unique<Node>(NodeKind::kLoop);
    RETURN_IF_ERROR(ParseLoop(*node, head, loc, num_names));
  } else {
    Node* call = nullptr;
    RETURN_IF_ERROR(ParseCall(&call, head, &num_results));
    node.reset(call);
    if (num_results != num_names) return count_error(num_results);
  }

  // Optional (required for constants) result types.
  std::vector<Type> types;
  Token colon = tok_;
  if (Is(Tok::kColon)) {
    Advance();
    while (true) {
      ASSIGN_OR_RETURN(Type t, ParseType());
      types.push_back(std::move(t));
      if (!Is(Tok::kComma)) break;
      Advance();
    }
    if (static_cast<int>(types.size()) != num_results) {
      return ErrorAt(colon, absl::StrFormat("%d %s given for %d %s", types.size(),
                                            Plural(types.size(), "type", "types"), num_results,
                                            Plural(num_results, "result", "results")));
    }
  } else if (is_constant) {
    return Expected("':' and the type of the constant");
  } else if (needs_type) {
    return Expected(absl::StrCat("':' and the type of '", head.text, "'"));
  }
  if (is_constant) {
    ASSIGN_OR_RETURN(Tensor value, BuildConstant(types[0], colon));
    node->set_constant_value(std::move(value));
  }
  if (Is(Tok::kGlobal)) {
    ASSIGN_OR_RETURN(DeviceKind device, ParseDeviceToken());
    node->set_device(device);
  }
  Location node_loc = loc;
  if (IsIdent("loc")) {
    Advance();
    RETURN_IF_ERROR(Expect(Tok::kLParen, "'(' after 'loc'"));
    // loc("name") | loc("file":line:col) | loc("file":line:col, "name")
    if (!Is(Tok::kString)) return Expected("a string in 'loc(...)'");
    ASSIGN_OR_RETURN(std::string first, DecodeString(tok_));
    Advance();
    if (Is(Tok::kColon)) {
      node_loc.file = std::move(first);
      for (int* part : {&node_loc.line, &node_loc.col}) {
        RETURN_IF_ERROR(Expect(Tok::kColon, "':' in 'loc(\"file\":line:col)'"));
        if (!Is(Tok::kInt)) return Expected("a line and column in 'loc(\"file\":line:col)'");
        int64_t v = 0;
        if (!absl::SimpleAtoi(tok_.text, &v) || v < 1 || v > std::numeric_limits<int>::max()) {
          return ErrorAt(tok_, absl::StrFormat("'loc(...)' line or column '%s' is not a positive int",
                                               tok_.text));
        }
        *part = static_cast<int>(v);
        Advance();
      }
      if (Is(Tok::kComma)) {
        Advance();
        if (!Is(Tok::kString)) return Expected("a source name after ',' in 'loc(...)'");
        ASSIGN_OR_RETURN(node_loc.name, DecodeString(tok_));
        Advance();
      } else {
        node_loc.name.clear();
      }
    } else {
      node_loc.name = std::move(first);
    }
    RETURN_IF_ERROR(Expect(Tok::kRParen, "')' after the location"));
  }
  node->set_loc(std::move(node_loc));
  for (int i = 0; i < num_names; ++i) {
    Value* v = node->AddResult(types.empty() ? Type() : std::move(types[i]));
    RETURN_IF_ERROR(Define(names[i], v));
  }
  block.Append(std::move(node));
  return absl::OkStatus();
}

// Regions recurse through ParseBody -> ParseBinding -> ParseIf/ParseLoop -> ParseBody; these
// stay out of line so the frames of the recursion stay small.
ABSL_ATTRIBUTE_NOINLINE absl::Status Parser::ParseIf(Node& node, const Location& loc,
                                                     int num_names) {
  Advance();
  RETURN_IF_ERROR(Expect(Tok::kLParen, "'(' after 'if'"));
  if (!Is(Tok::kValue)) return Expected("a condition value like '%c' after 'if ('");
  ASSIGN_OR_RETURN(Value * cond, Use(tok_));
  node.AddOperand(cond);
  Advance();
  RETURN_IF_ERROR(Expect(Tok::kRParen, "')' after the condition of 'if'"));
  Nesting nesting(this, /*region=*/true);
  RETURN_IF_ERROR(nesting.Check());
  Token then_end, else_end;
  RETURN_IF_ERROR(Expect(Tok::kLBrace, "'{' to open the then-branch of 'if'"));
  PushScope();
  RETURN_IF_ERROR(ParseBody(*node.region(0), "if", /*in_region=*/true, &then_end));
  PopScope();
  RETURN_IF_ERROR(Expect(Tok::kRBrace, "'}' to close the then-branch of 'if'"));
  if (!IsIdent("else")) return Expected("'else' after the then-branch of 'if'");
  Advance();
  RETURN_IF_ERROR(Expect(Tok::kLBrace, "'{' to open the else-branch of 'if'"));
  PushScope();
  RETURN_IF_ERROR(ParseBody(*node.region(1), "if", /*in_region=*/true, &else_end));
  PopScope();
  RETURN_IF_ERROR(Expect(Tok::kRBrace, "'}' to close the else-branch of 'if'"));
  const size_t then_n = node.region(0)->results().size();
  const size_t else_n = node.region(1)->results().size();
  if (then_n != else_n) {
    return ErrorAt(else_end,
                   absl::StrFormat("the else-branch of 'if' yields %d %s but the then-branch "
                                   "yields %d",
                                   else_n, Plural(else_n, "value", "values"), then_n));
  }
  if (static_cast<int>(then_n) != num_names) {
    return ErrorAtLoc(loc, absl::StrFormat("'if' binds %d %s but its branches yield %d", num_names,
                                           Plural(num_names, "result", "results"), then_n));
  }
  return absl::OkStatus();
}

ABSL_ATTRIBUTE_NOINLINE absl::Status Parser::ParseLoop(Node& node, const Token& head,
                                                       const Location& loc, int num_names) {
  Advance();
  RETURN_IF_ERROR(ParseOperands(node, "loop"));
  if (node.num_operands() < 2) {
    return ErrorAt(head, absl::StrFormat("'loop' takes a trip count, a condition and the "
                                         "carried values, found %d %s",
                                         node.num_operands(),
                                         Plural(node.num_operands(), "operand", "operands")));
  }
  const int carried = node.num_operands() - 2;
  Nesting nesting(this, /*region=*/true);
  RETURN_IF_ERROR(nesting.Check());
  if (!Is(Tok::kLParen)) return Expected("'(' with the parameters of the loop body");
  const Token params_tok = tok_;
  Advance();
  Block& body = *node.region(0);
  PushScope();
  if (!Is(Tok::kRParen)) {
    while (true) {
      RETURN_IF_ERROR(ParseParam(body));
      if (!Is(Tok::kComma)) break;
      Advance();
    }
  }
  RETURN_IF_ERROR(Expect(Tok::kRParen, "',' or ')' in the loop body parameters"));
  if (body.num_params() != 2 + carried) {
    return ErrorAt(params_tok, absl::StrFormat("the loop body has %d %s but needs %d (iteration, "
                                               "condition and %d carried)",
                                               body.num_params(),
                                               Plural(body.num_params(), "parameter", "parameters"),
                                               2 + carried, carried));
  }
  Token yield;
  RETURN_IF_ERROR(Expect(Tok::kLBrace, "'{' to open the loop body"));
  RETURN_IF_ERROR(ParseBody(body, "loop", /*in_region=*/true, &yield));
  PopScope();
  RETURN_IF_ERROR(Expect(Tok::kRBrace, "'}' to close the loop body"));
  const int yields = static_cast<int>(body.results().size());
  if (yields < 1 + carried) {
    return ErrorAt(
        yield, absl::StrFormat("the loop body yields %d %s but needs at least %d "
                               "(condition and %d carried)",
                               yields, Plural(yields, "value", "values"), 1 + carried, carried));
  }
  if (num_names != yields - 1) {
    return ErrorAtLoc(loc, absl::StrFormat("'loop' binds %d %s but its body yields %d carried "
                                           "and %d scan values",
                                           num_names, Plural(num_names, "result", "results"),
                                           carried, yields - 1 - carried));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseCall(Node** out, const Token& head, int* num_results) {
  const OpDef* op = registry_->Find(head.text);
  if (op == nullptr) return ErrorAt(head, absl::StrCat("unknown op '", head.text, "'"));
  auto node = std::make_unique<Node>(NodeKind::kCall);
  node->set_op(op);
  Advance();
  RETURN_IF_ERROR(ParseOperands(*node, head.text));
  if (!op->AcceptsInputCount(node->num_operands())) {
    const int want = static_cast<int>(op->inputs().size());
    return ErrorAt(head,
                   absl::StrFormat("op '%s' takes %s%d %s, found %d", head.text,
                                   op->variadic() ? "at least " : "", want,
                                   Plural(want, "operand", "operands"), node->num_operands()));
  }
  Attrs attrs;
  if (Is(Tok::kLBrace)) {
    RETURN_IF_ERROR(ParseAttrDict());
    for (AttrEntry& e : attr_scratch_) {
      const AttrSpec* spec = nullptr;
      for (const AttrSpec& s : op->attrs()) {
        if (s.name == e.name.text) spec = &s;
      }
      if (spec == nullptr) {
        std::vector<absl::string_view> known;
        for (const AttrSpec& s : op->attrs()) known.push_back(s.name);
        return ErrorAt(
            e.name,
            absl::StrFormat("op '%s' has no attribute '%s' (known: %s)", head.text, e.name.text,
                            known.empty() ? "none" : absl::StrJoin(known, ", ")));
      }
      if (!AttrTypeAccepts(spec->type, TypeOf(e.value))) {
        return ErrorAt(e.value_tok,
                       absl::StrFormat("attribute '%s' of op '%s' must be of type %s, found %s %s",
                                       e.name.text, head.text, AttrTypeName(spec->type),
                                       AttrTypeName(TypeOf(e.value)), AttrValueToString(e.value)));
      }
      attrs.Set(e.name.text, std::move(e.value));
    }
  }
  absl::StatusOr<Attrs> checked = op->CheckAttrs(attrs);
  if (!checked.ok()) return ErrorAt(head, checked.status().message());
  node->set_attrs(*std::move(checked));
  *num_results = op->num_outputs();
  *out = node.release();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Attributes and literals

absl::Status Parser::ParseAttrDict() {
  attr_scratch_.clear();
  Advance();  // '{'
  while (true) {
    if (!Is(Tok::kIdent) || tok_.text.find('.') != absl::string_view::npos) {
      return Expected("an attribute name");
    }
    const Token name = tok_;
    for (const AttrEntry& e : attr_scratch_) {
      if (e.name.text == name.text) {
        return ErrorAt(name, absl::StrCat("duplicate attribute '", name.text, "'"));
      }
    }
    Advance();
    RETURN_IF_ERROR(
        Expect(Tok::kEqual, absl::StrCat("'=' after attribute name '", name.text, "'")));
    const Token value_tok = tok_;
    ASSIGN_OR_RETURN(AttrValue value, ParseAttrValue());
    attr_scratch_.push_back(AttrEntry{name, std::move(value), value_tok});
    if (Is(Tok::kComma)) {
      Advance();
      continue;
    }
    return Expect(Tok::kRBrace, "',' or '}' in the attributes");
  }
}

absl::StatusOr<AttrValue> Parser::ParseAttrValue() {
  if (Is(Tok::kString)) {
    ASSIGN_OR_RETURN(std::string s, DecodeString(tok_));
    Advance();
    return AttrValue(std::move(s));
  }
  if (Is(Tok::kIdent)) {
    if (tok_.text == "true" || tok_.text == "false") {
      const bool b = tok_.text == "true";
      Advance();
      return AttrValue(b);
    }
    if (std::optional<DType> dt = ParseDType(tok_.text)) {
      Advance();
      return AttrValue(*dt);
    }
    // f[] and dep[]: the empty float list and the empty mask (of no parameters), tagged with
    // their element type because a bare `[]` reads as the empty int list.
    if (tok_.text == "f" || tok_.text == "dep") {
      const bool floats = tok_.text == "f";
      const std::string tag(tok_.text);
      const std::string form = absl::StrCat(tag, "[]");
      Advance();
      if (!Is(Tok::kLBracket)) {
        return Expected(absl::StrCat("'[' after '", tag, "' (the empty ",
                                     floats ? "float list" : "mask", " is '", form, "')"));
      }
      Advance();
      if (!Is(Tok::kRBracket)) return Expected(absl::StrCat("']' in '", form, "'"));
      Advance();
      return floats ? AttrValue(std::vector<double>()) : AttrValue(std::vector<InputDep>());
    }
  }
  if (Is(Tok::kLBracket)) {
    Advance();
    if (Is(Tok::kIdent) && tok_.text != "true" && tok_.text != "false" && tok_.text != "inf" &&
        tok_.text != "nan") {
      return ParseDepList();
    }
    std::vector<LitNum> nums;
    bool any_float = false;
    if (!Is(Tok::kRBracket)) {
      while (true) {
        LitNum n;
        RETURN_IF_ERROR(ParseNumber(&n, "a number in the attribute list"));
        if (n.kind == LitNum::Kind::kBool) {
          return ErrorAt(n.tok, "attribute lists hold numbers, found a bool");
        }
        any_float |= n.kind == LitNum::Kind::kFloat;
        nums.push_back(n);
        if (!Is(Tok::kComma)) break;
        Advance();
      }
    }
    RETURN_IF_ERROR(Expect(Tok::kRBracket, "',' or ']' in the attribute list"));
    if (any_float) {
      std::vector<double> out;
      out.reserve(nums.size());
      for (const LitNum& n : nums) {
        out.push_back(n.kind == LitNum::Kind::kFloat ? n.d : static_cast<double>(n.i));
      }
      return AttrValue(std::move(out));
    }
    std::vector<int64_t> out;
    out.reserve(nums.size());
    for (const LitNum& n : nums) out.push_back(n.i);
    return AttrValue(std::move(out));
  }
  LitNum n;
  RETURN_IF_ERROR(ParseNumber(&n, "an attribute value"));
  if (n.kind == LitNum::Kind::kFloat) return AttrValue(n.d);
  if (n.kind == LitNum::Kind::kBool) return AttrValue(n.i != 0);
  return AttrValue(n.i);
}

// dep-list := '[' dep (',' dep)* ']'   dep := 'none' | 'shape' | 'value' | 'shape' '+' 'value'
// (the '[' is consumed; the current token is the first word). `shape+value` lexes as three
// tokens, so the two halves are joined here and the whole looked up by its InputDepName.
absl::StatusOr<AttrValue> Parser::ParseDepList() {
  std::vector<InputDep> deps;
  while (true) {
    if (!Is(Tok::kIdent)) {
      return Expected("an input dependence (none, shape, value or shape+value)");
    }
    const Token word = tok_;
    std::string name(word.text);
    Advance();
    if (name == "shape" && Is(Tok::kPlus)) {
      Advance();
      if (!IsIdent("value")) return Expected("'value' after 'shape+'");
      name = "shape+value";
      Advance();
    }
    const std::optional<InputDep> dep = ParseInputDep(name);
    if (!dep) {
      return ErrorAt(word, absl::StrFormat("unknown input dependence '%s' in the mask (expected "
                                           "none, shape, value or shape+value)",
                                           name));
    }
    deps.push_back(*dep);
    if (!Is(Tok::kComma)) break;
    Advance();
  }
  RETURN_IF_ERROR(Expect(Tok::kRBracket, "',' or ']' in the mask"));
  return AttrValue(std::move(deps));
}

// An invoke's `mask` is a dependence list. The integer spelling older text used
// (`mask = [1, 2]`, 0..3 as the executable stores it) still reads, converted here with the
// one range check (InputDepFromInt); the printer writes only the word form.
absl::Status Parser::TypeInvokeMask(AttrEntry& e) {
  if (TypeOf(e.value) != AttrType::kIntList) return absl::OkStatus();  // the verifier judges it
  std::vector<InputDep> deps;
  for (int64_t m : std::get<std::vector<int64_t>>(e.value)) {
    absl::StatusOr<InputDep> dep = InputDepFromInt(m);
    if (!dep.ok()) return ErrorAt(e.value_tok, dep.status().message());
    deps.push_back(*dep);
  }
  e.value = std::move(deps);
  return absl::OkStatus();
}

// number := ['-'] (INT | FLOAT | 'inf' | 'nan') | 'true' | 'false'
absl::Status Parser::ParseNumber(LitNum* out, absl::string_view what) {
  out->tok = tok_;
  bool negative = false;
  if (Is(Tok::kMinus)) {
    negative = true;
    Advance();
  }
  if (Is(Tok::kInt)) {
    ASSIGN_OR_RETURN(out->i, ParseIntToken(tok_, negative));
    out->kind = LitNum::Kind::kInt;
  } else if (Is(Tok::kFloat)) {
    ASSIGN_OR_RETURN(double d, ParseFloatToken(tok_));
    out->kind = LitNum::Kind::kFloat;
    out->d = negative ? -d : d;
  } else if (IsIdent("inf") || IsIdent("nan")) {
    const double d = tok_.text == "inf" ? std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::quiet_NaN();
    out->kind = LitNum::Kind::kFloat;
    out->d = negative ? -d : d;
  } else if (!negative && (IsIdent("true") || IsIdent("false"))) {
    out->kind = LitNum::Kind::kBool;
    out->i = tok_.text == "true" ? 1 : 0;
  } else {
    return Expected(what);
  }
  Advance();
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Parser::ParseIntToken(const Token& t, bool negative) {
  uint64_t v = 0;
  for (char c : t.text) {
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v)) {
      v = UINT64_MAX;
      break;
    }
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (v > limit) {
    return ErrorAt(t, absl::StrCat("integer literal '", negative ? "-" : "", t.text,
                                   "' does not fit in 64 bits"));
  }
  if (negative) return v == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(v);
  return static_cast<int64_t>(v);
}

absl::StatusOr<double> Parser::ParseFloatToken(const Token& t) {
  double d = 0;
  const auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), d);
  if (ec == std::errc() && ptr == t.text.data() + t.text.size()) return d;
  // Out of range: accept underflow to a subnormal or zero, reject overflow.
  const std::string copy(t.text);
  d = std::strtod(copy.c_str(), nullptr);
  if (std::isfinite(d)) return d;
  return ErrorAt(t, absl::StrCat("float literal '", t.text, "' is out of range"));
}

absl::StatusOr<std::string> Parser::DecodeString(const Token& t) {
  std::string out;
  const absl::string_view body = t.text.substr(1, t.text.size() - 2);
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      out += body[i];
      continue;
    }
    if (i + 1 >= body.size()) break;  // cannot happen: the lexer pairs backslashes
    const char e = body[++i];
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'x':
        if (i + 2 < body.size() && IsHexDigit(body[i + 1]) && IsHexDigit(body[i + 2])) {
          out += static_cast<char>((HexValue(body[i + 1]) << 4) | HexValue(body[i + 2]));
          i += 2;
          break;
        }
        [[fallthrough]];
      default:
        return ErrorAt(
            t, absl::StrCat("invalid escape '\\", absl::string_view(&e, 1), "' in string literal"));
    }
  }
  return out;
}

// literal := number | '[' [number {',' number}] ']' | HEX | 'elided'
absl::Status Parser::ParseLiteral() {
  lit_tok_ = tok_;
  lit_nums_.clear();
  if (Is(Tok::kHex)) {
    lit_form_ = LitForm::kHex;
    Advance();
    return absl::OkStatus();
  }
  if (IsIdent("elided")) {
    if (!options_.allow_elided_constants) {
      return ErrorAt(tok_, absl::StrCat("elided constant data (`constant<elided>`: no values in "
                                        "the text) is not accepted here; allow it with ",
                                        options_.allow_elided_constants_hint,
                                        " (the values are then all zeros)"));
    }
    lit_form_ = LitForm::kElided;
    Advance();
    return absl::OkStatus();
  }
  if (Is(Tok::kLBracket)) {
    lit_form_ = LitForm::kList;
    Advance();
    if (!Is(Tok::kRBracket)) {
      while (true) {
        LitNum n;
        RETURN_IF_ERROR(ParseNumber(&n, "a number in the constant literal"));
        lit_nums_.push_back(n);
        if (!Is(Tok::kComma)) break;
        Advance();
      }
    }
    return Expect(Tok::kRBracket, "',' or ']' in the constant literal");
  }
  lit_form_ = LitForm::kScalar;
  LitNum n;
  RETURN_IF_ERROR(ParseNumber(&n, "a constant literal (number, '[...]', hex bytes or 'elided')"));
  lit_nums_.push_back(n);
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Parser::BuildConstant(const Type& type, const Token& type_tok) {
  if (!type.is_tensor() || !type.is_static()) {
    return ErrorAt(type_tok,
                   absl::StrCat("a constant needs a static tensor type, found ", type.ToString()));
  }
  std::vector<int64_t> shape;
  shape.reserve(type.rank());
  for (const DimExpr& d : type.shape()) shape.push_back(d.constant());
  absl::StatusOr<int64_t> count = CheckedNumElements(shape);
  if (!count.ok()) return ErrorAt(type_tok, count.status().message());
  const DType dtype = type.dtype();
  const int64_t elem_size = DTypeSize(dtype);
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(*count, elem_size, &nbytes)) {
    return ErrorAt(type_tok, absl::StrCat("constant of type ", type.ToString(), " is too large"));
  }
  switch (lit_form_) {
    case LitForm::kElided: {
      if (nbytes > options_.max_elided_bytes) {
        return ErrorAt(lit_tok_, absl::StrFormat("elided constant of %d bytes is too large to "
                                                 "materialise (limit %d bytes)",
                                                 nbytes, options_.max_elided_bytes));
      }
      if (options_.elided_constants != nullptr) ++*options_.elided_constants;
      return Tensor::Zeros(dtype, std::move(shape));
    }
    case LitForm::kHex: {
      const absl::string_view digits = lit_tok_.text.substr(2);
      if (digits.size() % 2 != 0) {
        return ErrorAt(lit_tok_, "hex constant data has an odd number of digits");
      }
      const int64_t bytes = static_cast<int64_t>(digits.size() / 2);
      if (bytes != nbytes) {
        return ErrorAt(lit_tok_, absl::StrFormat("constant has %d bytes of data but its type %s "
                                                 "needs %d",
                                                 bytes, type.ToString(), nbytes));
      }
      Tensor t = Tensor::Zeros(dtype, std::move(shape));
      uint8_t* out = t.mutable_data();
      for (int64_t i = 0; i < bytes; ++i) {
        out[i] = static_cast<uint8_t>((HexValue(digits[2 * i]) << 4) | HexValue(digits[2 * i + 1]));
      }
      return t;
    }
    case LitForm::kScalar:
    case LitForm::kList:
      break;
  }
  const int64_t given = static_cast<int64_t>(lit_nums_.size());
  if (given != *count) {
    return ErrorAt(lit_tok_,
                   absl::StrFormat("constant has %d %s but its type %s needs %d", given,
                                   Plural(given, "element", "elements"), type.ToString(), *count));
  }
  Tensor t = Tensor::Zeros(dtype, std::move(shape));
  for (int64_t i = 0; i < given; ++i) {
    const LitNum& n = lit_nums_[i];
    if (dtype == DType::kBool) {
      if (n.kind == LitNum::Kind::kFloat || n.i < 0 || n.i > 1) {
        return ErrorAt(n.tok, absl::StrCat("expected true or false in a bool constant, found ",
                                           DescribeToken(n.tok)));
      }
      t.SetInt64(i, n.i);
    } else if (IsFloat(dtype)) {
      if (n.kind == LitNum::Kind::kBool) {
        return ErrorAt(n.tok, absl::StrCat("expected a number in a ", DTypeName(dtype),
                                           " constant, found ", DescribeToken(n.tok)));
      }
      const double d = n.kind == LitNum::Kind::kFloat ? n.d : static_cast<double>(n.i);
      // Magnitudes from which rounding to the dtype gives infinity.
      const double overflow = dtype == DType::kF16    ? 65520.0
                              : dtype == DType::kBF16 ? 3.3961775292304957e38
                                                      : 3.4028235677973366e38;
      if (dtype != DType::kF64 && std::isfinite(d) && std::fabs(d) >= overflow) {
        return ErrorAt(n.tok, absl::StrCat("value ", DescribeToken(n.tok), " is out of range for ",
                                           DTypeName(dtype)));
      }
      t.SetDouble(i, d);
    } else {
      if (n.kind != LitNum::Kind::kInt) {
        return ErrorAt(n.tok, absl::StrCat("expected an integer in a ", DTypeName(dtype),
                                           " constant, found ", DescribeToken(n.tok)));
      }
      int64_t lo = INT64_MIN, hi = INT64_MAX;
      switch (dtype) {
        case DType::kI8:
          lo = INT8_MIN, hi = INT8_MAX;
          break;
        case DType::kU8:
          lo = 0, hi = UINT8_MAX;
          break;
        case DType::kI16:
          lo = INT16_MIN, hi = INT16_MAX;
          break;
        case DType::kU16:
          lo = 0, hi = UINT16_MAX;
          break;
        case DType::kI32:
          lo = INT32_MIN, hi = INT32_MAX;
          break;
        case DType::kU32:
          lo = 0, hi = UINT32_MAX;
          break;
        case DType::kU64:  // parsed as int64: values from 2^63 up are not written in text
          lo = 0;
          break;
        default:
          break;
      }
      if (n.i < lo || n.i > hi) {
        return ErrorAt(n.tok,
                       absl::StrCat("value ", n.i, " is out of range for ", DTypeName(dtype)));
      }
      t.SetInt64(i, n.i);
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// Types and dimensions

absl::StatusOr<Type> Parser::ParseType() {
  Nesting nesting(this);
  RETURN_IF_ERROR(nesting.Check());
  if (Is(Tok::kLParen)) {
    Advance();
    std::vector<Type> fields;
    if (!Is(Tok::kRParen)) {
      while (true) {
        ASSIGN_OR_RETURN(Type t, ParseType());
        fields.push_back(std::move(t));
        if (!Is(Tok::kComma)) break;
        Advance();
      }
    }
    RETURN_IF_ERROR(Expect(Tok::kRParen, "',' or ')' in the tuple type"));
    return Type::Tuple(std::move(fields));
  }
  if (!Is(Tok::kIdent)) return Expected("a type like 'f32[n, 4]' or '(f32[2], i64[])'");
  if (tok_.text == "seq" || tok_.text == "opt") {
    const bool is_seq = tok_.text == "seq";
    Advance();
    RETURN_IF_ERROR(Expect(Tok::kLess, absl::StrCat("'<' after '", is_seq ? "seq" : "opt", "'")));
    Type inner;  // `seq<?>`: element type not known yet (ONNX SequenceEmpty)
    if (Is(Tok::kQuestion)) {
      Advance();
    } else {
      ASSIGN_OR_RETURN(inner, ParseType());
    }
    RETURN_IF_ERROR(Expect(Tok::kGreater, "'>' after the contained type"));
    return is_seq ? Type::Sequence(std::move(inner)) : Type::Optional(std::move(inner));
  }
  if (tok_.text == "storage") {
    Advance();
    if (!Is(Tok::kLBracket)) return Expected("'[' and a byte count after 'storage'");
    const bool saved = dim_mode_;
    dim_mode_ = true;
    Advance();
    const Token start = tok_;
    ASSIGN_OR_RETURN(DimExpr bytes, ParseDimSum());
    if (bytes.is_constant() && bytes.constant() < 0) {
      return ErrorAt(start, absl::StrCat("storage size must not be negative, found ", bytes.constant()));
    }
    if (!Is(Tok::kRBracket)) return Expected("']' after the storage size");
    dim_mode_ = saved;
    Advance();
    return Type::Storage(std::move(bytes));
  }
  const std::optional<DType> dtype = ParseDType(tok_.text);
  if (!dtype) return ErrorAt(tok_, absl::StrCat("unknown dtype '", tok_.text, "'"));
  const Token dtype_tok = tok_;
  // Most types repeat: look the source text `f32[n, 4]` up before parsing it.
  absl::string_view cache_key;
  const absl::string_view rest = lexer_.Rest();
  if (!rest.empty() && rest[0] == '[') {
    for (size_t i = 1; i < rest.size(); ++i) {
      const char c = rest[i];
      if (c == ']') {
        cache_key = absl::string_view(dtype_tok.text.data(), dtype_tok.text.size() + i + 1);
        break;
      }
      if (c == '\n' || c == '[' || c == '"') break;
    }
  }
  if (!cache_key.empty()) {
    auto it = type_cache_.find(cache_key);
    if (it != type_cache_.end()) {
      lexer_.Skip(cache_key.size() - dtype_tok.text.size());
      Advance();
      return it->second;
    }
  }
  Advance();
  if (!Is(Tok::kLBracket)) {
    return Expected(absl::StrCat("'[' after dtype '", dtype_tok.text, "'"));
  }
  const bool saved_mode = dim_mode_;
  dim_mode_ = true;
  Advance();
  std::vector<DimExpr> shape;
  if (!Is(Tok::kRBracket)) {
    while (true) {
      const Token start = tok_;
      ASSIGN_OR_RETURN(DimExpr d, ParseDimSum());
      if (d.is_constant() && d.constant() < 0) {
        return ErrorAt(start, absl::StrCat("dimension must not be negative, found ", d.constant()));
      }
      shape.push_back(std::move(d));
      if (!Is(Tok::kComma)) break;
      Advance();
    }
  }
  if (!Is(Tok::kRBracket)) return Expected("',' or ']' in the shape");
  dim_mode_ = saved_mode;
  Advance();
  Type type = Type::Tensor(*dtype, std::move(shape));
  if (!cache_key.empty()) type_cache_.emplace(cache_key, type);
  return type;
}

// dim sum := term {('+' | '-') term}
absl::StatusOr<DimExpr> Parser::ParseDimSum() {
  Nesting nesting(this);
  RETURN_IF_ERROR(nesting.Check());
  ASSIGN_OR_RETURN(DimExpr lhs, ParseDimTerm());
  while (Is(Tok::kPlus) || Is(Tok::kMinus)) {
    const bool plus = Is(Tok::kPlus);
    Advance();
    ASSIGN_OR_RETURN(DimExpr rhs, ParseDimTerm());
    lhs = plus ? lhs + rhs : lhs - rhs;
  }
  return lhs;
}

// term := '-' term | product   (unary minus binds looser than * // %: -n//2 == -(n//2))
absl::StatusOr<DimExpr> Parser::ParseDimTerm() {
  if (Is(Tok::kMinus)) {
    Nesting nesting(this);
    RETURN_IF_ERROR(nesting.Check());
    Advance();
    if (Is(Tok::kInt) && tok_.text == "9223372036854775808") {  // INT64_MIN: no positive twin
      Advance();
      return ParseDimProductFrom(DimExpr(INT64_MIN));
    }
    ASSIGN_OR_RETURN(DimExpr x, ParseDimTerm());
    return DimExpr(0) - x;
  }
  ASSIGN_OR_RETURN(DimExpr lhs, ParseDimPrimary());
  return ParseDimProductFrom(std::move(lhs));
}

// product := primary {('*' | '//' | '%') primary}, after its first primary
absl::StatusOr<DimExpr> Parser::ParseDimProductFrom(DimExpr lhs) {
  while (Is(Tok::kStar) || Is(Tok::kFloorDiv) || Is(Tok::kPercent)) {
    const Tok op = tok_.kind;
    Advance();
    ASSIGN_OR_RETURN(DimExpr rhs, ParseDimPrimary());
    if (op == Tok::kStar) {
      lhs = lhs * rhs;
    } else if (op == Tok::kFloorDiv) {
      lhs = DimExpr::FloorDiv(lhs, rhs);
    } else {
      lhs = DimExpr::Mod(lhs, rhs);
    }
  }
  return lhs;
}

// primary := INT | NAME | '?' | '(' sum ')' | ('min' | 'max') '(' sum ',' sum ')'
absl::StatusOr<DimExpr> Parser::ParseDimPrimary() {
  switch (tok_.kind) {
    case Tok::kInt: {
      ASSIGN_OR_RETURN(int64_t v, ParseIntToken(tok_, /*negative=*/false));
      Advance();
      return DimExpr(v);
    }
    case Tok::kQuestion:
      Advance();
      return DimExpr::Unknown();
    case Tok::kLParen: {
      Advance();
      ASSIGN_OR_RETURN(DimExpr e, ParseDimSum());
      RETURN_IF_ERROR(Expect(Tok::kRParen, "')' in the dimension"));
      return e;
    }
    case Tok::kIdent: {
      const Token name = tok_;
      if ((name.text == "min" || name.text == "max") && Peek().kind == Tok::kLParen) {
        Nesting nesting(this);
        RETURN_IF_ERROR(nesting.Check());
        Advance();
        Advance();
        ASSIGN_OR_RETURN(DimExpr a, ParseDimSum());
        RETURN_IF_ERROR(
            Expect(Tok::kComma, absl::StrCat("',' between the operands of '", name.text, "'")));
        ASSIGN_OR_RETURN(DimExpr b, ParseDimSum());
        RETURN_IF_ERROR(
            Expect(Tok::kRParen, absl::StrCat("')' after the operands of '", name.text, "'")));
        return name.text == "min" ? DimExpr::Min(a, b) : DimExpr::Max(a, b);
      }
      if (name.text.find('.') != absl::string_view::npos) {
        return ErrorAt(name, absl::StrCat("invalid symbol name '", name.text, "'"));
      }
      Advance();
      auto it = symbols_.find(name.text);
      if (it == symbols_.end()) it = symbols_.emplace(name.text, DimExpr::Symbol(name.text)).first;
      return it->second;
    }
    default:
      return Expected("a dimension (integer, symbol, '?' or '(')");
  }
}

absl::StatusOr<Type> Parser::ParseStandaloneType() {
  ASSIGN_OR_RETURN(Type t, ParseType());
  if (!Is(Tok::kEof)) return Expected("end of input after the type");
  return t;
}

absl::StatusOr<DimExpr> Parser::ParseStandaloneDim() {
  ASSIGN_OR_RETURN(DimExpr d, ParseDimSum());
  if (!Is(Tok::kEof)) return Expected("end of input after the dimension");
  return d;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Module>> ParseModule(absl::string_view text,
                                                    const ParseOptions& options) {
  Parser parser(text, options, /*dim_mode=*/false);
  return parser.ParseModule();
}

absl::StatusOr<Type> ParseType(absl::string_view text) {
  ParseOptions options;
  Parser parser(text, options, /*dim_mode=*/false);
  return parser.ParseStandaloneType();
}

absl::StatusOr<DimExpr> ParseDimExpr(absl::string_view text) {
  ParseOptions options;
  Parser parser(text, options, /*dim_mode=*/true);
  return parser.ParseStandaloneDim();
}

}  // namespace hetpass
