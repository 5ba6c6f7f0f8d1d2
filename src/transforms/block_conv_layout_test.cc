// Tests of block-conv-layout on the VM: a ResNet block (stem from 3 channels, conv + bias +
// relu, a residual add, global average pooling), a stem with max and average pools, a
// squeeze-excite block, and the layouts' edges (an output read in
// NCHW, a broadcast add that stays NCHW, a 24-channel conv whose data is not blocked) give the
// outputs of the module as written on cpu and sim, with the same copies, for two batch sizes;
// the rewritten convolutions run blocked kernels. The IR shape of the rewrite is checked by
// test/ir/transforms/block_conv_layout.hir.
#include "passes/transforms/block_conv_layout.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/printer.h"
#include "passes/vm/vm.h"
#include "support/ir_test_util.h"
#include "support/runtime_test_util.h"

namespace hetpass {
namespace {

using testing::CompileForVm;
using testing::ExpectSameCopies;
using ::testing::HasSubstr;

constexpr char kBlock[] = R"(
def @main(%x: f32[n, 3, 12, 12], %scale: f32[1, 32, 1, 1]) {
  %w0 = constant<elided> : f32[32, 3, 3, 3]
  %b0 = constant<elided> : f32[32]
  %w1 = constant<elided> : f32[32, 32, 3, 3]
  %b1 = constant<elided> : f32[32]
  %w2 = constant<elided> : f32[24, 32, 1, 1]
  %w3 = constant<elided> : f32[16, 24, 3, 3]
  %c0 = nn.conv2d(%x, %w0) {padding = [1, 1]}
  %y0 = nn.bias_add(%c0, %b0)
  %r0 = nn.relu(%y0)
  %c1 = nn.conv2d(%r0, %w1) {padding = [1, 1]}
  %y1 = nn.bias_add(%c1, %b1)
  %s = add(%y1, %r0)
  %r1 = nn.relu(%s)
  %m = mean(%r1) {axis = [-1, -2], keepdims = true}
  %scaled = multiply(%r1, %scale)
  %c2 = nn.conv2d(%r1, %w2) {strides = [2, 2]}
  %c3 = nn.conv2d(%c2, %w3)
  return %m, %r0, %scaled, %c3
}
)";

// MobileNet-style: depthwise and grouped convolutions, an unfolded BatchNorm (per-channel
// scale [C, 1, 1] and shift [1, C, 1, 1]), a scalar, a depthwise conv with a multiplier (left
// NCHW).
constexpr char kMobile[] = R"(
def @main(%x: f32[n, 32, 9, 9], %s: f32[1]) {
  %dw = constant<elided> : f32[32, 1, 3, 3]
  %g = constant<elided> : f32[64, 16, 1, 1]
  %a = constant<elided> : f32[64, 1, 1]
  %b = constant<elided> : f32[1, 64, 1, 1]
  %dm = constant<elided> : f32[128, 1, 3, 3]
  %c0 = nn.conv2d(%x, %dw) {padding = [1, 1], groups = 32, strides = [2, 2]}
  %c1 = nn.conv2d(%c0, %g) {groups = 2}
  %m = multiply(%c1, %a)
  %p = add(%m, %b)
  %q = multiply(%p, %s)
  %r = nn.relu(%q)
  %d = nn.conv2d(%r, %dm) {groups = 64, padding = [1, 1]}
  return %d, %r
}
)";

// A ResNet stem: max pool between convolutions, an average pool, a pooled value read in NCHW.
constexpr char kPool[] = R"(
def @main(%x: f32[n, 3, 16, 16], %s: f32[1]) {
  %w0 = constant<elided> : f32[16, 3, 3, 3]
  %w1 = constant<elided> : f32[32, 16, 3, 3]
  %c0 = nn.conv2d(%x, %w0) {padding = [1, 1], strides = [2, 2]}
  %r0 = nn.relu(%c0)
  %p = nn.max_pool2d(%r0) {pool_size = [3, 3], strides = [2, 2], padding = [1, 1]}
  %c1 = nn.conv2d(%p, %w1) {padding = [1, 1]}
  %a = nn.avg_pool2d(%c1) {pool_size = [2, 2], strides = [2, 2]}
  %q = multiply(%a, %s)
  return %q, %p
}
)";

// A squeeze-excite block: the channel scale [n, 32, 1, 1] multiplies the activation blocked.
constexpr char kSqueezeExcite[] = R"(
def @main(%x: f32[n, 32, 6, 5], %s: f32[1]) {
  %w0 = constant<elided> : f32[32, 32, 1, 1]
  %w1 = constant<elided> : f32[8, 32, 1, 1]
  %w2 = constant<elided> : f32[32, 8, 1, 1]
  %c0 = nn.conv2d(%x, %w0)
  %r = nn.relu(%c0)
  %m = mean(%r) {axis = [2, 3], keepdims = true}
  %c1 = nn.conv2d(%m, %w1)
  %a = nn.relu(%c1)
  %c2 = nn.conv2d(%a, %w2)
  %g = sigmoid(%c2)
  %y = multiply(%r, %g)
  %q = multiply(%y, %s)
  return %q
}
)";

std::string WithoutThePass(const std::string& pipeline) {
  const size_t at = pipeline.find("block-conv-layout");
  EXPECT_NE(at, std::string::npos) << pipeline;
  if (at == std::string::npos) return pipeline;
  return pipeline.substr(0, at) + pipeline.substr(pipeline.find(',', at) + 1);
}

std::string WithThePass(DeviceKind device) {
  // The default pipeline names the pass only where the host has a blocked conv kernel; the
  // test forces it so that it runs on every machine.
  std::string p = vm::DefaultPipeline(device);
  if (p.find("block-conv-layout") == std::string::npos) {
    p = absl::StrCat("infer-types,block-conv-layout,", p.substr(p.find(',') + 1));
  }
  return p;
}

struct Case {
  const char* text;
  std::vector<int64_t> x;  // the input's dims after N
  std::vector<int64_t> second;
};

TEST(BlockConvLayout, SameOutputsAndCopiesAsWritten) {
  const Case cases[] = {{kBlock, {3, 12, 12}, {1, 32, 1, 1}},
                        {kMobile, {32, 9, 9}, {1}},
                        {kPool, {3, 16, 16}, {1}},
                        {kSqueezeExcite, {32, 6, 5}, {1}}};
  for (const Case& c : cases) {
    for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kSim}) {
      SCOPED_TRACE(absl::StrCat(DeviceName(device), c.text));
      auto blocked = CompileForVm(c.text, WithThePass(device));
      ASSERT_TRUE(blocked.ok()) << blocked.status();
      auto plain = CompileForVm(c.text, WithoutThePass(WithThePass(device)));
      ASSERT_TRUE(plain.ok()) << plain.status();
      const std::string text = PrintModule(*blocked->compiled);
      EXPECT_THAT(text, HasSubstr("data_layout = \"NCHW16c\""));
      if (c.text == kSqueezeExcite) {
        // The scale multiplies blocked: the only transform is the output's, back to NCHW.
        EXPECT_THAT(text, HasSubstr("multiply(%r_nchw16c, %g_nchw16c)"));
      }
      if (c.text == kPool) {
        // Both pools run blocked on oneDNN (the kernel names its layout): no JIT transform.
        EXPECT_THAT(text, HasSubstr("layout = \"NCHW16c\", padding = [1, 1], pool_size"));
      }
      auto a = vm::VirtualMachine::Load(blocked->executable);
      auto b = vm::VirtualMachine::Load(plain->executable);
      ASSERT_TRUE(a.ok() && b.ok());
      if (c.text == kPool) {
        const std::string kernels = absl::StrJoin((*a)->KernelDescriptions(), "\n");
        EXPECT_THAT(kernels, HasSubstr("onednn max_pool2d[NCHW16c]"));
        EXPECT_THAT(kernels, HasSubstr("onednn avg_pool2d[NCHW16c]"));
      }
      for (int64_t n : {1, 3}) {
        std::vector<int64_t> x = {n};
        x.insert(x.end(), c.x.begin(), c.x.end());
        const std::vector<Tensor> inputs = {testing::RandomTensor(DType::kF32, x, 7 + n),
                                            testing::RandomTensor(DType::kF32, c.second, 3)};
        auto got = (*a)->RunWithHostTensors("main", inputs);
        ASSERT_TRUE(got.ok()) << got.status();
        auto want = (*b)->RunWithHostTensors("main", inputs);
        ASSERT_TRUE(want.ok()) << want.status();
        ASSERT_EQ(got->size(), want->size());
        for (size_t i = 0; i < got->size(); ++i) {
          EXPECT_TRUE(testing::TensorsNear((*got)[i], (*want)[i], 1e-4)) << "output " << i;
        }
        ExpectSameCopies((*a)->LastRunCounters(), (*b)->LastRunCounters());
      }
    }
  }
}

// Tests the pass's refusal of a block the layout names cannot spell.
TEST(BlockConvLayout, BadBlockIsAnError) {
  auto m = testing::Parse(
      "def @main(%x: f32[1, 16, 4, 4], %w: f32[16, 16, 1, 1]) {\n"
      "  %y = nn.conv2d(%x, %w)\n  return %y\n}\n");
  ASSERT_NE(m, nullptr);
  auto r = testing::RunPipeline(*m, "infer-types,block-conv-layout{block=0}");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("block must be between 1 and 4096, got 0"));
}

// Tests that after plan-devices the new bindings are placed like the ones they stand for.
TEST(BlockConvLayout, AfterPlanDevicesKeepsThePlacement) {
  auto m = testing::Parse(
      "def @main(%x: f32[1, 16, 4, 4], %w: f32[16, 16, 1, 1]) {\n"
      "  %y = nn.conv2d(%x, %w)\n  return %y\n}\n");
  ASSERT_NE(m, nullptr);
  auto r = testing::RunPipeline(*m, "infer-types,plan-devices{target=sim},block-conv-layout");
  ASSERT_TRUE(r.ok()) << r.status();
  int placed = 0;
  for (const auto& n : m->FindFunction("main")->body().nodes()) {
    if (n->OpName() == "device_copy") continue;  // plan-devices' copies of the inputs and result
    EXPECT_EQ(n->device(), DeviceKind::kSim) << n->OpName();
    ++placed;
  }
  EXPECT_EQ(placed, 3);  // transform in, conv, transform back
}

}  // namespace
}  // namespace hetpass
