// Timelines in Chrome's trace-event JSON (opens in Perfetto / chrome://tracing). The
// simulator and the real runtime write the same format, so predicted and measured
// timelines can be compared side by side: one process per participant ("rank 0 (gpu0)"),
// with a track for local work (compute, reduce, quantise), one for sends, one for receives.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/support/json_input.h"

namespace gradsync::models {

enum class TraceTrack : int { local = 0, send = 1, recv = 2 };

struct TraceEvent {
  int participant = 0;
  TraceTrack track = TraceTrack::local;
  std::string name;  // "reduce-scatter: send 2 x 1.0 MB"
  std::string category;  // compute | reduce | send | recv
  double start_s = 0;
  double end_s = 0;
  std::map<std::string, std::string> args;
};

class Trace {
 public:
  void name_participant(int participant, const std::string& name);
  void add(TraceEvent e) { events_.push_back(std::move(e)); }
  const std::vector<TraceEvent>& events() const { return events_; }
  ordered_json to_json() const;
  static Trace from_json(const json& doc);  // for the simulator's child process hand-over

 private:
  std::map<int, std::string> names_;
  std::vector<TraceEvent> events_;
};

}  // namespace gradsync::models
