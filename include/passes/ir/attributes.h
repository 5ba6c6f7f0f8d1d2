// Typed attributes. Every attribute has one of the types in attr_types.def; there is no
// untyped string fallback. A dictionary is kept sorted by name so printing and hashing are
// deterministic.
#ifndef HETPASS_IR_ATTRIBUTES_H_
#define HETPASS_IR_ATTRIBUTES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "passes/ir/dtype.h"
#include "passes/ir/input_dep.h"

namespace hetpass {

enum class AttrType : uint8_t {
#define HETPASS_ATTR_TYPE(e, cpp, name) e,
#include "passes/ir/attr_types.def"
#undef HETPASS_ATTR_TYPE
};

// Alternatives are in attr_types.def order, so index() == static_cast<int>(AttrType).
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
                               std::vector<double>, DType, std::vector<InputDep>>;
// A type added to attr_types.def needs its alternative here too (and in the same place).
static_assert(std::variant_size_v<AttrValue> == 0
#define HETPASS_ATTR_TYPE(e, cpp, name) +1
#include "passes/ir/attr_types.def"
#undef HETPASS_ATTR_TYPE
              );

absl::string_view AttrTypeName(AttrType t);
inline AttrType TypeOf(const AttrValue& v) { return static_cast<AttrType>(v.index()); }
// Text form used by the printer: 3, 1.5, true, "s", [1, 2], [1.0, 2.5], f32, [shape, value].
std::string AttrValueToString(const AttrValue& v);
size_t HashAttrValue(const AttrValue& v);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init);

  void Set(absl::string_view name, AttrValue value);
  bool Has(absl::string_view name) const { return Find(name) != nullptr; }
  const AttrValue* Find(absl::string_view name) const;
  void Erase(absl::string_view name);

  // Typed getters. The verifier guarantees presence and type for schema attributes, so a
  // mismatch here is an internal error (checked).
  int64_t GetInt(absl::string_view name) const;
  double GetFloat(absl::string_view name) const;
  bool GetBool(absl::string_view name) const;
  const std::string& GetString(absl::string_view name) const;
  const std::vector<int64_t>& GetIntList(absl::string_view name) const;
  const std::vector<double>& GetFloatList(absl::string_view name) const;
  DType GetDType(absl::string_view name) const;
  const std::vector<InputDep>& GetDepList(absl::string_view name) const;

  const std::vector<std::pair<std::string, AttrValue>>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  bool operator==(const Attrs& o) const { return entries_ == o.entries_; }
  bool operator!=(const Attrs& o) const { return !(*this == o); }
  size_t Hash() const;
  std::string ToString() const;  // `{axis = 1, k = 3}` or "" when empty

 private:
  const AttrValue& Get(absl::string_view name, AttrType type) const;
  std::vector<std::pair<std::string, AttrValue>> entries_;  // sorted by name
};

}  // namespace hetpass

#endif  // HETPASS_IR_ATTRIBUTES_H_
