// pass-viz: a picture of every pipeline stage, and an index.html to read them in order.
//
//   pass-viz INPUT [--passes=PIPELINE | --device=cpu|sim|cuda] [--dump-after=all|name,...] --out DIR
//            [--format=svg,png,dot] [--stats] [--engine=auto|dot|sfdp|...]
//            [--max-cluster-ops=N] [--large-graph-nodes=N] [--verify-each=true]
//            [--picture-seconds=5] [--copy-view=true] [--copy-hops=2] [--compact-graph-nodes=300]
//
// INPUT is text IR ('-' for stdin) or an ONNX model (*.onnx); without --passes the pipeline
// is `hetpass run`'s default for --device (sim). Stage 0 is the input module; then one stage after each
// pass selected by --dump-after. Errors (unreadable input, bad IR, bad pipeline, unwritable
// output directory, a failing pass) print `error: ...` and exit 1; usage errors exit 2.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "common/huge_page_heap.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "passes/frontend/onnx_importer.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/ir/parser.h"
#include "passes/pass/verify_module.h"
#include "passes/pass/pass_registry.h"
#include "passes/support/file.h"
#include "passes/vm/vm.h"
#include "viz/stages.h"

ABSL_FLAG(std::string, passes, "",
          "comma-separated pass pipeline, e.g. infer-types,cse,dce (default: the pipeline of "
          "`hetpass run` for --device; none: draw the input alone)");
ABSL_FLAG(std::string, device, "sim",
          "without --passes: draw the default pipeline of `hetpass run --device=D` (cpu, sim or "
          "cuda)");
ABSL_FLAG(std::vector<std::string>, dump_after, {"all"},
          "dump a stage after these passes ('all' for every pass)");
ABSL_FLAG(std::string, out, "", "output directory (created if missing)");
ABSL_FLAG(std::vector<std::string>, format, {"svg"}, "picture formats: svg, png, dot");
ABSL_FLAG(bool, stats, false, "print per-stage graph size and layout/render times to stderr");
ABSL_FLAG(std::string, engine, "auto",
          "Graphviz layout engine: auto (dot; sfdp for large graphs), dot, sfdp, neato, ...");
ABSL_FLAG(int, max_cluster_ops, 24, "fused groups with more ops are drawn as one node");
ABSL_FLAG(int, large_graph_nodes, 1500,
          "above this many graph nodes: collapse groups, hide constants, use sfdp (0: never)");
ABSL_FLAG(bool, verify_each, true, "run the verifier after every pass");
ABSL_FLAG(bool, legend, true, "draw the legend on every picture");
ABSL_FLAG(double, picture_seconds, 5,
          "wall-clock seconds one picture may take to lay out and render; past it a cheaper "
          "layout (large-graph mode) is drawn and the page says so (0: no limit)");
ABSL_FLAG(int, fast_layout_nodes, 100,
          "above this many graph nodes dot draws straight edges with short searches (-1: never)");
ABSL_FLAG(bool, copy_view, true, "draw each stage's copy view (copies with their chains)");
ABSL_FLAG(int, copy_hops, 2, "copy view: producer and consumer hops drawn around each copy");
ABSL_FLAG(int, compact_graph_nodes, 300,
          "above this many graph nodes, shape arithmetic and constants collapse (0: always, "
          "-1: never)");

namespace {

int Fail(absl::string_view message) {
  std::cerr << "error: " << message << "\n";
  return 1;
}

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  hetpass::ReadFileOptions read;
  read.what = "text IR (.hir) or an ONNX model (.onnx)";
  return hetpass::ReadRegularFile(path, read);
}

void PrintStats(const hetpass::viz::StageSummary& s) {
  for (const hetpass::viz::StageView& v : s.views) {
    const hetpass::viz::PictureStats& p = v.stats;
    std::cerr << absl::StrFormat(
        "pass-viz: %s: %s: %d IR bindings, %d graph nodes, %d edges, %d clusters%s%s; build "
        "%.3f s, layout (%s) %.3f s, render %.3f s%s\n",
        s.Title(), v.label, p.ir_nodes, p.graph_nodes, p.graph_edges, p.clusters,
        p.large_graph ? " (large-graph mode)" : "", p.compact ? " (compact)" : "",
        p.build_seconds, p.engine, p.layout_seconds, p.render_seconds,
        v.note.empty() ? "" : absl::StrCat(" [", v.note, "]"));
  }
}

int Run(const std::string& input) {
  const std::string out_dir = absl::GetFlag(FLAGS_out);
  if (out_dir.empty()) {
    std::cerr << "error: --out DIR is required; see --help\n";
    return 2;
  }
  const std::string source = input == "-" ? "<stdin>" : input;
  absl::StatusOr<std::unique_ptr<hetpass::Module>> module;
  if (absl::EndsWith(input, ".onnx")) {
    // ONNX models are imported (node names become the pictures' locations).
    module = hetpass::ImportOnnxFile(input);
  } else {
    absl::StatusOr<std::string> text = ReadInput(input);
    if (!text.ok()) return Fail(text.status().message());
    hetpass::ParseOptions parse_options;
    parse_options.source_name = source;
    parse_options.allow_elided_constants = true;  // a picture needs no weights
    module = hetpass::ParseModule(*text, parse_options);
  }
  if (!module.ok()) return Fail(module.status().message());
  if (absl::Status s = hetpass::VerifyModule(**module); !s.ok()) return Fail(s.message());

  // --passes, else the default pipeline of `hetpass run --device=D`: a picture of the unplaced
  // input alone shows no device and no copy.
  std::string pipeline = absl::GetFlag(FLAGS_passes);
  if (pipeline == "none") {
    pipeline.clear();  // the input alone
  } else if (pipeline.empty()) {
    const std::optional<hetpass::DeviceKind> kind = hetpass::ParseDevice(absl::GetFlag(FLAGS_device));
    if (!kind || *kind == hetpass::DeviceKind::kUnset) {
      return Fail(absl::StrCat("--device must be cpu, sim or cuda, got '",
                               absl::GetFlag(FLAGS_device), "'"));
    }
    pipeline = hetpass::vm::DefaultPipeline(*kind);
  }
  hetpass::PassManagerOptions pm_options;
  pm_options.verify_each = absl::GetFlag(FLAGS_verify_each);
  auto pm = hetpass::ParsePipeline(pipeline, pm_options);
  if (!pm.ok()) return Fail(absl::StrCat("bad pipeline: ", pm.status().message()));

  std::vector<std::string> dump_after = absl::GetFlag(FLAGS_dump_after);
  std::vector<std::string> pass_names;
  for (const auto& p : (*pm)->passes()) pass_names.push_back(std::string(p->name()));
  for (const std::string& name : dump_after) {
    if (name != "all" &&
        std::find(pass_names.begin(), pass_names.end(), name) == pass_names.end()) {
      return Fail(absl::StrCat("--dump-after names '", name, "', which is not in the pipeline (",
                               pass_names.empty() ? "no passes" : absl::StrJoin(pass_names, ", "),
                               ")"));
    }
  }

  hetpass::viz::DumpOptions options;
  options.out_dir = out_dir;
  options.formats = absl::GetFlag(FLAGS_format);
  options.dump_after = dump_after;
  options.source_name = source;
  options.pipeline = pipeline;
  options.dot.engine = absl::GetFlag(FLAGS_engine);
  options.dot.max_cluster_ops = absl::GetFlag(FLAGS_max_cluster_ops);
  options.dot.large_graph_nodes = absl::GetFlag(FLAGS_large_graph_nodes);
  options.dot.legend = absl::GetFlag(FLAGS_legend);
  options.dot.copy_hops = absl::GetFlag(FLAGS_copy_hops);
  options.dot.fast_layout_nodes = absl::GetFlag(FLAGS_fast_layout_nodes);
  options.dot.compact_graph_nodes = absl::GetFlag(FLAGS_compact_graph_nodes);
  options.picture_seconds = absl::GetFlag(FLAGS_picture_seconds);
  options.copy_view = absl::GetFlag(FLAGS_copy_view);
  if (options.dot.copy_hops < 0) return Fail("--copy-hops must be 0 or more");
  auto dumper = hetpass::viz::StageDumper::Create(options);
  if (!dumper.ok()) return Fail(dumper.status().message());

  if (absl::Status s = (*dumper)->DumpStage(**module, "", 0, false); !s.ok()) {
    return Fail(s.message());
  }
  (*pm)->AddAfterPassHook(hetpass::viz::MakeDumpAfterPassHook(dumper->get()));
  absl::StatusOr<bool> ran = (*pm)->Run(**module);
  const std::string error = ran.ok() ? "" : std::string(ran.status().message());
  if (absl::GetFlag(FLAGS_stats)) {
    for (const auto& s : (*dumper)->stages()) PrintStats(s);
  }
  if (absl::Status s = (*dumper)->WriteIndex(error); !s.ok()) return Fail(s.message());
  if (!ran.ok()) {
    std::cerr << "pass-viz: wrote " << (*dumper)->stages().size() << " stage(s) up to the failure"
              << " to " << out_dir << "/index.html\n";
    return Fail(error);
  }
  std::cerr << "pass-viz: wrote " << (*dumper)->stages().size() << " stage(s) to " << out_dir
            << "/index.html\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A process policy the tool chooses for itself, before its heap holds anything large.
  hetpass::tools::UseHugePageHeap();
  const std::vector<std::string> args = hetpass::tools::ParseToolCommandLine(
      argc, argv,
      {.name = "pass-viz",
       .usage = "pass-viz INPUT.hir|INPUT.onnx|- --out DIR [--passes=PIPELINE | --device=D]\n"
                "         [--dump-after=all|name,...] [--format=svg,png,dot] [--stats]\n"
                "Draws the module after each selected pass (devices coloured, copies explained) "
                "and writes DIR/index.html. Open index.html first. Without --passes it draws "
                "`hetpass run`'s default pipeline for --device (sim).",
       .main_file = "tools/viz/pass_viz_main"});
  if (args.size() != 2) {
    std::cerr << "error: expected exactly one input file (or '-'); see --help\n";
    return 2;
  }
  return Run(args[1]);
}
