// Differential libFuzzer target for the mapped ONNX import (src/frontend/onnx_mapped_model.h):
// the input bytes, as a file, imported the way ImportOnnxFile does it (the file mapped, a
// skeleton parsed with a marker for each raw_data, the markers resolved from the mapping) and,
// as bytes, by ImportOnnx. The skeleton walk reads untrusted wire format by hand, so it is
// fuzzed against protobuf's own parse. The threshold is the least (17 bytes), so that small
// inputs have markers too.
//
// Findings (besides crashes and sanitizer reports):
//   - one import succeeds and the other fails, or both fail with different status codes;
//   - both succeed with modules that print differently (constants printed in full).
// The file lives in memory (memfd_create), named by its /proc/self/fd path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "frontend/onnx_mapped_model.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/printer.h"

namespace {

[[noreturn]] void Fail(absl::string_view what, absl::string_view detail) {
  std::fprintf(stderr, "onnx_mapped_fuzzer: %.*s\n%.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ::memfd_create("fuzz.onnx", MFD_CLOEXEC);
  if (fd < 0) Fail("memfd_create failed", "");
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) Fail("write to the memfd failed", "");
    done += static_cast<size_t>(n);
  }
  const std::string path = absl::StrCat("/proc/self/fd/", fd);
  hetpass::OnnxImportOptions options;
  options.infer_types = true;
  auto from_bytes = hetpass::ImportOnnx(
      absl::string_view(reinterpret_cast<const char*>(data), size), options, path);
  auto from_file = hetpass::onnx_frontend::ImportOnnxFileWith(path, options, 0);
  ::close(fd);
  if (from_bytes.ok() != from_file.ok()) {
    Fail("ImportOnnx and the mapped import disagree",
         absl::StrCat("bytes: ", from_bytes.ok() ? "OK" : from_bytes.status().ToString(),
                      "\nfile:  ", from_file.ok() ? "OK" : from_file.status().ToString()));
  }
  if (!from_bytes.ok()) {
    if (from_bytes.status().code() != from_file.status().code()) {
      Fail("ImportOnnx and the mapped import fail differently",
           absl::StrCat("bytes: ", from_bytes.status().ToString(),
                        "\nfile:  ", from_file.status().ToString()));
    }
    return 0;
  }
  const std::string a = hetpass::PrintModule(**from_bytes);
  const std::string b = hetpass::PrintModule(**from_file);
  if (a != b) {
    Fail("ImportOnnx and the mapped import give different modules",
         absl::StrCat("--- bytes:\n", a, "\n--- file:\n", b));
  }
  return 0;
}
