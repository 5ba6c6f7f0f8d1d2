# ONNX (protobuf classes only) is a private detail of the ONNX frontend: only src/frontend sees
# its headers and ONNX_ML=1 (see DEPENDENCIES.md section 6). Included by the main build and by
# the lean fuzz and TSan builds; sets HETPASS_ONNX_INCLUDES (also for fuzz's onnx_seed_slim).
# Link with $<LINK_ONLY:onnx> $<LINK_ONLY:onnx_proto> $<LINK_ONLY:protobuf::libprotobuf>:
# LINK_ONLY keeps the targets' usage requirements (their compile definitions) away from the rest
# of the library.
find_package(Protobuf REQUIRED)          # FIRST: the ONNX targets reference protobuf::libprotobuf
find_package(ONNX REQUIRED CONFIG)       # targets are not namespaced: onnx, onnx_proto
file(GLOB HETPASS_FRONTEND_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/frontend/*.cc)
get_target_property(HETPASS_ONNX_INCLUDES onnx_proto INTERFACE_INCLUDE_DIRECTORIES)
list(APPEND HETPASS_ONNX_INCLUDES ${Protobuf_INCLUDE_DIRS})
# /usr/include as an explicit -I would break libstdc++'s #include_next <stdlib.h>.
list(FILTER HETPASS_ONNX_INCLUDES EXCLUDE REGEX "^/usr/include/?$")
list(REMOVE_DUPLICATES HETPASS_ONNX_INCLUDES)
set_source_files_properties(${HETPASS_FRONTEND_SOURCES} PROPERTIES
  COMPILE_DEFINITIONS "ONNX_ML=1;ONNX_NAMESPACE=onnx"
  INCLUDE_DIRECTORIES "${HETPASS_ONNX_INCLUDES}")
