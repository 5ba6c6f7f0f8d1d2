// Tests of pass-viz stages: summaries (ops per device, shape-function ops, allocations, copies
// from the ledger), diffs between stages, the dump hook and index.html, and output errors.
#include "viz/stages.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass/pass_registry.h"
#include "passes/shape_funcs/op_registry.h"
#include "viz_test_util.h"

namespace hetpass::viz {
namespace {

using ::hetpass::viz::testing::LoadTestModule;
using ::hetpass::viz::testing::ReadFile;
using ::hetpass::viz::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

namespace fs = std::filesystem;


// Tests that the summary counts ops per device, the ops that need a shape function, and the
// ledger's copies with their symbolic bytes; allocations are n/a before manifest-alloc.
TEST(StagesTest, SummaryOfPlacedModule) {
  auto m = LoadTestModule("hetero.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  const StageSummary s = SummarizeModule(**m, CollectCopies(**m));
  EXPECT_THAT(s.ops_per_device,
              ElementsAre(Pair("cpu", 2), Pair("cuda", 0), Pair("sim", 4), Pair("unset", 0)));
  EXPECT_THAT(s.shape_function_ops,
              ElementsAre("dyn.strided_slice %sl", "argwhere %nz (data-dependent)"));
  // n/a while the registry has no allocation op; 0 before manifest-alloc once it has.
  bool registry_allocates = false;
  for (const auto& op : OpRegistry::Global().ops()) {
    registry_allocates |= op->role() == OpRole::kAllocStorage || op->role() == OpRole::kAllocTensor ||
                          op->role() == OpRole::kAllocTensorDyn;
  }
  EXPECT_EQ(s.allocations.has_value(), registry_allocates);
  if (registry_allocates) {
    EXPECT_EQ(*s.allocations, 0);
  }
  ASSERT_EQ(s.copies.size(), 5u);
  EXPECT_EQ(s.copies[0].direction, "d2h");
  EXPECT_EQ(s.copies[0].value, "%begin");
  EXPECT_EQ(s.copies[0].copy, "%begin_h");
  EXPECT_EQ(s.copies[0].bytes, "16");
  EXPECT_THAT(s.copies[0].reason, HasSubstr("dyn.strided_slice"));
  EXPECT_TRUE(s.copies[0].from_ledger);
  // The slice's kernel on sim reads begin, end and strides from the host: kernel parameters.
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(s.copies[i].direction, "param");
    EXPECT_EQ(s.copies[i].bytes, "16");
    EXPECT_THAT(s.copies[i].reason, HasSubstr("by-value kernel parameter"));
  }
  EXPECT_EQ(s.copies[1].value, "%begin_h");
  // argwhere on sim: the ledger implies the copy of its 8-byte count.
  EXPECT_EQ(s.copies[4].direction, "d2h");
  EXPECT_EQ(s.copies[4].bytes, "8");
  EXPECT_THAT(s.copies[4].reason, HasSubstr("data-dependent"));
  ASSERT_EQ(s.copy_totals.size(), 4u);
  EXPECT_EQ(s.copy_totals[1].direction, "d2h");
  EXPECT_EQ(s.copy_totals[1].count, 2);
  EXPECT_EQ(s.copy_totals[1].bytes, "24");
  EXPECT_EQ(s.copy_totals[0].count, 0);
  EXPECT_EQ(s.copy_totals[3].direction, "param");
  EXPECT_EQ(s.copy_totals[3].count, 3);
  EXPECT_EQ(s.copy_totals[3].bytes, "48");
}

// Tests symbolic byte totals and copies inside loops.
TEST(StagesTest, SymbolicCopyBytes) {
  auto m = LoadTestModule("copies.hir", "infer-types");
  ASSERT_TRUE(m.ok()) << m.status();
  const StageSummary s = SummarizeModule(**m, CollectCopies(**m));
  ASSERT_EQ(s.copies.size(), 3u);
  EXPECT_FALSE(s.copies[0].in_loop);
  EXPECT_TRUE(s.copies[1].in_loop);
  EXPECT_EQ(s.copies[1].bytes, "n*32");
  EXPECT_EQ(s.copy_totals[0].direction, "h2d");
  EXPECT_EQ(s.copy_totals[0].count, 2);
  EXPECT_EQ(s.copy_totals[0].bytes, "n*32 + 16");
}

// Tests that the diff matches values by printed name: device changes, values that appear and
// vanish, copies that appear and vanish.
TEST(StagesTest, DiffMatchesValuesByName) {
  auto before_module = LoadTestModule("hetero.hir", "");
  ASSERT_TRUE(before_module.ok());
  StageSummary before = SummarizeModule(**before_module, CollectCopies(**before_module));
  StageSummary after = before;
  for (auto& [key, device] : after.placements) {
    if (key == "@main %h") device = "cpu";
  }
  after.placements.push_back({"@main %new", "sim"});
  after.placements.erase(after.placements.begin());  // @fused_1 %a
  after.copies.clear();
  CopyRow h2d;
  h2d.function = "main";
  h2d.direction = "h2d";
  h2d.value = "%x";
  h2d.src = "cpu";
  h2d.dst = "sim";
  h2d.bytes = "n*32";
  after.copies.push_back(h2d);
  const StageDiff d = DiffStages(before, after);
  EXPECT_THAT(d.moved, ElementsAre("@main %h: sim -> cpu"));
  EXPECT_THAT(d.added, ElementsAre("@main %new (sim)"));
  EXPECT_THAT(d.removed, ElementsAre("@fused_1 %a (unset)"));
  EXPECT_THAT(d.copies_appeared, ElementsAre("h2d @main %x cpu->sim (n*32 bytes)"));
  EXPECT_THAT(d.copies_vanished, ElementsAre("d2h @main %begin sim->cpu (16 bytes)",
                                             "param @main %begin_h cpu->sim (16 bytes)",
                                             "param @main %shape cpu->sim (16 bytes)",
                                             "param @main %stride cpu->sim (16 bytes)",
                                             "d2h @main count of %nz sim->cpu (8 bytes)"));
  EXPECT_TRUE(DiffStages(before, before).empty());
}

// Tests the hook: one stage for the input and one after each selected pass, files written in
// every format, and an index.html that lists the stages in order.
TEST(StagesTest, DumperHookWritesStagesAndIndex) {
  auto m = LoadTestModule("mlp.hir", "");
  ASSERT_TRUE(m.ok()) << m.status();
  DumpOptions options;
  options.out_dir = TempDir("hook");
  options.formats = {"svg", "dot"};
  options.dump_after = {"infer-types", "dce"};
  options.pipeline = "infer-types,cse,dce";
  options.source_name = "mlp.hir";
  auto dumper = StageDumper::Create(options);
  ASSERT_TRUE(dumper.ok()) << dumper.status();
  ASSERT_TRUE((*dumper)->DumpStage(**m, "", 0, false).ok());
  auto pm = ParsePipeline(options.pipeline);
  ASSERT_TRUE(pm.ok());
  (*pm)->AddAfterPassHook(MakeDumpAfterPassHook(dumper->get()));
  auto ran = (*pm)->Run(**m);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE((*dumper)->WriteIndex().ok());

  const auto& stages = (*dumper)->stages();
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].Title(), "stage 0: input");
  EXPECT_EQ(stages[1].Title(), "stage 1: after infer-types (pass 1, changed)");
  EXPECT_EQ(stages[2].Title(), "stage 2: after dce (pass 3, changed)");
  for (const char* file : {"stage_00_input.svg", "stage_00_input.dot", "stage_01_infer-types.svg",
                           "stage_02_dce.svg", "stage_02_dce.dot", "index.html"}) {
    EXPECT_TRUE(fs::exists(fs::path(options.out_dir) / file)) << file;
  }
  // DOT is written before layout: no positions.
  EXPECT_THAT(ReadFile(options.out_dir + "/stage_00_input.dot"), Not(HasSubstr("pos=")));
  const std::string html = ReadFile(options.out_dir + "/index.html");
  const size_t s0 = html.find("stage 0: input");
  const size_t s1 = html.find("stage 1: after infer-types");
  const size_t s2 = html.find("stage 2: after dce");
  ASSERT_NE(s0, std::string::npos);
  ASSERT_NE(s1, std::string::npos);
  ASSERT_NE(s2, std::string::npos);
  EXPECT_LT(s0, s1);
  EXPECT_LT(s1, s2);
  EXPECT_THAT(html, HasSubstr("<img src=\"stage_02_dce.svg\""));
  EXPECT_THAT(html, HasSubstr("values gone"));  // dce removed %unused and %check
  EXPECT_THAT(html, HasSubstr("<th>allocations</th>"));
  // The overview table: as many headers as cells in every row.
  const size_t table = html.find("<table id=\"overview\">");
  ASSERT_NE(table, std::string::npos);
  const std::string overview = html.substr(table, html.find("</table>", table) - table);
  const std::vector<std::string> rows = absl::StrSplit(overview, "</tr>", absl::SkipWhitespace());
  ASSERT_GE(rows.size(), 2u);
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_THAT(rows[0], HasSubstr("<th>param</th>"));
  for (size_t r = 1; r < rows.size(); ++r) {
    EXPECT_EQ(count(rows[r], "<td>"), count(rows[0], "<th>")) << rows[r];
  }
  fs::remove_all(options.out_dir);
}

// Tests that a failed pass still leaves an index with the stages before it and the error.
TEST(StagesTest, IndexShowsError) {
  DumpOptions options;
  options.out_dir = TempDir("error");
  auto dumper = StageDumper::Create(options);
  ASSERT_TRUE(dumper.ok()) << dumper.status();
  ASSERT_TRUE((*dumper)->WriteIndex("pass 'x': it broke <badly>").ok());
  EXPECT_THAT(ReadFile(options.out_dir + "/index.html"),
              HasSubstr("pass 'x': it broke &lt;badly&gt;"));
  fs::remove_all(options.out_dir);
}

// Tests that output problems are errors naming the directory or the format.
TEST(StagesTest, OutputErrors) {
  const std::string file = TempDir("file");
  std::ofstream(file) << "not a directory\n";
  DumpOptions options;
  options.out_dir = file + "/sub";
  auto dumper = StageDumper::Create(options);
  ASSERT_FALSE(dumper.ok());
  EXPECT_THAT(std::string(dumper.status().message()), HasSubstr("cannot create output directory"));
  fs::remove(file);

  options.out_dir = TempDir("format");
  options.formats = {"svg", "gif"};
  dumper = StageDumper::Create(options);
  ASSERT_FALSE(dumper.ok());
  EXPECT_THAT(std::string(dumper.status().message()), HasSubstr("'gif'"));
  fs::remove_all(options.out_dir);
}

}  // namespace
}  // namespace hetpass::viz
