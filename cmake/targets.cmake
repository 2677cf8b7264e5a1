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
