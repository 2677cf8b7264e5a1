#include "runtime/mpi_text.h"

namespace gradsync::runtime {

std::vector<std::string> gather_text(const std::string& mine, MPI_Comm comm, int rank, int size) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  std::vector<int> displacements(static_cast<std::size_t>(size), 0);
  int total = 0;
  for (int i = 0; i < size; ++i) {
    displacements[static_cast<std::size_t>(i)] = total;
    total += lengths[static_cast<std::size_t>(i)];
  }
  std::string all(rank == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), displacements.data(), MPI_CHAR, 0, comm);
  std::vector<std::string> out;
  if (rank != 0) return out;
  for (int i = 0; i < size; ++i) {
    out.push_back(all.substr(static_cast<std::size_t>(displacements[static_cast<std::size_t>(i)]),
                             static_cast<std::size_t>(lengths[static_cast<std::size_t>(i)])));
  }
  return out;
}

}  // namespace gradsync::runtime
