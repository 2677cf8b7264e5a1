#include "models/workload/step.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>

namespace gradsync::models {

std::vector<Bucket> buckets_of(const Workload& w, const OverlapSettings& settings) {
  std::vector<Bucket> out;
  double bytes = 0;
  int dtype = 0;
  bool open = false;
  auto close = [&] {
    Bucket& b = out.back();
    Workload& g = b.gradient;
    g = w;
    g.layers.clear();
    g.dtype_bytes = dtype;
    for (auto it = b.layers.rbegin(); it != b.layers.rend(); ++it) {
      Layer l = w.layers[*it];
      l.dtype_bytes = 0;  // the bucket's
      g.layers.push_back(l);
    }
    g.name = w.name + " bucket " + std::to_string(out.size());
    open = false;
  };
  for (std::size_t i = w.layers.size(); i-- > 0;) {
    const Layer& l = w.layers[i];
    const int layer_dtype = w.layer_dtype_bytes(l);
    if (open && layer_dtype != dtype) close();
    if (!open) {
      out.push_back({});
      bytes = 0;
      dtype = layer_dtype;
      open = true;
    }
    out.back().layers.push_back(i);
    bytes += w.layer_gradient_bytes(l);
    const double cap = out.size() == 1 ? settings.first_bucket_bytes : settings.bucket_cap_bytes;
    if (bytes >= cap) close();
  }
  if (open) close();
  return out;
}

StepTime overlapped_step(const Workload& w, const std::vector<Bucket>& buckets, const std::vector<double>& sync_s,
                         const OverlapSettings& settings) {
  if (sync_s.size() != buckets.size()) throw std::logic_error("overlapped_step: a synchronisation time per bucket");
  const std::vector<LayerTimes> times = w.layer_times();
  StepTime st;
  for (const LayerTimes& t : times) st.forward_s += t.forward_s;
  st.buckets.resize(buckets.size());
  // Which bucket each layer's gradient completes (its last layer in backward order).
  std::vector<int> completes(w.layers.size(), -1);
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    if (buckets[k].layers.empty()) throw std::logic_error("overlapped_step: an empty bucket");
    completes[buckets[k].layers.back()] = static_cast<int>(k);
  }
  // Events in time: a layer's backward finishing (at the rate compute runs) or the bucket on the
  // communication stream finishing.
  const double slowed_rate = 1.0 / (1.0 + settings.slowdown);
  const double none = std::numeric_limits<double>::infinity();
  double t = 0;
  std::deque<std::size_t> ready;
  int running = -1;
  double running_end = none;
  auto start_next = [&](double now) {
    if (running >= 0 || ready.empty()) return;
    running = static_cast<int>(ready.front());
    ready.pop_front();
    st.buckets[static_cast<std::size_t>(running)].start_s = now;
    running_end = now + sync_s[static_cast<std::size_t>(running)];
    st.buckets[static_cast<std::size_t>(running)].end_s = running_end;
  };
  auto finish_running = [&] {
    t = running_end;
    running = -1;
    running_end = none;
    start_next(t);
  };
  for (std::size_t i = w.layers.size(); i-- > 0;) {
    double work = times[i].backward_s;  // compute-seconds left in this layer
    while (true) {
      const double rate = running >= 0 ? slowed_rate : 1.0;
      const double done_at = t + work / rate;
      if (done_at <= running_end) {
        t = done_at;
        break;
      }
      work -= (running_end - t) * rate;
      finish_running();
    }
    if (completes[i] >= 0) {
      st.buckets[static_cast<std::size_t>(completes[i])].ready_s = t;
      ready.push_back(static_cast<std::size_t>(completes[i]));
      start_next(t);
    }
  }
  st.backward_s = t;
  double end = t;
  while (running >= 0) {
    finish_running();
    end = std::max(end, t);
  }
  for (double s : sync_s) st.sync_s += s;
  st.iteration_s = st.forward_s + std::max(st.backward_s, end);
  st.exposed_s = std::max(0.0, st.iteration_s - w.compute_s());
  return st;
}

}  // namespace gradsync::models
