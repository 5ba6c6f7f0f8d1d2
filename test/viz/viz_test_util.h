// Helpers shared by the pass-viz tests: load a test module and run a pipeline on it; read a
// picture's DOT text back with cgraph.
#ifndef HETPASS_TEST_VIZ_VIZ_TEST_UTIL_H_
#define HETPASS_TEST_VIZ_VIZ_TEST_UTIL_H_

#include <graphviz/cgraph.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
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
// A fresh directory name under $TEST_TMPDIR (or the system's), unique per process.
inline std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::filesystem::path dir =
      std::filesystem::path(base != nullptr ? base
                                            : std::filesystem::temp_directory_path().string()) /
      absl::StrCat("hetpass_viz_", name, "_", ::getpid());
  std::filesystem::remove_all(dir);
  return dir.string();
}

// Parses `text` (source name `name`) and runs `pipeline` on it.
inline absl::StatusOr<std::unique_ptr<Module>> ParseText(const std::string& text,
                                                         const std::string& name,
                                                         const std::string& pipeline) {
  ParseOptions options;
  options.source_name = name;
  options.allow_elided_constants = true;  // as pass-viz: a picture needs no weights
  auto module = ParseModule(text, options);
  if (!module.ok()) return module.status();
  if (pipeline.empty()) return module;
  PassManagerOptions pm_options;
  pm_options.verify_each = true;
  auto pm = ParsePipeline(pipeline, pm_options);
  if (!pm.ok()) return pm.status();
  if (auto r = (*pm)->Run(**module); !r.ok()) return r.status();
  return module;
}

inline absl::StatusOr<std::unique_ptr<Module>> LoadModule(const std::string& dir,
                                                          const std::string& name,
                                                          const std::string& pipeline) {
  return ParseText(ReadFile(absl::StrCat(dir, "/", name)), name, pipeline);
}

inline absl::StatusOr<std::unique_ptr<Module>> LoadTestModule(const std::string& name,
                                                              const std::string& pipeline) {
  return LoadModule(HETPASS_VIZ_TEST_DIR, name, pipeline);
}

inline absl::StatusOr<std::unique_ptr<Module>> LoadExample(const std::string& name,
                                                           const std::string& pipeline) {
  return LoadModule(HETPASS_EXAMPLES_DIR, name, pipeline);
}

// The DOT text parsed back by cgraph (independent of the graph that wrote it).
class ParsedDot {
 public:
  explicit ParsedDot(const std::string& text) {
    graph_ = agmemread(text.c_str());
    EXPECT_NE(graph_, nullptr) << "Graphviz could not read back:\n" << text;
  }
  ~ParsedDot() {
    if (graph_ != nullptr) agclose(graph_);
  }
  ParsedDot(const ParsedDot&) = delete;
  ParsedDot& operator=(const ParsedDot&) = delete;
  Agraph_t* g() const { return graph_; }
  Agnode_t* Node(const std::string& name) const { return agnode(graph_, S(name.c_str()), 0); }
  std::string Attr(void* obj, const char* key) const {
    char* v = agget(obj, S(key));
    return v == nullptr ? "" : v;
  }
  int CountClass(absl::string_view prefix) const {
    int n = 0;
    for (Agnode_t* v = agfstnode(graph_); v != nullptr; v = agnxtnode(graph_, v)) {
      n += absl::StartsWith(Attr(v, "class"), prefix);
    }
    return n;
  }

 private:
  static char* S(const char* s) { return const_cast<char*>(s); }
  Agraph_t* graph_ = nullptr;
};

}  // namespace hetpass::viz::testing

#endif  // HETPASS_TEST_VIZ_VIZ_TEST_UTIL_H_
