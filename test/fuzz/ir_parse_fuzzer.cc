// libFuzzer target for the text IR parser: the input bytes are .hir text (what hetpass-opt,
// `hetpass run FILE.hir` and the VM's executable loader parse).
//
// What counts as a finding (the process aborts, libFuzzer saves the input):
//   - a crash, an abort, an ASan report (overflow, use after free, leak), a UBSan report, a
//     stack overflow (the parser bounds its recursion), an allocation above -malloc_limit_mb or
//     a process above -rss_limit_mb: found by the sanitizers and libFuzzer themselves;
//   - a parse error that is not InvalidArgument("fuzz.hir:<line>:<col>: <message>"): every
//     rejection must say where and what (parser.h);
//   - a module that parses but breaks the printer/parser round trip (printer.h promises
//     print(parse(print(m))) == print(m)): its printed text must parse back, print to the same
//     text, be structurally equal to the first module with the same structural hash, and verify
//     exactly when the first module does.
//   - infer-types (the first pass of every pipeline) on a module that parses and verifies:
//     an InternalError, or an accepted module that then fails the verifier with require_types
//     or breaks the round trip above with its inferred symbolic types.
// The verifier runs on every module that parses (with and without require_types), so it is
// fuzzed too; its verdict on the fuzzed module is free, only the agreements above are checked.
//
// The standalone entry points ParseType and ParseDimExpr get the same bytes, and what they
// accept must round-trip through ToString.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/ir/structural.h"
#include "passes/ir/verifier.h"
#include "passes/transforms/infer_types.h"

namespace {

constexpr char kSource[] = "fuzz.hir";

[[noreturn]] void Fail(absl::string_view what, absl::string_view detail) {
  std::fprintf(stderr, "ir_parse_fuzzer: %.*s\n%.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

hetpass::ParseOptions Options() {
  hetpass::ParseOptions o;
  o.source_name = kSource;
  // The repository's examples elide their weights, so the seeds need this; the zeros an elided
  // constant becomes are bounded far below libFuzzer's -malloc_limit_mb (and printing them as
  // hex, then parsing that back, stays fast).
  o.allow_elided_constants = true;
  o.max_elided_bytes = int64_t{1} << 20;
  return o;
}

// Rejections name the place: "fuzz.hir:<line>:<col>: ..." and nothing but InvalidArgument.
void CheckError(const absl::Status& s, absl::string_view what, absl::string_view prefix) {
  if (s.code() != absl::StatusCode::kInvalidArgument) {
    Fail(absl::StrCat(what, " returned ", absl::StatusCodeToString(s.code()),
                      ", not InvalidArgument"),
         s.ToString());
  }
  if (!absl::StartsWith(s.message(), prefix) || s.message().size() <= prefix.size()) {
    Fail(absl::StrCat(what, ": error without a location '", prefix, "<line>:<col>: ...'"),
         s.ToString());
  }
}

// print(m) parses back to a module that prints the same, is structurally equal to m with the
// same hash, and verifies exactly when m does.
void CheckRoundTrip(const hetpass::Module& module, absl::string_view stage) {
  const hetpass::ParseOptions options = Options();
  const bool verifies = hetpass::Verify(module).ok();
  const std::string printed = hetpass::PrintModule(module);
  hetpass::PrintOptions elided;
  elided.elide_large_constants = true;
  (void)hetpass::PrintModule(module, elided);

  auto reparsed = hetpass::ParseModule(printed, options);
  if (!reparsed.ok()) {
    Fail(absl::StrCat(stage, ": printed module does not parse back"),
         absl::StrCat(reparsed.status().ToString(), "\n--- printed:\n", printed));
  }
  const std::string again = hetpass::PrintModule(**reparsed);
  if (again != printed) {
    Fail(absl::StrCat(stage, ": print(parse(print(m))) != print(m)"),
         absl::StrCat("--- first:\n", printed, "\n--- second:\n", again));
  }
  std::string why;
  if (!hetpass::StructurallyEqual(module, **reparsed, &why)) {
    Fail(absl::StrCat(stage, ": parse(print(m)) is not structurally equal to m"),
         absl::StrCat(why, "\n--- printed:\n", printed));
  }
  if (hetpass::StructuralHash(module) != hetpass::StructuralHash(**reparsed)) {
    Fail(absl::StrCat(stage, ": structurally equal modules hash differently"), printed);
  }
  const absl::Status verified_again = hetpass::Verify(**reparsed);
  if (verified_again.ok() != verifies) {
    Fail(absl::StrCat(stage, ": the verifier disagrees on m and parse(print(m))"),
         absl::StrCat(verified_again.ToString(), "\n--- printed:\n", printed));
  }
}

void CheckModule(absl::string_view text) {
  auto module = hetpass::ParseModule(text, Options());
  if (!module.ok()) {
    CheckError(module.status(), "ParseModule", absl::StrCat(kSource, ":"));
    return;
  }
  CheckRoundTrip(**module, "parsed");
  hetpass::VerifyOptions typed;
  typed.require_types = true;
  (void)hetpass::Verify(**module, typed);

  // infer-types, the first pass of every pipeline, on the same module: the shape rules meet
  // hostile dims and attributes the way `hetpass-opt --passes=infer-types` would hand them
  // over. Its errors are answers; a module it accepts must verify with every value typed, and
  // its symbolic types must print and parse back like the rest.
  if (hetpass::Verify(**module).ok()) {
    auto changed = hetpass::CreateInferTypesPass()->Run(**module);
    if (!changed.ok()) {
      if (changed.status().code() == absl::StatusCode::kInternal) {
        Fail("infer-types returned an internal error", changed.status().ToString());
      }
      return;
    }
    if (absl::Status s = hetpass::Verify(**module, typed); !s.ok()) {
      Fail("infer-types returned a module that does not verify with require_types",
           absl::StrCat(s.ToString(), "\n--- module:\n", hetpass::PrintModule(**module)));
    }
    CheckRoundTrip(**module, "after infer-types");
  }
}

void CheckType(absl::string_view text) {
  auto type = hetpass::ParseType(text);
  if (!type.ok()) {
    CheckError(type.status(), "ParseType", "<input>:");
    return;
  }
  const std::string printed = type->ToString();
  auto again = hetpass::ParseType(printed);
  if (!again.ok() || !(*again == *type) || again->ToString() != printed) {
    Fail("ParseType(t.ToString()) != t",
         absl::StrCat(printed, "\n--- reparsed: ",
                      again.ok() ? again->ToString() : again.status().ToString()));
  }
}

void CheckDim(absl::string_view text) {
  auto dim = hetpass::ParseDimExpr(text);
  if (!dim.ok()) {
    CheckError(dim.status(), "ParseDimExpr", "<input>:");
    return;
  }
  const std::string printed = dim->ToString();
  auto again = hetpass::ParseDimExpr(printed);
  if (!again.ok() || !(*again == *dim) || again->ToString() != printed) {
    Fail("ParseDimExpr(d.ToString()) != d",
         absl::StrCat(printed, "\n--- reparsed: ",
                      again.ok() ? again->ToString() : again.status().ToString()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  CheckModule(text);
  CheckType(text);
  CheckDim(text);
  return 0;
}
