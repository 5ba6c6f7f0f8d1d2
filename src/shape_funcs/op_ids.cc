// OpId tables (op_ids.h), generated from elementwise_ops.def and ops.def.
#include "passes/shape_funcs/op_ids.h"

#include <string>

#include "absl/container/flat_hash_map.h"

namespace hetpass {
namespace {

struct Entry {
  OpId id;
  absl::string_view name;
};

constexpr Entry kEntries[] = {
#define HETPASS_UNARY(id, name, cls, expr, doc) {OpId::id, name},
#define HETPASS_BINARY(id, name, cls, expr, doc) {OpId::id, name},
#define HETPASS_COMPARE(id, name, expr, doc) {OpId::id, name},
#include "passes/shape_funcs/elementwise_ops.def"
#define HETPASS_OP(id, name) {OpId::id, name},
#include "passes/shape_funcs/ops.def"
#undef HETPASS_OP
};

constexpr ElementwiseInfo kElementwise[] = {
#define HETPASS_UNARY(id, name, cls, expr, doc) \
  {OpId::id, ElementwiseKind::kUnary, ElementwiseDTypes::cls},
#define HETPASS_BINARY(id, name, cls, expr, doc) \
  {OpId::id, ElementwiseKind::kBinary, ElementwiseDTypes::cls},
#define HETPASS_COMPARE(id, name, expr, doc) \
  {OpId::id, ElementwiseKind::kCompare, ElementwiseDTypes::kNumeric},
#include "passes/shape_funcs/elementwise_ops.def"
};

const absl::flat_hash_map<std::string, OpId>& ByName() {
  static const auto* by_name = [] {
    auto* m = new absl::flat_hash_map<std::string, OpId>();
    for (const Entry& e : kEntries) m->emplace(std::string(e.name), e.id);
    return m;
  }();
  return *by_name;
}

const OpId* Ids() {
  static const OpId* ids = [] {
    auto* v = new OpId[std::size(kEntries)];
    for (size_t i = 0; i < std::size(kEntries); ++i) v[i] = kEntries[i].id;
    return v;
  }();
  return ids;
}

}  // namespace

OpId OpIdOf(const OpDef& op) {
  if (const int32_t cached = op.cached_id(); cached != OpDef::kNoCachedId) {
    return static_cast<OpId>(cached);
  }
  auto it = ByName().find(op.name());
  const OpId id = it == ByName().end() ? OpId::kUnknown : it->second;
  op.set_cached_id(static_cast<int32_t>(id));
  return id;
}

absl::string_view OpIdName(OpId id) {
  const size_t i = static_cast<size_t>(id);
  return i < std::size(kEntries) ? kEntries[i].name : absl::string_view();
}

absl::Span<const OpId> AllOpIds() { return absl::MakeConstSpan(Ids(), std::size(kEntries)); }

const ElementwiseInfo* ElementwiseInfoOf(OpId id) {
  const size_t i = static_cast<size_t>(id);
  return i < std::size(kElementwise) ? &kElementwise[i] : nullptr;
}

}  // namespace hetpass
