// hetpass-opt: text IR in, passes, text IR out. The driver of the golden tests.
//
//   hetpass-opt FILE|- [--passes=PIPELINE] [--print-ir-after=all|p1,p2] [--timing]
//               [--verify-each=true] [--elide-constants] [--split-input-file]
//               [--copy-ledger=text|json [--ledger-function=main]] [-o OUT]
//   hetpass-opt --list-ops | --list-passes
//
// Errors go to stderr as `<file>:<line>:<col>: error: <message>` (exit code 1).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "common/huge_page_heap.h"
#include "passes/analysis/baseline_masks.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/analysis/symbol_origins.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/pass/verify_module.h"
#include "passes/pass/pass_registry.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/file.h"
#include "passes/vm/vm.h"

ABSL_FLAG(std::string, passes, "", "comma-separated pass pipeline, e.g. infer-types,dce");
ABSL_FLAG(std::string, device, "",
          "cpu, sim or cuda: run the default pipeline of `hetpass run --device=D` (instead of "
          "--passes; with neither, the input is parsed, verified and printed)");
ABSL_FLAG(std::vector<std::string>, print_ir_after, {},
          "print the IR to stderr after these passes ('all' for every pass)");
ABSL_FLAG(bool, timing, false, "print per-pass wall time to stderr");
ABSL_FLAG(bool, verify_each, true, "run the verifier after every pass");
ABSL_FLAG(bool, elide_constants, false, "print large constants as `elided`");
ABSL_FLAG(bool, list_ops, false, "list every registered op with its per-input masks and exit");
ABSL_FLAG(bool, list_passes, false, "list every pass with its options and exit");
ABSL_FLAG(std::string, o, "-", "output file ('-' for stdout)");
ABSL_FLAG(std::string, copy_ledger, "",
          "print the copy ledger (text or json; bare --copy-ledger: text) of --ledger-function "
          "instead of the IR");
ABSL_FLAG(std::string, ledger_function, "main", "function whose copy ledger is printed");
ABSL_FLAG(bool, explain_symbols, false,
          "after the pipeline, list every fresh symbol (dynN) of the ledger function with the "
          "binding that introduces it and why (data-dependent, or a rule that gave up), instead "
          "of the IR");
ABSL_FLAG(bool, allow_elided_constants, false,
          "accept `constant<elided>` (zero-filled) for examples whose weights do not matter");
ABSL_FLAG(std::string, baseline_masks, "",
          "for comparisons: single-flag or relay. Runs the pipeline with another system's "
          "dependence masks swapped in before manifest-alloc (or at the end), so placement and "
          "fusion stay ours and only the copies the masks cause differ");
ABSL_FLAG(std::string, list_baseline, "",
          "list the ops whose masks a baseline (single-flag or relay) changes, and exit");
ABSL_FLAG(std::string, emit_kernels, "",
          "after the pipeline, compile every primitive function for this device (cpu, sim or "
          "cuda; those placed elsewhere are skipped) and print, per function, the provider's description and the generated code "
          "(PTX, CUDA source) instead of the IR (golden tests of the code generators)");
ABSL_FLAG(bool, split_input_file, false,
          "treat each '// -----'-separated chunk as its own module (golden tests); line numbers "
          "stay those of the whole file");

namespace {

bool IsLocation(absl::string_view seg) {
  // "<path>:<line>:<col>"
  std::vector<absl::string_view> f = absl::StrSplit(seg, ':');
  if (f.size() < 3) return false;
  for (size_t i = f.size() - 2; i < f.size(); ++i) {
    if (f[i].empty() || !std::all_of(f[i].begin(), f[i].end(), absl::ascii_isdigit)) return false;
  }
  return true;
}

// Moves the first `<file>:<line>:<col>` segment to the front, compiler style:
// "pass 'x': f.hir:3:7: msg" -> "f.hir:3:7: error: pass 'x': msg"; no location -> "error: msg".
std::string Diagnostic(absl::string_view message) {
  std::vector<absl::string_view> segs = absl::StrSplit(message, ": ");
  for (size_t i = 0; i < segs.size(); ++i) {
    if (!IsLocation(segs[i])) continue;
    std::vector<absl::string_view> rest(segs.begin(), segs.begin() + i);
    rest.insert(rest.end(), segs.begin() + i + 1, segs.end());
    return absl::StrCat(segs[i], ": error: ", absl::StrJoin(rest, ": "));
  }
  return absl::StrCat("error: ", message);
}

int Fail(const absl::Status& s) {
  std::cerr << Diagnostic(s.message()) << "\n";
  return 1;
}


// Splits on lines that are exactly "// -----"; each chunk is padded with the newlines before it
// so that diagnostics report line numbers of the whole file.
std::vector<std::string> SplitInput(const std::string& text) {
  std::vector<std::string> chunks;
  std::string current;
  int line = 0, chunk_start = 0;
  for (absl::string_view l : absl::StrSplit(text, '\n')) {
    if (absl::StripAsciiWhitespace(l) == "// -----") {
      chunks.push_back(std::string(chunk_start, '\n') + current);
      current.clear();
      chunk_start = line + 1;
    } else {
      absl::StrAppend(&current, l, "\n");
    }
    ++line;
  }
  chunks.push_back(std::string(chunk_start, '\n') + current);
  return chunks;
}

// The text's module, or an ONNX model's (a .onnx file is imported, as `hetpass run` does).
absl::StatusOr<std::unique_ptr<hetpass::Module>> LoadModule(const std::string& text,
                                                            const std::string& source) {
  if (absl::EndsWith(source, ".onnx")) return hetpass::ImportOnnxFile(source);
  // Binary bytes are no text IR: say what the tool reads instead of "unexpected character".
  const size_t probe = std::min<size_t>(text.size(), 512);
  for (size_t i = 0; i < probe; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') {
      return absl::InvalidArgumentError(absl::StrCat(
          source, " is a binary file, not text IR: hetpass-opt reads text IR (.hir) and ONNX "
          "models named *.onnx; convert a model with `hetpass import MODEL.onnx -o FILE.hir`"));
    }
  }
  hetpass::ParseOptions parse_options;
  parse_options.source_name = source;
  parse_options.allow_elided_constants = absl::GetFlag(FLAGS_allow_elided_constants);
  parse_options.allow_elided_constants_hint = "--allow-elided-constants";
  return hetpass::ParseModule(text, parse_options);
}

// --passes, or the default pipeline of `hetpass run` for --device, or none (parse and print).
absl::StatusOr<std::string> PipelineFlag() {
  const std::string passes = absl::GetFlag(FLAGS_passes);
  const std::string device = absl::GetFlag(FLAGS_device);
  if (device.empty()) return passes;
  const std::optional<hetpass::DeviceKind> kind = hetpass::ParseDevice(device);
  if (!kind || *kind == hetpass::DeviceKind::kUnset) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be cpu, sim or cuda, got '", device, "'"));
  }
  if (!passes.empty()) {
    return absl::InvalidArgumentError(
        "give --passes or --device (its default pipeline), not both");
  }
  return hetpass::vm::DefaultPipeline(*kind);
}

absl::StatusOr<std::string> ProcessModule(const std::string& text, const std::string& source) {
  auto module = LoadModule(text, source);
  if (!module.ok()) return module.status();
  if (absl::Status s = hetpass::VerifyModule(**module); !s.ok()) return s;

  hetpass::PassManagerOptions pm_options;
  pm_options.verify_each = absl::GetFlag(FLAGS_verify_each);
  pm_options.print_ir_after = absl::GetFlag(FLAGS_print_ir_after);
  pm_options.timing = absl::GetFlag(FLAGS_timing);
  pm_options.print_options.elide_large_constants = absl::GetFlag(FLAGS_elide_constants);
  absl::StatusOr<std::string> pipeline_or = PipelineFlag();
  if (!pipeline_or.ok()) return pipeline_or.status();
  std::string pipeline = *pipeline_or;
  if (const std::string b = absl::GetFlag(FLAGS_baseline_masks); !b.empty()) {
    const std::optional<hetpass::BaselineMasks> baseline = hetpass::ParseBaselineMasks(b);
    if (!baseline) {
      return absl::InvalidArgumentError(
          absl::StrCat("--baseline-masks must be single-flag or relay, got '", b, "'"));
    }
    pipeline = hetpass::PipelineWithBaseline(pipeline, *baseline);
  }
  auto pm = hetpass::ParsePipeline(pipeline, pm_options);
  if (!pm.ok()) return pm.status();
  auto changed = (*pm)->Run(**module);
  if (!changed.ok()) return changed.status();
  if (pm_options.timing) std::cerr << (*pm)->TimingReport();

  if (const std::string device = absl::GetFlag(FLAGS_emit_kernels); !device.empty()) {
    const std::optional<hetpass::DeviceKind> kind = hetpass::ParseDevice(device);
    if (!kind) return absl::InvalidArgumentError(absl::StrCat("--emit-kernels: unknown device '", device, "'"));
    hetpass::CompileEngine engine;
    std::string out;
    for (const auto& f : (*module)->functions()) {
      if (!hetpass::IsPrimitive(*f)) continue;
      // Placed groups only where they were placed (unplaced ones: anywhere).
      const auto& nodes = f->body().nodes();
      if (!nodes.empty() && nodes.front()->device() != hetpass::DeviceKind::kUnset &&
          nodes.front()->device() != *kind) {
        continue;
      }
      auto kernel = engine.Lower(*f, *kind);
      if (!kernel.ok()) return kernel.status();
      absl::StrAppend(&out, "// kernel @", f->name(), ": ", (*kernel)->Describe(), "\n", (*kernel)->Listing());
    }
    return out;
  }
  if (absl::GetFlag(FLAGS_explain_symbols)) {
    auto origins = hetpass::ExplainSymbols(**module, absl::GetFlag(FLAGS_ledger_function));
    if (!origins.ok()) return origins.status();
    return hetpass::SymbolOriginsText(*origins);
  }
  const std::string ledger_format = absl::GetFlag(FLAGS_copy_ledger);
  if (!ledger_format.empty()) {
    if (ledger_format != "text" && ledger_format != "json") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--copy-ledger must be 'text' or 'json', got '", ledger_format, "'"));
    }
    auto ledger = hetpass::ComputeCopyLedger(**module, absl::GetFlag(FLAGS_ledger_function));
    if (!ledger.ok()) return ledger.status();
    return ledger_format == "json" ? ledger->ToJson() : ledger->ToText();
  }
  hetpass::PrintOptions print_options;
  print_options.elide_large_constants = absl::GetFlag(FLAGS_elide_constants);
  return hetpass::PrintModule(**module, print_options);
}

}  // namespace

int main(int argc, char** argv) {
  // A process policy the tool chooses for itself, before its heap holds anything large.
  hetpass::tools::UseHugePageHeap();
  const std::vector<std::string> args = hetpass::tools::ParseToolCommandLine(
      argc, argv,
      {.name = "hetpass-opt",
       .usage = "hetpass-opt FILE.hir|FILE.onnx|- [--passes=PIPELINE | --device=cpu|sim|cuda]\n"
                "           [--print-ir-after=...] [--timing] [--copy-ledger[=text|json]] [-o OUT]\n"
                "Parses text IR (or imports an ONNX model), runs a pass pipeline and prints the "
                "resulting IR.",
       .main_file = "tools/opt/",
       .bare_values = {{"--copy-ledger", "text"}}});

  if (absl::GetFlag(FLAGS_list_ops)) {
    std::cout << hetpass::OpRegistry::Global().Describe();
    return 0;
  }
  if (const std::string b = absl::GetFlag(FLAGS_list_baseline); !b.empty()) {
    const std::optional<hetpass::BaselineMasks> baseline = hetpass::ParseBaselineMasks(b);
    if (!baseline) {
      std::cerr << "error: --list-baseline must be single-flag or relay, got '" << b << "'\n";
      return 2;
    }
    std::cout << hetpass::DescribeBaseline(*baseline);
    return 0;
  }
  if (absl::GetFlag(FLAGS_list_passes)) {
    std::cout << hetpass::PassRegistry::Global().Describe();
    return 0;
  }
  if (args.size() != 2) {
    std::cerr << "error: expected exactly one input file (or '-'); see --help\n";
    return 2;
  }
  const std::string path = args[1];
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else if (!absl::EndsWith(path, ".onnx")) {
    hetpass::ReadFileOptions read;
    read.what = "text IR (.hir) or an ONNX model (.onnx)";
    absl::StatusOr<std::string> bytes = hetpass::ReadRegularFile(path, read);
    if (!bytes.ok()) return Fail(bytes.status());
    text << *bytes;
  }

  std::string out;
  bool failed = false;
  std::vector<std::string> chunks = {text.str()};
  if (absl::GetFlag(FLAGS_split_input_file)) chunks = SplitInput(text.str());
  for (size_t i = 0; i < chunks.size(); ++i) {
    absl::StatusOr<std::string> r =
        ProcessModule(chunks[i], path == "-" ? "<stdin>" : path);
    if (i > 0) out += "// -----\n";
    if (r.ok()) {
      out += *r;
    } else {
      Fail(r.status());
      failed = true;
    }
  }
  const std::string out_path = absl::GetFlag(FLAGS_o);
  if (out_path == "-") {
    std::cout << out;
  } else {
    std::ofstream f(out_path);
    f << out;
    if (!f) {
      std::cerr << "error: cannot write '" << out_path << "'\n";
      return 1;
    }
  }
  return failed ? 1 : 0;
}
