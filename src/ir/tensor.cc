#include "passes/ir/tensor.h"

#include <cmath>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/support/pages.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

absl::StatusOr<int64_t> CheckedNumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("negative dimension ", d));
    if (__builtin_mul_overflow(n, d, &n)) {
      return absl::InvalidArgumentError("tensor element count overflows int64");
    }
  }
  return n;
}

// Default tensors (one per IR node) share one zero buffer: no allocation per node.
Tensor::Tensor() {
  static const auto* zero =
      new std::shared_ptr<std::string>(std::make_shared<std::string>(8, '\0'));
  data_ = *zero;
}

Tensor Tensor::Zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.num_elements_ = Product(shape);
  t.shape_ = std::move(shape);
  t.data_ = std::make_shared<std::string>();
  // A large buffer's pages made resident at once before the zeros are written (support/pages.h).
  if (t.nbytes() >= kPrefaultMinBytes) {
    t.data_->reserve(t.nbytes());
    PrefaultForWrite(t.data_->data(), t.nbytes());
  }
  t.data_->resize(t.nbytes());
  return t;
}

namespace {

// The element count of dtype[shape] and its byte size, checked against `have` bytes.
absl::StatusOr<int64_t> CheckedBytes(DType dtype, absl::Span<const int64_t> shape, size_t have) {
  ASSIGN_OR_RETURN(int64_t n, CheckedNumElements(shape));
  // The byte size must not wrap either: 2^61 f64 elements would otherwise "need" 0 bytes.
  int64_t want_bytes = 0;
  if (__builtin_mul_overflow(n, int64_t{DTypeSize(dtype)}, &want_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tensor %s%s has %d elements, whose byte size overflows int64",
                        DTypeName(dtype), absl::StrCat("[", absl::StrJoin(shape, ", "), "]"), n));
  }
  if (have != static_cast<size_t>(want_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tensor data has %d bytes but %s%s needs %d", have, DTypeName(dtype),
                        absl::StrCat("[", absl::StrJoin(shape, ", "), "]"), want_bytes));
  }
  return n;
}

}  // namespace

absl::StatusOr<Tensor> Tensor::FromBytes(DType dtype, std::vector<int64_t> shape,
                                         absl::string_view bytes) {
  return FromOwnedBytes(dtype, std::move(shape), std::string(bytes));
}

absl::StatusOr<Tensor> Tensor::FromOwnedBytes(DType dtype, std::vector<int64_t> shape,
                                              std::string&& bytes) {
  ASSIGN_OR_RETURN(const int64_t n, CheckedBytes(dtype, shape, bytes.size()));
  Tensor t;
  t.dtype_ = dtype;
  t.num_elements_ = n;
  t.shape_ = std::move(shape);
  t.data_ = std::make_shared<std::string>(std::move(bytes));
  return t;
}

Tensor Tensor::FromInt64s(DType dtype, std::vector<int64_t> shape,
                          absl::Span<const int64_t> values) {
  Tensor t = Zeros(dtype, std::move(shape));
  HETPASS_CHECK(static_cast<int64_t>(values.size()) == t.num_elements_, "value count mismatch");
  for (int64_t i = 0; i < t.num_elements_; ++i) t.SetInt64(i, values[i]);
  return t;
}

Tensor Tensor::FromDoubles(DType dtype, std::vector<int64_t> shape,
                           absl::Span<const double> values) {
  Tensor t = Zeros(dtype, std::move(shape));
  HETPASS_CHECK(static_cast<int64_t>(values.size()) == t.num_elements_, "value count mismatch");
  for (int64_t i = 0; i < t.num_elements_; ++i) t.SetDouble(i, values[i]);
  return t;
}

Tensor Tensor::Scalar(DType dtype, double value) {
  Tensor t = Zeros(dtype, {});
  t.SetDouble(0, value);
  return t;
}

Type Tensor::type() const {
  std::vector<DimExpr> dims(shape_.begin(), shape_.end());
  return Type::Tensor(dtype_, std::move(dims));
}

uint8_t* Tensor::mutable_data() {
  if (data_ == nullptr) return nullptr;  // released: nothing to write
  if (data_.use_count() > 1) data_ = std::make_shared<std::string>(*data_);
  return reinterpret_cast<uint8_t*>(data_->data());
}

double Tensor::GetDouble(int64_t i) const {
  const uint8_t* p = data() + i * DTypeSize(dtype_);
  switch (dtype_) {
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return HalfToFloat(h);
    }
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return BFloat16ToFloat(h);
    }
    case DType::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kF64: {
      double f;
      std::memcpy(&f, p, 8);
      return f;
    }
    case DType::kU64: {
      uint64_t u;
      std::memcpy(&u, p, 8);
      return static_cast<double>(u);
    }
    default:
      return static_cast<double>(GetInt64(i));
  }
}

int64_t Tensor::GetInt64(int64_t i) const {
  const uint8_t* p = data() + i * DTypeSize(dtype_);
  if (std::optional<int64_t> v = LoadInteger(dtype_, p)) return *v;
  const double d = GetDouble(i);
  // Saturate instead of invoking undefined behaviour on out-of-range floats.
  if (std::isnan(d)) return 0;
  if (d >= 9.2233720368547758e18) return INT64_MAX;
  if (d <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(d);
}

void Tensor::SetDouble(int64_t i, double v) {
  uint8_t* p = mutable_data() + i * DTypeSize(dtype_);
  switch (dtype_) {
    case DType::kF16: {
      uint16_t h = FloatToHalf(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::kBF16: {
      uint16_t h = FloatToBFloat16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::kF32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::kF64:
      std::memcpy(p, &v, 8);
      return;
    case DType::kBool:
      *p = v != 0 ? 1 : 0;
      return;
    default: {
      // Integers: saturate to int64 (NaN is 0), then wrap to the width as SetInt64 does; a
      // u64 takes the values from 2^63 up directly (the JIT's Convert does the same).
      int64_t x = 0;
      if (dtype_ == DType::kU64 && v >= 9.2233720368547758e18) {
        const uint64_t u = v >= 1.8446744073709552e19 ? UINT64_MAX : static_cast<uint64_t>(v);
        std::memcpy(p, &u, 8);
        return;
      }
      if (!std::isnan(v)) {
        x = v >= 9.2233720368547758e18    ? INT64_MAX
            : v <= -9.2233720368547758e18 ? INT64_MIN
                                          : static_cast<int64_t>(v);
      }
      SetInt64(i, x);
    }
  }
}

void Tensor::SetInt64(int64_t i, int64_t v) {
  uint8_t* p = mutable_data() + i * DTypeSize(dtype_);
  if (!StoreInteger(dtype_, v, p)) SetDouble(i, static_cast<double>(v));
}

std::vector<int64_t> Tensor::ToInt64s() const {
  std::vector<int64_t> out(num_elements_);
  for (int64_t i = 0; i < num_elements_; ++i) out[i] = GetInt64(i);
  return out;
}

std::vector<double> Tensor::ToDoubles() const {
  std::vector<double> out(num_elements_);
  for (int64_t i = 0; i < num_elements_; ++i) out[i] = GetDouble(i);
  return out;
}

Tensor Tensor::Reshaped(std::vector<int64_t> shape) const {
  HETPASS_CHECK(Product(shape) == num_elements_, "reshape must keep the element count");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

bool Tensor::operator==(const Tensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  // A released tensor's values are gone: it equals only itself.
  if (released() || o.released()) return this == &o;
  if (data_ == o.data_) return true;
  return nbytes() == 0 || std::memcmp(data(), o.data(), nbytes()) == 0;
}

// Up to 64 KiB every byte is hashed. A larger tensor (model weights) is hashed by its first
// and last 4 KiB and 64 blocks of 64 bytes spread evenly between: hashing every byte of a
// BERT-base encoder's weights in CSE was a tenth of its `hetpass run`. Equal tensors still hash
// equal (the blocks' places depend only on the size), and every user of the hash (CSE's
// table, StructuralHash's) confirms a match with operator==.
size_t Tensor::Hash() const {
  constexpr size_t kWholeBytes = size_t{64} << 10, kEnd = 4096, kBlocks = 64, kBlock = 64;
  size_t h = absl::HashOf(static_cast<int>(dtype_), shape_);
  if (released()) return h;
  const char* p = reinterpret_cast<const char*>(data());
  const size_t n = nbytes();
  if (n <= kWholeBytes) return absl::HashOf(h, absl::string_view(p, n));
  h = absl::HashOf(h, n, absl::string_view(p, kEnd), absl::string_view(p + n - kEnd, kEnd));
  const size_t stride = n / kBlocks;
  for (size_t i = 1; i < kBlocks; ++i) h = absl::HashOf(h, absl::string_view(p + i * stride, kBlock));
  return h;
}

bool Tensor::ReleaseIfUnshared() {
  if (data_ == nullptr) return true;
  if (data_.use_count() > 1) return false;
  data_.reset();
  return true;
}

std::string Tensor::DebugString(int max_elements) const {
  if (released()) {
    return absl::StrCat(DTypeName(dtype_), "[", absl::StrJoin(shape_, ", "), "]{released}");
  }
  std::vector<std::string> parts;
  for (int64_t i = 0; i < num_elements_ && i < max_elements; ++i) {
    parts.push_back(IsFloat(dtype_) ? absl::StrCat(GetDouble(i)) : absl::StrCat(GetInt64(i)));
  }
  if (num_elements_ > max_elements) parts.push_back("...");
  return absl::StrCat(DTypeName(dtype_), "[", absl::StrJoin(shape_, ", "), "]{",
                      absl::StrJoin(parts, ", "), "}");
}

}  // namespace hetpass
