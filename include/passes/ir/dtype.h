// Element types of tensors; the list itself lives in dtype.def.
#ifndef HETPASS_IR_DTYPE_H_
#define HETPASS_IR_DTYPE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace hetpass {

enum class DType : uint8_t {
#define HETPASS_DTYPE(e, name, size, is_float, is_int) e,
#include "passes/ir/dtype.def"
#undef HETPASS_DTYPE
};

inline constexpr int kNumDTypes = 0
#define HETPASS_DTYPE(e, name, size, is_float, is_int) +1
#include "passes/ir/dtype.def"
#undef HETPASS_DTYPE
    ;

absl::string_view DTypeName(DType t);
std::optional<DType> ParseDType(absl::string_view name);
int DTypeSize(DType t);
bool IsFloat(DType t);
bool IsInteger(DType t);  // i8, i32, i64, u8 (bool is neither float nor integer)

// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

}  // namespace hetpass

#endif  // HETPASS_IR_DTYPE_H_
