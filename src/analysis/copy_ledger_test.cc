#include "passes/analysis/copy_ledger.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/testing/copy_budget.h"
#include "support/ir_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Parse;
using ::testing::HasSubstr;

// Tests direction, bytes, sync and the reason of each kind of use, on hand-placed IR.
TEST(CopyLedger, EntriesAndReasons) {
  auto m = Parse(R"(
def @main(%x: f32[n, 4] @cpu, %c: bool[] @cpu) {
  %xs = device_copy(%x) {src = "cpu", dst = "sim"} : f32[n, 4] @sim
  %t = argmax(%xs) {axis = [1], dtype = i64} : i64[n] @sim
  %th = device_copy(%t) {src = "sim", dst = "cpu"} : i64[n] @cpu
  %r = dyn.reshape(%xs, %th) : f32[?] @sim
  %s = if (%c) {
    %rh = device_copy(%r) {src = "sim", dst = "cpu"} : f32[?] @cpu
    yield %rh
  } else {
    %z = constant<[1.0]> : f32[1] @cpu
    yield %z
  } : f32[?] @cpu
  return %s
}
)");
  auto ledger = ComputeCopyLedger(*m);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  // The copy in the then branch runs once per execution of that branch: a region symbol.
  EXPECT_EQ(ledger->Count(CopyDirection::kHostToDevice).ToString(), "1");
  EXPECT_EQ(ledger->Count(CopyDirection::kDeviceToHost).ToString(), "$if0_then + 1");
  EXPECT_EQ(ledger->Syncs().ToString(), "$if0_then + 1");
  ASSERT_EQ(ledger->regions.size(), 2u);
  EXPECT_EQ(ledger->regions[0].symbol, "$if0_then");
  EXPECT_EQ(ledger->regions[0].function, "main$if0_then");
  ASSERT_EQ(ledger->entries.size(), 4u);
  EXPECT_EQ(ledger->entries[0].reason, "input 0 'data' of argmax %t runs on sim; input 0 'data' of dyn.reshape %r runs on sim");
  // The reason names the mask bit that asks for the data.
  EXPECT_EQ(ledger->entries[1].reason,
            "input 1 'newshape' of dyn.reshape %r (mask value: the shape function reads the contents)");
  // The host copy is then read by the sim kernel: a by-value kernel parameter, not a pointer.
  EXPECT_EQ(ledger->entries[2].direction, CopyDirection::kParam);
  EXPECT_EQ(ledger->entries[2].bytes.ToString(), "n*8");
  EXPECT_EQ(ledger->entries[3].reason, "yielded by if %s");
  EXPECT_EQ(ledger->entries[3].region, 0);
  EXPECT_EQ(ledger->entries[1].bytes.ToString(), "n*8");
  EXPECT_EQ(LedgerBytes(*ledger, CopyDirection::kHostToDevice, {{"n", 3}}), 48);
  EXPECT_EQ(LedgerBytes(*ledger, CopyDirection::kDeviceToHost, {{"n", 3}}), -1);  // `?` bytes
  EXPECT_TRUE(ledger->HasUnknownBytes(CopyDirection::kDeviceToHost));
}

// Tests that copies inside loops are flagged per iteration and that JSON escapes text.
TEST(CopyLedger, LoopsAndJson) {
  auto m = Parse(R"(
def @main(%m: i64[] @cpu, %c: bool[] @cpu, %x: f32[4] @sim) {
  %r = loop(%m, %c, %x) (%i: i64[] @cpu, %ci: bool[] @cpu, %acc: f32[4] @sim) {
    %h = device_copy(%acc) {src = "sim", dst = "cpu"} : f32[4] @cpu
    %e = exp(%h) : f32[4] @cpu
    %d = device_copy(%e) {src = "cpu", dst = "sim"} : f32[4] @sim
    yield %ci, %d
  } : f32[4] @sim
  %rh = device_copy(%r) {src = "sim", dst = "cpu"} : f32[4] @cpu
  return %rh
}
)");
  auto ledger = ComputeCopyLedger(*m);
  ASSERT_TRUE(ledger.ok());
  ASSERT_EQ(ledger->entries.size(), 3u);
  EXPECT_TRUE(ledger->entries[0].in_loop);
  EXPECT_TRUE(ledger->entries[1].in_loop);
  EXPECT_FALSE(ledger->entries[2].in_loop);
  EXPECT_EQ(ledger->entries[1].reason, "yielded by loop %r");
  EXPECT_THAT(ledger->ToText(), HasSubstr("once per execution of $loop0"));
  EXPECT_EQ(ledger->Count(CopyDirection::kDeviceToHost).ToString(), "$loop0 + 1");
  EXPECT_EQ(ledger->Bytes(CopyDirection::kDeviceToHost).ToString(), "$loop0*16 + 16");
  const std::string json = ledger->ToJson();
  EXPECT_THAT(json, HasSubstr("\"reason\": \"input 0 'data' of exp %e runs on cpu\""));
  EXPECT_THAT(json, HasSubstr("\"regions\": [{\"symbol\": \"$loop0\", \"function\": \"main$loop0\""));
  EXPECT_THAT(json, HasSubstr("\"totals\": {\"h2d\": {\"count\": \"$loop0\", \"bytes\": \"$loop0*16\"}"));
}

// Tests an unknown function.
TEST(CopyLedger, UnknownFunction) {
  auto m = Parse("def @main(%x: f32[4]) {\n  return %x\n}\n");
  auto ledger = ComputeCopyLedger(*m, "other");
  ASSERT_FALSE(ledger.ok());
  EXPECT_THAT(ledger.status().message(), HasSubstr("no function @other"));
  auto empty = ComputeCopyLedger(*m);
  ASSERT_TRUE(empty.ok());
  ExpectCopies(*empty, {});
  EXPECT_EQ(empty->ToText(),
            "copy ledger of @main: 0 copies, 0 syncs (nothing is placed on a device yet: run "
            "plan-devices, or the default pipeline of a device, to see the copies)\n"
            "  h2d: 0 copies, 0 bytes\n  d2h: 0 copies, 0 bytes\n  d2d: 0 copies, 0 bytes\n");
}

}  // namespace
}  // namespace hetpass
