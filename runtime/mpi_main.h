// What every program that runs under mpirun (gradsync-run, gradsync-train) does first: join MPI
// with threads allowed (a watchdog's thread may call MPI_Abort while the main thread is inside
// MPI), and parse its flags on every rank, rank 0 alone printing the help or the error.
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "runtime/cli_flags.h"

namespace gradsync::runtime {

struct MpiWorld {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  int size = 1;
};

inline MpiWorld join_mpi(int& argc, char**& argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MpiWorld w;
  MPI_Comm_rank(w.comm, &w.rank);
  MPI_Comm_size(w.comm, &w.size);
  return w;
}

// Parses the flags; on --help or an error, finalizes MPI and returns the exit status (0 after
// help, 2 after an error, which rank 0 prints as "PROGRAM: error: ..."); nothing when parsed.
inline std::optional<int> parse_flags_or_exit(CLI::App& app, int argc, char** argv, int rank, const std::string& program) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    int status = 0;
    const std::string unknown = dynamic_cast<const CLI::ExtrasError*>(&e) ? cli::unknown_flag_message(app) : std::string();
    if (rank == 0 && !unknown.empty()) {
      std::cerr << program << ": error: " << unknown << "\n";
      status = 2;
    } else if (rank == 0) {
      status = app.exit(e);
    } else {
      status = e.get_exit_code();
    }
    MPI_Finalize();
    return status != 0 ? 2 : 0;
  }
}

}  // namespace gradsync::runtime
