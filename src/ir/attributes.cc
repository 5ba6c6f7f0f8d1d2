#include "passes/ir/attributes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

// Shortest text that reads back to the same double, always with a '.' or exponent so it does
// not read back as an int.
std::string FloatToString(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string QuoteString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

absl::string_view AttrTypeName(AttrType t) {
  switch (t) {
#define HETPASS_ATTR_TYPE(e, cpp, name) \
  case AttrType::e:                     \
    return name;
#include "passes/ir/attr_types.def"
#undef HETPASS_ATTR_TYPE
  }
  return "<bad attr type>";
}

std::string AttrValueToString(const AttrValue& v) {
  switch (TypeOf(v)) {
    case AttrType::kInt:
      return absl::StrCat(std::get<int64_t>(v));
    case AttrType::kFloat:
      return FloatToString(std::get<double>(v));
    case AttrType::kBool:
      return std::get<bool>(v) ? "true" : "false";
    case AttrType::kString:
      return QuoteString(std::get<std::string>(v));
    case AttrType::kIntList:
      return absl::StrCat("[", absl::StrJoin(std::get<std::vector<int64_t>>(v), ", "), "]");
    case AttrType::kFloatList: {
      std::vector<std::string> parts;
      for (double d : std::get<std::vector<double>>(v)) parts.push_back(FloatToString(d));
      // An empty float list prints with a type tag so it does not read back as an int list.
      if (parts.empty()) return "f[]";
      return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
    }
    case AttrType::kDType:
      return std::string(DTypeName(std::get<DType>(v)));
    case AttrType::kDepList: {
      const auto& deps = std::get<std::vector<InputDep>>(v);
      if (deps.empty()) return "dep[]";  // `[]` would read back as an int list
      return absl::StrCat("[",
                          absl::StrJoin(deps, ", ",
                                        [](std::string* out, InputDep d) {
                                          absl::StrAppend(out, InputDepName(d));
                                        }),
                          "]");
    }
  }
  return "<bad attr>";
}

size_t HashAttrValue(const AttrValue& v) {
  switch (TypeOf(v)) {
    case AttrType::kInt: return absl::HashOf(0, std::get<int64_t>(v));
    case AttrType::kFloat: return absl::HashOf(1, std::get<double>(v));
    case AttrType::kBool: return absl::HashOf(2, std::get<bool>(v));
    case AttrType::kString: return absl::HashOf(3, std::get<std::string>(v));
    case AttrType::kIntList: return absl::HashOf(4, std::get<std::vector<int64_t>>(v));
    case AttrType::kFloatList: return absl::HashOf(5, std::get<std::vector<double>>(v));
    case AttrType::kDType: return absl::HashOf(6, static_cast<int>(std::get<DType>(v)));
    case AttrType::kDepList: return absl::HashOf(7, std::get<std::vector<InputDep>>(v));
  }
  return 0;
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init) {
  for (const auto& [k, v] : init) Set(k, v);
}

void Attrs::Set(absl::string_view name, AttrValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto& e, absl::string_view n) { return e.first < n; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    entries_.insert(it, {std::string(name), std::move(value)});
  }
}

const AttrValue* Attrs::Find(absl::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto& e, absl::string_view n) { return e.first < n; });
  if (it != entries_.end() && it->first == name) return &it->second;
  return nullptr;
}

void Attrs::Erase(absl::string_view name) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const auto& e) { return e.first == name; }),
                 entries_.end());
}

const AttrValue& Attrs::Get(absl::string_view name, AttrType type) const {
  const AttrValue* v = Find(name);
  if (v == nullptr || TypeOf(*v) != type) {
    std::fprintf(stderr, "internal error: attribute '%s' missing or not of type %s\n",
                 std::string(name).c_str(), std::string(AttrTypeName(type)).c_str());
    std::abort();
  }
  return *v;
}

int64_t Attrs::GetInt(absl::string_view n) const {
  return std::get<int64_t>(Get(n, AttrType::kInt));
}
double Attrs::GetFloat(absl::string_view n) const {
  return std::get<double>(Get(n, AttrType::kFloat));
}
bool Attrs::GetBool(absl::string_view n) const { return std::get<bool>(Get(n, AttrType::kBool)); }
const std::string& Attrs::GetString(absl::string_view n) const {
  return std::get<std::string>(Get(n, AttrType::kString));
}
const std::vector<int64_t>& Attrs::GetIntList(absl::string_view n) const {
  return std::get<std::vector<int64_t>>(Get(n, AttrType::kIntList));
}
const std::vector<double>& Attrs::GetFloatList(absl::string_view n) const {
  return std::get<std::vector<double>>(Get(n, AttrType::kFloatList));
}
DType Attrs::GetDType(absl::string_view n) const {
  return std::get<DType>(Get(n, AttrType::kDType));
}
const std::vector<InputDep>& Attrs::GetDepList(absl::string_view n) const {
  return std::get<std::vector<InputDep>>(Get(n, AttrType::kDepList));
}

size_t Attrs::Hash() const {
  size_t h = 0;
  for (const auto& [k, v] : entries_) h = absl::HashOf(h, k, HashAttrValue(v));
  return h;
}

std::string Attrs::ToString() const {
  if (entries_.empty()) return "";
  return absl::StrCat("{",
                      absl::StrJoin(entries_, ", ",
                                    [](std::string* out, const auto& e) {
                                      absl::StrAppend(out, e.first, " = ",
                                                      AttrValueToString(e.second));
                                    }),
                      "}");
}

}  // namespace hetpass
