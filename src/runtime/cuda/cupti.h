// CUPTI's activity records of CUDA memcpys: an independent count of the copies a GPU run made
// (the device's own counters are what the copy ledger is checked against; CUPTI is the driver's
// view of the same run). CUPTI is opened with dlopen on first use ($HETPASS_CUPTI, else
// libcupti.so.13 on the loader's path, $CUDA_HOME/lib64, /usr/local/cuda/lib64). Built only with
// the CUDA device; the public entry points are in passes/runtime/device.h.
#ifndef HETPASS_RUNTIME_CUDA_CUPTI_H_
#define HETPASS_RUNTIME_CUDA_CUPTI_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "passes/runtime/device.h"

namespace hetpass::runtime::cuda_api {

absl::Status StartTrace();
absl::StatusOr<CuptiTrace> StopTrace();

}  // namespace hetpass::runtime::cuda_api

#endif  // HETPASS_RUNTIME_CUDA_CUPTI_H_
