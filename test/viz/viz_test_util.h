// Helpers shared by the pass-viz tests: load a test module and run a pipeline on it.
#ifndef HETPASS_TEST_VIZ_VIZ_TEST_UTIL_H_
#define HETPASS_TEST_VIZ_VIZ_TEST_UTIL_H_

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "passes/ir/parser.h"
#include "passes/pass/pass_registry.h"

namespace hetpass::viz::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Parses `dir/name` (source name `name`, so locations do not depend on the checkout) and runs
// `pipeline` on it.
inline absl::StatusOr<std::unique_ptr<Module>> LoadModule(const std::string& dir,
                                                          const std::string& name,
                                                          const std::string& pipeline) {
  ParseOptions options;
  options.source_name = name;
  options.allow_elided_constants = true;  // as pass-viz: a picture needs no weights
  auto module = ParseModule(ReadFile(absl::StrCat(dir, "/", name)), options);
  if (!module.ok()) return module.status();
  if (pipeline.empty()) return module;
  PassManagerOptions pm_options;
  pm_options.verify_each = true;
  auto pm = ParsePipeline(pipeline, pm_options);
  if (!pm.ok()) return pm.status();
  if (auto r = (*pm)->Run(**module); !r.ok()) return r.status();
  return module;
}

inline absl::StatusOr<std::unique_ptr<Module>> LoadTestModule(const std::string& name,
                                                              const std::string& pipeline) {
  return LoadModule(HETPASS_VIZ_TEST_DIR, name, pipeline);
}

inline absl::StatusOr<std::unique_ptr<Module>> LoadExample(const std::string& name,
                                                           const std::string& pipeline) {
  return LoadModule(HETPASS_EXAMPLES_DIR, name, pipeline);
}

}  // namespace hetpass::viz::testing

#endif  // HETPASS_TEST_VIZ_VIZ_TEST_UTIL_H_
