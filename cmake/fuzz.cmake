# HETPASS_FUZZ: libFuzzer targets for the ONNX importer (test/fuzz, docs/onnx.md "Fuzzing").
#
# Needs clang (libFuzzer is clang's; Debian clang-16 + libclang-rt-16-dev), in a build directory
# of its own:
#   CC=clang-16 CXX=clang++-16 cmake -S . -B build-fuzz -G Ninja -DHETPASS_FUZZ=ON
#   cmake --build build-fuzz && (cd build-fuzz && ctest --output-on-failure)
#
# Such a build directory holds only these targets (CMakeLists.txt includes this file and stops):
# the fuzzers do not link `hetpass` (LLVM JIT, oneDNN, VM, runtime) but `hetpass_fuzz_core`, a
# static library of only the parts the importer reaches (ir, shape_funcs, transforms,
# frontend), instrumented for coverage (-fsanitize=fuzzer-no-link) and checked by ASan + UBSan.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "HETPASS_FUZZ=ON needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                      "configure a separate build directory with CC=clang-16 CXX=clang++-16")
endif()
if(HETPASS_SANITIZE)
  message(FATAL_ERROR "HETPASS_FUZZ=ON brings its own sanitizers: leave HETPASS_SANITIZE off")
endif()

set(HETPASS_FUZZ_PARTS ir shape_funcs transforms frontend)
set(HETPASS_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                            -fno-omit-frame-pointer -g)
set(HETPASS_FUZZ_CORE_SOURCES)
foreach(part IN LISTS HETPASS_FUZZ_PARTS)
  file(GLOB part_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/${part}/*.cc)
  list(FILTER part_sources EXCLUDE REGEX "_test\\.cc$")
  list(APPEND HETPASS_FUZZ_CORE_SOURCES ${part_sources})
endforeach()

# ONNX (protobuf classes, and the schemas for pre-11 op versions) only for src/frontend, as in
# the main build (DEPENDENCIES.md section 6).
find_package(Protobuf REQUIRED)          # FIRST: the ONNX targets reference protobuf::libprotobuf
find_package(ONNX REQUIRED CONFIG)
get_target_property(HETPASS_ONNX_INCLUDES onnx_proto INTERFACE_INCLUDE_DIRECTORIES)
list(APPEND HETPASS_ONNX_INCLUDES ${Protobuf_INCLUDE_DIRS})
list(FILTER HETPASS_ONNX_INCLUDES EXCLUDE REGEX "^/usr/include/?$")  # breaks #include_next
list(REMOVE_DUPLICATES HETPASS_ONNX_INCLUDES)
file(GLOB frontend_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/frontend/*.cc)
set_source_files_properties(${frontend_sources} PROPERTIES
  COMPILE_DEFINITIONS "ONNX_ML=1;ONNX_NAMESPACE=onnx"
  INCLUDE_DIRECTORIES "${HETPASS_ONNX_INCLUDES}")

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

enable_testing()
add_subdirectory(test/fuzz)
