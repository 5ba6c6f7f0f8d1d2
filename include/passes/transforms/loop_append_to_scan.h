// loop-append-to-scan: a loop that grows a carried tensor by one concatenated piece per
// iteration (the exporters' form of a Python list append) becomes a scan output and one
// concatenation after the loop: O(n) bytes copied instead of O(n^2). See the .cc for the
// conditions and why the result is exact.
#ifndef HETPASS_TRANSFORMS_LOOP_APPEND_TO_SCAN_H_
#define HETPASS_TRANSFORMS_LOOP_APPEND_TO_SCAN_H_

#include <memory>

#include "passes/pass/pass.h"

namespace hetpass {

struct LoopAppendToScanOptions {
  static constexpr absl::string_view kName = "loop-append-to-scan";
};

std::unique_ptr<Pass> CreateLoopAppendToScanPass(const LoopAppendToScanOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_LOOP_APPEND_TO_SCAN_H_
