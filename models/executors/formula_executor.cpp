#include "models/executors/formula_executor.h"

#include "models/support/error.h"
#include "models/executors/executor.h"

namespace gradsync::models {

formulas::Breakdown predict_with_formula(const Strategy& strategy, const StrategyContext& context) {
  if (!strategy.closed_form) {
    throw InputError("--executor formula: the source documents give no closed form for strategy " + strategy.name +
                     "; use --executor analytic");
  }
  return strategy.closed_form(context);
}

namespace {

class FormulaExecutor final : public Executor {
 public:
  std::string name() const override { return "formula"; }
  std::string summary() const override {
    return "the papers' closed forms, with B = the slowest path the strategy uses and a = its largest latency";
  }
  int order() const override { return 10; }
  bool covers(const Strategy& s) const override { return static_cast<bool>(s.closed_form); }
  std::string footnote() const override {
    return "formula executor: the papers' closed forms with B = the slowest path a strategy uses and a = its largest latency";
  }
  ResultRecord evaluate(const PredictRequest& q, const ExecutorSettings&, Trace*) const override {
    // The record's facts (resolved parameters, notes) come from the schedule, as for every executor.
    const BuiltSchedule built = build_schedule(q);
    ResultRecord r = record_header(q, built, name());
    const formulas::Breakdown b = predict_with_formula(*q.strategy, context_of(q, built.params));
    r.phases = b.phases;
    r.time_per_sync_s = b.total();
    add_overlap(r, q, built.schedule, [](const PredictRequest& part) {
      const BuiltSchedule bucket = build_schedule(part);
      return predict_with_formula(*part.strategy, context_of(part, bucket.params)).total();
    });
    if (q.workload) add_training_times(r, *q.workload);
    return r;
  }
};

const ExecutorRegistration formula_registered(std::make_unique<FormulaExecutor>());

}  // namespace

}  // namespace gradsync::models
