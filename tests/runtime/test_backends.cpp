// The backend catalogue and the factories the backends register from their own files agree:
// every backend built into this gradsync registered one, nothing registered is missing from the
// catalogue (which the front end's --backend flags and help texts read), and an unknown name
// is refused with the list.
#include <gtest/gtest.h>

#include <algorithm>

#include "models/support/error.h"
#include "runtime/backends/catalogue.h"
#include "runtime/run_backends.h"

using namespace gradsync::runtime;

TEST(Backends, EveryBuiltBackendRegisteredItsFactory) {
  std::vector<std::string> built;
  for (const BackendInfo& b : backend_catalogue()) {
    if (b.built) built.push_back(b.name);
  }
  std::sort(built.begin(), built.end());
  EXPECT_EQ(registered_backends(), built);
  EXPECT_TRUE(std::find(built.begin(), built.end(), "mpi_host") != built.end());
}

TEST(Backends, UnknownNamesAreRefusedWithTheList) {
  try {
    (void)find_backend("ncl");
    FAIL() << "accepted";
  } catch (const gradsync::models::InputError& e) {
    EXPECT_STREQ(e.what(), "--backend ncl: unknown backend (did you mean 'nccl'?); expected mpi_host, mpi_cuda, nccl");
  }
  EXPECT_NE(backends_help().find("mpi_host (host memory over MPI)"), std::string::npos);
}
