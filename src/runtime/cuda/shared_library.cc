// dlopen with one search order for the CUDA libraries opened on first use (see
// shared_library.h).
#include "runtime/cuda/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hetpass::runtime::cuda_api {

absl::StatusOr<SharedLibrary> OpenSharedLibrary(absl::string_view what, const char* env_var,
                                                const std::vector<std::string>& names,
                                                const ResolveSymbols& resolve) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(env_var); env != nullptr && *env) {
    candidates.push_back(env);
  } else {
    candidates = names;
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
      if (const char* root = std::getenv(var); root != nullptr && *root) {
        for (const std::string& n : names) candidates.push_back(absl::StrCat(root, "/lib64/", n));
      }
    }
    for (const std::string& n : names) candidates.push_back(absl::StrCat("/usr/local/cuda/lib64/", n));
  }
  std::vector<std::string> errors;
  for (const std::string& c : candidates) {
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      errors.push_back(absl::StrCat(c, " (", e == nullptr ? "not found" : e, ")"));
      continue;
    }
    const std::vector<std::string> missing = resolve(h);
    if (!missing.empty()) {
      errors.push_back(absl::StrCat(c, " (lacks ", absl::StrJoin(missing, ", "), ")"));
      continue;  // the handle stays open: see the header
    }
    SharedLibrary lib;
    lib.handle = h;
    struct link_map* map = nullptr;
    lib.path = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr ? map->l_name : c;
    return lib;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("cuda: ", what, " not found (set ", env_var, "); tried ", absl::StrJoin(errors, ", ")));
}

}  // namespace hetpass::runtime::cuda_api
