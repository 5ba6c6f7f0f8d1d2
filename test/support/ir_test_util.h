// Test helpers: parse text IR, run pipelines with the verifier after every pass, print.
#ifndef HETPASS_TEST_SUPPORT_IR_TEST_UTIL_H_
#define HETPASS_TEST_SUPPORT_IR_TEST_UTIL_H_

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/ir/verifier.h"
#include "passes/pass/pass_registry.h"

namespace hetpass::testing {

inline std::unique_ptr<Module> Parse(const std::string& text) {
  auto m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status() << "\n" << text;
  if (!m.ok()) return nullptr;
  absl::Status v = Verify(**m);
  EXPECT_TRUE(v.ok()) << v;
  return *std::move(m);
}

// Runs `pipeline` with the verifier after each pass; returns "changed".
inline absl::StatusOr<bool> RunPipeline(Module& m, const std::string& pipeline) {
  PassManagerOptions o;
  o.verify_each = true;
  auto pm = ParsePipeline(pipeline, o);
  if (!pm.ok()) return pm.status();
  return (*pm)->Run(m);
}

// Parses, runs, prints; fails the test on any error.
inline std::string RunAndPrint(const std::string& text, const std::string& pipeline) {
  auto m = Parse(text);
  if (!m) return "<parse error>";
  auto changed = RunPipeline(*m, pipeline);
  EXPECT_TRUE(changed.ok()) << changed.status();
  return PrintModule(*m);
}

// Runs `pipeline` twice: the second run must report no change and print the same IR.
inline void ExpectIdempotent(const std::string& text, const std::string& pipeline) {
  auto m = Parse(text);
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunPipeline(*m, pipeline).ok());
  const std::string once = PrintModule(*m);
  PassManagerOptions o;
  o.verify_each = true;
  o.timing = true;
  auto pm = ParsePipeline(pipeline, o);
  ASSERT_TRUE(pm.ok()) << pm.status();
  auto again = (*pm)->Run(*m);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again) << pipeline << " changed its own output:\n"
                       << (*pm)->TimingReport() << once;
  EXPECT_EQ(PrintModule(*m), once);
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_IR_TEST_UTIL_H_
