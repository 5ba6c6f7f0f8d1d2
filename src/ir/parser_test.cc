#include "passes/ir/parser.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_ops.h"
#include "passes/ir/printer.h"
#include "passes/ir/op_def.h"

namespace hetpass {
namespace {

using ::hetpass::testing::TestRegistry;
using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<std::unique_ptr<Module>> Parse(absl::string_view text, bool allow_elided = false) {
  ParseOptions options;
  options.registry = &TestRegistry();
  options.allow_elided_constants = allow_elided;
  return ParseModule(text, options);
}

// ---------------------------------------------------------------------------------------------
// Malformed input: each case names the position and a part of the message.

struct BadCase {
  const char* name;
  std::string text;
  int line;
  int col;
  const char* message;
};

std::string Nested(int depth) {
  std::string s = "def @f(%c: bool[]) {\n";
  for (int i = 0; i < depth; ++i) s += "%r = if (%c) {\n";
  return s;
}

std::vector<BadCase> BadCases() {
  const std::string f = "def @f(%x: f32[4]) {\n";  // line 1; bindings start on line 2
  return {
      {"empty_dim_last", "def @f(%x: f32[n, ]) {\n  return %x\n}", 1, 19,
       "expected a dimension (integer, symbol, '?' or '('), found ']'"},
      {"empty_dim_first", "def @f(%x: f32[, n]) {\n  return %x\n}", 1, 16, "expected a dimension"},
      {"unterminated_string", f + "  %y = test.attrs(%x) {s = \"abc}\n  return %y\n}", 2, 28,
       "unterminated string literal"},
      {"bad_dtype", "def @f(%x: f31[4]) {\n  return %x\n}", 1, 12, "unknown dtype 'f31'"},
      {"unknown_op", f + "  %y = nn.dens(%x)\n  return %y\n}", 2, 8, "unknown op 'nn.dens'"},
      {"unknown_attribute", f + "  %v, %i = topk(%x) {k = 2, axs = 0}\n  return %v\n}", 2, 29,
       "op 'topk' has no attribute 'axs' (known: k, axis)"},
      {"wrong_attribute_type", f + "  %v, %i = topk(%x) {k = 1.5}\n  return %v\n}", 2, 26,
       "attribute 'k' of op 'topk' must be of type int, found float 1.5"},
      {"missing_required_attribute", f + "  %v, %i = topk(%x)\n  return %v\n}", 2, 12,
       "op 'topk' needs attribute 'k' of type int"},
      {"duplicate_attribute", f + "  %v, %i = topk(%x) {k = 1, k = 2}\n  return %v\n}", 2, 29,
       "duplicate attribute 'k'"},
      {"wrong_operand_count", f + "  %y = add(%x)\n  return %y\n}", 2, 8,
       "op 'add' takes 2 operands, found 1"},
      {"missing_comma_in_operands", f + "  %y = nn.dense(%x %w)\n  return %y\n}", 2, 20,
       "expected ')' after operands of 'nn.dense', found '%w'"},
      {"use_before_def", f + "  %y = add(%x, %z)\n  %z = nn.relu(%x)\n  return %y\n}", 2, 16,
       "value '%z' used before its definition"},
      {"self_use", f + "  %y = add(%x, %y)\n  return %y\n}", 2, 16,
       "value '%y' used before its definition"},
      {"undefined_value", f + "  %y = add(%x, %q)\n  return %y\n}", 2, 16, "undefined value '%q'"},
      {"undefined_reported_before_later_error", f + "  %y = add(%x, %q)\n  %z = bogus(%y)\n}", 2,
       16, "undefined value '%q'"},
      {"redefinition", f + "  %y = nn.relu(%x)\n  %y = nn.relu(%x)\n  return %y\n}", 3, 3,
       "redefinition of value '%y' (first defined at 2:3)"},
      {"parameter_redefinition", "def @f(%x: f32[4], %x: f32[4]) {\n  return %x\n}", 1, 20,
       "redefinition of value '%x'"},
      {"missing_return", f + "  %y = nn.relu(%x)\n}", 3, 1,
       "function '@f' must end with 'return', found '}'"},
      {"extra_closing_brace", f + "  return %x\n}\n}", 4, 1,
       "expected 'def' to start a function, found '}'"},
      {"missing_closing_brace", f + "  return %x\n", 3, 1,
       "expected '}' after 'return' and its values, found end of input"},
      {"unclosed_region", f + "  %c = constant<true> : bool[]\n  %r = if (%c) {\n    yield %x\n", 5,
       1, "expected '}' after 'yield' and its values, found end of input"},
      {"bad_constant_size", f + "  %c = constant<[1, 2, 3]> : i64[2]\n  return %x\n}", 2, 17,
       "constant has 3 elements but its type i64[2] needs 2"},
      {"missing_constant_type", f + "  %c = constant<1>\n  return %c\n}", 3, 3,
       "expected ':' and the type of the constant, found 'return'"},
      {"constant_out_of_range", f + "  %c = constant<300> : u8[]\n  return %x\n}", 2, 17,
       "value 300 is out of range for u8"},
      {"constant_float_for_int", f + "  %c = constant<[1, 1.5]> : i32[2]\n  return %x\n}", 2, 21,
       "expected an integer in a i32 constant, found '1.5'"},
      {"constant_symbolic_type", f + "  %c = constant<1> : i64[n]\n  return %x\n}", 2, 20,
       "a constant needs a static tensor type, found i64[n]"},
      {"constant_hex_size", f + "  %c = constant<0x0102> : i64[]\n  return %x\n}", 2, 17,
       "constant has 2 bytes of data but its type i64[] needs 8"},
      {"constant_elided_not_allowed", f + "  %c = constant<elided> : f32[4]\n  return %x\n}", 2, 17,
       "is not accepted here; allow it with ParseOptions::allow_elided_constants"},
      {"huge_integer_literal", f + "  %c = constant<99999999999999999999> : i64[]\n  return %x\n}",
       2, 17, "integer literal '99999999999999999999' does not fit in 64 bits"},
      {"huge_dim_literal", "def @f(%x: f32[18446744073709551616]) {\n  return %x\n}", 1, 16,
       "does not fit in 64 bits"},
      {"float_literal_overflow", f + "  %c = constant<1e999> : f64[]\n  return %x\n}", 2, 17,
       "float literal '1e999' is out of range"},
      {"negative_dim", "def @f(%x: f32[-1]) {\n  return %x\n}", 1, 16,
       "dimension must not be negative, found -1"},
      {"bad_device", f + "  %y = nn.relu(%x) : f32[4] @gpu\n  return %y\n}", 2, 29,
       "unknown device '@gpu' (expected one of @cpu, @cuda, @sim)"},
      {"yield_outside_region", f + "  yield %x\n}", 2, 3,
       "'yield' outside of a region; function '@f' must end with 'return'"},
      {"return_inside_region",
       f + "  %c = constant<true> : bool[]\n  %r = if (%c) {\n    return %x\n  } else {\n"
           "    yield %x\n  }\n  return %r\n}",
       4, 5, "'return' inside the region of 'if'; region bodies end with 'yield'"},
      {"if_branch_yield_mismatch",
       f + "  %c = constant<true> : bool[]\n  %r = if (%c) {\n    yield %x\n  } else {\n"
           "    yield %x, %x\n  }\n  return %r\n}",
       6, 5, "the else-branch of 'if' yields 2 values but the then-branch yields 1"},
      {"if_result_count",
       f + "  %c = constant<true> : bool[]\n  %a, %b = if (%c) {\n    yield %x\n  } else {\n"
           "    yield %x\n  }\n  return %a\n}",
       3, 3, "'if' binds 2 results but its branches yield 1"},
      {"if_missing_else",
       f + "  %c = constant<true> : bool[]\n  %r = if (%c) {\n    yield %x\n  }\n  return %r\n}", 6,
       3, "expected 'else' after the then-branch of 'if', found 'return'"},
      {"region_value_not_visible_outside",
       f + "  %c = constant<true> : bool[]\n  %r = if (%c) {\n    %z = nn.relu(%x)\n"
           "    yield %z\n  } else {\n    yield %x\n  }\n  return %z\n}",
       9, 10, "value '%z' is not visible here: it is defined inside a region at 4:5"},
      {"loop_param_count",
       f + "  %n = constant<3> : i64[]\n  %c = constant<true> : bool[]\n"
           "  %r = loop(%n, %c, %x) (%i: i64[], %k: bool[]) {\n    yield %k, %x\n  }\n"
           "  return %r\n}",
       4, 25, "the loop body has 2 parameters but needs 3 (iteration, condition and 1 carried)"},
      {"loop_yield_count",
       f + "  %n = constant<3> : i64[]\n  %c = constant<true> : bool[]\n"
           "  %r = loop(%n, %c, %x) (%i: i64[], %k: bool[], %a: f32[4]) {\n    yield %k\n  }\n"
           "  return %r\n}",
       5, 5, "the loop body yields 1 value but needs at least 2 (condition and 1 carried)"},
      {"loop_too_few_operands", f + "  %r = loop(%x) () {\n    yield %x\n  }\n  return %r\n}", 2, 8,
       "'loop' takes a trip count, a condition and the carried values, found 1 operand"},
      {"eof_in_operands", f + "  %y = add(%x,", 2, 15,
       "expected a value like '%x' in the operands of 'add', found end of input"},
      {"eof_after_equals", f + "  %y =", 2, 7, "found end of input"},
      {"eof_in_type", f + "  %y = nn.relu(%x) : f32[4", 2, 27,
       "expected ',' or ']' in the shape, found end of input"},
      {"result_name_count", f + "  %v = topk(%x) {k = 2}\n  return %v\n}", 2, 3,
       "op 'topk' has 2 results but 1 name is bound"},
      {"tuple_result_count", f + "  %a, %b = tuple(%x)\n  return %a\n}", 2, 3,
       "'tuple' has 1 result but 2 names are bound"},
      {"type_count", f + "  %y = nn.relu(%x) : f32[4], f32[4]\n  return %y\n}", 2, 20,
       "2 types given for 1 result"},
      {"unexpected_character", f + "  %y = nn.relu(%x) $\n  return %y\n}", 2, 20,
       "unexpected character '$'"},
      {"bad_value_name", f + "  %1a = nn.relu(%x)\n  return %x\n}", 2, 3, "invalid value name"},
      {"missing_shape_brackets", "def @f(%x: f32) {\n  return %x\n}", 1, 15,
       "expected '[' after dtype 'f32', found ')'"},
      {"get_item_without_index", f + "  %t = tuple(%x)\n  %g = get_item(%t)\n  return %g\n}", 4, 3,
       "expected '{index = N}' after 'get_item(...)', found 'return'"},
      {"invoke_unknown_function", f + "  %y = invoke @g(%x)\n  return %y\n}", 2, 15,
       "invoke of undefined function '@g'"},
      {"duplicate_function", f + "  return %x\n}\n" + f + "  return %x\n}", 4, 5,
       "redefinition of function '@f'"},
      {"invalid_escape", f + "  %y = nn.relu(%x) loc(\"a\\q\")\n  return %y\n}", 2, 24,
       "invalid escape '\\q' in string literal"},
      {"loc_line_zero", f + "  %y = nn.relu(%x) loc(\"a.hir\":0:3)\n  return %y\n}", 2, 32,
       "'loc(...)' line or column '0' is not a positive int"},
      {"loc_without_column", f + "  %y = nn.relu(%x) loc(\"a.hir\":2)\n  return %y\n}", 2, 33,
       "expected ':' in 'loc(\"file\":line:col)', found ')'"},
      {"loc_comma_without_name", f + "  %y = nn.relu(%x) loc(\"a.hir\":2:3, 4)\n  return %y\n}", 2,
       37, "expected a source name after ',' in 'loc(...)', found '4'"},
      {"assume_never_holds", "def @f(%x: f32[n])\n    assume(3 == 4, \"r\") {\n  return %x\n}", 2, 5,
       "'assume(3 == 4)' can never hold"},
      {"assume_less_than", "def @f(%x: f32[n])\n    assume(n < 4, \"r\") {\n  return %x\n}", 2, 16,
       "expected '==' or '<=' in 'assume(...)', found '4'"},
      {"assume_without_reason", "def @f(%x: f32[n])\n    assume(n <= 4) {\n  return %x\n}", 2, 18,
       "expected ',' and a reason string after the condition, found ')'"},
      {"assume_in_without_one", "def @f(%x: f32[n])\n    assume(n in {2, m}, \"r\") {\n  return %x\n}", 2,
       18, "expected '1' in 'in {1, dim}', found '2'"},
      {"deep_dim_nesting",
       "def @f(%x: f32[" + std::string(2000, '(') + "n" + std::string(2000, ')') + "]) {", 1, 1015,
       "nesting is deeper than 1000 levels"},
      {"deep_region_nesting", Nested(300), 258, 14, "regions are nested deeper than 256 levels"},
      {"deep_unary_minus", "def @f(%x: f32[" + std::string(3000, '-') + "n]) {", 1, 1014,
       "nesting is deeper than 1000 levels"},
      {"garbage_at_top_level", "%x = add(%a, %b)", 1, 1,
       "expected 'def' to start a function, found '%x'"},
      // Shape-function masks: words from InputDepName, or the older integers 0..3.
      {"mask_unknown_word",
       f + "  %s = invoke @f(%x) {mask = [shape, shpe], shape_func = true}\n  return %x\n}", 2,
       38, "unknown input dependence 'shpe' in the mask (expected none, shape, value or "
           "shape+value)"},
      {"mask_half_a_join",
       f + "  %s = invoke @f(%x) {mask = [shape+shape], shape_func = true}\n  return %x\n}", 2,
       37, "expected 'value' after 'shape+', found 'shape'"},
      {"mask_words_and_numbers",
       f + "  %s = invoke @f(%x) {mask = [shape, 2], shape_func = true}\n  return %x\n}", 2,
       38, "expected an input dependence (none, shape, value or shape+value), found '2'"},
      {"mask_integer_out_of_range",
       f + "  %s = invoke @f(%x) {mask = [1, 4], shape_func = true}\n  return %x\n}", 2, 30,
       "mask entry 4 is not an input dependence (expected 0..3"},
      {"mask_tagged_empty_with_entries",
       f + "  %s = invoke @f(%x) {mask = dep[shape], shape_func = true}\n  return %x\n}", 2,
       34, "expected ']' in 'dep[]', found 'shape'"},
  };
}

TEST(ParserErrorTest, MalformedInputs) {
  const std::vector<BadCase> cases = BadCases();
  EXPECT_GE(cases.size(), 30u);
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto m = Parse(c.text);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string want_pos = absl::StrCat("<input>:", c.line, ":", c.col, ": ");
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(want_pos));
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.message));
  }
}

TEST(ParserErrorTest, NamesTheSourceFile) {
  ParseOptions options;
  options.registry = &TestRegistry();
  options.source_name = "model.hir";
  auto m = ParseModule("def @f() {\n  %y = nope()\n  return %y\n}", options);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "model.hir:2:8: unknown op 'nope'");
}

TEST(ParserErrorTest, MutatedAndTruncatedInputsNeverCrash) {
  // Every prefix of a module that uses each construct fails cleanly or parses.
  const std::string text = R"(def @g(%a: f32[n]) -> f32[n] {
  return %a
}

def @f(%x: f32[n, 4], %c: bool[]) -> f32[n, 4] {
  %k = constant<[1, 2]> : i64[2] @cpu loc("k")
  %v, %i = topk(%x) {axis = -1, k = 2} : f32[n, 2], i64[n, 2]
  %s = test.attrs(%x) {b = true, dt = i8, f = 2.5, fl = [1.5], il = [1], s = "q\n"}
  %t = tuple(%v, %i) : (f32[n, 2], i64[n, 2])
  %g = get_item(%t) {index = 0}
  %r = if (%c) {
    yield %x
  } else {
    %z = add(%x, %x)
    yield %z
  }
  %l = loop(%k, %c, %x) (%it: i64[], %ci: bool[], %acc: f32[(n + 1)//2 % 3, min(n, 4)]) {
    yield %ci, %acc
  }
  %w = invoke @g(%x)
  return %r
}
)";
  ASSERT_TRUE(Parse(text).ok()) << Parse(text).status();
  // Single-character mutations: each fails cleanly, or round-trips through the printer.
  uint32_t state = 7;
  const std::string alphabet = "%@(){}[]<>,:=-+*/?\"\\ \n0123456789.eabfinxyzkl_";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string mutated = text;
    for (int k = 0; k < 1 + iter % 3; ++k) {
      state = state * 1664525u + 1013904223u;
      const size_t pos = (state >> 8) % mutated.size();
      state = state * 1664525u + 1013904223u;
      if (state % 4 == 0) {
        mutated.erase(pos, 1);
      } else {
        mutated[pos] = alphabet[(state >> 16) % alphabet.size()];
      }
    }
    auto m = Parse(mutated);
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    const std::string printed = PrintModule(**m);
    auto again = Parse(printed);
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << mutated << "\n" << printed;
    EXPECT_EQ(PrintModule(**again), printed);
  }
  for (size_t n = 0; n < text.size(); ++n) {
    auto m = Parse(text.substr(0, n));
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(ParserErrorTest, ArbitraryBytesNeverCrash) {
  uint32_t state = 12345;
  const std::string alphabet = "def@%(){}[]<>,:=-+*/?\"\\ \n0x1.5e9fi32ifloopyield_";
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    const int len = iter % 97;
    for (int i = 0; i < len; ++i) {
      state = state * 1664525u + 1013904223u;
      s += (iter % 3 == 0) ? static_cast<char>(state >> 24)
                           : alphabet[(state >> 16) % alphabet.size()];
    }
    auto m = Parse(s);
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << s;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Well-formed input

TEST(ParserTest, EmptyInputIsAnEmptyModule) {
  auto m = Parse("");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->functions().empty());
  m = Parse("  // only a comment\n\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->functions().empty());
}

TEST(ParserTest, ParsesBindingsWithLocationsTypesDevicesAndNames) {
  ParseOptions options;
  options.registry = &TestRegistry();
  options.source_name = "a.hir";
  auto m = ParseModule(R"(// leading comment
def @main(%x: f32[n, 1024], %0: f32[512, 1024]) -> f32[n, 1024] {
  %1 = nn.dense(%x, %0) : f32[n, 512] @sim  // trailing comment
  %v, %i = topk(%1) {k = 2} : f32[n, 2], i64[n, 2] loc("TopK_3")
  return %x
}
)",
                       options);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->source_name(), "a.hir");
  const Function& f = *(*m)->functions()[0];
  EXPECT_EQ(f.name(), "main");
  EXPECT_EQ(f.loc().line, 2);
  EXPECT_EQ(f.loc().col, 1);
  ASSERT_EQ(f.body().num_params(), 2);
  EXPECT_EQ(f.body().param(0)->name(), "x");
  EXPECT_EQ(f.body().param(1)->name(), "0");  // kept for errors; the printer renumbers it
  EXPECT_EQ(f.body().param(0)->type().ToString(), "f32[n, 1024]");
  ASSERT_EQ(f.result_types().size(), 1u);
  EXPECT_EQ(f.result_types()[0].ToString(), "f32[n, 1024]");

  ASSERT_EQ(f.body().nodes().size(), 2u);
  const Node& dense = *f.body().nodes()[0];
  EXPECT_EQ(dense.OpName(), "nn.dense");
  EXPECT_EQ(dense.operand(0), f.body().param(0));
  EXPECT_EQ(dense.operand(1), f.body().param(1));
  EXPECT_EQ(dense.device(), DeviceKind::kSim);
  EXPECT_EQ(dense.loc().line, 3);
  EXPECT_EQ(dense.loc().col, 3);
  EXPECT_EQ(dense.result(0)->name(), "1");
  EXPECT_EQ(dense.result(0)->type().ToString(), "f32[n, 512]");

  const Node& topk = *f.body().nodes()[1];
  EXPECT_EQ(topk.num_results(), 2);
  EXPECT_EQ(topk.result(1)->name(), "i");
  EXPECT_EQ(topk.loc().name, "TopK_3");
  EXPECT_EQ(topk.loc().line, 4);
  EXPECT_EQ(topk.attrs().GetInt("k"), 2);
  EXPECT_EQ(topk.attrs().GetInt("axis"), -1);  // default filled in
  EXPECT_EQ(topk.device(), DeviceKind::kUnset);
  EXPECT_EQ(f.body().results()[0], f.body().param(0));
}

// An executable's primitives are printed and parsed again; with source locations printed,
// every node keeps the file, line and source name it was first parsed with (a run-time shape
// error then names the user's file, not "<executable primitives>").
TEST(ParserTest, SourceLocationsSurviveAPrintAndAParse) {
  ParseOptions options;
  options.registry = &TestRegistry();
  options.source_name = "model.hir";
  auto first = ParseModule(R"(def @main(%x: f32[n]) {
  %y = nn.relu(%x)
  %z = nn.relu(%y) loc("Relu_7")
  return %z
}
)",
                           options);
  ASSERT_TRUE(first.ok()) << first.status();
  PrintOptions po;
  po.source_locations = true;
  const std::string text = PrintModule(**first, po);
  EXPECT_THAT(text, HasSubstr("nn.relu(%x) loc(\"model.hir\":2:3)"));
  EXPECT_THAT(text, HasSubstr("nn.relu(%y) loc(\"model.hir\":3:3, \"Relu_7\")"));
  EXPECT_THAT(PrintModule(**first), Not(HasSubstr("model.hir")));  // off by default

  options.source_name = "<executable primitives>";
  auto second = ParseModule(text, options);
  ASSERT_TRUE(second.ok()) << second.status();
  const Function& f = *(*second)->functions()[0];
  const Node& y = *f.body().nodes()[0];
  const Node& z = *f.body().nodes()[1];
  EXPECT_EQ(y.loc().file, "model.hir");
  EXPECT_EQ(y.loc().line, 2);
  EXPECT_EQ(y.loc().col, 3);
  EXPECT_EQ(y.loc().name, "");
  EXPECT_EQ(z.loc().name, "Relu_7");
  EXPECT_EQ(FormatLocation(second->get(), z.loc()), "model.hir:3:3 (node 'Relu_7')");
  EXPECT_EQ(PrintModule(**second, po), text);  // a fixed point
}

// Assumptions (assumption.h) print after the result types and parse back to the same module.
TEST(ParserTest, AssumptionsRoundTrip) {
  const std::string text = R"(def @main(%x: f32[batch, seq, 64]) -> f32[batch, seq, 64]
    assume(dyn2 in {1, seq}, "add %y: broadcast")
    assume(dyn1 == batch, "concatenate %c: declared")
    assume(seq <= 128, "a \"quoted\" reason") {
  return %x
}
)";
  auto m = Parse(text);
  ASSERT_TRUE(m.ok()) << m.status();
  const Function& f = *(*m)->functions()[0];
  ASSERT_EQ(f.assumptions().size(), 3u);
  EXPECT_EQ(f.assumptions()[0].kind, Assumption::Kind::kBroadcast);
  EXPECT_EQ(f.assumptions()[0].Condition(), "dyn2 in {1, seq}");
  EXPECT_EQ(f.assumptions()[1].kind, Assumption::Kind::kEq);
  EXPECT_EQ(f.assumptions()[1].reason, "concatenate %c: declared");
  EXPECT_EQ(f.assumptions()[2].kind, Assumption::Kind::kLe);
  EXPECT_EQ(f.assumptions()[2].reason, "a \"quoted\" reason");
  EXPECT_EQ(PrintModule(**m), text);
  DimExpr::Bindings b = {{"seq", 100}, {"batch", 2}, {"dyn1", 2}, {"dyn2", 1}};
  EXPECT_TRUE(*f.assumptions()[0].Holds(b));
  b["dyn2"] = 100;
  EXPECT_TRUE(*f.assumptions()[0].Holds(b));
  b["seq"] = 200;
  EXPECT_FALSE(*f.assumptions()[0].Holds(b));
  EXPECT_FALSE(*f.assumptions()[2].Holds(b));
  EXPECT_THAT(std::string(f.assumptions()[1].Holds({}).status().message()), HasSubstr("dyn1"));
}

// Conditions are kept in their simplest exact form: a position table's broadcast condition
// `min(128, seq) in {1, seq}` is `seq <= 128`, as the user must read it.
TEST(ParserTest, AssumptionsAreCanonical) {
  auto m = Parse(R"(def @main(%x: f32[seq]) -> f32[seq]
    assume(min(128, seq) in {1, seq}, "a")
    assume(seq == max(2, seq), "b") {
  return %x
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const Function& f = *(*m)->functions()[0];
  ASSERT_EQ(f.assumptions().size(), 2u) << PrintModule(**m);
  EXPECT_EQ(f.assumptions()[0].Condition(), "seq <= 128");
  EXPECT_EQ(f.assumptions()[1].Condition(), "2 <= seq");
  // Exact: the canonical form holds exactly where the original does.
  for (int64_t seq : {0, 1, 2, 127, 128, 129, 1000}) {
    Assumption a;
    a.kind = Assumption::Kind::kBroadcast;
    a.lhs = DimExpr::Min(128, DimExpr::Symbol("seq"));
    a.rhs = DimExpr::Symbol("seq");
    EXPECT_EQ(*a.Holds({{"seq", seq}}), *a.Canonical().Holds({{"seq", seq}})) << seq;
    a.lhs = DimExpr::Max(2, DimExpr::Symbol("seq"));
    EXPECT_EQ(*a.Holds({{"seq", seq}}), *a.Canonical().Holds({{"seq", seq}})) << seq;
  }
}

TEST(ParserTest, TypesAfterColonAreOptionalForCalls) {
  auto m = Parse("def @f(%x) {\n  %y = nn.relu(%x)\n  return %y\n}");
  ASSERT_TRUE(m.ok()) << m.status();
  const Function& f = *(*m)->functions()[0];
  EXPECT_TRUE(f.body().param(0)->type().is_unset());
  EXPECT_TRUE(f.body().nodes()[0]->result(0)->type().is_unset());
  EXPECT_TRUE(f.result_types().empty());
}

TEST(ParserTest, AttributesOfEveryTypeAreCheckedAndCoerced) {
  auto m = Parse(R"(def @f(%x: f32[4]) {
  %a = test.attrs(%x) {b = true, dt = bf16, f = 2, fl = [1, 2], i = -3, il = [4, -5], s = "a\"b\\c\n\x01"}
  %b = test.attrs(%x) {f = -inf, fl = f[], il = []}
  %c = test.attrs(%x) {f = nan, fl = [0.5, inf]}
  return %a
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const Block& b = (*m)->functions()[0]->body();
  const Attrs& a = b.nodes()[0]->attrs();
  EXPECT_TRUE(a.GetBool("b"));
  EXPECT_EQ(a.GetDType("dt"), DType::kBF16);
  EXPECT_EQ(a.GetFloat("f"), 2.0);  // int coerced to float
  EXPECT_EQ(a.GetFloatList("fl"), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(a.GetInt("i"), -3);
  EXPECT_EQ(a.GetIntList("il"), (std::vector<int64_t>{4, -5}));
  EXPECT_EQ(a.GetString("s"), "a\"b\\c\n\x01");
  const Attrs& a2 = b.nodes()[1]->attrs();
  EXPECT_EQ(a2.GetFloat("f"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(a2.GetFloatList("fl").empty());
  EXPECT_TRUE(a2.GetIntList("il").empty());
  EXPECT_EQ(a2.GetString("s"), "");  // default
  EXPECT_TRUE(std::isnan(b.nodes()[2]->attrs().GetFloat("f")));
}

TEST(ParserTest, RegionsSeeEnclosingValuesAndHideTheirOwn) {
  auto m = Parse(R"(def @f(%x: f32[4], %c: bool[]) {
  %r = if (%c) {
    %z = add(%x, %x)
    yield %z
  } else {
    %z = nn.relu(%x)
    yield %z
  }
  %z = add(%r, %x)
  return %z
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const Block& body = (*m)->functions()[0]->body();
  const Node& if_node = *body.nodes()[0];
  EXPECT_EQ(if_node.region(0)->nodes()[0]->operand(0), body.param(0));  // a capture
  EXPECT_EQ(if_node.region(1)->results()[0], if_node.region(1)->nodes()[0]->result(0));
  EXPECT_EQ(body.nodes()[1]->operand(0), if_node.result(0));
}

TEST(ParserTest, LoopBodyParametersAndResults) {
  auto m = Parse(R"(def @f(%x: f32[4], %n: i64[], %c: bool[]) {
  %acc, %scan = loop(%n, %c, %x) (%i: i64[], %ci: bool[], %a: f32[4]) {
    %b = add(%a, %x)
    yield %ci, %b, %a
  }
  return %acc, %scan
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const Node& loop = *(*m)->functions()[0]->body().nodes()[0];
  EXPECT_EQ(loop.kind(), NodeKind::kLoop);
  EXPECT_EQ(loop.num_operands(), 3);
  EXPECT_EQ(loop.region(0)->num_params(), 3);
  EXPECT_EQ(loop.region(0)->param(2)->name(), "a");
  EXPECT_EQ(loop.num_results(), 2);
}

TEST(ParserTest, ConstantsInEveryForm) {
  auto m = Parse(R"(def @f() {
  %a = constant<7> : i64[]
  %b = constant<[1.5, -2, 3e2]> : f32[3]
  %c = constant<[true, false]> : bool[2]
  %d = constant<0x0100000002000000> : i32[2]
  %e = constant<[]> : f32[0, 3]
  %f = constant<elided> : f32[2, 2]
  %g = constant<-9223372036854775808> : i64[]
  return %a
}
)",
                 /*allow_elided=*/true);
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& nodes = (*m)->functions()[0]->body().nodes();
  EXPECT_EQ(nodes[0]->constant_value().GetInt64(0), 7);
  EXPECT_EQ(nodes[1]->constant_value().ToDoubles(), (std::vector<double>{1.5, -2, 300}));
  EXPECT_EQ(nodes[2]->constant_value().ToInt64s(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(nodes[3]->constant_value().ToInt64s(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(nodes[4]->constant_value().num_elements(), 0);
  EXPECT_EQ(nodes[5]->constant_value().ToDoubles(), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(nodes[6]->constant_value().GetInt64(0), INT64_MIN);
  EXPECT_EQ(nodes[1]->result(0)->type().ToString(), "f32[3]");
}

// Tests that an elided constant larger than ParseOptions::max_elided_bytes is an error naming
// its size and the limit, not an allocation (the type alone decides the size).
TEST(ParserTest, ElidedConstantsAreBoundedByTheOption) {
  ParseOptions options;
  options.registry = &TestRegistry();
  options.allow_elided_constants = true;
  options.max_elided_bytes = 64;
  const std::string text = "def @f() {\n  %c = constant<elided> : f32[4, 5]\n  return %c\n}";
  auto m = ParseModule(text, options);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("2:17: elided constant of 80 bytes is too large to materialise (limit 64 "
                        "bytes)"));
  options.max_elided_bytes = 80;
  EXPECT_TRUE(ParseModule(text, options).ok());
  // The default (1 GiB) still turns away a type whose size is absurd.
  auto huge =
      Parse("def @f() {\n  %c = constant<elided> : f64[4611686018427387904]\n  return %c\n}",
            /*allow_elided=*/true);
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("too large"));
}

// Tests that every saved ir_parse_fuzzer reproducer (test/fuzz/regressions/ir_parse) either
// parses and keeps the printer/parser round trip, or is rejected with InvalidArgument naming
// line and column; the fuzz build replays them under ASan + UBSan.
TEST(ParserTest, SavedFuzzerReproducers) {
  const std::filesystem::path dir =
      std::filesystem::path(HETPASS_TEST_DATA_DIR) / "fuzz" / "regressions" / "ir_parse";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no " << dir;
  int replayed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".hir") continue;
    ++replayed;
    SCOPED_TRACE(entry.path().filename().string());
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ParseOptions options;  // as the fuzzer: the global registry, elided constants up to 1 MB
    options.source_name = "fuzz.hir";
    options.allow_elided_constants = true;
    options.max_elided_bytes = int64_t{1} << 20;
    auto m = ParseModule(text, options);
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
      EXPECT_THAT(std::string(m.status().message()), ::testing::StartsWith("fuzz.hir:"));
      continue;
    }
    const std::string printed = PrintModule(**m);
    auto again = ParseModule(printed, options);
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << printed;
    EXPECT_EQ(PrintModule(**again), printed);
  }
  EXPECT_GT(replayed, 0);
}

TEST(ParserTest, InvokeMayReferToALaterFunctionAndBindNoResult) {
  auto m = Parse(R"(def @main(%x: f32[4]) {
  %y = invoke @helper(%x)
  invoke @sink(%y)
  test.sink(%y)
  return %y
}

def @helper(%a: f32[4]) {
  return %a
}

def @sink(%a: f32[4]) {
  return
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const auto& nodes = (*m)->functions()[0]->body().nodes();
  EXPECT_EQ(nodes[0]->callee(), "helper");
  EXPECT_EQ(nodes[1]->num_results(), 0);
  EXPECT_EQ(nodes[2]->num_results(), 0);
  EXPECT_TRUE((*m)->functions()[2]->body().results().empty());
}

TEST(ParserTest, DimensionOperatorsAndComments) {
  auto m =
      Parse(R"(def @f(%x: f32[n//2, (h + 1)//2, n % 3, -n + 5, min(k, n), max(a, 4), ?]) {  // c
  return %x  // floor division only inside brackets
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const Type& t = (*m)->functions()[0]->body().param(0)->type();
  const DimExpr n = DimExpr::Symbol("n");
  EXPECT_EQ(t.shape()[0], DimExpr::FloorDiv(n, 2));
  EXPECT_EQ(t.shape()[1], DimExpr::FloorDiv(DimExpr::Symbol("h") + 1, 2));
  EXPECT_EQ(t.shape()[2], DimExpr::Mod(n, 3));
  EXPECT_EQ(t.shape()[3], DimExpr(5) - n);
  EXPECT_EQ(t.shape()[4], DimExpr::Min(DimExpr::Symbol("k"), n));
  EXPECT_EQ(t.shape()[5], DimExpr::Max(DimExpr::Symbol("a"), 4));
  EXPECT_TRUE(t.shape()[6].is_unknown());
}

TEST(ParserTest, ParseTypeStandalone) {
  auto t = ParseType("(f32[n, 4], (i64[], bool[?]))");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ToString(), "(f32[n, 4], (i64[], bool[?]))");
  EXPECT_TRUE(ParseType("()")->is_tuple());
  auto bad = ParseType("f32[4] x");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "<input>:1:8: expected end of input after the type, found 'x'");
  EXPECT_FALSE(ParseType("").ok());
  EXPECT_FALSE(ParseType("q8[1]").ok());
}

TEST(ParserTest, ParseDimExprStandalone) {
  auto d = ParseDimExpr("n*4 + 3");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, DimExpr::Symbol("n") * 4 + 3);
  EXPECT_EQ(*ParseDimExpr("n%3"), DimExpr::Mod(DimExpr::Symbol("n"), 3));
  EXPECT_EQ(*ParseDimExpr("-n//2"), DimExpr(0) - DimExpr::FloorDiv(DimExpr::Symbol("n"), 2));
  EXPECT_EQ(*ParseDimExpr("2 - 3 - 4"), DimExpr(-5));    // left associative
  EXPECT_EQ(*ParseDimExpr("12 // 3 // 2"), DimExpr(2));  // left associative
  EXPECT_EQ(*ParseDimExpr("1 + 2*3"), DimExpr(7));
  EXPECT_EQ(*ParseDimExpr("min"), DimExpr::Symbol("min"));  // a symbol unless called
  auto bad = ParseDimExpr("n +");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("1:4: expected a dimension"));
  EXPECT_FALSE(ParseDimExpr("").ok());
  EXPECT_FALSE(ParseDimExpr("n m").ok());
}

TEST(ParserTest, UsesTheGlobalRegistryByDefault) {
  auto m = ParseModule("def @f(%x: f32[4]) {\n  %y = add(%x, %x)\n  return %y\n}");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->functions()[0]->body().nodes()[0]->op(), OpRegistry::Global().Find("add"));
}

TEST(ParserTest, DeepButLegalNestingParses) {
  std::string s = "def @f(%c: bool[]) {\n";
  const int depth = 200;
  for (int i = 0; i < depth; ++i) s += "%r = if (%c) {\n";
  s += "yield %c\n";
  for (int i = 0; i < depth; ++i) s += "} else {\nyield %c\n}\nyield %r\n";
  // The outermost `yield %r` must be a return.
  s.resize(s.size() - std::string("yield %r\n").size());
  s += "return %r\n}\n";
  auto m = Parse(s);
  ASSERT_TRUE(m.ok()) << m.status();
  std::string printed = PrintModule(**m);
  auto again = Parse(printed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(PrintModule(**again), printed);
}

// Throughput check (reported, not asserted: sanitizer builds are much slower).
TEST(ParserTest, Throughput) {
  std::string text = "def @f(%x: f32[n, 64], %w: f32[64, 64]) {\n";
  const int kBindings = 200000;
  text += "  %0 = add(%x, %x) : f32[n, 64]\n";
  for (int i = 1; i < kBindings; ++i) {
    absl::StrAppend(&text, "  %", i, " = add(%", i - 1, ", %x) : f32[n, 64] @cpu\n");
  }
  absl::StrAppend(&text, "  return %", kBindings - 1, "\n}\n");
  const auto start = std::chrono::steady_clock::now();
  auto m = Parse(text);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(m.ok()) << m.status();
  std::printf("parsed %d bindings in %.3f s: %.2f M bindings/s\n", kBindings, secs,
              kBindings / secs / 1e6);
}

}  // namespace
}  // namespace hetpass
