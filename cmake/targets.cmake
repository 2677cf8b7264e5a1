# gradsync_targets_in(DIR OUT): every build-system target defined in DIR and its
# subdirectories (for options that must reach every target: sanitizers, fuzzing).
function(gradsync_targets_in dir out)
  get_property(found DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    gradsync_targets_in(${d} below)
    list(APPEND found ${below})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# gradsync_library(NAME SOURCES...): a static library NAME_objects whose every object file
# is linked into whatever links NAME. Strategies and executors register themselves from
# static objects in their own files, which nothing else references: a plain static library
# would leave those files out of the link, and with them the registrations.
function(gradsync_library name)
  add_library(${name}_objects STATIC ${ARGN})
  target_include_directories(${name}_objects PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)
  add_library(${name} INTERFACE)
  target_link_libraries(${name} INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${name}_objects>")
endfunction()

# gradsync_front_end(TARGET): TARGET's own code parses flags, prints help and sets up the work
# (CLI11, main), running once per process while the models, executors and transports it calls do
# the work. In optimised builds it is compiled at -Og: a third less compile time than -O2 (the
# command files 24 s instead of 33 s, gradsync-run's main 22 s instead of 31 s) and no run time
# worth having to lose.
function(gradsync_front_end target)
  target_compile_options(${target} PRIVATE "$<$<AND:$<CONFIG:RelWithDebInfo,Release>,$<COMPILE_LANGUAGE:CXX>>:-Og>")
endfunction()
