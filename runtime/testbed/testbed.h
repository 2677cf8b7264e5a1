// The emulated cluster: a topology's tree of switches built out of Linux network
// namespaces, bridges and veth pairs shaped with tc, so that real MPI processes see
// real, shaped, contended links. One namespace per endpoint (GPU or host memory), one
// bridge per switch, one veth pair per link, its two ends shaped (token bucket) to the
// link's bandwidth x scale in each direction; plus an unshaped management network for
// MPI's control traffic. mpirun reaches the namespaces through an rsh agent that enters
// them. Everything made is recorded in a state file; `down` removes exactly that, and
// anything left with the testbed's prefix (safe after a crash). Needs root. Every command
// (ip, tc, mpirun) runs from an argument vector, never through a shell.
//
// Its own library (gradsync_testbed): it needs no MPI, and the front end links it alone.
//
// This kernel has no netem: latency is not emulated (the measured latency is the
// veth + TCP + MPI one), and half-duplex links are shaped per direction like full-duplex ones.
#pragma once

#include <string>
#include <vector>

#include "models/support/json_input.h"
#include "models/topology/topology.h"

namespace gradsync::testbed {

struct TestbedEndpoint {
  std::string node;  // topology node id
  std::string netns;  // namespace name
  std::string data_ip;  // on the shaped network
  std::string mgmt_ip;  // on the management network (the mpirun "host" name)
};

struct TestbedPlan {
  std::string name;
  double scale = 1;
  std::vector<TestbedEndpoint> endpoints;
  std::vector<std::vector<std::string>> up;  // commands (argument vectors), in order
  std::vector<std::string> notes;  // what was approximated
  models::ordered_json state() const;  // what `down` needs
};

inline constexpr const char* kTestbedPrefix = "gst";
inline constexpr const char* kTestbedStateDir = "/run/gradsync-testbed";

// Throws InputError for topologies the testbed cannot build (cycles, endpoints with
// several links, too many endpoints) or a bad scale.
TestbedPlan plan_testbed(const models::Topology& topology, double scale);

// Runs the plan; on a failure removes what it made and throws. Writes the state file,
// the mpirun hostfile and host -> namespace table, and the rsh agent.
void testbed_up(const TestbedPlan& plan);
// Removes what the state file lists and anything else with the prefix. Returns what it removed.
std::vector<std::string> testbed_down();

// To take the testbed down when its owner ends however it ends (normal exit, an exception,
// SIGINT, SIGTERM, even SIGKILL), the owner keeps a models::Guardian running
// `gradsync testbed down` (which also ends what still runs in the namespaces).
// The current state (empty object when no testbed is up).
models::json testbed_state();
bool running_as_root();

// Endpoints of the running testbed, in topology order.
std::vector<TestbedEndpoint> testbed_endpoints();
// The mpirun command (an argument vector to which the program and its arguments are
// appended) that runs `np` processes on the first `np` endpoints (or on the named nodes),
// one per namespace.
std::vector<std::string> testbed_mpirun(int np, const std::vector<std::string>& nodes = {});

// Open MPI options every mpirun that gradsync starts carries (the testbed's, a local one, the
// run executor's default):
//  - mpi_yield_when_idle: many ranks on few cores; waiting ranks must yield, or they starve
//    the ones that work.
//  - orte_allowed_exit_without_sync: a rank that called MPI_Finalize and exited 0 is a normal
//    end even when its node's daemon reaps it before it has handled the finalize message.
//    Open MPI 4.x races there on a busy machine (open-mpi/ompi#7833, not fixed in 4.x) and
//    otherwise fails the whole job, after the work and its output are complete, as "exiting
//    improperly". A rank that dies of a signal or exits non-zero still ends the job.
std::vector<std::string> mpirun_job_options();

}  // namespace gradsync::testbed
