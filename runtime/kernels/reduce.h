// Superseded by kernels.h (all runtime kernels, CPU and CUDA); kept so older includes
// keep compiling.
#pragma once

#include "runtime/kernels/kernels.h"
