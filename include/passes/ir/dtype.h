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
bool IsInteger(DType t);   // i8, i16, i32, i64, u8, u16, u32, u64 (bool is neither)
bool IsUnsigned(DType t);  // u8, u16, u32, u64

// The element at p of an integer or bool dtype, sign- or zero-extended to 64 bits; u64 keeps
// its bit pattern, so a value above INT64_MAX reads as negative (callers that order or divide
// u64 values use IsUnsigned). nullopt for floating-point dtypes. Every reader of integer
// tensors (Tensor, the VM's host reads, kernels' shape arguments) goes through this one switch.
std::optional<int64_t> LoadInteger(DType t, const void* p);
// Stores v at p truncated to t's width (two's complement wrap-around); bool stores v != 0.
// Returns false, storing nothing, for floating-point dtypes.
bool StoreInteger(DType t, int64_t v, void* p);

// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

}  // namespace hetpass

#endif  // HETPASS_IR_DTYPE_H_
