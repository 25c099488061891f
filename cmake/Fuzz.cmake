# PARALLAX_FUZZ=ON builds the libFuzzer targets of fuzz/ (one per parser): every target of the
# build compiled with -fsanitize=fuzzer-no-link,address,undefined (coverage for the fuzzer, ASan
# and UBSan for the findings), the fuzz executables linked with -fsanitize=fuzzer. Needs clang
# (Debian clang-14 with libclang-rt-14-dev); configure a separate build directory with
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DPARALLAX_FUZZ=ON
# (scripts/fuzz does). GUI, CUDA and the test suite are off in such a build; warnings stay on
# but are not errors (clang warns where the gcc-checked code base is clean).
option(PARALLAX_FUZZ "Build the libFuzzer targets (clang only)" OFF)
if(PARALLAX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "PARALLAX_FUZZ needs clang (CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  set(PARALLAX_CUDA OFF CACHE BOOL "" FORCE)
  set(PARALLAX_GUI OFF CACHE BOOL "" FORCE)
  set(PARALLAX_TESTS OFF CACHE BOOL "" FORCE)
  set(PARALLAX_WERROR OFF CACHE BOOL "" FORCE)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -O1 -g)
  add_link_options(-fsanitize=address,undefined)
endif()
