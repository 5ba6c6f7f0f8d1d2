# HETPASS_TSAN: a ThreadSanitizer build of the runtime, the VM and the compile engine's threads,
# lean like the fuzz build (docs/runtime.md, "Threading"). Needs clang (Debian clang-16 +
# libclang-rt-16-dev), in a build directory of its own:
#   CC=clang-16 CXX=clang++-16 cmake -S . -B build-tsan -G Ninja -DHETPASS_TSAN=ON
#   cmake --build build-tsan && (cd build-tsan && ctest --output-on-failure)
#
# What is built (CMakeLists.txt includes this file and stops), all with -fsanitize=thread -O1:
#   hetpass_tsan_core   every part of src/ but the compile engine's native providers: oneDNN,
#                       the LLVM JIT and CUDA would put ~15 min of one core's compiling (LLVM
#                       headers: ~17 s per source) and uninstrumented libraries with their own
#                       thread pools (oneDNN's OpenMP) into a pass that is about our threads. Of
#                       the engine: the engine itself (cache, provider chain, reference
#                       kernel, shape functions), the on-disk kernel cache and the tiered
#                       kernels' background compiler; the provider lists are
#                       test/fuzz/no_kernel_providers.cc's (view copy and reference only).
#   hetpass_tsan_tests  the tests of those threads: the devices' and pools' (src/runtime), the
#                       VM's (src/vm), the tiered compiler's (src/compile_engine), and
#                       test/unit's concurrent inference (8 threads sharing Programs through
#                       VmPools) and fault injection. Tests that name a native provider are
#                       filtered out (HETPASS_TSAN_SKIP below, each with its reason).
# A data race, lock-order inversion or thread leak fails the test (halt_on_error, exitcode).
# The main build's ctest runs the same concurrency test on the native kernels (oneDNN, JIT).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "HETPASS_TSAN=ON needs clang (clang-16's TSan runtime), not "
                      "${CMAKE_CXX_COMPILER_ID}: configure a separate build directory with "
                      "CC=clang-16 CXX=clang++-16")
endif()
if(HETPASS_SANITIZE OR HETPASS_FUZZ)
  message(FATAL_ERROR "HETPASS_TSAN=ON cannot be combined with HETPASS_SANITIZE or HETPASS_FUZZ")
endif()

add_compile_options(-fsanitize=thread -O1 -g -fno-omit-frame-pointer)
add_link_options(-fsanitize=thread)

set(HETPASS_TSAN_SOURCES)
foreach(part ir shape_funcs pass transforms analysis device_planner manifest_alloc memory_planner
        runtime vm frontend)
  file(GLOB part_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/${part}/*.cc)
  list(FILTER part_sources EXCLUDE REGEX "_test\\.cc$")
  list(APPEND HETPASS_TSAN_SOURCES ${part_sources})
endforeach()
list(APPEND HETPASS_TSAN_SOURCES
     ${CMAKE_CURRENT_SOURCE_DIR}/src/compile_engine/compile_engine.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/compile_engine/kernel_cache.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/src/compile_engine/tiered_kernel.cc
     ${CMAKE_CURRENT_SOURCE_DIR}/test/fuzz/no_kernel_providers.cc)
include(cmake/onnx_frontend.cmake)

add_library(hetpass_tsan_core STATIC ${HETPASS_TSAN_SOURCES})
target_include_directories(hetpass_tsan_core
  PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
  PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(hetpass_tsan_core
  PUBLIC absl::status absl::statusor absl::strings absl::str_format absl::flat_hash_map
         absl::flat_hash_set absl::hash absl::span absl::time absl::synchronization
  PRIVATE $<LINK_ONLY:onnx> $<LINK_ONLY:onnx_proto> $<LINK_ONLY:protobuf::libprotobuf>)

find_package(GTest REQUIRED CONFIG)
include(GoogleTest)
add_executable(hetpass_tsan_tests
  src/runtime/device_test.cc
  src/vm/vm_test.cc
  src/vm/vm_builtins_test.cc
  src/vm/memory_trace_test.cc
  src/compile_engine/tiered_kernel_test.cc
  test/unit/concurrent_inference_test.cc
  test/unit/fault_injection_test.cc)
target_include_directories(hetpass_tsan_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR}/test)
target_compile_definitions(hetpass_tsan_tests PRIVATE
  HETPASS_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared"
  HETPASS_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/test"
  HETPASS_TSAN_BUILD=1)
target_link_libraries(hetpass_tsan_tests PRIVATE hetpass_tsan_core GTest::gtest GTest::gmock
                      GTest::gtest_main)
# Tests left out here, with why (gtest filter syntax):
#   Vm.PrepackedWeightsAreReleasedWhenTheVmIsTheirOnlyHolder: this build has no oneDNN, so no
#     instance prepacks (absorbs) a weight and nothing is released; the main and ASan builds
#     run it.
set(HETPASS_TSAN_SKIP "Vm.PrepackedWeightsAreReleasedWhenTheVmIsTheirOnlyHolder")
enable_testing()
gtest_discover_tests(hetpass_tsan_tests DISCOVERY_TIMEOUT 120 TEST_FILTER "-${HETPASS_TSAN_SKIP}"
  PROPERTIES TIMEOUT 900 LABELS tsan ENVIRONMENT
  "TSAN_OPTIONS=halt_on_error=1 second_deadlock_stack=1 exitcode=66;HETPASS_KERNEL_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/kernel_cache")
