// libFuzzer target for ParseOnnxTensor: the input bytes are a serialized ONNX TensorProto (the
// format of test_data_set_*/input_*.pb, which `hetpass run --input` and `test-onnx` read).
//
// A tensor that parses must be whole: every element it claims is read back (Hash reads
// nbytes(), DebugString and ToDoubles the first elements), so a shape whose element count does
// not match its buffer shows up as an ASan report. Errors are fine; crashes, sanitizer reports,
// allocations above libFuzzer's -malloc_limit_mb and an InternalError (an exception escaped
// into ParseOnnxTensor's catch-all) are findings.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = hetpass::ParseOnnxTensor(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!t.ok()) {
    if (t.status().code() == absl::StatusCode::kInternal) {
      std::fprintf(stderr, "onnx_tensor_fuzzer: ParseOnnxTensor returned an internal error\n%s\n",
                   t.status().ToString().c_str());
      std::abort();
    }
    return 0;
  }
  volatile size_t sink = t->Hash();
  sink = sink + t->DebugString().size() + t->type().rank();
  if (t->num_elements() > 0) {  // the last element, read through the dtype's accessor
    const double last = t->GetDouble(t->num_elements() - 1);
    sink = sink + (last == last ? 1 : 0);
  }
  (void)sink;
  return 0;
}
