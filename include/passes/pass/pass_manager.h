// Runs passes in order with instrumentation: verifier after each pass, print-IR-after, per-pass
// timing, and hooks (pass-viz dumps through one). Errors from a pass are prefixed with its name.
#ifndef HETPASS_PASS_PASS_MANAGER_H_
#define HETPASS_PASS_PASS_MANAGER_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/ir/printer.h"
#include "passes/pass/pass.h"

namespace hetpass {

struct PassManagerOptions {
  // Run the verifier after every pass (always on in tests); a failure names the pass.
  bool verify_each = false;
  // With verify_each: whether a pass that reports no change is verified too. Its module is the
  // one verified after the pass before (MLIR's pass manager skips the verifier the same way
  // when a pass preserved everything), so only its postconditions are checked when false. On
  // in tests, where a pass that changes the module and says it did not would be a bug to find;
  // `hetpass run` turns it off (the verifier was a fifth of its pass pipeline at 100k ops).
  bool verify_unchanged = true;
  // Without verify_each: check each pass's own postconditions (Pass::VerifyPostconditions: one
  // walk of the function) right after it, and leave the structural verifier to the caller.
  // `hetpass run` does this and verifies the module once after the pipeline: a pass's
  // postconditions hold only right after it (plan-devices' placement check rejects the
  // memory.kill bindings plan-memory adds later), so they cannot all wait for the end.
  bool check_postconditions = false;
  // Print the IR after these passes ("all" for every pass) to `ir_out` (default std::cerr).
  std::vector<std::string> print_ir_after;
  std::ostream* ir_out = nullptr;
  PrintOptions print_options;
  // Record wall time per pass (TimingReport()).
  bool timing = false;
};

struct PassTiming {
  std::string pass;
  double seconds = 0;        // the pass itself
  bool changed = false;
  double check_seconds = 0;  // the checks after it: the verifier and/or its postconditions
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}

  void AddPass(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }
  PassManagerOptions& options() { return options_; }

  // Called after each pass with the pass and the module (instrumentation, e.g. pass-viz).
  using AfterPassHook = std::function<absl::Status(const Pass&, const Module&, bool changed)>;
  void AddAfterPassHook(AfterPassHook hook) { hooks_.push_back(std::move(hook)); }

  // Runs every pass; true if any changed the module.
  absl::StatusOr<bool> Run(Module& module);

  const std::vector<PassTiming>& timings() const { return timings_; }
  // A table: pass, seconds, share of total, changed.
  std::string TimingReport() const;

 private:
  PassManagerOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<AfterPassHook> hooks_;
  std::vector<PassTiming> timings_;
};

}  // namespace hetpass

#endif  // HETPASS_PASS_PASS_MANAGER_H_
