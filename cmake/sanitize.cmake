# GRADSYNC_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer on every C++ file of
# the project (CUDA device code is not instrumented). Any UBSan finding aborts like an ASan
# one, so a test that triggers it fails. Every executable gets sanitizer_defaults.cpp, which
# carries the run-time defaults (leak checking on, known leaks of OpenMPI's and SimGrid's
# own start-up suppressed), so MPI ranks started by mpirun, inside the testbed's
# namespaces too, behave the same without any environment variable.
option(GRADSYNC_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)

if(GRADSYNC_SANITIZE)
  # -Og -g1: UBSan at -O2 multiplies the compile time by 6 (41 s instead of 7 s for
  # models/topology/topology.cpp); at -Og it costs about what a normal build does, and the line
  # tables still name file and line in every report.
  set(GRADSYNC_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Og -g1)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${GRADSYNC_SANITIZE_FLAGS}>")
  add_link_options(-fsanitize=address,undefined)
endif()

# Called once every target exists (end of the top-level CMakeLists.txt).
function(gradsync_sanitize_executables)
  if(NOT GRADSYNC_SANITIZE)
    return()
  endif()
  gradsync_targets_in(${PROJECT_SOURCE_DIR} targets)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    get_target_property(imported ${t} IMPORTED)
    if(type STREQUAL "EXECUTABLE" AND NOT imported)
      target_sources(${t} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/sanitizer_defaults.cpp)
    endif()
  endforeach()
  message(STATUS "gradsync: AddressSanitizer + UndefinedBehaviorSanitizer on every target")
endfunction()
