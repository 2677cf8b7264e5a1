#include "models/workload/step.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace gradsync::models {

namespace {

// Consecutive layers (from the last when `backward`) into groups of at least their cap, a new
// one at each change of dtype; each group's workload holds its layers in forward order.
std::vector<Bucket> group_layers(const Workload& w, double first_cap, double cap, bool backward, const std::string& called) {
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
    std::vector<std::size_t> forward = b.layers;
    std::sort(forward.begin(), forward.end());
    for (std::size_t i : forward) {
      Layer l = w.layers[i];
      l.dtype_bytes = 0;  // the group's
      g.layers.push_back(l);
    }
    g.name = w.name + " " + called + " " + std::to_string(out.size());
    open = false;
  };
  const std::size_t n = w.layers.size();
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t i = backward ? n - 1 - j : j;
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
    if (bytes >= (out.size() == 1 ? first_cap : cap)) close();
  }
  if (open) close();
  return out;
}

}  // namespace

std::vector<Bucket> buckets_of(const Workload& w, const OverlapSettings& settings) {
  return group_layers(w, settings.first_bucket_bytes, settings.bucket_cap_bytes, true, "bucket");
}

std::vector<Bucket> units_of(const Workload& w, double cap_bytes) { return group_layers(w, cap_bytes, cap_bytes, false, "unit"); }

LayerTasks add_layer_tasks(StepPlan& plan, const Workload& w) {
  const std::vector<LayerTimes> times = w.layer_times();
  LayerTasks out;
  out.forward.resize(times.size());
  out.backward.resize(times.size());
  for (std::size_t i = 0; i < times.size(); ++i) {
    out.forward[i] = static_cast<int>(plan.tasks.size());
    plan.tasks.push_back({StepTask::Kind::forward, times[i].forward_s, -1, {}});
  }
  for (std::size_t i = times.size(); i-- > 0;) {
    out.backward[i] = static_cast<int>(plan.tasks.size());
    plan.tasks.push_back({StepTask::Kind::backward, times[i].backward_s, -1, {}});
  }
  return out;
}

int add_sync(StepPlan& plan, Workload moved, std::string collective, std::string what, std::vector<int> after) {
  plan.tasks.push_back({StepTask::Kind::sync, 0, static_cast<int>(plan.syncs.size()), std::move(after)});
  plan.syncs.push_back({std::move(moved), std::move(collective), std::move(what)});
  return static_cast<int>(plan.tasks.size()) - 1;
}

StepPlan ddp_plan(const Workload& w, const std::vector<Bucket>& buckets) {
  StepPlan plan;
  const LayerTasks layers = add_layer_tasks(plan, w);
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    if (buckets[k].layers.empty()) throw std::logic_error("ddp_plan: an empty bucket");
    add_sync(plan, buckets[k].gradient, "", "bucket " + std::to_string(k), {layers.backward[buckets[k].layers.back()]});
  }
  return plan;
}

PlanTime run_plan(const StepPlan& plan, const std::vector<double>& sync_s, double slowdown) {
  if (sync_s.size() != plan.syncs.size()) throw std::logic_error("run_plan: a time per synchronisation");
  const std::size_t n = plan.tasks.size();
  std::vector<std::size_t> compute, comm;
  for (std::size_t i = 0; i < n; ++i) {
    const StepTask& task = plan.tasks[i];
    if (!task.on_compute() && (task.sync < 0 || static_cast<std::size_t>(task.sync) >= plan.syncs.size())) {
      throw std::logic_error("run_plan: a sync task without its synchronisation");
    }
    for (int a : task.after) {
      if (a < 0 || static_cast<std::size_t>(a) >= n || static_cast<std::size_t>(a) == i) throw std::logic_error("run_plan: bad dependency");
    }
    (task.on_compute() ? compute : comm).push_back(i);
  }
  PlanTime out;
  out.tasks.resize(n);
  std::vector<bool> done(n, false);
  const double none = std::numeric_limits<double>::infinity();
  const double slowed_rate = 1.0 / (1.0 + slowdown);
  double t = 0;
  struct Stream {
    const std::vector<std::size_t>* order;
    std::size_t next = 0;
    int running = -1;
  };
  Stream cs{&compute}, ms{&comm};
  double work_left = 0, comm_end = none;
  auto try_start = [&](Stream& st) {
    if (st.running >= 0 || st.next == st.order->size()) return false;
    const std::size_t k = (*st.order)[st.next];
    double ready = 0;
    for (int a : plan.tasks[k].after) {
      if (!done[static_cast<std::size_t>(a)]) return false;
      ready = std::max(ready, out.tasks[static_cast<std::size_t>(a)].end_s);
    }
    out.tasks[k].ready_s = ready;
    out.tasks[k].start_s = t;
    st.running = static_cast<int>(k);
    ++st.next;
    return true;
  };
  auto finish = [&](Stream& st) {
    const auto k = static_cast<std::size_t>(st.running);
    out.tasks[k].end_s = t;
    done[k] = true;
    st.running = -1;
  };
  while (true) {
    for (bool started = true; started;) {
      started = false;
      if (try_start(ms)) {
        const StepTask& task = plan.tasks[static_cast<std::size_t>(ms.running)];
        comm_end = t + sync_s[static_cast<std::size_t>(task.sync)];
        started = true;
      }
      if (try_start(cs)) {
        work_left = plan.tasks[static_cast<std::size_t>(cs.running)].seconds;
        started = true;
      }
    }
    if (cs.running < 0 && ms.running < 0) {
      if (cs.next < compute.size() || ms.next < comm.size()) throw std::logic_error("run_plan: the streams wait for each other");
      break;
    }
    const double rate = ms.running >= 0 ? slowed_rate : 1.0;
    const double compute_end = cs.running >= 0 ? t + work_left / rate : none;
    const double next = std::min(compute_end, ms.running >= 0 ? comm_end : none);
    if (cs.running >= 0) work_left -= (next - t) * rate;
    t = next;
    if (ms.running >= 0 && comm_end <= next) {
      finish(ms);
      comm_end = none;
    }
    if (cs.running >= 0 && compute_end <= next) finish(cs);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const StepTask& task = plan.tasks[i];
    const double end = out.tasks[i].end_s;
    out.iteration_s = std::max(out.iteration_s, end);
    if (task.kind == StepTask::Kind::forward) out.forward_end_s = std::max(out.forward_end_s, end);
    if (task.kind == StepTask::Kind::backward) out.backward_end_s = std::max(out.backward_end_s, end);
    if (task.on_compute()) {
      out.compute_s += task.seconds;
    } else {
      out.sync_s += sync_s[static_cast<std::size_t>(task.sync)];
    }
  }
  return out;
}

StepTime step_time(const StepPlan& plan, const PlanTime& t) {
  StepTime st;
  st.forward_s = t.forward_end_s;
  st.backward_s = std::max(0.0, t.backward_end_s - t.forward_end_s);
  st.iteration_s = t.iteration_s;
  st.exposed_s = std::max(0.0, t.iteration_s - t.compute_s);
  st.sync_s = t.sync_s;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    if (plan.tasks[i].on_compute()) continue;
    const TaskSpan& s = t.tasks[i];
    st.buckets.push_back({s.ready_s - t.forward_end_s, s.start_s - t.forward_end_s, s.end_s - t.forward_end_s});
  }
  return st;
}

StepTime overlapped_step(const Workload& w, const std::vector<Bucket>& buckets, const std::vector<double>& sync_s,
                         const OverlapSettings& settings) {
  if (sync_s.size() != buckets.size()) throw std::logic_error("overlapped_step: a synchronisation time per bucket");
  const StepPlan plan = ddp_plan(w, buckets);
  return step_time(plan, run_plan(plan, sync_s, settings.slowdown));
}

}  // namespace gradsync::models
