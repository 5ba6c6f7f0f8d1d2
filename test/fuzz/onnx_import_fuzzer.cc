// libFuzzer target for the ONNX importer: the input bytes are a serialized ONNX ModelProto.
//
// What counts as a finding (the process aborts, libFuzzer saves the input):
//   - a crash, an abort (HETPASS_CHECK), an ASan report (overflow, use after free, leak) or a
//     UBSan report (overflow of signed arithmetic, bad shift, misaligned or null access): the
//     sanitizers find these by themselves;
//   - an allocation above -malloc_limit_mb or a process above -rss_limit_mb (libFuzzer): a
//     hostile dim that the importer turned into memory instead of an error;
//   - a module that ImportOnnx returned OK but that does not verify (with require_types: the
//     options ask for infer-types), because passes trust verified input;
//   - an InternalError from ImportOnnx: the importer only returns it when an exception escaped
//     a converter (its catch-all), which is a bug; user errors are InvalidArgument or
//     Unimplemented.
// Any other error status is a correct answer to bad input and is fine.
//
// Printing is fuzzed too: every imported module is printed twice (large constants as hex bytes,
// then elided). With HETPASS_FUZZ_ROUNDTRIP=1 in the environment the printed text is
// also parsed back and printed again, and the two texts must be equal (the printer/parser
// round-trip promise); off by default, because it tests the parser rather than the importer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/ir/verifier.h"

namespace {

bool round_trip = false;

[[noreturn]] void Fail(absl::string_view what, absl::string_view detail) {
  std::fprintf(stderr, "onnx_import_fuzzer: %.*s\n%.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void CheckRoundTrip(const std::string& printed) {
  auto reparsed = hetpass::ParseModule(printed);
  if (!reparsed.ok()) {
    Fail("printed module does not parse back", absl::StrCat(reparsed.status().ToString(),
                                                             "\n--- printed:\n", printed));
  }
  const std::string again = hetpass::PrintModule(**reparsed);
  if (again != printed) {
    Fail("print(parse(print(m))) != print(m)",
         absl::StrCat("--- first:\n", printed, "\n--- second:\n", again));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* rt = std::getenv("HETPASS_FUZZ_ROUNDTRIP");
  round_trip = rt != nullptr && absl::string_view(rt) == "1";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  hetpass::OnnxImportOptions options;
  options.infer_types = true;
  auto module = hetpass::ImportOnnx(bytes, options, "fuzz.onnx");
  if (!module.ok()) {
    if (module.status().code() == absl::StatusCode::kInternal) {
      Fail("ImportOnnx returned an internal error", module.status().ToString());
    }
    return 0;
  }
  hetpass::VerifyOptions verify;
  verify.require_types = true;
  if (absl::Status s = hetpass::Verify(**module, verify); !s.ok()) {
    Fail("ImportOnnx returned a module that does not verify",
         absl::StrCat(s.ToString(), "\n--- module:\n", hetpass::PrintModule(**module)));
  }
  const std::string printed = hetpass::PrintModule(**module);  // large constants as hex
  hetpass::PrintOptions elided;
  elided.elide_large_constants = true;
  (void)hetpass::PrintModule(**module, elided);
  if (round_trip) CheckRoundTrip(printed);
  return 0;
}
