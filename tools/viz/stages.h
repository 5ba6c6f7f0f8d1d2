// Pipeline stages for pass-viz: what each stage looks like (pictures), what it contains (a
// summary), how it differs from the stage before, and the pass-manager hook that records them.
//
//   stage 0      the input module
//   stage k > 0  the module after a selected pass (--dump-after), in pipeline order
//
// Stage files are DIR/stage_NN_<pass>.<format>; DIR/index.html shows them in order.
#ifndef HETPASS_TOOLS_VIZ_STAGES_H_
#define HETPASS_TOOLS_VIZ_STAGES_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "passes/ir/ir.h"
#include "passes/pass/pass_manager.h"
#include "viz/copies.h"
#include "viz/viz.h"

namespace hetpass::viz {

// One copy as the stage tables show it.
struct CopyRow {
  std::string function;
  std::string direction;  // "h2d", "d2h", "d2d"
  std::string src, dst;   // device names
  std::string value;      // the copied value, as printed
  std::string copy;       // the copy's result, as printed
  std::string bytes;      // symbolic bytes per execution
  std::string reason;
  bool in_loop = false;
  bool from_ledger = true;
  // The graph node drawing the copy ("" if none) and its neighbourhood (Picture::copy_paths).
  std::string node;
  std::vector<std::string> path;
  // "@main %begin sim->cpu": how copies are matched between stages.
  std::string Key() const;
};

struct DirectionTotal {
  std::string direction;
  int count = 0;
  std::string bytes;  // symbolic sum
};

// One picture of a stage.
struct StageView {
  std::string name;   // "copies" or "full"
  std::string label;  // "copy view", "full graph"
  // Files written (names relative to the output directory), by format; empty when the layout
  // ran out of time (see note).
  std::vector<std::pair<std::string, std::string>> files;
  PictureStats stats;
  std::string note;  // fallbacks taken ("dot did not finish within 5 s: ...")
};

struct StageSummary {
  int index = 0;
  std::string pass;       // "" for the input stage
  int pass_position = 0;  // 1-based position of the pass in the pipeline (0: input)
  bool changed = false;
  std::string Title() const;  // "stage 0: input", "stage 2: after cse (pass 3)"

  // Ops (calls and invokes) per device name, in devices.def order ("unset" for none).
  std::vector<std::pair<std::string, int>> ops_per_device;
  // Ops that need a runtime shape function: value inputs or data-dependent output shapes.
  std::vector<std::string> shape_function_ops;  // "dyn.strided_slice %sl"
  // Every function's assumptions (passes/ir/assumption.h): "@main: seq <= 128 (reason)".
  std::vector<std::string> assumptions;
  // Allocation ops; nullopt ("n/a") while the registry has no allocation role.
  std::optional<int> allocations;
  std::vector<CopyRow> copies;
  std::vector<DirectionTotal> copy_totals;  // one per direction
  std::vector<std::string> notes;           // copy-ledger problems
  // Every value's device, keyed "@fn %name", in program order.
  std::vector<std::pair<std::string, std::string>> placements;

  // The pictures: the copy view (when the stage has copies), then the full graph.
  std::vector<StageView> views;
  // The full graph's files and statistics (views.back()).
  std::vector<std::pair<std::string, std::string>> files;
  PictureStats stats;
  // What the viewer knows of each graph node of the full graph (and of the copy view's shape
  // nodes), for search and the info panel.
  std::vector<NodeFacts> nodes;
};

// The summary of a module (no pictures, no files).
StageSummary SummarizeModule(const Module& module, const ModuleCopies& copies);

struct StageDiff {
  std::vector<std::string> moved;            // "@main %h: unset -> sim"
  std::vector<std::string> added;            // values only in the later stage
  std::vector<std::string> removed;          // values only in the earlier stage
  std::vector<std::string> copies_appeared;  // CopyRow::Key()
  std::vector<std::string> copies_vanished;
  bool empty() const {
    return moved.empty() && added.empty() && removed.empty() && copies_appeared.empty() &&
           copies_vanished.empty();
  }
};

// Placement changes from `before` to `after`, values matched by printed name.
StageDiff DiffStages(const StageSummary& before, const StageSummary& after);

struct DumpOptions {
  std::string out_dir;
  std::vector<std::string> formats = {"svg"};     // any of svg, png, dot
  std::vector<std::string> dump_after = {"all"};  // pass names, or "all"
  DotOptions dot;
  std::string source_name;  // shown in index.html
  std::string pipeline;     // shown in index.html
  // Wall-clock seconds one picture may take to lay out and render; past it the layout is
  // stopped and a cheaper one drawn (large-graph mode), which the page says. 0: no limit.
  double picture_seconds = 5;
  // Draw the copy view of every stage that has copies.
  bool copy_view = true;
};

// Writes stage pictures and index.html into an output directory.
class StageDumper {
 public:
  // Creates the output directory (and checks it is writable) and a Graphviz context. Errors
  // name the directory or the unknown format.
  static absl::StatusOr<std::unique_ptr<StageDumper>> Create(DumpOptions options);

  // Records a stage: pictures in every format, and its summary. `pass` is "" for the input.
  absl::Status DumpStage(const Module& module, const std::string& pass, int pass_position,
                         bool changed);
  // True if stages are dumped after `pass` (--dump-after).
  bool Selected(absl::string_view pass) const;
  // Writes DIR/index.html. A non-empty `error` is shown at the top (a failed pass).
  absl::Status WriteIndex(const std::string& error = "") const;

  const std::vector<StageSummary>& stages() const { return stages_; }
  const DumpOptions& options() const { return options_; }

 private:
  explicit StageDumper(DumpOptions options) : options_(std::move(options)) {}
  // Draws one view of a stage (within the time budget, with the fallback) into summary->views.
  // False when no layout finished in time.
  absl::StatusOr<bool> DrawView(const Module& module, const DotOptions& dot,
                                const std::string& stem, const std::string& name,
                                const std::string& label, StageSummary* summary);
  DumpOptions options_;
  std::unique_ptr<Renderer> renderer_;
  std::vector<StageSummary> stages_;
};

// A pass-manager hook that dumps a stage after every selected pass (counting passes to know
// each one's pipeline position). The dumper must outlive the pass manager's run.
PassManager::AfterPassHook MakeDumpAfterPassHook(StageDumper* dumper);

// index.html for a list of stages (index_html.cc).
std::string RenderIndexHtml(const DumpOptions& options, const std::vector<StageSummary>& stages,
                            const std::string& error);

}  // namespace hetpass::viz

#endif  // HETPASS_TOOLS_VIZ_STAGES_H_
