#include "passes/ir/dtype.h"

#include <cstring>

namespace hetpass {

absl::string_view DTypeName(DType t) {
  switch (t) {
#define HETPASS_DTYPE(e, name, size, is_float, is_int) \
  case DType::e:                                       \
    return name;
#include "passes/ir/dtype.def"
#undef HETPASS_DTYPE
  }
  return "<bad dtype>";
}

std::optional<DType> ParseDType(absl::string_view text) {
#define HETPASS_DTYPE(e, name, size, is_float, is_int) \
  if (text == name) return DType::e;
#include "passes/ir/dtype.def"
#undef HETPASS_DTYPE
  return std::nullopt;
}

int DTypeSize(DType t) {
  switch (t) {
#define HETPASS_DTYPE(e, name, size, is_float, is_int) \
  case DType::e:                                       \
    return size;
#include "passes/ir/dtype.def"
#undef HETPASS_DTYPE
  }
  return 0;
}

bool IsFloat(DType t) {
  switch (t) {
#define HETPASS_DTYPE(e, name, size, is_float, is_int) \
  case DType::e:                                       \
    return is_float;
#include "passes/ir/dtype.def"
#undef HETPASS_DTYPE
  }
  return false;
}

bool IsInteger(DType t) {
  switch (t) {
#define HETPASS_DTYPE(e, name, size, is_float, is_int) \
  case DType::e:                                       \
    return is_int;
#include "passes/ir/dtype.def"
#undef HETPASS_DTYPE
  }
  return false;
}

bool IsUnsigned(DType t) {
  return t == DType::kU8 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64;
}

namespace {
template <typename T>
int64_t Load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<int64_t>(v);
}
template <typename T>
void Store(int64_t v, void* p) {
  const T x = static_cast<T>(v);  // modular since C++20
  std::memcpy(p, &x, sizeof(T));
}
}  // namespace

std::optional<int64_t> LoadInteger(DType t, const void* p) {
  switch (t) {
    case DType::kI8: return Load<int8_t>(p);
    case DType::kI16: return Load<int16_t>(p);
    case DType::kI32: return Load<int32_t>(p);
    case DType::kI64: return Load<int64_t>(p);
    case DType::kU8:
    case DType::kBool: return Load<uint8_t>(p);
    case DType::kU16: return Load<uint16_t>(p);
    case DType::kU32: return Load<uint32_t>(p);
    case DType::kU64: return Load<uint64_t>(p);
    case DType::kF16:
    case DType::kBF16:
    case DType::kF32:
    case DType::kF64: break;
  }
  return std::nullopt;
}

bool StoreInteger(DType t, int64_t v, void* p) {
  switch (t) {
    case DType::kI8:
    case DType::kU8: Store<uint8_t>(v, p); return true;
    case DType::kBool: Store<uint8_t>(v != 0 ? 1 : 0, p); return true;
    case DType::kI16:
    case DType::kU16: Store<uint16_t>(v, p); return true;
    case DType::kI32:
    case DType::kU32: Store<uint32_t>(v, p); return true;
    case DType::kI64:
    case DType::kU64: Store<int64_t>(v, p); return true;
    case DType::kF16:
    case DType::kBF16:
    case DType::kF32:
    case DType::kF64: break;
  }
  return false;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // subnormal half or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 113 - static_cast<int>(abs >> 23) + 13;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // normalise a subnormal
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace hetpass
