// Building a Picture: the IR of a module as a cgraph graph.
//
// Phase 0  Analyse each function once: the printer's value names (ValueNames), every value's
//          uses, and the shape subgraph (integer-valued bindings whose every use is a `value`
//          input or another shape-subgraph binding, found in one reverse program-order sweep).
// Phase 1  Count the graph nodes a full drawing would have; above large_graph_nodes switch to
//          large-graph mode (groups collapsed, constants hidden, sfdp).
// Phase 2  Declare every attribute with its default (so the DOT output is stable), then draw:
//          top-level functions (a cluster each when there are several), parameters, bindings in
//          program order, returned values. An invoke of a primitive function becomes a cluster
//          holding a fresh instance of the callee's body (its parameters fed by the invoke's
//          operands, its results feeding the invoke's uses). Regions become clusters too.
// Phase 3  The legend (one HTML-table node) and the graph label (stage title and notes).
//
// Compact pictures (above compact_graph_nodes, and always in the copy view) draw each connected
// piece of host shape arithmetic as one node (FunctionInfo's components) and leave constants
// out, counting them in their users' labels. The copy view draws only the bindings within
// copy_hops of a copy (FunctionInfo::Neighbourhood), with fused groups collapsed; parameters
// and returned values appear when a drawn binding uses or produces them.
//
// Graph node names come from printed value names, never from pointers, and objects are created
// in program order, so agwrite's output is deterministic.
#include "viz/viz.h"

#include <graphviz/cgraph.h>

#include <chrono>
#include <functional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_registry.h"
#include "viz/function_info.h"

namespace hetpass::viz {
namespace {

char* S(const char* s) { return const_cast<char*>(s); }
char* S(const std::string& s) { return const_cast<char*>(s.c_str()); }

constexpr int kMaxInlineDepth = 4;
// Large-graph mode: a value with more uses than this (shared weights) keeps its node but not its
// edges. Such hubs pull every user to the centre and make sfdp several times slower (a 10k-node
// chain sharing two weights: 19.6 s of layout with the hub edges, 3.2 s without); TensorBoard
// sets such "auxiliary" nodes aside for the same reason.
constexpr int kHubUses = 24;
constexpr char kShapeQueryStyle[] = "rounded,dashed,filled,bold";
constexpr char kShapeArithStyle[] = "rounded,dashed,filled";
constexpr char kParamFill[] = "#ffffff";
constexpr char kConstFill[] = "#eeeeee";
constexpr char kDataEdgeColor[] = "#424242";
constexpr char kShapeEdgeColor[] = "#607d8b";

absl::string_view DeviceBorderColor(DeviceKind d) {
  switch (d) {
    case DeviceKind::kCpu:
      return "#1f5fbf";
    case DeviceKind::kSim:
      return "#2e7d32";
    case DeviceKind::kCuda:
      return "#00796b";
    case DeviceKind::kUnset:
      return "#757575";
  }
  return "#757575";
}

// Pale tint for the background of a fused group on a device.
absl::string_view DeviceClusterColor(DeviceKind d) {
  switch (d) {
    case DeviceKind::kCpu:
      return "#eef5ff";
    case DeviceKind::kSim:
      return "#f0fbee";
    case DeviceKind::kCuda:
      return "#e8f8f4";
    case DeviceKind::kUnset:
      return "#f7f7f7";
  }
  return "#f7f7f7";
}

std::string DeviceLabel(DeviceKind d) {
  return d == DeviceKind::kUnset ? "unset" : std::string(DeviceName(d));
}

// Text for a Graphviz escString label: backslashes would start escapes (\N, \G), and lines are
// separated by "\n".
std::string Esc(absl::string_view s) { return absl::StrReplaceAll(s, {{"\\", "/"}, {"\n", " "}}); }

// A tooltip keeps its lines ("\n" is a line break in an escString).
std::string EscTip(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"\\", "/"}, {"\n", "\\n"}});
}

std::string Truncate(absl::string_view s, int max_chars) {
  if (max_chars <= 3 || static_cast<int>(s.size()) <= max_chars) return std::string(s);
  return absl::StrCat(s.substr(0, max_chars - 3), "...");
}

// Breaks a long line at spaces into lines of about `width` characters ("\n"-joined).
std::string Wrap(absl::string_view s, int width) {
  std::string out;
  int column = 0;
  for (absl::string_view word : absl::StrSplit(s, ' ')) {
    if (column > 0 && column + static_cast<int>(word.size()) + 1 > width) {
      out += "\\n";
      column = 0;
    } else if (column > 0) {
      out += ' ';
      ++column;
    }
    absl::StrAppend(&out, word);
    column += static_cast<int>(word.size());
  }
  return out;
}

// The invoke forms of ir.h after manifest-alloc: `{shape_func = true}` calls a primitive's host
// shape function, `{outputs = k}` a kernel writing into k explicit outputs. Neither is drawn as
// the callee's body.
bool IsShapeFuncInvoke(const Node& n) { return IsShapeFunctionInvoke(n); }
bool IsDestinationPassingInvoke(const Node& n) { return IsKernelInvoke(n); }

int CountBindings(const Block& b) {
  int n = 0;
  WalkNodes(b, [&](const Node&) { ++n; });
  return n;
}

std::string TypeText(const Type& t) { return t.is_unset() ? "untyped" : t.ToString(); }

std::string ConstantText(const Node& n) {
  const Tensor& t = n.constant_value();
  if (t.num_elements() > 4) return "";
  std::vector<std::string> items;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    items.push_back(IsFloat(t.dtype()) ? absl::StrCat(t.GetDouble(i))
                                       : absl::StrCat(t.GetInt64(i)));
  }
  return t.rank() == 0 && items.size() == 1 ? items[0]
                                            : absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

class GraphBuilder {
 public:
  struct Outputs {
    PictureStats* stats;
    std::vector<NodeFacts>* facts;
    std::vector<std::vector<std::string>>* copy_paths;
    std::vector<std::string>* copy_nodes;
  };
  GraphBuilder(const Module& module, const DotOptions& options, const ModuleCopies& copies,
               Agraph_t* graph, Outputs out)
      : module_(module),
        options_(options),
        copies_(copies),
        root_(graph),
        stats_(out.stats),
        out_(out) {}

  void Build() {
    for (const auto& f : module_.functions()) {
      WalkNodes(f->body(), [&](const Node& n) {
        if (n.kind() == NodeKind::kInvoke) invoked_.insert(n.callee());
      });
    }
    for (const auto& f : module_.functions()) {
      if (!IsPrimitive(*f) || !invoked_.contains(f->name())) top_level_.push_back(f.get());
    }
    stats_->ir_nodes = 0;
    for (const auto& f : module_.functions()) stats_->ir_nodes += CountBindings(f->body());

    // Phase 1.
    int full = options_.legend ? 1 : 0;
    for (const Function* f : top_level_) full += CountFunction(*f, 0);
    full_nodes_ = full;
    large_ = options_.large_graph_nodes > 0 && full > options_.large_graph_nodes;
    stats_->large_graph = large_;
    copies_view_ = options_.view == PictureView::kCopies;
    compact_ = large_ || copies_view_ ||
               (options_.compact_graph_nodes >= 0 && full > options_.compact_graph_nodes);
    stats_->compact = compact_;
    CopyNeighbourhoods();
    stats_->engine = options_.engine == "auto" || options_.engine.empty()
                         ? (large_ ? "sfdp" : "dot")
                         : options_.engine;

    // Phase 2.
    DeclareDefaults();
    for (const Function* f : top_level_) {
      Agraph_t* g = root_;
      if (top_level_.size() > 1 && !large_) {
        g = Cluster(root_, absl::StrCat("cluster_", f->name()));
        std::string label = absl::StrCat("@", f->name());
        if (IsPrimitive(*f)) absl::StrAppend(&label, " (primitive, not invoked)");
        agsafeset(g, S("label"), S(label), S(""));
        agsafeset(g, S("style"), S("rounded"), S(""));
      }
      Instance inst{f, &Info(*f), absl::StrCat(f->name(), "."), DeviceKind::kUnset, {}, 0};
      DrawFunction(inst, g);
    }
    for (const CopyInfo& c : copies_.copies()) {
      auto it = c.entry.node == nullptr ? drawn_.end() : drawn_.find(c.entry.node);
      out_.copy_nodes->push_back(it == drawn_.end() ? "" : it->second);
    }

    // Phase 3.
    if (options_.legend) DrawLegend();
    std::string label = Esc(options_.title);
    for (const std::string& note : Notes(full)) {
      absl::StrAppend(&label, label.empty() ? "" : "\\l", Esc(note));
    }
    if (!label.empty()) absl::StrAppend(&label, "\\l");
    agsafeset(root_, S("label"), S(label), S(""));
    stats_->graph_nodes = agnnodes(root_);
    stats_->graph_edges = agnedges(root_);
  }

 private:
  struct Instance {
    const Function* function;
    const FunctionInfo* info;
    std::string prefix;  // "main." or "main.%f/fused_1."
    // The device an inlined group's ops show when their own is unset (the invoke's).
    DeviceKind inherited;
    absl::flat_hash_map<const Value*, Agnode_t*> nodes;  // lookup only
    int depth;
  };

  const FunctionInfo& Info(const Function& f) {
    auto it = info_.find(&f);
    if (it == info_.end()) it = info_.emplace(&f, std::make_unique<FunctionInfo>(f)).first;
    return *it->second;
  }

  const Function* InlinedCallee(const Node& n, int depth) const {
    if (n.kind() != NodeKind::kInvoke || depth >= kMaxInlineDepth) return nullptr;
    if (IsShapeFuncInvoke(n) || IsDestinationPassingInvoke(n)) return nullptr;
    const Function* callee = module_.FindFunction(n.callee());
    if (callee == nullptr || !IsPrimitive(*callee)) return nullptr;
    if (callee->body().num_params() != n.num_operands() ||
        static_cast<int>(callee->body().results().size()) != n.num_results()) {
      return nullptr;  // malformed invoke: draw it as a plain node
    }
    return callee;
  }

  bool Collapsed(const Function& callee) const {
    return large_ || copies_view_ || CountBindings(callee.body()) > options_.max_cluster_ops;
  }

  // Copy view: a binding is drawn when it lies in some copy's neighbourhood.
  bool Shown(const Node& n) const { return !copies_view_ || focus_.contains(&n); }
  bool ShownParam(const Instance& inst, const Value& p) const {
    if (!copies_view_) return true;
    auto it = inst.info->uses.find(&p);
    if (it == inst.info->uses.end()) return false;
    for (const auto& [user, operand] : it->second) {
      if (focus_.contains(user)) return true;
    }
    return false;
  }

  // Every copy's neighbourhood: the copy view's selection (focus_) and the paths the viewer
  // highlights, named both as a compact picture draws them (a shape component's node) and as
  // a full one does (each binding's own node).
  void CopyNeighbourhoods() {
    for (const CopyInfo& c : copies_.copies()) {
      std::vector<std::string> names;
      const Function* f = module_.FindFunction(c.function);
      if (f != nullptr && c.entry.node != nullptr) {
        const FunctionInfo& info = Info(*f);
        absl::flat_hash_map<const Node*, int> distance;
        absl::flat_hash_set<const Node*> hood =
            info.Neighbourhood(c.entry.node, options_.copy_hops, &distance);
        for (const auto& [n, d] : distance) {
          auto [it, fresh] = hops_.try_emplace(n, d);
          if (!fresh) it->second = std::min(it->second, d);
        }
        std::vector<const Node*> sorted(hood.begin(), hood.end());
        std::sort(sorted.begin(), sorted.end(), [&](const Node* a, const Node* b) {
          return info.ordinal.at(a) < info.ordinal.at(b);
        });
        const std::string prefix = absl::StrCat(f->name(), ".");
        std::set<std::string> seen;
        for (const Node* n : sorted) {
          if (copies_view_) focus_.insert(n);
          std::vector<std::string> both = {NodeName(prefix, info, *n)};
          if (const auto* comp = info.ComponentOf(n)) {
            both.push_back(ShapeNodeName(prefix, info, *comp));
          }
          for (std::string& name : both) {
            if (seen.insert(name).second) names.push_back(std::move(name));
          }
        }
      }
      out_.copy_paths->push_back(std::move(names));
    }
  }

  // Phase 1: graph nodes of a full drawing (groups expanded unless too large).
  int CountFunction(const Function& f, int depth) {
    return f.body().num_params() + static_cast<int>(f.body().results().size()) +
           CountBlock(f.body(), depth);
  }
  int CountBlock(const Block& b, int depth) {
    int count = 0;
    for (const auto& n : b.nodes()) {
      const Function* callee = InlinedCallee(*n, depth);
      if (callee != nullptr && CountBindings(callee->body()) <= options_.max_cluster_ops) {
        count += callee->body().num_params() + CountBlock(callee->body(), depth + 1);
        continue;
      }
      ++count;
      for (int r = 0; r < n->num_regions(); ++r) {
        count += n->region(r)->num_params() + CountBlock(*n->region(r), depth);
      }
    }
    return count;
  }

  void DeclareDefaults() {
    agattr(root_, AGRAPH, S("label"), S(""));
    agattr(root_, AGRAPH, S("labelloc"), S("t"));
    agattr(root_, AGRAPH, S("labeljust"), S("l"));
    agattr(root_, AGRAPH, S("fontname"), S("Helvetica"));
    agattr(root_, AGRAPH, S("fontsize"), S("11"));
    agattr(root_, AGRAPH, S("style"), S(""));
    agattr(root_, AGRAPH, S("color"), S("#9e9e9e"));
    agattr(root_, AGRAPH, S("fillcolor"), S(""));
    agset(root_, S("fontsize"), S("12"));
    if (large_) {
      agattr(root_, AGRAPH, S("layout"), S(stats_->engine));
      agattr(root_, AGRAPH, S("splines"), S("false"));
      agattr(root_, AGRAPH, S("outputorder"), S("edgesfirst"));
      agattr(root_, AGRAPH, S("overlap"), S("true"));  // overlap removal: +27 s at 10k nodes
      agattr(root_, AGRAPH, S("K"), S("2"));  // long springs instead: a readable coiled chain
    } else {
      agattr(root_, AGRAPH, S("rankdir"), S("TB"));
      agattr(root_, AGRAPH, S("nodesep"), S("0.25"));
      agattr(root_, AGRAPH, S("ranksep"), S("0.35"));
      if (options_.fast_layout_nodes >= 0 && full_nodes_ > options_.fast_layout_nodes) {
        // Measured (dot CPU seconds): on maskrcnn_tiny's stages (530-880 nodes) spline routing
        // is most of the time (2.1 s -> 0.35 s with straight lines), and network simplex with
        // few iterations (nslimit, nslimit1) and a short crossing search (mclimit) take the
        // rest from 3.2 s to 0.3 s; transformer_encoder after cse (242 nodes, 335 edges) needs
        // both: 4.3 s as is, 3.9 s with straight lines, 3.7 s with short searches, 0.25 s with
        // both (and 40% narrower). Ranks are unchanged: edges stay top to bottom.
        agattr(root_, AGRAPH, S("splines"), S("line"));
        agattr(root_, AGRAPH, S("nslimit"), S("2"));
        agattr(root_, AGRAPH, S("nslimit1"), S("2"));
        agattr(root_, AGRAPH, S("mclimit"), S("0.3"));
      }
    }
    agattr(root_, AGNODE, S("label"), S("\\N"));
    agattr(root_, AGNODE, S("shape"), S("box"));
    agattr(root_, AGNODE, S("style"), S("filled"));
    agattr(root_, AGNODE, S("fillcolor"), S("#ffffff"));
    agattr(root_, AGNODE, S("color"), S("#757575"));
    agattr(root_, AGNODE, S("fontcolor"), S("#000000"));
    agattr(root_, AGNODE, S("fontname"), S("Helvetica"));
    agattr(root_, AGNODE, S("fontsize"), S("10"));
    agattr(root_, AGNODE, S("penwidth"), S("1"));
    agattr(root_, AGNODE, S("peripheries"), S("1"));
    agattr(root_, AGNODE, S("height"), S("0.4"));
    agattr(root_, AGNODE, S("width"), S("0.6"));
    agattr(root_, AGNODE, S("margin"), S("0.08,0.04"));
    agattr(root_, AGNODE, S("tooltip"), S(""));
    agattr(root_, AGNODE, S("class"), S(""));
    agattr(root_, AGEDGE, S("label"), S(""));
    agattr(root_, AGEDGE, S("style"), S("solid"));
    agattr(root_, AGEDGE, S("color"), S(kDataEdgeColor));
    agattr(root_, AGEDGE, S("fontcolor"), S(kDataEdgeColor));
    agattr(root_, AGEDGE, S("fontname"), S("Helvetica"));
    agattr(root_, AGEDGE, S("fontsize"), S("9"));
    agattr(root_, AGEDGE, S("penwidth"), S("1"));
    agattr(root_, AGEDGE, S("arrowsize"), S("0.7"));
    agattr(root_, AGEDGE, S("constraint"), S("true"));
    agattr(root_, AGEDGE, S("tooltip"), S(""));
    agattr(root_, AGEDGE, S("class"), S(""));
  }

  Agraph_t* Cluster(Agraph_t* parent, const std::string& name) {
    ++stats_->clusters;
    return agsubg(parent, S(name), 1);
  }

  static void Set(void* obj, const char* key, const std::string& value) {
    agsafeset(obj, S(key), S(value), S(""));
  }

  Agnode_t* NewNode(Agraph_t* g, const std::string& name) { return agnode(g, S(name), 1); }

  static std::string NodeName(absl::string_view prefix, const FunctionInfo& info,
                              const Node& n) {
    if (n.num_results() > 0) return absl::StrCat(prefix, info.names.Name(n.result(0)));
    auto it = info.ordinal.find(&n);
    return absl::StrCat(prefix, "op", it == info.ordinal.end() ? -1 : it->second);
  }
  std::string NodeName(const Instance& inst, const Node& n) const {
    return NodeName(inst.prefix, *inst.info, n);
  }
  // A compact picture's node for a piece of shape arithmetic: named after its first binding.
  static std::string ShapeNodeName(absl::string_view prefix, const FunctionInfo& info,
                                   const std::vector<const Node*>& component) {
    return absl::StrCat(prefix, "shape:", info.names.Name(component[0]->result(0)));
  }

  std::string ResultList(const Instance& inst, const Node& n) const {
    std::vector<std::string> names;
    for (const auto& r : n.results()) names.push_back(inst.info->names.Name(r.get()));
    return absl::StrJoin(names, ", ");
  }

  std::string TypeLine(const Node& n, DeviceKind device) const {
    std::vector<std::string> types;
    bool typed = false;
    for (const auto& r : n.results()) typed = typed || !r->type().is_unset();
    if (options_.show_types && typed) {
      for (const auto& r : n.results()) types.push_back(TypeText(r->type()));
    }
    std::string line = absl::StrJoin(types, ", ");
    if (device != DeviceKind::kUnset) {
      absl::StrAppend(&line, line.empty() ? "" : " ", "@", DeviceName(device));
    }
    return line;
  }

  void FillByDevice(Agnode_t* node, DeviceKind device) {
    Set(node, "fillcolor", std::string(DeviceFillColor(device)));
    Set(node, "color", std::string(DeviceBorderColor(device)));
    Set(node, "class", absl::StrCat("device_", DeviceLabel(device)));
  }

  // An edge from the node drawing `v` (if drawn) to `to`.
  bool IsHub(const Instance& inst, const Value* v) const {
    if (!large_) return false;
    auto it = inst.info->use_count.find(v);
    return it != inst.info->use_count.end() && it->second > kHubUses;
  }

  // "(N uses: edges not drawn)" for a hub in large-graph mode.
  std::string HubNote(const Instance& inst, const Node* n, const Value* param) {
    int uses = 0;
    if (param != nullptr && IsHub(inst, param)) uses = inst.info->use_count.at(param);
    if (n != nullptr) {
      for (const auto& r : n->results()) {
        if (IsHub(inst, r.get())) uses += inst.info->use_count.at(r.get());
      }
    }
    if (uses == 0) return "";
    ++stats_->hub_nodes;
    return absl::StrCat("\\n(", uses, " uses: edges not drawn)");
  }

  Agedge_t* EdgeFrom(const Instance& inst, const Value* v, Agnode_t* to) {
    auto it = inst.nodes.find(v);
    if (it == inst.nodes.end()) return nullptr;  // hidden (constant, copy view), or undefined
    if (IsHub(inst, v)) {
      ++stats_->hidden_edges;
      return nullptr;
    }
    // A shape component's node stands for several bindings: no self-loops, one edge per pair.
    if (it->second == to) return nullptr;
    if ((shape_nodes_.contains(it->second) || shape_nodes_.contains(to)) &&
        agedge(root_, it->second, to, nullptr, 0) != nullptr) {
      return nullptr;
    }
    Agedge_t* e = agedge(root_, it->second, to, nullptr, 1);
    std::string tip = absl::StrCat(inst.info->names.Name(v), " : ", TypeText(v->type()));
    if (v->device() != DeviceKind::kUnset) absl::StrAppend(&tip, " @", DeviceName(v->device()));
    Set(e, "tooltip", Esc(tip));
    const Node* producer = v->producer();
    if (producer != nullptr && producer->num_results() > 1) {
      Set(e, "label", inst.info->names.Name(v));
    }
    if (producer != nullptr && IsDeviceCopy(*producer)) {
      Set(e, "color", std::string(kCopyFillColor));
      Set(e, "penwidth", "1.5");
    }
    return e;
  }

  // Styles an operand edge by what the consumer needs of it.
  void StyleOperandEdge(Agedge_t* e, const Node& consumer, int operand) {
    if (e == nullptr || consumer.kind() != NodeKind::kCall || consumer.op() == nullptr) return;
    const OpDef& op = *consumer.op();
    if (op.role() == OpRole::kDeviceCopy) {
      Set(e, "color", std::string(kCopyFillColor));
      Set(e, "penwidth", "1.5");
      return;
    }
    const InputDep dep = op.dep(operand);
    const std::string existing = agget(e, S("label"));
    if (NeedsValue(dep)) {
      Set(e, "label", existing.empty() ? "value" : absl::StrCat(existing, " value"));
      Set(e, "style", "bold");
      Set(e, "penwidth", "2.5");
      Set(e, "color", std::string(kValueEdgeColor));
      Set(e, "fontcolor", std::string(kValueEdgeColor));
      Set(e, "class", "dep_value");
    } else if (op.role() == OpRole::kShapeQuery) {
      Set(e, "label", existing.empty() ? "shape" : absl::StrCat(existing, " shape"));
      Set(e, "style", "dotted");
      Set(e, "color", kShapeEdgeColor);
      Set(e, "fontcolor", kShapeEdgeColor);
      Set(e, "class", "dep_shape");
    }
  }

  // A shape-function invoke carries its callee's derived mask: `value` inputs as for an op.
  void StyleShapeFuncEdge(Agedge_t* e, const Node& invoke, int operand) {
    const std::vector<InputDep>* mask = ShapeFunctionMask(invoke);
    if (e == nullptr || mask == nullptr || operand >= static_cast<int>(mask->size())) return;
    const InputDep dep = (*mask)[operand];
    if (NeedsValue(dep)) {
      Set(e, "label", "value");
      Set(e, "style", "bold");
      Set(e, "penwidth", "2.5");
      Set(e, "color", std::string(kValueEdgeColor));
      Set(e, "fontcolor", std::string(kValueEdgeColor));
      Set(e, "class", "dep_value");
    } else if (NeedsShape(dep) || dep == InputDep::kNone) {
      Set(e, "label", InputDepName(dep) == "none" ? "none" : "shape");
      Set(e, "style", "dotted");
      Set(e, "color", kShapeEdgeColor);
      Set(e, "fontcolor", kShapeEdgeColor);
      Set(e, "class", "dep_shape");
    }
  }

  void DrawFunction(Instance& inst, Agraph_t* g) {
    const Block& body = inst.function->body();
    for (const auto& p : body.params()) {
      if (ShownParam(inst, *p)) DrawParam(inst, g, *p, /*small=*/false);
    }
    DrawBlock(inst, g, body);
    for (size_t i = 0; i < body.results().size(); ++i) {
      const Value* v = body.results()[i];
      if (copies_view_ && !inst.nodes.contains(v)) continue;
      Agnode_t* node = NewNode(g, absl::StrCat(inst.prefix, "return", i));
      out_.facts->push_back({agnameof(node), absl::StrCat("return ", inst.info->names.Name(v)),
                             "return", TypeText(v->type()), DeviceLabel(v->device()), "", ""});
      std::string label = absl::StrCat("return ", inst.info->names.Name(v));
      if (body.results().size() > 1) absl::StrAppend(&label, " (#", i, ")");
      Set(node, "label", label);
      Set(node, "shape", "house");
      Set(node, "fillcolor", kParamFill);
      Set(node, "class", "result");
      Set(node, "tooltip", Esc(absl::StrCat("returned from @", inst.function->name())));
      EdgeFrom(inst, v, node);
    }
  }

  void DrawParam(Instance& inst, Agraph_t* g, const Value& p, bool small) {
    Agnode_t* node = NewNode(g, absl::StrCat(inst.prefix, inst.info->names.Name(&p)));
    std::string label = inst.info->names.Name(&p);
    if (!small) {
      std::string line;
      if (options_.show_types && !p.type().is_unset()) line = Esc(p.type().ToString());
      if (p.device() != DeviceKind::kUnset) {
        absl::StrAppend(&line, line.empty() ? "" : " ", "@", DeviceName(p.device()));
      }
      if (!line.empty()) absl::StrAppend(&label, "\\n", line);
    }
    absl::StrAppend(&label, HubNote(inst, nullptr, &p));
    Set(node, "label", label);
    Set(node, "shape", "invhouse");
    FillByDevice(node, p.device() == DeviceKind::kUnset ? inst.inherited : p.device());
    if (p.device() == DeviceKind::kUnset && inst.inherited == DeviceKind::kUnset) {
      Set(node, "fillcolor", kParamFill);
    }
    Set(node, "class", "param");
    if (small) {
      Set(node, "fontsize", "8");
      Set(node, "height", "0.25");
    }
    const DeviceKind shown = p.device() == DeviceKind::kUnset ? inst.inherited : p.device();
    out_.facts->push_back({agnameof(node), inst.info->names.Name(&p), "parameter",
                           TypeText(p.type()), DeviceLabel(shown), "", ""});
    Set(node, "tooltip",
        Esc(absl::StrCat("parameter ", inst.info->names.Name(&p), " : ", TypeText(p.type()), " @",
                         DeviceLabel(shown))));
    inst.nodes[&p] = node;
  }

  void DrawBlock(Instance& inst, Agraph_t* g, const Block& block) {
    for (const auto& n : block.nodes()) {
      if (Shown(*n)) {
        DrawNode(inst, g, *n);
      } else {
        ++stats_->omitted_bindings;
      }
    }
  }

  // Copy view: class `hop<d>` on a binding's node, d its hops from the nearest copy (a shape
  // component takes its nearest member's), which the viewer uses to collapse the chains.
  void HopClass(Agnode_t* node, const Node& n) {
    auto it = hops_.find(&n);
    if (!copies_view_ || it == hops_.end()) return;
    std::string cls = agget(node, S("class"));
    int shown = it->second;
    // A node already carrying a smaller hop (another member of its shape component) keeps it.
    const size_t at = cls.find(" hop");
    if (at != std::string::npos) {
      int previous = 0;
      if (absl::SimpleAtoi(absl::string_view(cls).substr(at + 4), &previous)) {
        shown = std::min(shown, previous);
      }
      cls.erase(at);
    }
    Set(node, "class", absl::StrCat(cls, " hop", shown));
  }

  // Compact pictures: one node per piece of host shape arithmetic, made by its first binding;
  // every member's results map to it, and its edges are the component's edges to the outside.
  void DrawShapeMember(Instance& inst, Agraph_t* g, const Node& n,
                       const std::vector<const Node*>& component) {
    const std::string name = ShapeNodeName(inst.prefix, *inst.info, component);
    auto [it, fresh] = shape_by_name_.try_emplace(name, nullptr);
    if (fresh) {
      Agnode_t* node = NewNode(g, name);
      it->second = node;
      shape_nodes_.insert(node);
      ++stats_->shape_components;
      std::vector<std::pair<std::string, int>> counts;  // op name, count, in first-use order
      std::string tooltip = absl::StrCat("shape arithmetic on the host: ", component.size(),
                                         " bindings (every use needs its value on the host)");
      for (const Node* m : component) {
        const std::string op(m->OpName());
        auto c = std::find_if(counts.begin(), counts.end(),
                              [&](const auto& e) { return e.first == op; });
        if (c == counts.end()) {
          counts.push_back({op, 1});
        } else {
          ++c->second;
        }
        absl::StrAppend(&tooltip, "\n", FormatLocation(&module_, m->loc()), ": ",
                        ResultList(inst, *m), " = ", op);
      }
      std::vector<std::string> parts;
      for (const auto& [op, count] : counts) {
        parts.push_back(count > 1 ? absl::StrCat(op, " x", count) : op);
      }
      const DeviceKind device = n.device() == DeviceKind::kUnset ? inst.inherited : n.device();
      FillByDevice(node, device);
      Set(node, "style", kShapeArithStyle);
      Set(node, "class", absl::StrCat("shape_value shape_group device_", DeviceLabel(device)));
      Set(node, "label", absl::StrCat("shape arithmetic: ", component.size(), " ops\\n",
                                      Wrap(Esc(absl::StrJoin(parts, ", ")), 40)));
      Set(node, "tooltip", EscTip(tooltip));
      out_.facts->push_back({name, absl::StrCat("shape arithmetic: ", component.size(), " ops"),
                             "shape arithmetic", "", DeviceLabel(device),
                             FormatLocation(&module_, component[0]->loc()),
                             absl::StrJoin(parts, ", ")});
    }
    for (const auto& r : n.results()) inst.nodes[r.get()] = it->second;
    drawn_[&n] = name;
    HopClass(it->second, n);
    for (int i = 0; i < n.num_operands(); ++i) {
      StyleOperandEdge(EdgeFrom(inst, n.operand(i), it->second), n, i);
    }
  }

  void DrawNode(Instance& inst, Agraph_t* g, const Node& n) {
    if (n.kind() == NodeKind::kConstant && compact_) {
      ++stats_->hidden_constants;
      return;
    }
    if (const auto* component = compact_ ? inst.info->ComponentOf(&n) : nullptr) {
      DrawShapeMember(inst, g, n, *component);
      return;
    }
    if (const Function* callee = InlinedCallee(n, inst.depth);
        callee != nullptr && !Collapsed(*callee)) {
      DrawInlinedGroup(inst, g, n, *callee);
      return;
    }
    Agnode_t* node = NewNode(g, NodeName(inst, n));
    drawn_[&n] = agnameof(node);
    for (const auto& r : n.results()) inst.nodes[r.get()] = node;
    const DeviceKind device = n.device() == DeviceKind::kUnset ? inst.inherited : n.device();
    FillByDevice(node, device);
    const std::string results = ResultList(inst, n);
    const std::string lhs = results.empty() ? "" : absl::StrCat(results, " = ");
    const std::string type_line = TypeLine(n, n.device());
    std::string tooltip = absl::StrCat(FormatLocation(&module_, n.loc()), ": ", lhs, n.OpName());
    std::string label;
    switch (n.kind()) {
      case NodeKind::kConstant: {
        const std::string value = ConstantText(n);
        label = absl::StrCat(results, " = const", value.empty() ? "" : " ", value);
        if (options_.show_types) absl::StrAppend(&label, "\\n", Esc(TypeText(n.result(0)->type())));
        Set(node, "fontsize", "8");
        Set(node, "height", "0.2");
        Set(node, "margin", "0.04,0.02");
        Set(node, "fillcolor", kConstFill);
        Set(node, "class", "constant");
        break;
      }
      case NodeKind::kInvoke: {
        const Function* callee = InlinedCallee(n, inst.depth);
        label = absl::StrCat(lhs, "invoke @", n.callee());
        if (IsShapeFuncInvoke(n)) {
          label = absl::StrCat(lhs, "shape function of @", n.callee());
          Set(node, "style", kShapeArithStyle);
          Set(node, "class", absl::StrCat("shape_func device_", DeviceLabel(device)));
        } else if (IsDestinationPassingInvoke(n)) {
          const AttrValue* outputs = n.attrs().Find(kKernelOutputsAttr);
          if (std::holds_alternative<int64_t>(*outputs)) {
            absl::StrAppend(&label, "\\n(writes ", std::get<int64_t>(*outputs), " outputs)");
          }
        }
        if (callee != nullptr) {
          ++stats_->collapsed_groups;
          absl::StrAppend(&label, "\\n(fused, ", CountBindings(callee->body()), " ops, collapsed)");
        }
        Set(node, "shape", "box3d");
        break;
      }
      case NodeKind::kIf:
        label = absl::StrCat(lhs, "if");
        Set(node, "shape", "diamond");
        break;
      case NodeKind::kLoop:
        label = absl::StrCat(lhs, "loop");
        Set(node, "shape", "hexagon");
        break;
      case NodeKind::kTuple:
      case NodeKind::kGetItem:
      case NodeKind::kBuiltin:
        label = absl::StrCat(lhs, n.OpName(), n.attrs().empty() ? "" : " ", n.attrs().ToString());
        Set(node, "fontsize", "9");
        Set(node, "height", "0.3");
        break;
      case NodeKind::kCall:
        label = absl::StrCat(lhs, n.OpName());
        break;
    }
    if (n.kind() != NodeKind::kConstant && !type_line.empty() && !large_) {
      absl::StrAppend(&label, "\\n", Esc(type_line));
    }
    const std::string first_line = label.substr(0, label.find("\\n"));
    std::string masks;
    if (n.kind() == NodeKind::kCall && n.op() != nullptr) {
      const OpDef& op = *n.op();
      if (IsDeviceCopy(n)) {
        StyleCopy(inst, node, n, &label, &tooltip);
      } else if (IsShapeQuery(n)) {
        Set(node, "style", kShapeQueryStyle);
        Set(node, "class", absl::StrCat("shape_query device_", DeviceLabel(device)));
        absl::StrAppend(&tooltip, "\nshape query: reads its input's shape only");
      } else if (inst.info->shape_subgraph.contains(&n)) {
        Set(node, "style", kShapeArithStyle);
        Set(node, "class", absl::StrCat("shape_value device_", DeviceLabel(device)));
        absl::StrAppend(&tooltip, "\nshape computation: every use needs its value on the host");
      }
      if (op.data_dependent_output_shape()) {
        Set(node, "peripheries", "2");
        absl::StrAppend(&label, "\\n[data-dependent shape]");
        absl::StrAppend(&tooltip, "\noutput shape depends on input values");
      }
      if (op.needs_values()) absl::StrAppend(&tooltip, "\nneeds a shape function (value inputs)");
      for (int i = 0; i < n.num_operands(); ++i) {
        absl::StrAppend(&tooltip, "\ninput ", i, " '", op.input(i).name,
                        "': ", InputDepName(op.dep(i)));
        absl::StrAppend(&masks, masks.empty() ? "" : "; ", op.input(i).name, ": ",
                        InputDepName(op.dep(i)));
      }
      // Copies the ledger attributes to a compute op (count copies after manifest-alloc).
      if (!IsDeviceCopy(n)) {
        for (const CopyInfo* c : copies_.ForNode(&n)) {
          absl::StrAppend(&label, "\\n", Esc(CopyLine(*c)));
          absl::StrAppend(&tooltip, "\n", CopyLine(*c), ": ", c->entry.reason);
          Set(node, "color", std::string(kCopyFillColor));
          Set(node, "penwidth", "2");
        }
      }
    }
    absl::StrAppend(&label, HubNote(inst, &n, nullptr));
    if (compact_ && !large_) {
      int constants = 0;
      for (int i = 0; i < n.num_operands(); ++i) {
        const Node* p = n.operand(i)->producer();
        constants += p != nullptr && p->kind() == NodeKind::kConstant;
      }
      if (constants > 0) absl::StrAppend(&label, "\\n(+", constants, " constant inputs)");
    }
    Set(node, "label", label);
    Set(node, "tooltip", EscTip(tooltip));
    const bool allocation =
        n.kind() == NodeKind::kCall && n.op() != nullptr &&
        (n.op()->role() == OpRole::kAllocStorage || n.op()->role() == OpRole::kAllocTensor ||
         n.op()->role() == OpRole::kAllocTensorDyn || n.op()->role() == OpRole::kKill);
    HopClass(node, n);
    out_.facts->push_back({agnameof(node), first_line, std::string(n.OpName()),
                           TypeLine(n, DeviceKind::kUnset), DeviceLabel(device),
                           FormatLocation(&module_, n.loc()), masks, allocation});
    for (int i = 0; i < n.num_operands(); ++i) {
      Agedge_t* e = EdgeFrom(inst, n.operand(i), node);
      if (IsShapeFuncInvoke(n)) {
        StyleShapeFuncEdge(e, n, i);
      } else {
        StyleOperandEdge(e, n, i);
      }
    }
    // A destination-passing kernel fills its output tensors: later uses are drawn from it, so
    // the picture follows the data (kernel to kernel) instead of fanning out of the allocations.
    const std::vector<const Value*> outputs = KernelOutputs(n);
    for (int i = n.num_operands() - static_cast<int>(outputs.size()); i < n.num_operands(); ++i) {
      auto it = inst.nodes.find(n.operand(i));
      if (it != inst.nodes.end() && it->second != node) {
        if (Agedge_t* e = agedge(root_, it->second, node, nullptr, 0)) Set(e, "label", "out");
      }
      inst.nodes[n.operand(i)] = node;
    }
    for (int r = 0; r < n.num_regions(); ++r) DrawRegion(inst, g, n, r, node);
  }

  std::string CopyLine(const CopyInfo& c) const {
    std::string line =
        absl::StrCat(c.entry.implied ? "implied " : "", CopyDirectionName(c.entry.direction), " ",
                     c.entry.value, ": ", c.entry.bytes.ToString(), " B");
    if (c.entry.in_loop) absl::StrAppend(&line, " per iteration");
    return line;
  }

  void StyleCopy(const Instance& inst, Agnode_t* node, const Node& n, std::string* label,
                 std::string* tooltip) {
    ++stats_->copy_nodes;
    Set(node, "shape", "box");
    Set(node, "fillcolor", std::string(kCopyFillColor));
    Set(node, "color", "#b71c1c");
    Set(node, "fontcolor", "#ffffff");
    Set(node, "penwidth", "1.5");
    Set(node, "class", "copy");
    std::vector<const CopyInfo*> infos = copies_.ForNode(&n);
    const std::string results = ResultList(inst, n);
    *label = absl::StrCat(results, " = device_copy");
    for (const CopyInfo* c : infos) {
      const LedgerEntry& e = c->entry;
      absl::StrAppend(label, "\\n", CopyDirectionName(e.direction), " ", DeviceName(e.src), " -> ",
                      DeviceName(e.dst), e.synchronizes ? " (sync)" : "");
      absl::StrAppend(label, "\\n", Esc(e.value), ": ", Esc(e.bytes.ToString()), " bytes",
                      e.in_loop ? " per iteration" : "");
      if (!large_) {
        absl::StrAppend(label,
                        "\\nwhy: ", Wrap(Esc(Truncate(e.reason, options_.max_reason_chars)), 36));
      }
      absl::StrAppend(tooltip, "\n", CopyDirectionName(e.direction), " ", e.value, " -> ", e.copy,
                      ", ", e.bytes.ToString(), " bytes",
                      c->from_ledger ? "" : " (not from the copy ledger)", "\nwhy: ", e.reason);
      Set(node, "class", absl::StrCat("copy copy_", CopyDirectionName(e.direction)));
    }
    if (infos.empty()) absl::StrAppend(label, "\\n(no ledger entry)");
  }

  void DrawRegion(Instance& inst, Agraph_t* g, const Node& owner, int r, Agnode_t* owner_node) {
    const Block& region = *owner.region(r);
    const std::string which = owner.kind() == NodeKind::kIf
                                  ? (r == 0 ? "then" : "else")
                                  : (r == 0 ? std::string("body") : absl::StrCat("region", r));
    const std::string owner_name = NodeName(inst, owner);
    if (copies_view_) {
      bool any = false;
      WalkNodes(region, [&](const Node& m) { any = any || focus_.contains(&m); });
      if (!any) return;
    }
    Agraph_t* sub = g;
    if (!large_) {
      sub = Cluster(g, absl::StrCat("cluster_", owner_name, ".", which));
      const std::string results = ResultList(inst, owner);
      Set(sub, "label", Esc(absl::StrCat(which, " of ", owner.OpName(), " ", results)));
      Set(sub, "style", "dashed,rounded");
    }
    for (const auto& p : region.params()) {
      if (ShownParam(inst, *p)) DrawParam(inst, sub, *p, /*small=*/true);
    }
    DrawBlock(inst, sub, region);
    for (const Value* v : region.results()) {
      Agedge_t* e = EdgeFrom(inst, v, owner_node);
      if (e == nullptr) continue;
      Set(e, "label", "yield");
      Set(e, "style", "dashed");
      Set(e, "constraint", "false");
    }
  }

  void DrawInlinedGroup(Instance& inst, Agraph_t* g, const Node& invoke, const Function& callee) {
    const std::string results = ResultList(inst, invoke);
    DeviceKind device = invoke.device() == DeviceKind::kUnset ? inst.inherited : invoke.device();
    Agraph_t* sub = large_ ? g : Cluster(g, absl::StrCat("cluster_", NodeName(inst, invoke)));
    if (!large_) {
      std::string label =
          absl::StrCat(results.empty() ? "" : absl::StrCat(results, " = "), "invoke @",
                       callee.name(), " (fused, ", CountBindings(callee.body()), " ops)");
      if (invoke.device() != DeviceKind::kUnset) {
        absl::StrAppend(&label, " @", DeviceName(invoke.device()));
      }
      Set(sub, "label", Esc(label));
      Set(sub, "style", "rounded,filled");
      Set(sub, "fillcolor", std::string(DeviceClusterColor(device)));
      Set(sub, "color", std::string(DeviceBorderColor(device)));
    }
    const std::string anchor = invoke.num_results() > 0
                                   ? inst.info->names.Name(invoke.result(0))
                                   : absl::StrCat("op", inst.info->ordinal.at(&invoke));
    Instance child{
        &callee, &Info(callee), absl::StrCat(inst.prefix, anchor, "/", callee.name(), "."), device,
        {},      inst.depth + 1};
    for (int i = 0; i < callee.body().num_params(); ++i) {
      const Value& p = *callee.body().param(i);
      DrawParam(child, sub, p, /*small=*/true);
      EdgeFrom(inst, invoke.operand(i), child.nodes[&p]);
    }
    DrawBlock(child, sub, callee.body());
    for (int i = 0; i < invoke.num_results(); ++i) {
      auto it = child.nodes.find(callee.body().results()[i]);
      if (it != child.nodes.end()) inst.nodes[invoke.result(i)] = it->second;
    }
  }

  void DrawLegend() {
    constexpr int kColumns = 5;
    auto cell = [](absl::string_view fill, absl::string_view text, absl::string_view font) {
      return absl::StrCat("<TD BGCOLOR=\"", fill, "\"><FONT COLOR=\"", font, "\">", text,
                          "</FONT></TD>");
    };
    auto row = [&](absl::string_view text, absl::string_view font) {
      return absl::StrCat("<TR><TD COLSPAN=\"", kColumns, "\" ALIGN=\"LEFT\"><FONT COLOR=\"", font,
                          "\">", text, "</FONT></TD></TR>");
    };
    std::string html =
        absl::StrCat("<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"2\">",
                     "<TR><TD COLSPAN=\"", kColumns, "\"><B>legend</B></TD></TR><TR>",
                     cell(DeviceFillColor(DeviceKind::kCpu), "host cpu", "#000000"),
                     cell(DeviceFillColor(DeviceKind::kSim), "accel sim", "#000000"),
                     cell(DeviceFillColor(DeviceKind::kCuda), "accel cuda", "#000000"),
                     cell(DeviceFillColor(DeviceKind::kUnset), "no device", "#000000"),
                     cell(kCopyFillColor, "device_copy", "#ffffff"), "</TR>");
    absl::StrAppend(
        &html, row("red box: copy with direction, bytes and the ledger's reason", "#000000"),
        row("red border: a copy the ledger implies (no device_copy yet)", "#000000"),
        row("dashed rounded: shape query (bold) or host shape value", "#000000"),
        row("double border: data-dependent output shape", "#000000"),
        row("cluster: fused primitive group (box3d: collapsed group)", "#000000"),
        row("invhouse: parameter; house: returned value; grey: constant", "#000000"),
        row("<B>bold edge 'value'</B>: the host needs the contents", kValueEdgeColor),
        row("dotted edge 'shape': metadata only; plain edge: data", kShapeEdgeColor), "</TABLE>");
    Agnode_t* node = NewNode(root_, std::string(kLegendNodeName));
    char* label = agstrdup_html(root_, S(html));
    agsafeset(node, S("label"), label, S(""));
    agstrfree(root_, label);
    Set(node, "shape", "plaintext");
    Set(node, "style", "");
    Set(node, "fontsize", "9");
    Set(node, "class", "legend");
  }

  std::vector<std::string> Notes(int full_nodes) const {
    std::vector<std::string> notes;
    if (large_) {
      notes.push_back(absl::StrCat("large graph (", full_nodes, " nodes > ",
                                   options_.large_graph_nodes, "): fused groups collapsed, ",
                                   stats_->hidden_constants, " constants hidden, no clusters, ",
                                   stats_->hub_nodes, " value(s) with more than ", kHubUses,
                                   " uses drawn without their edges, types and copy reasons in "
                                   "tooltips only; laid out with ",
                                   stats_->engine));
    } else if (stats_->collapsed_groups > 0) {
      notes.push_back(absl::StrCat(stats_->collapsed_groups, " fused group(s) with more than ",
                                   options_.max_cluster_ops, " ops drawn collapsed"));
    }
    if (copies_view_) {
      notes.push_back(absl::StrCat(
          "copy view: ", copies_.copies().size(), copies_.copies().size() == 1 ? " copy" : " copies",
          " with ", options_.copy_hops,
          " hop(s) of producers and consumers and the shape arithmetic that reads them; ",
          stats_->omitted_bindings, " other bindings left out (the full graph has them)"));
    } else if (compact_ && !large_) {
      notes.push_back(absl::StrCat("compact (", full_nodes, " nodes > ",
                                   options_.compact_graph_nodes, "): ", stats_->shape_components,
                                   " pieces of shape arithmetic drawn as one node each, ",
                                   stats_->hidden_constants, " constants counted in their users"));
    }
    for (const std::string& note : copies_.notes()) notes.push_back(note);
    return notes;
  }

  const Module& module_;
  const DotOptions& options_;
  const ModuleCopies& copies_;
  Agraph_t* root_;
  PictureStats* stats_;
  Outputs out_;
  bool large_ = false;
  int full_nodes_ = 0;
  bool compact_ = false;
  bool copies_view_ = false;
  absl::flat_hash_set<const Node*> focus_;                // copy view: bindings drawn
  absl::flat_hash_map<const Node*, int> hops_;           // copy view: hops from the nearest copy
  absl::flat_hash_map<const Node*, std::string> drawn_;  // binding -> its graph node's name
  absl::flat_hash_map<std::string, Agnode_t*> shape_by_name_;
  absl::flat_hash_set<Agnode_t*> shape_nodes_;
  std::set<std::string> invoked_;
  std::vector<const Function*> top_level_;
  absl::flat_hash_map<const Function*, std::unique_ptr<FunctionInfo>> info_;  // lookup only
};

// agwrite into a std::ostream: the graph's I/O discipline writes to the channel it is given.
int PutStr(void* chan, const char* str) {
  *static_cast<std::ostream*>(chan) << str;
  return 0;
}
int Flush(void* chan) {
  static_cast<std::ostream*>(chan)->flush();
  return 0;
}

}  // namespace

absl::string_view DeviceFillColor(DeviceKind device) {
  switch (device) {
    case DeviceKind::kCpu:
      return "#cfe3ff";
    case DeviceKind::kSim:
      return "#c9efc1";
    case DeviceKind::kCuda:
      return "#b2e5d8";
    case DeviceKind::kUnset:
      return "#ffffff";
  }
  return "#ffffff";
}

absl::StatusOr<std::unique_ptr<Picture>> Picture::Create(const Module& module,
                                                         const DotOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  static Agiodisc_t io = {AgIoDisc.afread, PutStr, Flush};
  Agdisc_t disc = {&AgMemDisc, &AgIdDisc, &io};
  std::unique_ptr<Picture> picture(new Picture());
  picture->graph_ = agopen(S("hetpass"), Agdirected, &disc);
  if (picture->graph_ == nullptr) return absl::InternalError("graphviz: agopen failed");
  ModuleCopies collected;
  const ModuleCopies* copies = options.copies;
  if (copies == nullptr) {
    collected = CollectCopies(module);
    copies = &collected;
  }
  GraphBuilder(module, options, *copies, picture->graph_,
               {&picture->stats_, &picture->facts_, &picture->copy_paths_, &picture->copy_nodes_})
      .Build();
  picture->stats_.build_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return picture;
}

absl::Status Picture::WriteDot(std::ostream& out) const {
  if (agwrite(graph_, &out) != 0 || !out) {
    return absl::InternalError("graphviz: writing the DOT text failed");
  }
  return absl::OkStatus();
}

absl::Status WriteDot(const Module& module, const DotOptions& options, std::ostream& out) {
  auto picture = Picture::Create(module, options);
  if (!picture.ok()) return picture.status();
  return (*picture)->WriteDot(out);
}

}  // namespace hetpass::viz
