# HETPASS_FUZZ: libFuzzer targets for the three doors untrusted bytes come in by: the ONNX
# importer, the text IR parser and the VM executable loader (test/fuzz, docs/fuzzing.md).
#
# Needs clang (libFuzzer is clang's; Debian clang-16 + libclang-rt-16-dev), in a build directory
# of its own:
#   CC=clang-16 CXX=clang++-16 cmake -S . -B build-fuzz -G Ninja -DHETPASS_FUZZ=ON
#   cmake --build build-fuzz && (cd build-fuzz && ctest --output-on-failure)
#
# Such a build directory holds only these targets (CMakeLists.txt includes this file and stops):
# the fuzzers do not link `hetpass` (LLVM JIT, oneDNN) but `hetpass_fuzz_core`, a static library
# of only the parts the three doors reach, instrumented for coverage (-fsanitize=fuzzer-no-link)
# and checked by ASan + UBSan:
#   ir, shape_funcs, transforms    every fuzzer (parser, registry, verifier, printer)
#   frontend                       the ONNX fuzzers
#   runtime, vm/executable.cc,     the loader fuzzer: VirtualMachine::Load places constants on
#   vm/vm.cc, vm/device_graphs.cc, cpu/sim and asks the compile engine for kernels; the engine's
#   vm/vm_control.cc,              native providers (oneDNN, LLVM JIT) are left out: the provider
#   compile_engine.cc              lists are test/fuzz/no_kernel_providers.cc's (view copy and
#                                  reference only), so every kernel site gets the reference
#                                  kernel, the engine's own fallback
# and `hetpass_fuzz_seed`, for fuzz_seed_tool only: the pipeline that compiles the loader's seed
# executables from the repository's .hir files (pass, analysis, device_planner, manifest_alloc,
# vm/compiler.cc, vm/ledger_check.cc). No fuzzer reaches it, so it is built at -O1 without
# coverage, UBSan or debug info (about half the compile time of the core's flags), but with ASan
# like the core: absl's hash tables poison their empty slots only when built with ASan, and the
# inline copies the linker keeps for the seed tool must all agree on that (mixing them gave
# use-after-poison reports inside flat_hash_map).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "HETPASS_FUZZ=ON needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                      "configure a separate build directory with CC=clang-16 CXX=clang++-16")
endif()
if(HETPASS_SANITIZE)
  message(FATAL_ERROR "HETPASS_FUZZ=ON brings its own sanitizers: leave HETPASS_SANITIZE off")
endif()

set(HETPASS_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                            -fno-omit-frame-pointer -g)
# hetpass_fuzz_sources(VAR part...): the library sources of those parts of src/.
function(hetpass_fuzz_sources var)
  set(sources)
  foreach(part IN LISTS ARGN)
    file(GLOB part_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/${part}/*.cc)
    list(FILTER part_sources EXCLUDE REGEX "_test\\.cc$")
    list(APPEND sources ${part_sources})
  endforeach()
  set(${var} ${sources} PARENT_SCOPE)
endfunction()
hetpass_fuzz_sources(HETPASS_FUZZ_CORE_SOURCES ir shape_funcs transforms frontend runtime)
list(FILTER HETPASS_FUZZ_CORE_SOURCES EXCLUDE REGEX "/src/runtime/npy\\.cc$")  # no door reads .npy
# The loader: of src/vm the executable format and the interpreter's Load, of the compile engine
# only the engine itself (provider chain, cache, reference kernel, host shape functions, the
# tiered kernels' background compiler; the providers' sources include oneDNN and LLVM headers).
list(APPEND HETPASS_FUZZ_CORE_SOURCES
     ${CMAKE_CURRENT_SOURCE_DIR}/src/vm/executable.cc ${CMAKE_CURRENT_SOURCE_DIR}/src/vm/vm.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/vm/memory_trace.cc
     # The interpreter's other halves (vm_impl.h): device graphs, builtins and loops.
     ${CMAKE_CURRENT_SOURCE_DIR}/src/vm/device_graphs.cc ${CMAKE_CURRENT_SOURCE_DIR}/src/vm/vm_control.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/compile_engine/compile_engine.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/compile_engine/kernel_cache.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/compile_engine/tiered_kernel.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/test/fuzz/no_kernel_providers.cc)
hetpass_fuzz_sources(HETPASS_FUZZ_SEED_SOURCES pass analysis device_planner manifest_alloc
                     memory_planner)
list(APPEND HETPASS_FUZZ_SEED_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/vm/compiler.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/vm/ledger_check.cc)

# ONNX (protobuf classes, and the schemas for pre-11 op versions) only for src/frontend, as in
# the main build.
include(cmake/onnx_frontend.cmake)

add_library(hetpass_fuzz_core STATIC ${HETPASS_FUZZ_CORE_SOURCES})
target_include_directories(hetpass_fuzz_core
  PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
  PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_compile_options(hetpass_fuzz_core PUBLIC ${HETPASS_FUZZ_SANITIZERS}
                       PRIVATE -fsanitize=fuzzer-no-link)
target_link_options(hetpass_fuzz_core INTERFACE -fsanitize=address,undefined)
target_link_libraries(hetpass_fuzz_core
  PUBLIC absl::status absl::statusor absl::strings absl::str_format absl::flat_hash_map
         absl::flat_hash_set absl::hash absl::span absl::time
  # LINK_ONLY: ONNX_ML=1 and the ONNX include directories stay on the frontend sources.
  PRIVATE $<LINK_ONLY:onnx> $<LINK_ONLY:onnx_proto> $<LINK_ONLY:protobuf::libprotobuf>)

add_library(hetpass_fuzz_seed STATIC ${HETPASS_FUZZ_SEED_SOURCES})
target_include_directories(hetpass_fuzz_seed
  PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
  PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_compile_options(hetpass_fuzz_seed PRIVATE -O1 -fsanitize=address)
# LINK_ONLY: the core's objects (after these on the link line), not its sanitizer flags.
target_link_libraries(hetpass_fuzz_seed
  PUBLIC absl::status absl::statusor absl::strings absl::str_format absl::flat_hash_map
         absl::flat_hash_set absl::hash absl::span absl::time $<LINK_ONLY:hetpass_fuzz_core>)

enable_testing()
add_subdirectory(test/fuzz)
