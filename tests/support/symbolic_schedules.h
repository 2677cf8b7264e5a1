// Hand-built schedules for the tests of the symbolic executor (models/schedule/symbolic.h):
// a ring all-reduce whose ops a test may change round by round, a parameter server's round trip,
// and the check that a schedule failed with a message naming given parts.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/schedule/symbolic.h"

namespace gradsync::models::test_symbolic {

inline constexpr int kEb = 4;  // float

// Called after a round's generator produced participant p's ops; may change them.
using Tweak = std::function<void(std::size_t round, int p, std::vector<Op>& ops)>;

inline std::vector<Participant> workers_only(int n) { return std::vector<Participant>(static_cast<std::size_t>(n)); }

// Ring all-reduce of `ring_elements` floats at byte offset 0 of a gradient of
// `gradient_elements` floats (default: the same), N-1 reduce-scatter then N-1 all-gather rounds.
inline Schedule ring(int N, std::uint64_t ring_elements, Tweak tweak = {}, std::uint64_t gradient_elements = ~0ull) {
  Schedule s;
  s.strategy = "ring";
  s.workers = N;
  s.participants = workers_only(N);
  s.gradient_bytes = (gradient_elements == ~0ull ? ring_elements : gradient_elements) * kEb;
  auto mod = [N](int x) { return ((x % N) + N) % N; };
  for (int step = 0; step < N - 1; ++step) {
    const std::size_t r = s.rounds.size();
    s.rounds.push_back(Round{"reduce-scatter", "", [=](int p, std::vector<Op>& out) {
                               out.push_back(Op::send(mod(p + 1), block(0, ring_elements, N, mod(p - step), kEb)));
                               out.push_back(Op::recv_reduce(mod(p - 1), block(0, ring_elements, N, mod(p - step - 1), kEb)));
                               if (tweak) tweak(r, p, out);
                             }});
  }
  for (int step = 0; step < N - 1; ++step) {
    const std::size_t r = s.rounds.size();
    s.rounds.push_back(Round{"all-gather", "", [=](int p, std::vector<Op>& out) {
                               out.push_back(Op::send(mod(p + 1), block(0, ring_elements, N, mod(p + 1 - step), kEb)));
                               out.push_back(Op::recv(mod(p - 1), block(0, ring_elements, N, mod(p - step), kEb)));
                               if (tweak) tweak(r, p, out);
                             }});
  }
  return s;
}

// Parameter server: N workers push their whole gradient to server N (which reduces all
// pushes into one slice in the same round), then the server sends the sum back.
inline Schedule ps_round_trip(int N, std::uint64_t elements) {
  Schedule s;
  s.strategy = "ps";
  s.workers = N;
  s.participants = workers_only(N);
  s.participants.push_back(Participant{Role::server, 0, {}});
  s.gradient_bytes = elements * kEb;
  const Slice all{0, s.gradient_bytes};
  s.rounds.push_back(Round{"push", "", [=](int p, std::vector<Op>& out) {
                             if (p < N) {
                               out.push_back(Op::send(N, all));
                             } else {
                               for (int w = 0; w < N; ++w) out.push_back(Op::recv_reduce(w, all));
                             }
                           }});
  s.rounds.push_back(Round{"pull", "", [=](int p, std::vector<Op>& out) {
                             if (p < N) {
                               out.push_back(Op::recv(N, all));
                             } else {
                               for (int w = 0; w < N; ++w) out.push_back(Op::send(w, all));
                             }
                           }});
  return s;
}

inline void expect_fails_with(const SymbolicResult& r, const std::vector<std::string>& parts) {
  ASSERT_FALSE(r.ok) << "expected a failure";
  for (const auto& part : parts) EXPECT_NE(r.message.find(part), std::string::npos) << "missing \"" << part << "\" in: " << r.message;
}

}  // namespace gradsync::models::test_symbolic
