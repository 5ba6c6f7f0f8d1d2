// Stage summaries, stage diffs and the StageDumper (see stages.h).
#include "viz/stages.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::viz {
namespace {

constexpr DeviceKind kDeviceOrder[] = {DeviceKind::kCpu, DeviceKind::kCuda, DeviceKind::kSim,
                                       DeviceKind::kUnset};

std::string DeviceText(DeviceKind d) {
  return d == DeviceKind::kUnset ? "unset" : std::string(DeviceName(d));
}

// True for ops that allocate storage or tensors (manifest-alloc). Listing every role makes
// -Wswitch point here when a role is added.
bool IsAllocationRole(OpRole role) {
  switch (role) {
    case OpRole::kAllocStorage:
    case OpRole::kAllocTensor:
    case OpRole::kAllocTensorDyn:
    case OpRole::kKill:
      return true;
    case OpRole::kCompute:
    case OpRole::kShapeQuery:
    case OpRole::kDeviceCopy:
      return false;
  }
  return false;
}

bool RegistryHasAllocations() {
  for (const auto& op : OpRegistry::Global().ops()) {
    if (IsAllocationRole(op->role())) return true;
  }
  return false;
}

bool IsPrimitiveFunction(const Function& f) { return IsPrimitive(f); }

std::string FileStem(absl::string_view pass) {
  std::string out;
  for (char c : pass) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    out.push_back(ok ? c : '_');
  }
  return out;
}

std::string Truncate(absl::string_view s, size_t max_chars) {
  return s.size() <= max_chars ? std::string(s) : absl::StrCat(s.substr(0, max_chars - 3), "...");
}

}  // namespace

std::string CopyRow::Key() const {
  return absl::StrCat("@", function, " ", value, " ", src, "->", dst);
}

std::string StageSummary::Title() const {
  if (pass.empty()) return absl::StrCat("stage ", index, ": input");
  return absl::StrCat("stage ", index, ": after ", pass, " (pass ", pass_position,
                      changed ? ", changed" : ", no change", ")");
}

StageSummary SummarizeModule(const Module& module, const ModuleCopies& copies) {
  StageSummary s;
  int per_device[4] = {0, 0, 0, 0};
  const bool has_alloc_roles = RegistryHasAllocations();
  int allocations = 0;
  for (const auto& f : module.functions()) {
    const ValueNames names(*f);
    const bool primitive = IsPrimitiveFunction(*f);
    for (const Assumption& a : f->assumptions()) {
      s.assumptions.push_back(absl::StrCat("@", f->name(), ": ", a.Condition(), " (", a.reason, ")"));
    }
    for (const auto& p : f->body().params()) {
      s.placements.push_back(
          {absl::StrCat("@", f->name(), " ", names.Name(p.get())), DeviceText(p->device())});
    }
    WalkNodes(f->body(), [&](const Node& n) {
      for (const auto& r : n.results()) {
        s.placements.push_back(
            {absl::StrCat("@", f->name(), " ", names.Name(r.get())), DeviceText(n.device())});
      }
      if (n.kind() != NodeKind::kCall && n.kind() != NodeKind::kInvoke) return;
      if (!primitive) ++per_device[static_cast<int>(n.device())];
      if (n.kind() != NodeKind::kCall || n.op() == nullptr) return;
      const OpDef& op = *n.op();
      if (IsAllocationRole(op.role())) ++allocations;
      if (op.needs_values() || op.data_dependent_output_shape()) {
        std::vector<std::string> results;
        for (const auto& r : n.results()) results.push_back(names.Name(r.get()));
        std::string entry = absl::StrCat(op.name(), " ", absl::StrJoin(results, ", "));
        if (primitive || f->name() != "main") absl::StrAppend(&entry, " in @", f->name());
        if (op.data_dependent_output_shape()) absl::StrAppend(&entry, " (data-dependent)");
        s.shape_function_ops.push_back(std::move(entry));
      }
    });
  }
  for (DeviceKind d : kDeviceOrder) {
    s.ops_per_device.push_back({DeviceText(d), per_device[static_cast<int>(d)]});
  }
  if (has_alloc_roles) s.allocations = allocations;
  for (const CopyInfo& c : copies.copies()) {
    const LedgerEntry& e = c.entry;
    CopyRow row;
    row.function = c.function;
    row.direction = std::string(CopyDirectionName(e.direction));
    row.src = DeviceText(e.src);
    row.dst = DeviceText(e.dst);
    row.value = e.value;
    row.copy = e.copy;
    row.bytes = e.bytes.ToString();
    row.reason = e.reason;
    row.in_loop = e.in_loop;
    row.from_ledger = c.from_ledger;
    s.copies.push_back(std::move(row));
  }
  for (CopyDirection d : kAllCopyDirections) {
    s.copy_totals.push_back(DirectionTotal{std::string(CopyDirectionName(d)), copies.Count(d),
                                           copies.Bytes(d).ToString()});
  }
  s.notes = copies.notes();
  return s;
}

StageDiff DiffStages(const StageSummary& before, const StageSummary& after) {
  StageDiff diff;
  std::map<std::string, std::string> old_devices(before.placements.begin(),
                                                 before.placements.end());
  std::map<std::string, std::string> new_devices(after.placements.begin(), after.placements.end());
  for (const auto& [key, device] : after.placements) {
    auto it = old_devices.find(key);
    if (it == old_devices.end()) {
      diff.added.push_back(absl::StrCat(key, " (", device, ")"));
    } else if (it->second != device) {
      diff.moved.push_back(absl::StrCat(key, ": ", it->second, " -> ", device));
    }
  }
  for (const auto& [key, device] : before.placements) {
    if (!new_devices.count(key)) diff.removed.push_back(absl::StrCat(key, " (", device, ")"));
  }
  // Copies as multisets of keys.
  std::map<std::string, int> old_copies;
  for (const CopyRow& c : before.copies) ++old_copies[c.Key()];
  std::map<std::string, int> new_copies;
  for (const CopyRow& c : after.copies) ++new_copies[c.Key()];
  for (const CopyRow& c : after.copies) {
    if (old_copies[c.Key()]-- <= 0) {
      diff.copies_appeared.push_back(
          absl::StrCat(c.direction, " ", c.Key(), " (", c.bytes, " bytes)"));
    }
  }
  for (const CopyRow& c : before.copies) {
    if (new_copies[c.Key()]-- <= 0) {
      diff.copies_vanished.push_back(
          absl::StrCat(c.direction, " ", c.Key(), " (", c.bytes, " bytes)"));
    }
  }
  return diff;
}

absl::StatusOr<std::unique_ptr<StageDumper>> StageDumper::Create(DumpOptions options) {
  if (options.out_dir.empty()) return absl::InvalidArgumentError("no output directory given");
  for (const std::string& f : options.formats) {
    if (f != "svg" && f != "png" && f != "dot") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown picture format '", f, "' (expected svg, png or dot)"));
    }
  }
  if (options.formats.empty()) return absl::InvalidArgumentError("no picture format given");
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir(options.out_dir);
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot create output directory '",
                                                   options.out_dir,
                                                   "': ", ec ? ec.message() : "not a directory"));
  }
  const fs::path probe = dir / ".pass-viz-write-check";
  {
    std::ofstream out(probe);
    out << "ok\n";
    if (!out) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write into output directory '", options.out_dir, "'"));
    }
  }
  fs::remove(probe, ec);
  // DOT is written before any layout adds positions to the graph.
  std::stable_sort(
      options.formats.begin(), options.formats.end(),
      [](const std::string& a, const std::string& b) { return (a == "dot") > (b == "dot"); });
  std::unique_ptr<StageDumper> dumper(new StageDumper(std::move(options)));
  auto renderer = Renderer::Create();
  if (!renderer.ok()) return renderer.status();
  dumper->renderer_ = std::move(*renderer);
  return dumper;
}

bool StageDumper::Selected(absl::string_view pass) const {
  for (const std::string& p : options_.dump_after) {
    if (p == "all" || p == pass) return true;
  }
  return false;
}

absl::Status StageDumper::DumpStage(const Module& module, const std::string& pass,
                                    int pass_position, bool changed) {
  const ModuleCopies copies = CollectCopies(module);
  StageSummary summary = SummarizeModule(module, copies);
  summary.index = static_cast<int>(stages_.size());
  summary.pass = pass;
  summary.pass_position = pass_position;
  summary.changed = changed;

  DotOptions dot = options_.dot;
  dot.title = summary.Title();
  if (!options_.source_name.empty()) {
    dot.title = absl::StrCat(options_.source_name, " - ", dot.title);
  }
  dot.copies = &copies;
  const std::string stem =
      absl::StrFormat("stage_%02d_%s", summary.index, pass.empty() ? "input" : FileStem(pass));
  if (options_.copy_view && !copies.copies().empty()) {
    DotOptions view = dot;
    view.view = PictureView::kCopies;
    view.title = absl::StrCat(dot.title, " - copy view");
    auto drawn = DrawView(module, view, absl::StrCat(stem, ".copies"), "copies", "copy view",
                          &summary);
    if (!drawn.ok()) return drawn.status();
  }
  auto drawn = DrawView(module, dot, stem, "full", "full graph", &summary);
  if (!drawn.ok()) return drawn.status();
  summary.files = summary.views.back().files;
  summary.stats = summary.views.back().stats;
  stages_.push_back(std::move(summary));
  return absl::OkStatus();
}

absl::StatusOr<bool> StageDumper::DrawView(const Module& module, const DotOptions& dot,
                                           const std::string& stem, const std::string& name,
                                           const std::string& label, StageSummary* summary) {
  StageView view{name, label, {}, {}, ""};
  // The configured layout first; when it runs past the budget, large-graph mode (sfdp, no
  // clusters), which lays out 10k nodes in about 3 s; when that also runs out, no picture.
  std::vector<DotOptions> attempts = {dot};
  if (options_.picture_seconds > 0 && dot.large_graph_nodes != 1) {
    DotOptions cheap = dot;
    cheap.large_graph_nodes = 1;
    cheap.engine = "auto";
    attempts.push_back(cheap);
  }
  for (size_t attempt = 0; attempt < attempts.size(); ++attempt) {
    auto picture = Picture::Create(module, attempts[attempt]);
    if (!picture.ok()) return picture.status();
    std::vector<std::pair<std::string, std::string>> files;  // format, file name
    std::vector<std::pair<std::string, std::string>> render;  // format, path
    view.files.clear();
    for (const std::string& format : options_.formats) {
      const std::string file = absl::StrCat(stem, ".", format);
      const std::string path = (std::filesystem::path(options_.out_dir) / file).string();
      view.files.push_back({format, file});
      if (format == "dot") {
        std::ofstream out(path);
        if (!out) return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "'"));
        if (absl::Status s = (*picture)->WriteDot(out); !s.ok()) return s;
      } else {
        render.push_back({format, path});
      }
    }
    auto finished = renderer_->RenderFilesWithin(**picture, render, options_.picture_seconds);
    if (!finished.ok() && attempt + 1 < attempts.size()) {
      // A layout engine error (dot's "trouble in init_rank" on the lstm_tagger zoo model after
      // manifest-alloc) is treated like running out of time: the cheaper layout is drawn, and
      // the view says why, instead of the whole run failing.
      for (const auto& [format, path] : render) {
        std::error_code ec;
        std::filesystem::remove(path, ec);
      }
      absl::StrAppend(&view.note, view.note.empty() ? "" : "; ", (*picture)->engine(),
                      " failed (", Truncate(finished.status().message(), 120),
                      "): drawn in large-graph mode instead");
      continue;
    }
    if (!finished.ok()) return finished.status();
    view.stats = (*picture)->stats();
    // The full graph's facts are the search index; each copy's node and path are named as
    // the first view drawn (the copy view when there is one: its paths name both forms).
    if (name == "full") summary->nodes = (*picture)->facts();
    const auto& paths = (*picture)->copy_paths();
    const auto& nodes = (*picture)->copy_nodes();
    for (size_t i = 0; i < summary->copies.size() && i < paths.size(); ++i) {
      if (summary->views.empty()) summary->copies[i].path = paths[i];
      if (summary->copies[i].node.empty()) summary->copies[i].node = nodes[i];
    }
    if (*finished) {
      for (const std::string& w : renderer_->diagnostics().warnings) {
        summary->notes.push_back(absl::StrCat("graphviz (", label, "): ", w));
      }
      summary->views.push_back(std::move(view));
      return true;
    }
    // The stopped child may have left a partial file: the next attempt rewrites it, and if
    // none finishes the view must not point at it.
    for (const auto& [format, path] : render) {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
    const std::string engine = (*picture)->engine();
    absl::StrAppend(&view.note, view.note.empty() ? "" : "; ",
                    absl::StrFormat("%s did not finish within %g s", engine,
                                    options_.picture_seconds),
                    attempt + 1 < attempts.size() ? ": drawn in large-graph mode instead" : "");
  }
  // Nothing finished in time: the view has no picture, only its note.
  view.files.clear();
  absl::StrAppend(&view.note, ": no picture (raise --picture-seconds, or 0 for no limit)");
  summary->notes.push_back(absl::StrCat(label, ": ", view.note));
  summary->views.push_back(std::move(view));
  return false;
}

absl::Status StageDumper::WriteIndex(const std::string& error) const {
  const std::string path = (std::filesystem::path(options_.out_dir) / "index.html").string();
  std::ofstream out(path);
  out << RenderIndexHtml(options_, stages_, error);
  out.close();
  if (!out) return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "'"));
  return absl::OkStatus();
}

PassManager::AfterPassHook MakeDumpAfterPassHook(StageDumper* dumper) {
  auto position = std::make_shared<int>(0);
  return [dumper, position](const Pass& pass, const Module& module, bool changed) -> absl::Status {
    ++*position;
    if (!dumper->Selected(pass.name())) return absl::OkStatus();
    return dumper->DumpStage(module, std::string(pass.name()), *position, changed);
  };
}

}  // namespace hetpass::viz
