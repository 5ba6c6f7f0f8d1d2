// pass-viz-scale: how long a picture of a large module takes (numbers in docs/pass_viz.md).
//
//   pass-viz-scale [BINDINGS...] [--engine=auto|dot|sfdp] [--large-graph-nodes=N]
//                  [--write-hir=PATH] [--svg=PATH]
//
// Generates a main function with about BINDINGS bindings (default 100 and 10000): a chain of
// nn.dense on sim, each followed by an invoke of a fused primitive group (bias_add + relu) and a
// residual add; every 4th step a host shape subgraph (shape_of -> take -> concatenate ->
// dyn.reshape), every 10th step a round trip through the host (d2h copy, exp on cpu, h2d copy).
// Types come from infer-types. Prints one line per size: graph size, build / layout / render
// (svg) seconds. Single-threaded wall time; not a pass/fail test.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/ir/parser.h"
#include "passes/pass/pass_registry.h"
#include "viz/viz.h"

namespace {

std::string Generate(int target_bindings) {
  std::string text =
      "def @fused_bias_relu(%a: f32[n, 64], %b: f32[64]) -> f32[n, 64] "
      "attributes {primitive = true} {\n"
      "  %s = nn.bias_add(%a, %b) {axis = -1}\n"
      "  %r = nn.relu(%s)\n"
      "  return %r\n"
      "}\n"
      "def @main(%x: f32[n, 64] @sim, %w: f32[64, 64] @sim, %b: f32[64] @sim) {\n";
  std::string prev = "%x";
  int bindings = 0;
  for (int i = 0; bindings < target_bindings; ++i) {
    absl::StrAppend(&text, "  %d", i, " = nn.dense(", prev, ", %w) @sim\n");
    absl::StrAppend(&text, "  %f", i, " = invoke @fused_bias_relu(%d", i, ", %b) @sim\n");
    absl::StrAppend(&text, "  %e", i, " = add(%f", i, ", ", prev, ") @sim\n");
    bindings += 3;
    prev = absl::StrCat("%e", i);
    if (i % 4 == 3) {
      absl::StrAppend(&text, "  %s", i, " = shape_of(", prev, ") @cpu\n");
      absl::StrAppend(&text, "  %i", i, " = constant<[0]> : i64[1]\n");
      absl::StrAppend(&text, "  %t", i, " = take(%s", i, ", %i", i, ") {axis = 0} @cpu\n");
      absl::StrAppend(&text, "  %k", i, " = constant<[64]> : i64[1]\n");
      absl::StrAppend(&text, "  %g", i, " = concatenate(%t", i, ", %k", i, ") @cpu\n");
      absl::StrAppend(&text, "  %r", i, " = dyn.reshape(", prev, ", %g", i, ") @sim\n");
      bindings += 6;
      prev = absl::StrCat("%r", i);
    }
    if (i % 10 == 9) {
      absl::StrAppend(&text, "  %h", i, " = device_copy(", prev,
                      ") {src = \"sim\", dst = \"cpu\"} @cpu\n");
      absl::StrAppend(&text, "  %m", i, " = exp(%h", i, ") @cpu\n");
      absl::StrAppend(&text, "  %u", i, " = device_copy(%m", i,
                      ") {src = \"cpu\", dst = \"sim\"} @sim\n");
      bindings += 3;
      prev = absl::StrCat("%u", i);
    }
  }
  absl::StrAppend(&text, "  return ", prev, "\n}\n");
  return text;
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int Measure(int bindings, const hetpass::viz::DotOptions& options, const std::string& write_hir,
            const std::string& svg_path) {
  const std::string text = Generate(bindings);
  if (!write_hir.empty()) std::ofstream(write_hir) << text;
  auto module = hetpass::ParseModule(text);
  if (!module.ok()) {
    std::cerr << "error: generated IR does not parse: " << module.status().message() << "\n";
    return 1;
  }
  auto pm = hetpass::ParsePipeline("infer-types");
  if (!pm.ok() || !(*pm)->Run(**module).ok()) {
    std::cerr << "error: infer-types failed on the generated IR\n";
    return 1;
  }
  auto renderer = hetpass::viz::Renderer::Create();
  if (!renderer.ok()) return 1;
  const auto start = std::chrono::steady_clock::now();
  auto picture = hetpass::viz::Picture::Create(**module, options);
  if (!picture.ok()) return 1;
  absl::StatusOr<std::string> svg = (*renderer)->Render(**picture, "svg");
  const double total = Seconds(start);
  if (!svg.ok()) {
    std::cerr << "error: " << svg.status().message() << "\n";
    return 1;
  }
  if (!svg_path.empty()) std::ofstream(svg_path) << *svg;
  const hetpass::viz::PictureStats& s = (*picture)->stats();
  std::cout << absl::StrFormat(
      "bindings %6d  graph nodes %6d  edges %6d  clusters %4d  collapsed %4d  engine %-5s%s  "
      "build %.3f s  layout %.3f s  render svg %.3f s  total %.3f s  (svg %zu KB, %zu warnings)\n",
      s.ir_nodes, s.graph_nodes, s.graph_edges, s.clusters, s.collapsed_groups, s.engine,
      s.large_graph ? " (large)" : "", s.build_seconds, s.layout_seconds, s.render_seconds, total,
      svg->size() / 1024, (*renderer)->diagnostics().warnings.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  hetpass::viz::DotOptions options;
  std::string write_hir, svg_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    int n = 0;
    if (absl::StartsWith(a, "--engine=")) {
      options.engine = a.substr(9);
    } else if (absl::StartsWith(a, "--large-graph-nodes=") && absl::SimpleAtoi(a.substr(20), &n)) {
      options.large_graph_nodes = n;
    } else if (absl::StartsWith(a, "--write-hir=")) {
      write_hir = a.substr(12);
    } else if (absl::StartsWith(a, "--svg=")) {
      svg_path = a.substr(6);
    } else if (absl::SimpleAtoi(a, &n) && n > 0) {
      sizes.push_back(n);
    } else {
      std::cerr << "usage: pass-viz-scale [BINDINGS...] [--engine=E] [--large-graph-nodes=N] "
                   "[--write-hir=PATH] [--svg=PATH]\n";
      return 2;
    }
  }
  if (sizes.empty()) sizes = {100, 10000};
  for (int n : sizes) {
    if (int rc = Measure(n, options, write_hir, svg_path); rc != 0) return rc;
  }
  return 0;
}
