// The providers every host-memory device has, defined with the engine (compile_engine.cc): the
// view copy for reshape-only groups and the reference interpreter, the fallback that runs every
// op with a reference kernel.
#ifndef HETPASS_COMPILE_ENGINE_BUILTIN_PROVIDERS_H_
#define HETPASS_COMPILE_ENGINE_BUILTIN_PROVIDERS_H_

#include "passes/compile_engine/kernel_provider.h"

namespace hetpass {

// "view.copy": a single view op (an op whose result has its input's bytes, OpDef::is_view())
// of the group's first parameter: a copy of the bytes.
const KernelProvider& ViewCopyProvider();
// "reference": the group's ops one after another through the registry's reference kernels on
// host memory (correct for every registered op, not fast). Always last.
const KernelProvider& ReferenceProvider();

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_BUILTIN_PROVIDERS_H_
