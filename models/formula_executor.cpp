#include "models/formula_executor.h"

#include "models/error.h"

namespace gradsync::models {

formulas::Breakdown predict_with_formula(const Strategy& strategy, const StrategyContext& context) {
  if (!strategy.closed_form) {
    throw InputError("--executor formula: the source documents give no closed form for strategy " + strategy.name +
                     "; use --executor analytic");
  }
  return strategy.closed_form(context);
}

}  // namespace gradsync::models
