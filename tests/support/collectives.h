// Hand-built schedules of the collectives other than all-reduce, with the result each worker
// must hold (models/schedule/schedule.h, ExpectedRegion): the ring's reduce-scatter and
// all-gather halves, a broadcast from a root, a reduce to it and an all-to-all. For the tests of the symbolic
// checker and of the runtime's check, reference and executor.
#pragma once

#include <cstdint>
#include <vector>

#include "models/schedule/schedule.h"

namespace gradsync::test_collectives {

inline int mod(int x, int n) { return ((x % n) + n) % n; }

inline models::Schedule workers(const char* name, int n, std::uint64_t elements) {
  models::Schedule s;
  s.strategy = name;
  s.workers = n;
  s.participants = std::vector<models::Participant>(static_cast<std::size_t>(n));
  s.gradient_bytes = elements * 4;
  return s;
}

// Ring reduce-scatter: after N-1 steps worker p holds the sum of block p+1, and only that.
inline models::Schedule reduce_scatter(int n, std::uint64_t elements) {
  models::Schedule s = workers("reduce_scatter", n, elements);
  for (int step = 0; step < n - 1; ++step) {
    s.rounds.push_back(models::Round{"reduce-scatter", "", [=](int p, std::vector<models::Op>& out) {
                                       out.push_back(models::Op::send(mod(p + 1, n), models::block(0, elements, n, mod(p - step, n), 4)));
                                       out.push_back(models::Op::recv_reduce(mod(p - 1, n),
                                                                             models::block(0, elements, n, mod(p - step - 1, n), 4)));
                                     }});
  }
  for (int b = 0; b < n; ++b) {
    models::ExpectedRegion e{models::block(0, elements, n, b, 4), true, false, {}};
    e.holders = {mod(b - 1, n)};
    s.expected.push_back(e);
  }
  return s;
}

// Ring all-gather: worker p's block p+1 goes round; every worker ends with each block as its owner had it.
inline models::Schedule all_gather(int n, std::uint64_t elements) {
  models::Schedule s = workers("all_gather", n, elements);
  for (int step = 0; step < n - 1; ++step) {
    s.rounds.push_back(models::Round{"all-gather", "", [=](int p, std::vector<models::Op>& out) {
                                       out.push_back(models::Op::send(mod(p + 1, n), models::block(0, elements, n, mod(p + 1 - step, n), 4)));
                                       out.push_back(models::Op::recv(mod(p - 1, n), models::block(0, elements, n, mod(p - step, n), 4)));
                                     }});
  }
  for (int b = 0; b < n; ++b) s.expected.push_back(models::ExpectedRegion{models::block(0, elements, n, b, 4), false, false, {mod(b - 1, n)}});
  return s;
}

// Broadcast: the root sends its whole buffer to every other worker.
inline models::Schedule broadcast(int n, std::uint64_t elements, int root) {
  models::Schedule s = workers("broadcast", n, elements);
  const models::Slice all{0, s.gradient_bytes};
  s.rounds.push_back(models::Round{"broadcast", "", [=](int p, std::vector<models::Op>& out) {
                                     if (p == root) {
                                       for (int w = 0; w < n; ++w)
                                         if (w != root) out.push_back(models::Op::send(w, all));
                                     } else {
                                       out.push_back(models::Op::recv(root, all));
                                     }
                                   }});
  s.expected.push_back(models::ExpectedRegion{all, false, false, {root}});
  return s;
}

// Reduce: every other worker sends its buffer to the root, which adds each into its own.
inline models::Schedule reduce(int n, std::uint64_t elements, int root) {
  models::Schedule s = workers("reduce", n, elements);
  const models::Slice all{0, s.gradient_bytes};
  s.rounds.push_back(models::Round{"reduce", "", [=](int p, std::vector<models::Op>& out) {
                                     if (p == root) {
                                       for (int w = 0; w < n; ++w)
                                         if (w != root) out.push_back(models::Op::recv_reduce(w, all));
                                     } else {
                                       out.push_back(models::Op::send(root, all));
                                     }
                                   }});
  models::ExpectedRegion e{all, true, false, {}};
  e.holders = {root};
  s.expected.push_back(e);
  return s;
}

// All-to-all of N blocks of `per` elements: each worker sends its block q to worker q and gets
// worker q's block p into scratch (its own block copied there), then takes the scratch back.
inline models::Schedule alltoall(int n, std::uint64_t per) {
  models::Schedule s = workers("alltoall", n, per * static_cast<std::uint64_t>(n));
  s.scratch_bytes = s.gradient_bytes;
  const std::uint64_t bytes = per * 4, scratch = s.gradient_bytes;
  s.rounds.push_back(models::Round{"alltoall", "", [=](int p, std::vector<models::Op>& out) {
                                     for (int q = 0; q < n; ++q) {
                                       const models::Slice mine{static_cast<std::uint64_t>(q) * bytes, bytes};
                                       const models::Slice theirs{scratch + static_cast<std::uint64_t>(q) * bytes, bytes};
                                       if (q == p) {
                                         out.push_back(models::Op::copy(mine, theirs));
                                       } else {
                                         out.push_back(models::Op::send(q, mine));
                                         out.push_back(models::Op::recv(q, theirs));
                                       }
                                     }
                                   }});
  s.rounds.push_back(models::Round{"unpack", "", [=](int, std::vector<models::Op>& out) {
                                     out.push_back(models::Op::copy(models::Slice{scratch, scratch}, models::Slice{0, scratch}));
                                   }});
  models::ExpectedRegion e{models::Slice{0, s.gradient_bytes}, false, false, {}};
  e.transposed_blocks = n;
  s.expected.push_back(e);
  return s;
}

}  // namespace gradsync::test_collectives
