// NumPy .npy files (format 1.0 to 3.0, little-endian, C order): inputs and outputs of
// `hetpass run`. Errors name the file and what was wrong; never a crash on a bad file.
#ifndef HETPASS_RUNTIME_NPY_H_
#define HETPASS_RUNTIME_NPY_H_

#include <string>

#include "absl/status/statusor.h"
#include "passes/ir/tensor.h"

namespace hetpass::runtime {

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, absl::string_view name = "<npy>");
absl::StatusOr<Tensor> ReadNpy(const std::string& path);
std::string SerializeNpy(const Tensor& tensor);
absl::Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace hetpass::runtime

#endif  // HETPASS_RUNTIME_NPY_H_
