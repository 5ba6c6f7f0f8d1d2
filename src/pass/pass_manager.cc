#include "passes/pass/pass_manager.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/pass/verify_module.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

bool ShouldPrintAfter(const PassManagerOptions& o, absl::string_view name) {
  for (const std::string& p : o.print_ir_after) {
    if (p == "all" || p == name) return true;
  }
  return false;
}

absl::Status Prefix(absl::string_view pass, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("pass '", pass, "': ", s.message()));
}

}  // namespace

absl::StatusOr<bool> PassManager::Run(Module& module) {
  bool any_changed = false;
  timings_.clear();
  for (const auto& pass : passes_) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> changed = pass->Run(module);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!changed.ok()) return Prefix(pass->name(), changed.status());
    any_changed |= *changed;
    const auto checks = std::chrono::steady_clock::now();
    // The verifier (verify_each; an unchanged module was verified after the pass before unless
    // verify_unchanged) and the pass's own postconditions (verify_each or check_postconditions).
    if (options_.verify_each || options_.check_postconditions) {
      const bool structural = options_.verify_each && (*changed || options_.verify_unchanged);
      absl::Status v = structural ? VerifyModule(module) : absl::OkStatus();
      if (v.ok()) v = pass->VerifyPostconditions(module);
      if (!v.ok()) {
        return absl::InternalError(absl::StrCat(options_.verify_each ? "verifier" : "postcondition",
                                                " failed after pass '", pass->name(),
                                                "' (a bug in that pass): ", v.message()));
      }
    }
    if (options_.timing) {
      const double check_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - checks).count();
      timings_.push_back(PassTiming{std::string(pass->name()), seconds, *changed, check_seconds});
    }
    if (ShouldPrintAfter(options_, pass->name())) {
      std::ostream& out = options_.ir_out ? *options_.ir_out : std::cerr;
      out << "// ----- IR after " << pass->name() << (*changed ? "" : " (unchanged)")
          << " -----\n"
          << PrintModule(module, options_.print_options);
    }
    for (const AfterPassHook& hook : hooks_) {
      absl::Status s = hook(*pass, module, *changed);
      if (!s.ok()) return Prefix(pass->name(), s);
    }
  }
  return any_changed;
}

std::string PassManager::TimingReport() const {
  double total = 0;
  for (const PassTiming& t : timings_) total += t.seconds;
  std::string out = absl::StrFormat("%-24s %12s %8s  %s\n", "pass", "seconds", "share", "changed");
  for (const PassTiming& t : timings_) {
    absl::StrAppendFormat(&out, "%-24s %12.6f %7.1f%%  %s\n", t.pass, t.seconds,
                          total > 0 ? 100.0 * t.seconds / total : 0.0, t.changed ? "yes" : "no");
  }
  absl::StrAppendFormat(&out, "%-24s %12.6f\n", "total", total);
  return out;
}

}  // namespace hetpass
