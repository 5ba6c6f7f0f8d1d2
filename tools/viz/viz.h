// pass-viz: Graphviz pictures of hetpass modules, one per pipeline stage.
//
// A Picture is a cgraph graph built from a Module (never hand-written DOT): every binding, every
// parameter and every returned value is a graph node; every use of a value is an edge. The
// visual language (the legend node on every picture repeats it):
//
//   fill colour      the device: host cpu (blue), accelerator sim (green) / cuda (teal), unset
//                    (white)
//   red node         a device_copy, labelled with its direction (h2d/d2h/d2d), the symbolic
//                    bytes and the copy ledger's reason
//   dashed, rounded  shape computation: shape queries (bold border) and the host arithmetic on
//                    their results whose only uses are `value` inputs (the shape subgraph)
//   double border    an op whose output shape depends on input values (data-dependent)
//   cluster          each invoke of a fused primitive function, with its inner ops (one box3d
//                    node instead when the group is larger than max_cluster_ops)
//   edges            bold orange "value": the op's shape function needs the input's contents on
//                    the host; dotted "shape": only metadata flows (shape queries); plain: data
//   invhouse/house   function parameters / returned values; constants are small grey boxes
//
// Above large_graph_nodes graph nodes the picture switches to large-graph mode: primitive
// groups collapse, constants are hidden, the layout engine becomes sfdp and the graph label
// says so (dot is superlinear: ~121 s at 10k nodes against ~5 s for sfdp).
//
// Graphviz is not thread-safe: build, lay out and render pictures from one thread at a time.
#ifndef HETPASS_TOOLS_VIZ_VIZ_H_
#define HETPASS_TOOLS_VIZ_VIZ_H_

#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/ir/ir.h"
#include "viz/copies.h"

struct Agraph_s;
struct GVC_s;

namespace hetpass::viz {

// What a picture shows: the whole module, or only the copies with their producer and consumer
// chains (the first view pass-viz offers: where is each copy, and why).
enum class PictureView { kFull, kCopies };

struct DotOptions {
  // First line of the graph label (the stage: "stage 1: after infer-types").
  std::string title;
  // Draw the legend node.
  bool legend = true;
  // Show value types in node labels.
  bool show_types = true;
  // A fused primitive group with more ops than this is drawn as one node.
  int max_cluster_ops = 24;
  // Above this many graph nodes: large-graph mode (see the file comment). 0: never.
  int large_graph_nodes = 1500;
  // Layout engine: "auto" (dot, sfdp in large-graph mode) or a Graphviz engine name.
  std::string engine = "auto";
  // Longest ledger reason shown in a copy label (the tooltip has all of it).
  int max_reason_chars = 64;
  // Copies already collected for this module (CollectCopies); nullptr: collected on demand.
  const ModuleCopies* copies = nullptr;
  PictureView view = PictureView::kFull;
  // Copy view: data hops drawn before and after each copy (shape arithmetic costs no hop).
  int copy_hops = 2;
  // Above this many graph nodes (of the full drawing) the picture is compact: each connected
  // piece of host shape arithmetic is one node with its op counts, constants are left out and
  // counted in their users' labels. The copy view is always compact. 0: always; -1: never.
  int compact_graph_nodes = 300;
  // Above this many graph nodes dot runs with straight edges and short network-simplex and
  // crossing searches (picture.cc has the measurements). -1: never.
  int fast_layout_nodes = 100;
};

// What the viewer shows about one graph node (index.html's search and info panel).
struct NodeFacts {
  std::string name;      // graph node name (the SVG <title>)
  std::string label;     // first line of the label
  std::string op;        // op name ("nn.dense", "invoke @fused_1", "shape arithmetic")
  std::string type;      // result types
  std::string device;    // "cpu", "sim", "cuda", "unset"
  std::string location;  // "file:line:col", or the ONNX node name of an imported op
  std::string masks;     // "data: none; shape: value"
  bool allocation = false;  // alloc_storage / alloc_tensor / kill: ranked last by the search
};

struct PictureStats {
  int ir_nodes = 0;     // bindings in the module (every function, every region)
  int graph_nodes = 0;  // including the legend node
  int graph_edges = 0;
  int copy_nodes = 0;        // device_copy bindings drawn
  int clusters = 0;          // subgraphs named cluster_*
  int collapsed_groups = 0;  // primitive invokes drawn as one node
  int hidden_constants = 0;  // constants left out in large-graph mode
  int hub_nodes = 0;         // large-graph mode: values drawn without their (many) edges
  int hidden_edges = 0;      // the edges left out for them
  int shape_components = 0;  // compact: shape arithmetic drawn as one node each
  int omitted_bindings = 0;  // copy view: bindings outside every copy's neighbourhood
  bool large_graph = false;
  bool compact = false;
  std::string engine;  // the layout engine used (or to be used)
  double build_seconds = 0;
  double layout_seconds = 0;
  double render_seconds = 0;  // summed over every format rendered
};

class Renderer;

// The graph of one module. Owns its cgraph graph; if laid out, the Renderer that did it must
// outlive the Picture.
class Picture {
 public:
  static absl::StatusOr<std::unique_ptr<Picture>> Create(const Module& module,
                                                         const DotOptions& options);
  ~Picture();
  Picture(const Picture&) = delete;
  Picture& operator=(const Picture&) = delete;

  // The graph as DOT text, written by Graphviz (agwrite). Before layout it carries only the
  // attributes set here; after layout, positions too.
  absl::Status WriteDot(std::ostream& out) const;
  const PictureStats& stats() const { return stats_; }
  // The layout engine chosen for this picture ("dot", "sfdp", ...).
  const std::string& engine() const { return stats_.engine; }
  Agraph_s* graph() const { return graph_; }
  // One entry per graph node drawn for an IR value or op (not the legend), in drawing order.
  const std::vector<NodeFacts>& facts() const { return facts_; }
  // Per copy of the module (ModuleCopies::copies() order): the graph node names of the copy's
  // neighbourhood (copy_hops hops), as drawn in a compact picture and as named in a full one.
  const std::vector<std::vector<std::string>>& copy_paths() const { return copy_paths_; }
  // Per copy: the graph node drawing it ("" if none).
  const std::vector<std::string>& copy_nodes() const { return copy_nodes_; }

 private:
  friend class Renderer;
  Picture() = default;
  Agraph_s* graph_ = nullptr;
  GVC_s* laid_out_by_ = nullptr;
  PictureStats stats_;
  std::vector<NodeFacts> facts_;
  std::vector<std::vector<std::string>> copy_paths_;
  std::vector<std::string> copy_nodes_;
};

// Graphviz messages (agerr) gathered while laying out and rendering.
struct GraphvizDiagnostics {
  std::vector<std::string> warnings;
  std::vector<std::string> errors;
};

// Lays out and renders pictures with the process's Graphviz context (created once and kept:
// Graphviz's static caches do not survive freeing a context). Layout happens on the first
// Render of a picture.
class Renderer {
 public:
  static absl::StatusOr<std::unique_ptr<Renderer>> Create();
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Renders to memory: "svg", "png", "dot" (laid out), "canon" (canonical DOT, laid out)...
  // Any Graphviz error (agerr at AGERR level or above) makes this fail; warnings are kept.
  absl::StatusOr<std::string> Render(Picture& picture, absl::string_view format);
  absl::Status RenderToFile(Picture& picture, absl::string_view format, const std::string& path);
  // Runs the layout now (Render does it on demand).
  absl::Status Layout(Picture& picture);
  // Lays out and renders `picture` into files (format, path) within `seconds` of wall time:
  // in a child process, which is killed when the budget runs out (Graphviz cannot be
  // interrupted). Returns false when it ran out (files may be missing or partial), true when
  // every file was written; the picture's layout and render seconds and the diagnostics come
  // back from the child. The picture itself is not laid out in this process. seconds <= 0:
  // no budget, rendered here (RenderToFile).
  absl::StatusOr<bool> RenderFilesWithin(
      Picture& picture, const std::vector<std::pair<std::string, std::string>>& files,
      double seconds);
  // Messages of the last Layout/Render call.
  const GraphvizDiagnostics& diagnostics() const { return diagnostics_; }

 private:
  Renderer() = default;
  GVC_s* gvc_ = nullptr;
  GraphvizDiagnostics diagnostics_;
};

// The DOT text of a module's picture, as Graphviz writes it (no layout).
absl::Status WriteDot(const Module& module, const DotOptions& options, std::ostream& out);

// Builds, lays out and renders a module in one call ("svg", "png", "dot", "canon").
absl::StatusOr<std::string> RenderModule(const Module& module, const DotOptions& options,
                                         absl::string_view format);

// Graph node names, for tools and tests that look a value up in a picture: a binding is named
// after its first result ("main.%h"), or "main.op<N>" (N-th binding of the function in program
// order) when it has none; parameters "main.%x"; returned values "main.return<i>"; the inner
// nodes of an inlined primitive group "main.%f/fused_1.%s"; the legend "legend".
inline constexpr absl::string_view kLegendNodeName = "legend";

// Fill colour of a device (the legend's swatches use the same).
absl::string_view DeviceFillColor(DeviceKind device);
inline constexpr absl::string_view kCopyFillColor = "#e53935";
inline constexpr absl::string_view kValueEdgeColor = "#d35400";

}  // namespace hetpass::viz

#endif  // HETPASS_TOOLS_VIZ_VIZ_H_
