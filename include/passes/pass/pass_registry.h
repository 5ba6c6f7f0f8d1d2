// Passes by name, for pipelines written as text:
//   infer-types,fold-constants,plan-devices{target=sim},dce
// A pass name may carry options in braces, `key=value` separated by commas; list values use
// ':' (`bind-params{names=w1:w2}`). Registration is one explicit RegisterAllPasses() list.
#ifndef HETPASS_PASS_PASS_REGISTRY_H_
#define HETPASS_PASS_PASS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "passes/pass/pass.h"
#include "passes/pass/pass_manager.h"

namespace hetpass {

// The options text of one pass in a pipeline, with typed, checked accessors.
class PassOptions {
 public:
  PassOptions() = default;
  PassOptions(std::string pass, std::map<std::string, std::string> values)
      : pass_(std::move(pass)), values_(std::move(values)) {}

  // Errors naming the pass and option if an option is not in `known`.
  absl::Status CheckKnown(const std::vector<std::string>& known) const;
  bool Has(absl::string_view key) const { return values_.count(std::string(key)) != 0; }
  std::string GetString(absl::string_view key, absl::string_view default_value) const;
  absl::StatusOr<int64_t> GetInt(absl::string_view key, int64_t default_value) const;
  absl::StatusOr<bool> GetBool(absl::string_view key, bool default_value) const;
  std::vector<std::string> GetList(absl::string_view key) const;  // ':'-separated
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::string pass_;
  std::map<std::string, std::string> values_;
};

struct PassInfo {
  std::string name;
  std::string summary;
  std::vector<std::string> options;  // "key: meaning (default)"
  std::function<absl::StatusOr<std::unique_ptr<Pass>>(const PassOptions&)> create;
};

class PassRegistry {
 public:
  // The registry of built-in passes (RegisterAllPasses), built on first use.
  static const PassRegistry& Global();

  void Register(PassInfo info);
  const PassInfo* Find(absl::string_view name) const;
  const std::vector<PassInfo>& passes() const { return passes_; }
  std::string Describe() const;

 private:
  std::vector<PassInfo> passes_;
};

// The explicit list of every pass (src/pass/register_all_passes.cc).
void RegisterAllPasses(PassRegistry& registry);

// Parses "a,b{k=v},c" into a pass manager. Errors name the unknown pass (and list the known
// ones) or the bad option, with its column in the pipeline text.
absl::StatusOr<std::unique_ptr<PassManager>> ParsePipeline(
    absl::string_view pipeline, PassManagerOptions options = {},
    const PassRegistry& registry = PassRegistry::Global());

}  // namespace hetpass

#endif  // HETPASS_PASS_PASS_REGISTRY_H_
