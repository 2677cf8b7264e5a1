// The symbolic executor: proves that a Schedule computes what it claims, without moving
// any gradient values. It tracks, for every byte of every participant's buffer, WHICH
// workers' contributions that byte holds, HOW MANY TIMES each (a multiset over worker
// ids 0..workers-1) and FROM WHERE (which byte of the contributors' gradients), and checks
// the workers' final buffers against `Schedule::expected`.
//
// State
//   Every participant has a buffer of `schedule.buffer_bytes()` bytes: the gradient
//   [0, gradient_bytes) then scratch [gradient_bytes, buffer_bytes()). Worker w starts
//   holding {w:1} over its whole gradient, each byte its own, and nothing ({}) in scratch;
//   servers start holding nothing anywhere. Where a byte came from is kept as a shift: the
//   byte at x holds the contributors' bytes x + shift; moving a slice to another offset moves
//   the shift with it, and adding contributions from different places marks them mixed. Contents are kept per byte RANGE (intervals split at slice
//   boundaries, equal neighbours merged; distinct multisets are interned), never per byte
//   or per element, so a 1 Mi-element buffer cut into a few slices costs a few intervals.
//
// One round (rounds run in order; a participant's ops within a round are concurrent)
//   1. Every participant's ops are generated (`Round::ops`) and validated: peers in range
//      and not self, slices (and copy/reduce sources) inside the buffer, copy/reduce source
//      and destination of equal size, no two writes of one participant overlapping (see
//      below). A generator that throws is reported with its what().
//   2. All sends of all participants snapshot the current content of their slice into a
//      FIFO channel keyed by the ordered pair (sender, receiver), in op order.
//   3. All local reads (copy / reduce sources) snapshot the state at the start of the round.
//   4. Every recv / recv_reduce pops the oldest message of channel (peer -> me). The
//      message's slice.bytes must equal the receiver's slice.bytes. In a synchronous
//      schedule (`!asynchronous`) the message must have been sent in the same round, and
//      at the end of each round every channel must be empty (a send nobody received in
//      its round is an error). In an asynchronous schedule a message may have been sent in
//      any earlier round or the same one; only at the end must all channels be empty.
//   5. All writes apply: recv overwrites its slice with the message content, recv_reduce
//      adds it, copy overwrites `slice` with the snapshot of `source`, reduce adds that
//      snapshot into `slice`. kernels and compute change no contributions (a kernel updates
//      values in place; its operand slices must lie in the buffer and match its target), nor
//      does an encoded payload (it carries the same contributions).
//   Write overlap: within one round, one participant may not have two writes (recv, copy,
//   recv_reduce, reduce) to overlapping bytes when at least one of them OVERWRITES (recv,
//   copy). Several accumulating writes (recv_reduce, reduce) into the same bytes are
//   allowed: additions commute, so the result is defined (a parameter server reducing N
//   pushes into one slice in one round). Kernels are not counted as writes.
//   Zero-byte slices are legal, never overlap anything, and still count as messages.
//
// Final check (workers only; servers and scratch are not checked)
//   `expected` empty means one region: the whole gradient, all workers. Otherwise the
//   regions (zero-byte ones are ignored) must tile [0, gradient_bytes) exactly. A region's
//   kind: `own_only` (wins over the default `all_workers = true`): exactly {w:1} on worker
//   w; else `all_workers`: every worker id exactly once (a region that also lists
//   contributors is rejected as ambiguous); else exactly each id in `contributors` once
//   (ids in range, no duplicates; an empty list means nothing); each from the same place of
//   the contributors' gradients. An all-to-all's region (`transposed_blocks` = workers):
//   worker r's block s holds exactly {s:1}, from block r of s's gradient.
//
// Result: the first problem found, with round index (0-based, as in `schedule.rounds`),
// phase, participant, peer, slice offsets and bytes, found vs expected. Structural problems
// (participants vs workers, expected regions) are reported before any round runs.
// `messages` counts matched transfers and `bytes_on_wire` sums Op::wire() of every send
// executed; on failure both cover only the rounds run so far.
#pragma once

#include <cstdint>
#include <string>

#include "models/schedule/schedule.h"

namespace gradsync::models {

struct SymbolicResult {
  bool ok = true;
  std::string message;              // on failure: the first problem, precisely
  std::uint64_t messages = 0;       // transfers matched (recv / recv_reduce with their send)
  std::uint64_t bytes_on_wire = 0;  // sum of Op::wire() of all sends
};

SymbolicResult check_schedule(const Schedule& schedule);

}  // namespace gradsync::models
