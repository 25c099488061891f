# PARALLAX_SANITIZE=address,undefined (any -fsanitize= list; empty: off) instruments every target
# of the build, ours and the tests. The CUDA backend is left out of such a build: nvcc does not
# take -fsanitize, and no CUDA code can run on the machines the sanitizer runs on (no GPU).
# Under ASan GCC's flow analysis raises -Wuninitialized false positives in Boost.Graph and Eigen
# headers, so the sanitizer build keeps the warnings but not -Werror (the normal build, in the
# same CI run, keeps -Werror); it compiles at -O1 -g1 for readable reports and build time.
set(PARALLAX_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address,undefined (empty: none)")
if(PARALLAX_SANITIZE)
  if(PARALLAX_CUDA)
    message(STATUS "PARALLAX_SANITIZE: the CUDA backend is off in a sanitizer build")
    set(PARALLAX_CUDA OFF CACHE BOOL "" FORCE)
  endif()
  set(PARALLAX_WERROR OFF CACHE BOOL "" FORCE)
  add_compile_options(-fsanitize=${PARALLAX_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all -O1 -g1)
  add_link_options(-fsanitize=${PARALLAX_SANITIZE})
endif()
