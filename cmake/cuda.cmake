# The CUDA runtime part (src/runtime/cuda), HETPASS_CUDA=AUTO|ON|OFF (docs/cuda.md).
#   AUTO  built when the CUDA toolkit is found (it is on every machine of this project's kind, so
#         CI builds it); OFF: never; ON: required.
# It links only the static CUDA runtime (CUDA::cudart_static): the binaries record no NEEDED
# entry for libcuda, cuBLASLt or cuDNN, start on machines without a driver, and find the driver
# through cudart at run time (linking CUDA::cuda_driver would make them fail to start there:
# shared/DEPENDENCIES.md section 8). The libraries that are large or slow to load (cuBLASLt,
# cuDNN, nvJitLink) will be opened on first use.
set(HETPASS_CUDA "AUTO" CACHE STRING "Build the CUDA device: AUTO, ON or OFF")
set_property(CACHE HETPASS_CUDA PROPERTY STRINGS AUTO ON OFF)
set(HETPASS_CUDA_ENABLED OFF)
if(NOT HETPASS_CUDA STREQUAL "OFF")
  if(HETPASS_CUDA STREQUAL "ON")
    find_package(CUDAToolkit REQUIRED)
  else()
    find_package(CUDAToolkit QUIET)
  endif()
  if(CUDAToolkit_FOUND)
    set(HETPASS_CUDA_ENABLED ON)
  endif()
endif()
if(HETPASS_CUDA_ENABLED)
  message(STATUS "hetpass: CUDA device built (HETPASS_CUDA=${HETPASS_CUDA}, toolkit ${CUDAToolkit_VERSION})")
else()
  message(STATUS "hetpass: CUDA device not built (HETPASS_CUDA=${HETPASS_CUDA})")
endif()
