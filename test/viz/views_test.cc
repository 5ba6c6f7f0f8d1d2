// Tests of what makes pass-viz usable on real models: compact pictures (shape arithmetic as one
// node, constants counted in their users), the copy view (only the copies' neighbourhoods, with
// the paths the viewer highlights), destination-passing kernels drawn as their outputs'
// producers, the per-picture time budget with its fallback, and the viewer's data in
// index.html.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "viz/function_info.h"
#include "viz/stages.h"
#include "viz/viz.h"
#include "viz_test_util.h"

namespace hetpass::viz {
namespace {

using ::hetpass::viz::testing::LoadExample;
using ::hetpass::viz::testing::ParsedDot;
using ::hetpass::viz::testing::ParseText;
using ::hetpass::viz::testing::ReadFile;
using ::hetpass::viz::testing::TempDir;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

namespace fs = std::filesystem;

// shape_of -> take -> concatenate feeding dyn.reshape's value input; an exp chain around a
// device-to-host round trip in the middle.
constexpr char kShapes[] = R"(
def @main(%x: f32[n, 8] @sim, %y: f32[m, 4] @sim) {
  %s = shape_of(%x) @cpu
  %i = constant<[0]> : i64[1]
  %t = take(%s, %i) {axis = 0} @cpu
  %k = constant<[32]> : i64[1]
  %g = concatenate(%t, %k) @cpu
  %r = dyn.reshape(%y, %g) @sim
  return %r
}
)";

std::string Chain(int before, int after) {
  std::string text = "def @main(%x: f32[n, 8] @sim) {\n";
  std::string prev = "%x";
  for (int i = 0; i < before; ++i) {
    absl::StrAppend(&text, "  %a", i, " = exp(", prev, ") @sim\n");
    prev = absl::StrCat("%a", i);
  }
  absl::StrAppend(&text, "  %c = device_copy(", prev, ") {src = \"sim\", dst = \"cpu\"} @cpu\n");
  prev = "%c";
  for (int i = 0; i < after; ++i) {
    absl::StrAppend(&text, "  %b", i, " = exp(", prev, ") @cpu\n");
    prev = absl::StrCat("%b", i);
  }
  return absl::StrCat(text, "  return ", prev, "\n}\n");
}

std::string Dot(const Picture& p) {
  std::ostringstream out;
  EXPECT_TRUE(p.WriteDot(out).ok());
  return out.str();
}


// Tests that the host shape arithmetic of a block is one component, and that a compact picture
// draws it as one node with its op counts, its value edge into the reshape, and no constants;
// a full picture keeps every binding.
TEST(ViewsTest, ShapeArithmeticIsOneNodeInCompactPictures) {
  auto m = ParseText(kShapes, "shapes.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  const FunctionInfo info(*(*m)->FindFunction("main"));
  ASSERT_EQ(info.components.size(), 1u);
  EXPECT_EQ(info.components[0].size(), 3u);  // shape_of, take, concatenate

  DotOptions compact;
  compact.compact_graph_nodes = 0;
  auto p = Picture::Create(**m, compact);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->stats().compact);
  EXPECT_EQ((*p)->stats().shape_components, 1);
  EXPECT_EQ((*p)->stats().hidden_constants, 2);
  ParsedDot dot(Dot(**p));
  Agnode_t* shape = dot.Node("main.shape:%s");
  ASSERT_NE(shape, nullptr);
  EXPECT_THAT(dot.Attr(shape, "label"), HasSubstr("shape arithmetic: 3 ops"));
  EXPECT_THAT(dot.Attr(shape, "label"), HasSubstr("shape_of, take, concatenate"));
  for (const char* gone : {"main.%t", "main.%g", "main.%i", "main.%k", "main.%s"}) {
    EXPECT_EQ(dot.Node(gone), nullptr) << gone;
  }
  Agedge_t* into_reshape = agedge(dot.g(), shape, dot.Node("main.%r"), nullptr, 0);
  ASSERT_NE(into_reshape, nullptr);
  EXPECT_EQ(dot.Attr(into_reshape, "class"), "dep_value");
  // The facts name the component as the picture does.
  bool found = false;
  for (const NodeFacts& f : (*p)->facts()) found |= f.name == "main.shape:%s";
  EXPECT_TRUE(found);

  DotOptions full;
  full.compact_graph_nodes = -1;
  auto q = Picture::Create(**m, full);
  ASSERT_TRUE(q.ok()) << q.status();
  ParsedDot all(Dot(**q));
  EXPECT_EQ(all.Node("main.shape:%s"), nullptr);
  for (const char* kept : {"main.%t", "main.%g", "main.%i", "main.%k", "main.%s"}) {
    EXPECT_NE(all.Node(kept), nullptr) << kept;
  }
}

// Tests that the copy view draws the copy with `copy_hops` producers and consumers and leaves
// the rest out (counted and said in the title), and that the copy's path names exactly them.
TEST(ViewsTest, CopyViewDrawsTheCopiesNeighbourhood) {
  auto m = ParseText(Chain(6, 6), "chain.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  DotOptions options;
  options.view = PictureView::kCopies;
  options.copy_hops = 2;
  options.legend = false;
  auto p = Picture::Create(**m, options);
  ASSERT_TRUE(p.ok()) << p.status();
  ParsedDot dot(Dot(**p));
  const std::set<std::string> expected = {"main.%a4", "main.%a5", "main.%c", "main.%b0",
                                          "main.%b1"};
  std::set<std::string> drawn;
  for (Agnode_t* v = agfstnode(dot.g()); v != nullptr; v = agnxtnode(dot.g(), v)) {
    drawn.insert(agnameof(v));
  }
  EXPECT_EQ(drawn, expected);
  // Each node carries its hops from the copy (the viewer's hops filter reads them).
  EXPECT_THAT(dot.Attr(dot.Node("main.%c"), "class"), HasSubstr("hop0"));
  EXPECT_THAT(dot.Attr(dot.Node("main.%a5"), "class"), HasSubstr("hop1"));
  EXPECT_THAT(dot.Attr(dot.Node("main.%b0"), "class"), HasSubstr("hop1"));
  EXPECT_THAT(dot.Attr(dot.Node("main.%a4"), "class"), HasSubstr("hop2"));
  EXPECT_THAT(dot.Attr(dot.Node("main.%b1"), "class"), HasSubstr("hop2"));
  EXPECT_EQ((*p)->stats().omitted_bindings, 13 - 5);
  EXPECT_THAT(dot.Attr(dot.g(), "label"), HasSubstr("copy view: 1 copy with 2 hop(s)"));
  ASSERT_EQ((*p)->copy_paths().size(), 1u);
  EXPECT_EQ(std::set<std::string>((*p)->copy_paths()[0].begin(), (*p)->copy_paths()[0].end()),
            expected);
  ASSERT_EQ((*p)->copy_nodes().size(), 1u);
  EXPECT_EQ((*p)->copy_nodes()[0], "main.%c");
}

// Tests that after manifest-alloc a kernel invoke is drawn as the producer of the tensors it
// writes: some edge runs from one kernel invoke to another (the data path), not only out of the
// allocations.
TEST(ViewsTest, DestinationPassingKernelsFeedLaterUses) {
  auto m = LoadExample("dynamic_mlp.hir",
                       "infer-types,plan-devices{target=sim},fuse-ops,manifest-alloc");
  ASSERT_TRUE(m.ok()) << m.status();
  auto p = Picture::Create(**m, DotOptions{});
  ASSERT_TRUE(p.ok()) << p.status();
  ParsedDot dot(Dot(**p));
  int kernel_to_kernel = 0, out_edges = 0;
  for (Agnode_t* v = agfstnode(dot.g()); v != nullptr; v = agnxtnode(dot.g(), v)) {
    for (Agedge_t* e = agfstout(dot.g(), v); e != nullptr; e = agnxtout(dot.g(), e)) {
      const bool from_kernel = absl::StrContains(dot.Attr(agtail(e), "label"), "writes");
      const bool to_kernel = absl::StrContains(dot.Attr(aghead(e), "label"), "writes");
      kernel_to_kernel += from_kernel && to_kernel;
      out_edges += dot.Attr(e, "label") == "out";
    }
  }
  EXPECT_GT(kernel_to_kernel, 0);
  EXPECT_GT(out_edges, 0);
}

// Tests the time budget: a picture that cannot be laid out in time is stopped, the cheaper
// layout is tried, and the view says what happened instead of hanging; the index still gets
// written. A generous budget finishes and reports the child's layout time.
TEST(ViewsTest, PictureBudgetStopsLongLayouts) {
  auto m = ParseText(Chain(1500, 1500), "long.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  DumpOptions options;
  options.out_dir = TempDir("budget");
  options.picture_seconds = 0.001;
  auto dumper = StageDumper::Create(options);
  ASSERT_TRUE(dumper.ok()) << dumper.status();
  ASSERT_TRUE((*dumper)->DumpStage(**m, "", 0, false).ok());
  const StageSummary& s = (*dumper)->stages()[0];
  ASSERT_EQ(s.views.size(), 2u);  // copy view, full graph
  for (const StageView& v : s.views) {
    EXPECT_THAT(v.note, HasSubstr("did not finish within 0.001 s")) << v.name;
    EXPECT_THAT(v.note, HasSubstr("no picture")) << v.name;
    EXPECT_THAT(v.files, IsEmpty()) << v.name;
  }
  for (const auto& entry : fs::directory_iterator(options.out_dir)) {
    EXPECT_NE(entry.path().extension(), ".svg") << "a stopped layout left " << entry.path();
  }
  ASSERT_TRUE((*dumper)->WriteIndex().ok());
  EXPECT_THAT(ReadFile(options.out_dir + "/index.html"), HasSubstr("did not finish within"));
  fs::remove_all(options.out_dir);

  auto small = ParseText(Chain(3, 3), "small.hir", "infer-types");
  ASSERT_TRUE(small.ok()) << small.status();
  DumpOptions relaxed;
  relaxed.out_dir = TempDir("relaxed");
  relaxed.picture_seconds = 120;
  auto ok = StageDumper::Create(relaxed);
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_TRUE((*ok)->DumpStage(**small, "", 0, false).ok());
  const StageView& full = (*ok)->stages()[0].views.back();
  EXPECT_EQ(full.note, "");
  EXPECT_GT(full.stats.layout_seconds, 0);
  ASSERT_EQ(full.files.size(), 1u);
  EXPECT_THAT(ReadFile(relaxed.out_dir + "/" + full.files[0].second), HasSubstr("<svg"));
  fs::remove_all(relaxed.out_dir);
}

// Tests that a layout engine error (here: an engine Graphviz does not have) is not the end of
// the run: the cheaper layout is drawn and the view's note says what failed.
TEST(ViewsTest, LayoutErrorsFallBackToLargeGraphMode) {
  auto m = ParseText(Chain(3, 3), "small.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  DumpOptions options;
  options.out_dir = TempDir("engine_error");
  options.picture_seconds = 60;
  options.dot.engine = "no-such-engine";
  auto dumper = StageDumper::Create(options);
  ASSERT_TRUE(dumper.ok()) << dumper.status();
  ASSERT_TRUE((*dumper)->DumpStage(**m, "", 0, false).ok());
  for (const StageView& v : (*dumper)->stages()[0].views) {
    EXPECT_THAT(v.note, HasSubstr("no-such-engine failed (")) << v.name;
    EXPECT_THAT(v.note, HasSubstr("drawn in large-graph mode instead")) << v.name;
    EXPECT_TRUE(v.stats.large_graph) << v.name;
    ASSERT_EQ(v.files.size(), 1u) << v.name;
    EXPECT_THAT(ReadFile(options.out_dir + "/" + v.files[0].second), HasSubstr("<svg"));
  }
  fs::remove_all(options.out_dir);
}

// Tests the viewer's data in index.html: one JSON block with each stage's views (copy view
// first), copies with their node and path, node facts with locations; one <template> per
// rendered view; the viewer's script and style inlined (no file fetched when the page opens).
TEST(ViewsTest, IndexCarriesTheViewerData) {
  auto m = ParseText(Chain(2, 2), "chain.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  DumpOptions options;
  options.out_dir = TempDir("index");
  auto dumper = StageDumper::Create(options);
  ASSERT_TRUE(dumper.ok()) << dumper.status();
  ASSERT_TRUE((*dumper)->DumpStage(**m, "", 0, false).ok());
  ASSERT_TRUE((*dumper)->WriteIndex().ok());
  const std::string html = ReadFile(options.out_dir + "/index.html");
  EXPECT_THAT(html, HasSubstr("<div id=\"hp-viewer\"></div>"));
  EXPECT_THAT(html, HasSubstr("<script type=\"application/json\" id=\"hp-data\">"));
  EXPECT_THAT(html, HasSubstr("\"views\":[{\"name\":\"copies\",\"label\":\"copy view\","
                              "\"template\":\"hp-svg-0-copies\""));
  EXPECT_THAT(html, HasSubstr("{\"name\":\"full\",\"label\":\"full graph\","
                              "\"template\":\"hp-svg-0-full\""));
  EXPECT_THAT(html, HasSubstr("\"node\":\"main.%c\",\"path\":[\"main.%a0\",\"main.%a1\","
                              "\"main.%c\",\"main.%b0\",\"main.%b1\"]"));
  EXPECT_THAT(html, HasSubstr("\"main.%b0\":{\"label\":\"%b0 = exp\",\"op\":\"exp\""));
  EXPECT_THAT(html, HasSubstr("\"location\":\"chain.hir:"));
  EXPECT_THAT(html, HasSubstr("<template id=\"hp-svg-0-copies\"><svg"));
  EXPECT_THAT(html, HasSubstr("<template id=\"hp-svg-0-full\"><svg"));
  EXPECT_THAT(html, Not(HasSubstr("<?xml")));
  EXPECT_THAT(html, Not(HasSubstr("src=\"http")));
  EXPECT_THAT(html, HasSubstr("hp-viewer"));
  fs::remove_all(options.out_dir);
}

}  // namespace
}  // namespace hetpass::viz
