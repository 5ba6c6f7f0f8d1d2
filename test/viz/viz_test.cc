// Tests of pass-viz pictures: the DOT Graphviz writes is read back with cgraph and checked
// against the IR (node and edge counts, colours by device, one red node per device_copy with
// the ledger's direction, bytes and reason), golden DOT files, SVG rendering without Graphviz
// errors, large-graph mode, collapsed groups, regions and determinism.
#include "viz/viz.h"

#include <graphviz/cgraph.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_registry.h"
#include "viz/copies.h"
#include "viz_test_util.h"

namespace hetpass::viz {
namespace {

using ::hetpass::viz::testing::LoadExample;
using ::hetpass::viz::testing::LoadTestModule;
using ::hetpass::viz::testing::ParsedDot;
using ::hetpass::viz::testing::ReadFile;
using ::testing::HasSubstr;
using ::testing::Not;

char* S(const char* s) { return const_cast<char*>(s); }

std::string Dot(const Module& m, const DotOptions& options = {}) {
  std::ostringstream out;
  absl::Status s = WriteDot(m, options, out);
  EXPECT_TRUE(s.ok()) << s;
  return out.str();
}

// The drawing's size by its specification: every parameter, binding and returned value of a
// top-level function is a node, every operand and block result an edge; an invoke of a
// primitive function is replaced by the callee's parameters and bindings (its results become
// the invoke's results, not edges). Plus the legend node.
struct Expected {
  int nodes = 1;
  int edges = 0;
};

void CountBlock(const Module& m, const Block& b, bool inlined, Expected* e) {
  for (const auto& n : b.nodes()) {
    e->edges += n->num_operands();
    const Function* callee = n->kind() == NodeKind::kInvoke ? m.FindFunction(n->callee()) : nullptr;
    if (callee != nullptr && IsPrimitive(*callee)) {
      e->nodes += callee->body().num_params();
      CountBlock(m, callee->body(), /*inlined=*/true, e);
      continue;
    }
    ++e->nodes;
    for (int r = 0; r < n->num_regions(); ++r) {
      e->nodes += n->region(r)->num_params();
      CountBlock(m, *n->region(r), /*inlined=*/false, e);
    }
  }
  if (!inlined) e->edges += static_cast<int>(b.results().size());
}

Expected ExpectedSize(const Module& m) {
  Expected e;
  for (const auto& f : m.functions()) {
    if (IsPrimitive(*f)) continue;  // every primitive function of the tests is invoked
    e.nodes += f->body().num_params() + static_cast<int>(f->body().results().size());
    CountBlock(m, f->body(), /*inlined=*/false, &e);
  }
  return e;
}

int CountDeviceCopies(const Module& m) {
  int n = 0;
  for (const auto& f : m.functions()) {
    WalkNodes(f->body(), [&](const Node& node) { n += IsDeviceCopy(node); });
  }
  return n;
}

class StructureTest : public ::testing::TestWithParam<const char*> {};

// Tests that the picture has exactly one node per parameter, binding and returned value and one
// edge per use, filled by device, with one red copy node per device_copy and ledger entry.
TEST_P(StructureTest, DotMatchesIr) {
  auto m = LoadTestModule(GetParam(), "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  const Module& module = **m;
  ParsedDot dot(Dot(module));
  ASSERT_NE(dot.g(), nullptr);

  const Expected expected = ExpectedSize(module);
  EXPECT_EQ(agnnodes(dot.g()), expected.nodes);
  EXPECT_EQ(agnedges(dot.g()), expected.edges);
  EXPECT_NE(dot.Node(std::string(kLegendNodeName)), nullptr);

  const Function& main = *module.FindFunction("main");
  const ValueNames names(main);
  for (const auto& p : main.body().params()) {
    Agnode_t* n = dot.Node(absl::StrCat("main.", names.Name(p.get())));
    ASSERT_NE(n, nullptr) << names.Name(p.get());
    EXPECT_EQ(dot.Attr(n, "shape"), "invhouse");
    if (p->device() != DeviceKind::kUnset) {
      EXPECT_EQ(dot.Attr(n, "fillcolor"), DeviceFillColor(p->device())) << names.Name(p.get());
    }
  }
  WalkNodes(main.body(), [&](const Node& node) {
    if (node.num_results() == 0 || node.kind() == NodeKind::kInvoke) return;
    const std::string name = names.Name(node.result(0));
    Agnode_t* n = dot.Node(absl::StrCat("main.", name));
    ASSERT_NE(n, nullptr) << name;
    if (IsDeviceCopy(node)) {
      EXPECT_EQ(dot.Attr(n, "fillcolor"), kCopyFillColor) << name;
    } else if (node.kind() != NodeKind::kConstant) {
      EXPECT_EQ(dot.Attr(n, "fillcolor"), DeviceFillColor(node.device())) << name;
    }
  });
  for (size_t i = 0; i < main.body().results().size(); ++i) {
    Agnode_t* n = dot.Node(absl::StrCat("main.return", i));
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(dot.Attr(n, "shape"), "house");
  }

  // A device_copy is a red node; a copy the ledger only implies (a shape function reading an
  // accelerator value, the count of a data-dependent op) is a line on the op that needs it.
  auto ledger = ComputeCopyLedger(module, "main");
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ(dot.CountClass("copy"), CountDeviceCopies(module));
  int copy_entries = 0;
  for (const LedgerEntry& e : ledger->entries) {
    ASSERT_NE(e.node, nullptr);
    Agnode_t* n = dot.Node(absl::StrCat("main.", names.Name(e.node->result(0))));
    ASSERT_NE(n, nullptr) << e.value;
    const std::string label = dot.Attr(n, "label");
    EXPECT_THAT(label, HasSubstr(std::string(CopyDirectionName(e.direction))));
    EXPECT_THAT(dot.Attr(n, "tooltip"), HasSubstr(e.reason));
    if (IsDeviceCopy(*e.node)) {
      ++copy_entries;
      EXPECT_THAT(label, HasSubstr(absl::StrCat(e.bytes.ToString(), " bytes")));
      EXPECT_EQ(dot.Attr(n, "class"), absl::StrCat("copy copy_", CopyDirectionName(e.direction)));
    } else if (e.direction == CopyDirection::kParam) {
      // Host data the kernel reads by value: a line on the op, like an implied copy.
      EXPECT_FALSE(e.implied);
      EXPECT_THAT(label, HasSubstr(absl::StrCat("param ", e.value, ": ", e.bytes.ToString(), " B")));
      EXPECT_EQ(dot.Attr(n, "color"), kCopyFillColor);
    } else {
      EXPECT_TRUE(e.implied);
      EXPECT_THAT(label, HasSubstr(absl::StrCat("implied ", CopyDirectionName(e.direction), " ",
                                                e.value, ": ", e.bytes.ToString(), " B")));
      EXPECT_EQ(dot.Attr(n, "color"), kCopyFillColor);
    }
  }
  EXPECT_EQ(copy_entries, CountDeviceCopies(module));
}

INSTANTIATE_TEST_SUITE_P(TestModules, StructureTest,
                         ::testing::Values("hetero.hir", "copies.hir", "regions.hir"));

// Tests that a module without any device_copy (the example, before planning) has an empty
// ledger and no copy node, and still matches the IR node for node.
TEST(VizTest, ModuleWithoutCopiesHasNoCopyNodes) {
  auto m = LoadTestModule("mlp.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  const ModuleCopies copies = CollectCopies(**m);
  EXPECT_TRUE(copies.copies().empty());
  EXPECT_TRUE(copies.notes().empty());
  ParsedDot dot(Dot(**m));
  EXPECT_EQ(dot.CountClass("copy"), 0);
  EXPECT_EQ(agnnodes(dot.g()), ExpectedSize(**m).nodes);
  EXPECT_EQ(agnedges(dot.g()), ExpectedSize(**m).edges);
}

// Tests that mask styles follow the registry: value inputs bold and labelled, the input of a
// shape query dotted, the others plain; shape queries and shape values dashed.
TEST(VizTest, EdgesShowInputMasks) {
  auto m = LoadTestModule("hetero.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  ParsedDot dot(Dot(**m));
  Agnode_t* slice = dot.Node("main.%sl");
  ASSERT_NE(slice, nullptr);
  int value_edges = 0, data_edges = 0;
  for (Agedge_t* e = agfstin(dot.g(), slice); e != nullptr; e = agnxtin(dot.g(), e)) {
    if (dot.Attr(e, "label") == "value") {
      ++value_edges;
      EXPECT_EQ(dot.Attr(e, "style"), "bold");
      EXPECT_EQ(dot.Attr(e, "color"), kValueEdgeColor);
    } else {
      ++data_edges;
      EXPECT_EQ(dot.Attr(e, "style"), "solid");
    }
  }
  EXPECT_EQ(value_edges, 3);  // begin, end, strides
  EXPECT_EQ(data_edges, 1);   // the sliced tensor: shape only, never copied
  Agnode_t* shape = dot.Node("main.%shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_THAT(dot.Attr(shape, "style"), HasSubstr("dashed"));
  Agedge_t* into_shape = agfstin(dot.g(), shape);
  ASSERT_NE(into_shape, nullptr);
  EXPECT_EQ(dot.Attr(into_shape, "style"), "dotted");
  EXPECT_EQ(dot.Attr(into_shape, "label"), "shape");
  Agnode_t* nz = dot.Node("main.%nz");
  ASSERT_NE(nz, nullptr);
  EXPECT_EQ(dot.Attr(nz, "peripheries"), "2");
  EXPECT_THAT(dot.Attr(nz, "label"), HasSubstr("data-dependent"));

  auto mlp = LoadTestModule("mlp.hir", "infer-types");
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  ParsedDot mlp_dot(Dot(**mlp));
  for (const char* name : {"main.%batch", "main.%target"}) {
    Agnode_t* n = mlp_dot.Node(name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_THAT(mlp_dot.Attr(n, "class"), HasSubstr("shape_value")) << name;
  }
  EXPECT_THAT(mlp_dot.Attr(mlp_dot.Node("main.%h1"), "class"), Not(HasSubstr("shape")));
}

// Tests that each invoke of a primitive function is a cluster holding the callee's ops, fed by
// the invoke's operands, with the invoke's device; and one node when the group is too large.
TEST(VizTest, FusedGroupsAreClustersOrCollapsed) {
  auto m = LoadTestModule("hetero.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string text = Dot(**m);
  EXPECT_THAT(text, HasSubstr("subgraph \"cluster_main.%f\""));
  ParsedDot dot(text);
  Agraph_t* cluster = agsubg(dot.g(), S("cluster_main.%f"), 0);
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(agnnodes(cluster), 4);  // %a, %b, %s, %r
  Agnode_t* relu = dot.Node("main.%f/fused_1.%r");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(dot.Attr(relu, "fillcolor"), DeviceFillColor(DeviceKind::kSim));
  EXPECT_EQ(dot.Node("main.%f"), nullptr);

  DotOptions options;
  options.max_cluster_ops = 1;
  ParsedDot collapsed(Dot(**m, options));
  Agnode_t* group = collapsed.Node("main.%f");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(collapsed.Attr(group, "shape"), "box3d");
  EXPECT_THAT(collapsed.Attr(group, "label"), HasSubstr("collapsed"));
  EXPECT_THAT(collapsed.Attr(collapsed.g(), "label"), HasSubstr("drawn collapsed"));
  EXPECT_EQ(agsubg(collapsed.g(), S("cluster_main.%f"), 0), nullptr);
}

// Tests that above the node threshold the picture collapses groups, hides constants, drops
// clusters, uses sfdp and says so in its label; and that it still renders cleanly.
TEST(VizTest, LargeGraphModeIsAnnounced) {
  auto m = LoadTestModule("hetero.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  DotOptions options;
  options.large_graph_nodes = 5;
  auto picture = Picture::Create(**m, options);
  ASSERT_TRUE(picture.ok()) << picture.status();
  const PictureStats& s = (*picture)->stats();
  EXPECT_TRUE(s.large_graph);
  EXPECT_EQ(s.engine, "sfdp");
  EXPECT_EQ(s.clusters, 0);
  EXPECT_EQ(s.hidden_constants, 1);
  EXPECT_EQ(s.collapsed_groups, 1);
  std::ostringstream out;
  ASSERT_TRUE((*picture)->WriteDot(out).ok());
  ParsedDot dot(out.str());
  EXPECT_THAT(dot.Attr(dot.g(), "label"), HasSubstr("large graph"));
  EXPECT_EQ(dot.Attr(dot.g(), "layout"), "sfdp");
  EXPECT_EQ(dot.Node("main.%stride"), nullptr);

  auto renderer = Renderer::Create();
  ASSERT_TRUE(renderer.ok());
  auto svg = (*renderer)->Render(**picture, "svg");
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_THAT(*svg, HasSubstr("<svg"));
  EXPECT_TRUE((*renderer)->diagnostics().errors.empty());
}

// Tests that every test module renders to SVG (and PNG) with no Graphviz error or warning, and
// that the SVG carries the classes a stylesheet or script can select.
TEST(VizTest, SvgRendersWithoutGraphvizErrors) {
  auto renderer = Renderer::Create();
  ASSERT_TRUE(renderer.ok());
  for (const char* name : {"hetero.hir", "copies.hir", "regions.hir"}) {
    auto m = LoadTestModule(name, "infer-types");
    ASSERT_TRUE(m.ok()) << m.status();
    auto picture = Picture::Create(**m, DotOptions());
    ASSERT_TRUE(picture.ok());
    auto svg = (*renderer)->Render(**picture, "svg");
    ASSERT_TRUE(svg.ok()) << name << ": " << svg.status();
    EXPECT_TRUE((*renderer)->diagnostics().errors.empty()) << name;
    EXPECT_TRUE((*renderer)->diagnostics().warnings.empty())
        << name << ": " << (*renderer)->diagnostics().warnings.front();
    EXPECT_THAT(*svg, HasSubstr("<svg"));
    EXPECT_THAT(*svg, HasSubstr("legend"));
    auto png = (*renderer)->Render(**picture, "png");
    ASSERT_TRUE(png.ok()) << png.status();
    EXPECT_EQ(png->substr(1, 3), "PNG");
  }
  auto m = LoadTestModule("copies.hir", "infer-types");
  ASSERT_TRUE(m.ok());
  auto svg = RenderModule(**m, DotOptions(), "svg");
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_THAT(*svg, HasSubstr("class=\"node copy copy_d2h\""));
  EXPECT_THAT(*svg, HasSubstr("class=\"node copy copy_h2d\""));
  EXPECT_THAT(*svg, HasSubstr("class=\"edge dep_value\""));
}

// Tests that the project's example, whatever it holds today, draws and renders cleanly.
TEST(VizTest, ExampleRenders) {
  auto m = LoadExample("dynamic_mlp.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  auto renderer = Renderer::Create();
  ASSERT_TRUE(renderer.ok());
  auto picture = Picture::Create(**m, DotOptions());
  ASSERT_TRUE(picture.ok()) << picture.status();
  auto svg = (*renderer)->Render(**picture, "svg");
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_TRUE((*renderer)->diagnostics().errors.empty());
  ParsedDot dot([&] {
    std::ostringstream out;
    EXPECT_TRUE(WriteDot(**m, DotOptions(), out).ok());
    return out.str();
  }());
  EXPECT_EQ(agnnodes(dot.g()), ExpectedSize(**m).nodes);
  EXPECT_EQ(agnedges(dot.g()), ExpectedSize(**m).edges);
}

// Tests that Graphviz's own errors (agerr) come back as a Status instead of going to stderr.
TEST(VizTest, GraphvizErrorsBecomeStatus) {
  auto m = LoadTestModule("hetero.hir", "");
  ASSERT_TRUE(m.ok()) << m.status();
  auto renderer = Renderer::Create();
  ASSERT_TRUE(renderer.ok());

  DotOptions bad_engine;
  bad_engine.engine = "no-such-engine";
  auto picture = Picture::Create(**m, bad_engine);
  ASSERT_TRUE(picture.ok());
  absl::Status layout = (*renderer)->Layout(**picture);
  EXPECT_FALSE(layout.ok());
  EXPECT_THAT(std::string(layout.message()), HasSubstr("no-such-engine"));

  auto good = Picture::Create(**m, DotOptions());
  ASSERT_TRUE(good.ok());
  auto bad_format = (*renderer)->Render(**good, "no-such-format");
  EXPECT_FALSE(bad_format.ok());
  EXPECT_THAT(std::string(bad_format.status().message()), HasSubstr("graphviz"));
  // The renderer stays usable after an error.
  auto svg = (*renderer)->Render(**good, "svg");
  EXPECT_TRUE(svg.ok()) << svg.status();
}

// Tests that the picture does not depend on allocation order: building twice, or from a
// reparsed copy of the printed module, writes the same DOT.
TEST(VizTest, DotIsDeterministic) {
  auto m = LoadTestModule("hetero.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string first = Dot(**m);
  EXPECT_EQ(first, Dot(**m));
  ParseOptions options;
  options.source_name = "hetero.hir";
  auto reparsed = ParseModule(PrintModule(**m), options);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  // Locations differ (printed text), so compare without tooltips.
  auto strip = [](std::string s) {
    std::string out;
    for (absl::string_view line : absl::StrSplit(s, '\n')) {
      if (!absl::StrContains(line, "tooltip")) absl::StrAppend(&out, line, "\n");
    }
    return out;
  };
  EXPECT_EQ(strip(first), strip(Dot(**reparsed)));
}

// Golden DOT files (test/viz/golden/*.dot). HETPASS_UPDATE_GOLDEN=1 rewrites them.
struct GoldenCase {
  const char* input;
  bool example;
  const char* pipeline;
  const char* golden;
};

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, MatchesGoldenDot) {
  const GoldenCase& c = GetParam();
  auto m = c.example ? LoadExample(c.input, c.pipeline) : LoadTestModule(c.input, c.pipeline);
  ASSERT_TRUE(m.ok()) << m.status();
  DotOptions options;
  options.title = absl::StrCat(c.input, " after ", c.pipeline);
  const std::string actual = Dot(**m, options);
  const std::string path = absl::StrCat(HETPASS_VIZ_TEST_DIR, "/golden/", c.golden);
  const char* update = std::getenv("HETPASS_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  const std::string expected = ReadFile(path);
  ASSERT_FALSE(expected.empty()) << "missing golden file " << path
                                 << " (run with HETPASS_UPDATE_GOLDEN=1)";
  EXPECT_EQ(actual, expected) << "picture of " << c.input << " differs from " << path;
}

INSTANTIATE_TEST_SUITE_P(
    Goldens, GoldenTest,
    ::testing::Values(GoldenCase{"hetero.hir", false, "infer-types", "hetero.dot"},
                      GoldenCase{"copies.hir", false, "infer-types", "copies.dot"},
                      GoldenCase{"mlp.hir", false, "infer-types", "mlp.dot"}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string name = info.param.golden;
      return name.substr(0, name.find('.'));
    });

}  // namespace
}  // namespace hetpass::viz
