#include "models/executors/trace.h"

namespace gradsync::models {

void Trace::name_participant(int participant, const std::string& name) { names_[participant] = name; }

ordered_json Trace::to_json() const {
  ordered_json events = ordered_json::array();
  static const char* track_names[] = {"compute / reduce", "send", "recv"};
  for (const auto& [p, name] : names_) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", p}, {"args", {{"name", name}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", p}, {"args", {{"sort_index", p}}}});
    for (int t = 0; t < 3; ++t) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", p}, {"tid", t}, {"args", {{"name", track_names[t]}}}});
    }
  }
  for (const auto& e : events_) {
    ordered_json args = ordered_json::object();
    for (const auto& [k, v] : e.args) args[k] = v;
    events.push_back({{"name", e.name},
                      {"cat", e.category},
                      {"ph", "X"},
                      {"ts", e.start_s * 1e6},
                      {"dur", (e.end_s - e.start_s) * 1e6},
                      {"pid", e.participant},
                      {"tid", static_cast<int>(e.track)},
                      {"args", args}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

Trace Trace::from_json(const json& doc) {
  Trace t;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M") {
      if (e.at("name") == "process_name") t.name_participant(e.at("pid").get<int>(), e.at("args").at("name").get<std::string>());
      continue;
    }
    TraceEvent ev;
    ev.participant = e.at("pid").get<int>();
    ev.track = static_cast<TraceTrack>(e.at("tid").get<int>());
    ev.name = e.at("name").get<std::string>();
    ev.category = e.at("cat").get<std::string>();
    ev.start_s = e.at("ts").get<double>() / 1e6;
    ev.end_s = ev.start_s + e.at("dur").get<double>() / 1e6;
    for (const auto& [k, v] : e.at("args").items()) ev.args[k] = v.get<std::string>();
    t.add(std::move(ev));
  }
  return t;
}

}  // namespace gradsync::models
