// Shared oneDNN plumbing and body-matching helpers (see onednn_common.h).
#include "compile_engine/onednn_common.h"

#include <omp.h>

#include <cstdlib>
#include <memory>
#include <variant>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/dense_kernel.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::onednn {

bool IsCallOf(const Node& n, absl::string_view op) {
  return n.kind() == NodeKind::kCall && n.op() != nullptr && n.op()->name() == op;
}

bool IsF32Tensor(const Type& t, int rank) {
  return t.is_tensor() && t.dtype() == DType::kF32 && t.rank() == rank;
}

int ParamIndex(const Block& body, const Value* v) {
  return v->is_param() && v->param_block() == &body ? v->index() : -1;
}

std::optional<int64_t> IntAttr(const Node& n, absl::string_view name, int64_t default_value) {
  const AttrValue* a = n.attrs().Find(name);
  if (a == nullptr) return default_value;
  if (const int64_t* v = std::get_if<int64_t>(a)) return *v;
  return std::nullopt;
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ", "));
}

absl::Status LibraryError(absl::string_view function, const std::exception& e) {
  if (const auto* d = dynamic_cast<const dnnl::error*>(&e)) {
    return absl::InternalError(absl::StrFormat("%s: onednn: %s (status %d)", function, d->what(),
                                               static_cast<int>(d->status)));
  }
  return absl::InternalError(absl::StrFormat("%s: onednn: %s", function, e.what()));
}

const dnnl::engine* CpuEngine() {
  static const dnnl::engine* engine = []() -> const dnnl::engine* {
    try {
      return new dnnl::engine(dnnl::engine::kind::cpu, 0);
    } catch (const dnnl::error&) {
      return nullptr;
    }
  }();
  return engine;
}

dnnl::stream& ThreadStream(const dnnl::engine& engine) {
  thread_local std::optional<dnnl::stream> stream;
  if (!stream) stream.emplace(engine);
  return *stream;
}

void* ThreadScratch(size_t bytes) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> buffer;
  thread_local size_t capacity = 0;
  if (bytes > capacity) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    buffer.reset(std::aligned_alloc(64, rounded));
    capacity = buffer ? rounded : 0;
  }
  return buffer.get();
}

ScopedLibraryThreads::ScopedLibraryThreads()
    : previous_(omp_get_max_threads()), wanted_(KernelLibraryThreads()) {
  if (previous_ != wanted_) omp_set_num_threads(wanted_);
}

ScopedLibraryThreads::~ScopedLibraryThreads() {
  if (previous_ != wanted_) omp_set_num_threads(previous_);
}

}  // namespace hetpass::onednn
