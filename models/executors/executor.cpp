#include "models/executors/executor.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

#include "models/support/error.h"

namespace gradsync::models {

namespace {

std::deque<std::unique_ptr<Executor>>& executor_registry() {
  static std::deque<std::unique_ptr<Executor>> executors;
  return executors;
}

}  // namespace

ExecutorRegistration::ExecutorRegistration(std::unique_ptr<Executor> executor) {
  for (const auto& e : executor_registry()) {
    if (e->name() == executor->name()) throw std::logic_error("executor " + executor->name() + " is registered twice");
  }
  executor_registry().push_back(std::move(executor));
}

const std::vector<const Executor*>& all_executors() {
  static const std::vector<const Executor*> listed = [] {
    std::vector<const Executor*> out;
    for (const auto& e : executor_registry()) out.push_back(e.get());
    std::stable_sort(out.begin(), out.end(), [](const Executor* a, const Executor* b) { return a->order() < b->order(); });
    return out;
  }();
  return listed;
}

std::vector<std::string> executor_names() {
  std::vector<std::string> names;
  for (const Executor* e : all_executors()) names.push_back(e->name());
  return names;
}

const Executor& find_executor(const std::string& name, const std::string& where) {
  for (const Executor* e : all_executors()) {
    if (e->name() == name) return *e;
  }
  throw InputError(where + ": unknown executor \"" + name + "\"" + did_you_mean(name, executor_names()) + "; expected one of " +
                   join(executor_names()));
}

ResultRecord record_header(const PredictRequest& q, const BuiltSchedule& built, const std::string& executor) {
  const Topology& t = *q.topology;
  const Schedule& schedule = built.schedule;
  ResultRecord r;
  r.executor = executor;
  r.topology = t.name();
  r.strategy = q.strategy->name;
  r.ranks = q.placement.size();
  for (std::size_t node : q.placement.ranks) r.rank_nodes.push_back(t.node(node).id);
  r.bytes = static_cast<double>(q.elements()) * q.element_bytes();
  r.workload = q.workload ? q.workload->name : "";
  r.period_steps = schedule.period_steps;
  r.asynchronous = schedule.asynchronous;
  r.notes = schedule.notes;
  r.open_facts = schedule.open_facts;
  for (const Participant& p : schedule.participants) {
    if (p.role == Role::server) r.server = t.node(p.node).id;
  }
  // The parameters as resolved: what "auto" became, "-" where the schedule did not use one.
  r.params = built.params.values();
  for (const ParamSpec& spec : params_of(*q.strategy)) {
    if (!spec.resolved) continue;
    const auto it = built.resolved.find(spec.name);
    r.params[spec.name] = it != built.resolved.end() ? it->second : "-";
  }
  r.busbw_factor = q.strategy->busbw_factor(r.ranks, r.params);
  if (q.workload && !q.bytes) r.memory = memory_per_gpu(*q.workload, q.strategy->sharding, r.ranks);
  return r;
}

}  // namespace gradsync::models
