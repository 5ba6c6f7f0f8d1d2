// The shared dlopen search of the CUDA libraries opened on first use (see dl_library.h).
#include "runtime/cuda/dl_library.h"

#include <link.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hetpass::runtime::cuda_api {

absl::StatusOr<std::string> OpenLibrary(const LibrarySearch& search,
                                        absl::FunctionRef<std::vector<std::string>(void* handle)> resolve) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv(search.env); env != nullptr && *env) {
    candidates.push_back(env);
  } else {
    candidates = search.names;
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
      if (const char* root = std::getenv(var); root != nullptr && *root) {
        candidates.push_back(absl::StrCat(root, "/lib64/", search.file));
      }
    }
    candidates.push_back(absl::StrCat("/usr/local/cuda/lib64/", search.file));
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
      continue;  // the handle stays open: dlclose of a CUDA library at this point is unsafe
    }
    // The file the loader picked, for reports ("which cuDNN ran").
    struct link_map* map = nullptr;
    return dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr
               ? std::string(map->l_name)
               : c;
  }
  return absl::FailedPreconditionError(absl::StrCat("cuda: ", search.what, " not found (set ", search.env,
                                                    "); tried ", absl::StrJoin(errors, ", ")));
}

}  // namespace hetpass::runtime::cuda_api
