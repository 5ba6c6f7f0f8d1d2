// index.html: the interactive viewer first (tools/viz/viewer: the copy view of each stage, the
// full graph one click away, pan and zoom, search, node facts, copy paths, a side-by-side
// diff), then every stage in order, each with its picture, a summary table, its copies and what
// changed since the previous stage. The viewer's data is one JSON block (stages, views, copies
// with their paths, node facts); each SVG is inlined once in a <template>, instantiated only
// when shown, so the page stays one self-contained file that opens from disk. A small script
// reports pictures that fail to load (and any script error) in the page title and in
// <body data-status>, which the browser check reads.
#include "viz/viz.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/support/json.h"
#include "viz/stages.h"
#include "viz/viewer_assets.h"

namespace hetpass::viz {
namespace {

std::string H(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

constexpr char kStyle[] = R"css(
body { font-family: Helvetica, Arial, sans-serif; margin: 16px 24px; color: #212121; }
h1 { font-size: 20px; margin: 0 0 6px 0; }
h2 { font-size: 16px; margin: 24px 0 8px 0; border-bottom: 1px solid #ccc; }
code { background: #f3f3f3; padding: 1px 4px; }
table { border-collapse: collapse; font-size: 12px; margin: 4px 0 10px 0; }
th, td { border: 1px solid #bbb; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.stage { display: flex; gap: 20px; align-items: flex-start; }
.picture { flex: 0 1 62%; max-width: 62%; overflow: auto; border: 1px solid #ddd; }
.picture img { max-width: 100%; height: auto; display: block; }
.facts { flex: 1 1 38%; min-width: 280px; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #777;
          vertical-align: middle; margin-right: 4px; }
.error { background: #ffebee; border: 1px solid #e53935; padding: 6px 10px; }
.note { color: #6d4c41; font-size: 12px; }
.d2h { color: #b71c1c; font-weight: bold; }
ul { margin: 2px 0 8px 0; padding-left: 20px; font-size: 12px; }
)css";

constexpr char kScript[] = R"js(
(function () {
  var problems = [];
  window.addEventListener('error', function (e) {
    var t = e.target;
    problems.push(t && t.tagName ? 'failed to load ' + (t.src || t.href) : String(e.message));
  }, true);
  window.addEventListener('load', function () {
    var images = document.images;
    for (var i = 0; i < images.length; i++) {
      if (!images[i].complete || images[i].naturalWidth === 0) {
        problems.push('picture did not load: ' + images[i].getAttribute('src'));
      }
    }
    document.body.setAttribute('data-status', problems.length ? 'error' : 'ok');
    document.body.setAttribute('data-pictures', String(images.length));
    if (problems.length) document.title = 'pass-viz ERROR: ' + problems.join('; ');
  });
})();
)js";

std::string Swatch(absl::string_view color) {
  return absl::StrCat("<span class=\"swatch\" style=\"background:", color, "\"></span>");
}

std::string Legend() {
  return absl::StrCat(
      "<p>", Swatch(DeviceFillColor(DeviceKind::kCpu)), "host (cpu) &nbsp; ",
      Swatch(DeviceFillColor(DeviceKind::kSim)), "accelerator (sim) &nbsp; ",
      Swatch(DeviceFillColor(DeviceKind::kCuda)), "accelerator (cuda) &nbsp; ",
      Swatch(DeviceFillColor(DeviceKind::kUnset)), "no device yet &nbsp; ", Swatch(kCopyFillColor),
      "device_copy (direction, bytes, why)<br>dashed rounded: shape query (bold) or shape "
      "value computed on the host &middot; double border: data-dependent output shape &middot; "
      "cluster: fused primitive group &middot; <span style=\"color:",
      kValueEdgeColor,
      "\"><b>bold edge 'value'</b></span>: the host needs the contents &middot; dotted edge "
      "'shape': metadata only &middot; invhouse: parameter, house: returned value. Click a "
      "picture to open it alone: hovering a node shows its location and input masks.</p>\n");
}

std::string OpsPerDevice(const StageSummary& s) {
  std::vector<std::string> parts;
  for (const auto& [device, count] : s.ops_per_device) {
    if (count > 0) parts.push_back(absl::StrCat(device, ": ", count));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

std::string Allocations(const StageSummary& s) {
  return s.allocations ? absl::StrCat(*s.allocations) : "n/a";
}

std::string CopyTotal(const DirectionTotal& t) {
  if (t.count == 0) return "0";
  return absl::StrCat(t.count, " (", H(t.bytes), " B)");
}

std::string List(const std::vector<std::string>& items, size_t max_items = 40) {
  std::string out = "<ul>";
  for (size_t i = 0; i < items.size() && i < max_items; ++i) {
    absl::StrAppend(&out, "<li><code>", H(items[i]), "</code></li>");
  }
  if (items.size() > max_items) {
    absl::StrAppend(&out, "<li>... and ", items.size() - max_items, " more</li>");
  }
  return out + "</ul>";
}

std::string Overview(const std::vector<StageSummary>& stages) {
  // One copy column per direction (stages.cc fills copy_totals from kAllCopyDirections), named
  // from the same list, so headers and cells cannot drift apart (a `param` header was missing).
  std::string out =
      "<table id=\"overview\"><tr><th>stage</th><th>pass</th><th>changed</th><th>ops per "
      "device</th><th>shape-function ops</th><th>allocations</th>";
  for (CopyDirection d : kAllCopyDirections) absl::StrAppend(&out, "<th>", CopyDirectionName(d), "</th>");
  absl::StrAppend(&out, "<th>graph nodes</th><th>layout + render (s)</th></tr>\n");
  for (const StageSummary& s : stages) {
    absl::StrAppend(&out, "<tr><td><a href=\"#stage-", s.index, "\">", s.index, "</a></td><td>",
                    s.pass.empty() ? "input" : H(s.pass), "</td><td>",
                    s.pass.empty() ? "" : (s.changed ? "yes" : "no"), "</td><td>", OpsPerDevice(s),
                    "</td><td>", s.shape_function_ops.size(), "</td><td>", Allocations(s), "</td>");
    for (const DirectionTotal& t : s.copy_totals)
      absl::StrAppend(&out, "<td>", CopyTotal(t), "</td>");
    absl::StrAppend(&out, "<td>", s.stats.graph_nodes, "</td><td>",
                    absl::StrFormat("%.3f", s.stats.layout_seconds + s.stats.render_seconds), " (",
                    s.stats.engine, ")</td></tr>\n");
  }
  return out + "</table>\n";
}

std::string Summary(const StageSummary& s) {
  std::string out = "<table class=\"summary\">";
  absl::StrAppend(&out, "<tr><th>ops per device</th><td>", OpsPerDevice(s), "</td></tr>");
  absl::StrAppend(&out, "<tr><th>shape-function ops</th><td>", s.shape_function_ops.size(),
                  s.shape_function_ops.empty() ? "" : List(s.shape_function_ops), "</td></tr>");
  if (!s.assumptions.empty()) {
    absl::StrAppend(&out, "<tr><th>assumptions (checked at run time)</th><td>", s.assumptions.size(),
                    List(s.assumptions), "</td></tr>");
  }
  absl::StrAppend(&out, "<tr><th>allocations</th><td>", Allocations(s),
                  s.allocations ? "" : " (no allocation ops before manifest-alloc)", "</td></tr>");
  for (const DirectionTotal& t : s.copy_totals) {
    absl::StrAppend(&out, "<tr><th>copies ", t.direction, "</th><td",
                    t.direction == "d2h" && t.count ? " class=\"d2h\"" : "", ">", CopyTotal(t),
                    "</td></tr>");
  }
  absl::StrAppend(&out, "<tr><th>picture</th><td>", s.stats.graph_nodes, " nodes, ",
                  s.stats.graph_edges, " edges, ", s.stats.clusters, " clusters; ", s.stats.engine,
                  absl::StrFormat(" layout %.3f s, render %.3f s", s.stats.layout_seconds,
                                  s.stats.render_seconds),
                  s.stats.large_graph ? " (large-graph mode)" : "", "</td></tr>");
  return out + "</table>\n";
}

std::string Copies(const StageSummary& s) {
  if (s.copies.empty()) return "<p class=\"note\">no copies</p>\n";
  std::string out =
      "<table class=\"copies\"><tr><th>dir</th><th>value</th><th>copy</th><th>devices</th>"
      "<th>bytes</th><th>why (copy ledger)</th></tr>";
  for (const CopyRow& c : s.copies) {
    absl::StrAppend(&out, "<tr><td>", H(c.direction), "</td><td><code>", H(c.value),
                    "</code></td><td><code>", H(c.copy), "</code></td><td>", H(c.src), " &rarr; ",
                    H(c.dst), "</td><td>", H(c.bytes), c.in_loop ? " per iteration" : "",
                    "</td><td>", H(c.reason), c.from_ledger ? "" : " <i>(not from the ledger)</i>",
                    "</td></tr>");
  }
  return out + "</table>\n";
}

std::string Diff(const StageSummary& before, const StageSummary& after) {
  const StageDiff d = DiffStages(before, after);
  std::string out = absl::StrCat("<p><b>changes since stage ", before.index, "</b>");
  if (d.empty()) return out + ": none</p>\n";
  out += "</p>";
  auto section = [&](absl::string_view title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    absl::StrAppend(&out, "<div>", title, " (", items.size(), ")", List(items), "</div>");
  };
  section("values that changed device", d.moved);
  section("copies that appeared", d.copies_appeared);
  section("copies that vanished", d.copies_vanished);
  section("new values", d.added);
  section("values gone", d.removed);
  return out + "\n";
}

std::string PictureAndFiles(const StageSummary& s) {
  std::string image, links;
  for (const auto& [format, file] : s.files) {
    if (image.empty() && (format == "svg" || format == "png")) image = file;
    absl::StrAppend(&links, links.empty() ? "" : " &middot; ", "<a href=\"", H(file), "\">",
                    H(format), "</a>");
  }
  std::string out = "<div class=\"picture\">";
  if (!image.empty()) {
    absl::StrAppend(&out, "<a href=\"", H(image), "\"><img src=\"", H(image), "\" alt=\"",
                    H(s.Title()), "\"></a>");
  } else {
    absl::StrAppend(&out, "<p class=\"note\">no picture format selected</p>");
  }
  // The facts column opens here; RenderIndexHtml closes it.
  return absl::StrCat(out, "</div>\n<div class=\"facts\"><p>files: ", links, "</p>");
}

std::string TemplateId(const StageSummary& s, const StageView& v) {
  return absl::StrCat("hp-svg-", s.index, "-", v.name);
}

std::string SvgFile(const StageView& v) {
  for (const auto& [format, file] : v.files) {
    if (format == "svg") return file;
  }
  return "";
}

// The <svg> element of a written SVG file (the XML prolog and doctype dropped), "" if unreadable.
std::string InlineSvg(const std::string& dir, const std::string& file) {
  std::ifstream in(std::filesystem::path(dir) / file, std::ios::binary);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  const std::string svg = text.str();
  const size_t start = svg.find("<svg");
  return start == std::string::npos ? "" : svg.substr(start);
}

std::string NodeJson(const NodeFacts& f) {
  return absl::StrCat("{\"label\":", JsonString(f.label), ",\"op\":", JsonString(f.op),
                      ",\"type\":", JsonString(f.type), ",\"device\":", JsonString(f.device),
                      ",\"location\":", JsonString(f.location),
                      ",\"masks\":", JsonString(f.masks),
                      f.allocation ? ",\"allocation\":true}" : "}");
}

std::string CopyJson(const CopyRow& c) {
  std::vector<std::string> path;
  for (const std::string& p : c.path) path.push_back(JsonString(p));
  return absl::StrCat(
      "{\"direction\":", JsonString(c.direction), ",\"value\":", JsonString(c.value),
      ",\"copy\":", JsonString(c.copy), ",\"src\":", JsonString(c.src),
      ",\"dst\":", JsonString(c.dst),
      ",\"bytes\":", JsonString(c.in_loop ? absl::StrCat(c.bytes, " per iteration") : c.bytes),
      ",\"reason\":", JsonString(c.reason), ",\"function\":", JsonString(c.function),
      ",\"node\":", JsonString(c.node), ",\"path\":[", absl::StrJoin(path, ","), "]}");
}

// The viewer's data (tools/viz/viewer/README.md has the contract).
std::string ViewerData(const DumpOptions& options, const std::vector<StageSummary>& stages) {
  std::string out = absl::StrCat("{\"source\":", JsonString(options.source_name),
                                 ",\"stages\":[");
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageSummary& s = stages[i];
    absl::StrAppend(&out, i ? "," : "", "{\"index\":", s.index,
                    ",\"title\":", JsonString(s.Title()), ",\"views\":[");
    for (size_t k = 0; k < s.views.size(); ++k) {
      const StageView& v = s.views[k];
      absl::StrAppend(&out, k ? "," : "", "{\"name\":", JsonString(v.name),
                      ",\"label\":", JsonString(v.label), ",\"template\":",
                      SvgFile(v).empty() ? "null" : JsonString(TemplateId(s, v)),
                      ",\"note\":", JsonString(v.note), "}");
    }
    out += "],\"copies\":[";
    for (size_t k = 0; k < s.copies.size(); ++k) {
      absl::StrAppend(&out, k ? "," : "", CopyJson(s.copies[k]));
    }
    out += "],\"nodes\":{";
    for (size_t k = 0; k < s.nodes.size(); ++k) {
      absl::StrAppend(&out, k ? "," : "", JsonString(s.nodes[k].name), ":", NodeJson(s.nodes[k]));
    }
    out += "}}";
  }
  return out + "]}";
}

std::string Viewer(const DumpOptions& options, const std::vector<StageSummary>& stages) {
  std::string out = absl::StrCat(
      "<div id=\"hp-viewer\"></div>\n<script type=\"application/json\" id=\"hp-data\">",
      ViewerData(options, stages), "</script>\n");
  for (const StageSummary& s : stages) {
    for (const StageView& v : s.views) {
      const std::string file = SvgFile(v);
      if (file.empty()) continue;
      absl::StrAppend(&out, "<template id=\"", TemplateId(s, v), "\">",
                      InlineSvg(options.out_dir, file), "</template>\n");
    }
  }
  return out;
}

}  // namespace

std::string RenderIndexHtml(const DumpOptions& options, const std::vector<StageSummary>& stages,
                            const std::string& error) {
  const std::string source = options.source_name.empty() ? "module" : options.source_name;
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>pass-viz: ",
      H(source), "</title>\n<style>", kStyle, "</style>\n<script>", kScript,
      "</script>\n</head>\n<body data-status=\"loading\">\n<h1>pass-viz: ", H(source), "</h1>\n");
  absl::StrAppend(&out, "<p>pipeline: <code>",
                  options.pipeline.empty() ? "(none)" : H(options.pipeline), "</code> &middot; ",
                  stages.size(),
                  " stage(s): stage 0 is the input, then the module after each "
                  "selected pass.</p>\n");
  if (!error.empty()) {
    absl::StrAppend(&out, "<p class=\"error\"><b>error:</b> ", H(error),
                    " (stages up to the failure are shown)</p>\n");
  }
  out += Viewer(options, stages);
  out += "<h2>stages</h2>\n";
  out += Legend();
  out += Overview(stages);
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageSummary& s = stages[i];
    absl::StrAppend(&out, "<h2 id=\"stage-", s.index, "\">", H(s.Title()), "</h2>\n",
                    "<div class=\"stage\">", PictureAndFiles(s), Summary(s));
    if (!s.notes.empty()) {
      absl::StrAppend(&out, "<div class=\"note\">notes", List(s.notes), "</div>");
    }
    absl::StrAppend(&out, "<p><b>copies</b></p>", Copies(s));
    if (i > 0) out += Diff(stages[i - 1], s);
    out += "</div></div>\n";
  }
  absl::StrAppend(&out, "<style>", kViewerCss, "</style>\n<script>", kViewerJs,
                  "</script>\n</body>\n</html>\n");
  return out;
}

}  // namespace hetpass::viz
