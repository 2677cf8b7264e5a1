# Kernel sources of gradsync_runtime (public API: kernels/kernels.h): CPU always, CUDA
# when built with it. kernels_nocuda.cpp provides throwing `_cuda` stubs in builds
# without CUDA and is empty otherwise.
set(GRADSYNC_KERNEL_CPU_SOURCES
  kernels/kernels_cpu.cpp
  kernels/kernels_nocuda.cpp
  kernels/catalogue.cpp
)
set(GRADSYNC_KERNEL_CUDA_SOURCES
  kernels/elementwise.cu
  kernels/onebit.cu
  kernels/slices.cu
  kernels/timed.cu
)
