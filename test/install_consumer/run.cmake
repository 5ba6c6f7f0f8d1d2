# Installs the build tree into a scratch prefix, then configures, builds and runs a tiny
# project that uses find_package(hetpass). Fails loudly at the first step that breaks.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
run_step(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix)
run_step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/install_consumer -B ${WORK_DIR}/build -G Ninja
         -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run_step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_step(${WORK_DIR}/build/consumer)
# The consumer asked for LLVM's static components (HETPASS_LLVM_STATIC in its CMakeLists): it
# must not load libLLVM (the test would otherwise pass with the property ignored).
execute_process(COMMAND ldd ${WORK_DIR}/build/consumer OUTPUT_VARIABLE deps RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR deps MATCHES "libLLVM")
  message(FATAL_ERROR "ldd failed, or the consumer set HETPASS_LLVM_STATIC and loads libLLVM anyway:\n${deps}")
endif()
message(STATUS "find_package(hetpass) consumer built and ran")
