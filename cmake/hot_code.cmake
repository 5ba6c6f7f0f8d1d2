# The tools' link: executed code together, relative relocations packed.
#
# A process's resident memory counts every page of its executable it touches, and the kernel maps
# 64 KiB around each fault in a file mapping. The tools link LLVM statically (see
# HETPASS_LLVM_STATIC); the ~8 MB of functions one run executes (mostly LLVM's code generator)
# were scattered over 32 MB of .text, so a one-Relu `hetpass run` had 28 MB of hetpass's code
# resident. Linked with lld in a profiled order (tools/link/profile_hot_code.py writes the list;
# tools/link/hot_functions.tar.xz holds it), those functions sit together at the start of .text.
# `-z pack-relative-relocs` (DT_RELR, glibc >= 2.36; the tools already need 2.36) shrinks the
# 3 MB of RELA entries the loader reads at every start to ~40 KB. Figures: docs/runtime.md,
# "Resident memory of the tools".
#
# lld-16 is Debian's, the same LLVM release the compile engine uses. Without it, or in sanitizer,
# TSan and fuzz builds (instrumented code is another program), the tools link as before.
option(HETPASS_HOT_CODE_LINK
  "Link the tools with lld-16 in the profiled hot-code order, relative relocations packed" ON)
set(HETPASS_HOT_CODE_LINK_HERE OFF)
set(HETPASS_HOT_CODE_ORDER_ARCHIVE ${PROJECT_SOURCE_DIR}/tools/link/hot_functions.tar.xz)
set(HETPASS_HOT_CODE_ORDER ${PROJECT_BINARY_DIR}/hot_code/hot_functions.txt)
if(HETPASS_HOT_CODE_LINK AND NOT HETPASS_SANITIZE AND NOT HETPASS_TSAN AND NOT HETPASS_FUZZ)
  find_program(HETPASS_LLD ld.lld PATHS ${LLVM_TOOLS_BINARY_DIR} NO_DEFAULT_PATH)
  if(NOT HETPASS_LLD)
    message(STATUS "hetpass: lld-16 not found in ${LLVM_TOOLS_BINARY_DIR} (Debian package lld-16): "
                   "the tools link with the default linker, in no particular order")
  elseif(NOT EXISTS ${HETPASS_HOT_CODE_ORDER_ARCHIVE})
    message(FATAL_ERROR "hetpass: ${HETPASS_HOT_CODE_ORDER_ARCHIVE} is missing "
                        "(tools/link/profile_hot_code.py writes it)")
  else()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${HETPASS_HOT_CODE_ORDER_ARCHIVE})
    # Extracted beside, then copied only when it differs: the archive's member is dated 1970 (a
    # reproducible archive), and the tools relink when the copy is newer (LINK_DEPENDS below).
    file(ARCHIVE_EXTRACT INPUT ${HETPASS_HOT_CODE_ORDER_ARCHIVE}
         DESTINATION ${PROJECT_BINARY_DIR}/hot_code/extracted)
    if(NOT EXISTS ${PROJECT_BINARY_DIR}/hot_code/extracted/hot_functions.txt)
      message(FATAL_ERROR "hetpass: ${HETPASS_HOT_CODE_ORDER_ARCHIVE} has no hot_functions.txt")
    endif()
    configure_file(${PROJECT_BINARY_DIR}/hot_code/extracted/hot_functions.txt
                   ${HETPASS_HOT_CODE_ORDER} COPYONLY)
    set(HETPASS_HOT_CODE_LINK_HERE ON)
  endif()
endif()

# hetpass_link_hot_code(targets...): the tools' link (above); nothing where it is off.
function(hetpass_link_hot_code)
  if(NOT HETPASS_HOT_CODE_LINK_HERE)
    return()
  endif()
  get_filename_component(lld_dir ${HETPASS_LLD} DIRECTORY)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC finds `ld.lld` through -B (its --ld-path is newer than Debian's GCC 12).
    set(use_lld -fuse-ld=lld -B${lld_dir}/)
  else()
    set(use_lld --ld-path=${HETPASS_LLD})
  endif()
  foreach(t ${ARGN})
    # Names the order lists that a binary lacks are normal (each tool has only part of the
    # library, and a list outlives renames): no warning per name.
    target_link_options(${t} PRIVATE ${use_lld} LINKER:-z,pack-relative-relocs
                        LINKER:--symbol-ordering-file=${HETPASS_HOT_CODE_ORDER}
                        LINKER:--no-warn-symbol-ordering)
    set_property(TARGET ${t} APPEND PROPERTY LINK_DEPENDS ${HETPASS_HOT_CODE_ORDER})
  endforeach()
endfunction()

if(HETPASS_HOT_CODE_LINK_HERE)
  # One section per function in the library, so that the order moves the executed functions
  # alone: with one .text per object file, listing a function moved its whole file (the listed
  # code spanned 11.7 MiB for 9.4 MiB of functions). The tests link the same objects; the flag
  # changes nothing else.
  target_compile_options(hetpass PRIVATE -ffunction-sections)
endif()
