# The CPU kernel library behind opaque ops (nn.dense now, nn.conv2d next): oneDNN 2.6.3
# (Debian libdnnl-dev), chosen by measurement among OpenBLAS, BLIS, oneDNN and LIBXSMM on the
# seed MLP (bench/gemm_libs/compare.sh). With weights prepacked once and bias + ReLU fused it
# was the fastest at M = 1, 16 and 64, and it is the only candidate with a production
# convolution. Used by src/compile_engine/dense_kernel.cc.
#
# Debian's oneDNN uses the OpenMP CPU runtime: the kernel calls omp_set_num_threads, so libgomp
# is linked too (link only: no -fopenmp on hetpass's own sources). Its package config also
# finds OpenCL (GPU runtime). Consumers of an installed hetpass get both through
# hetpassConfig.cmake (find_dependency dnnl, OpenMP).
find_package(dnnl REQUIRED CONFIG)
find_package(OpenMP REQUIRED COMPONENTS CXX)
target_link_libraries(hetpass PRIVATE DNNL::dnnl $<LINK_ONLY:OpenMP::OpenMP_CXX>)
