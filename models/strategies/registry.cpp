#include "models/strategies/registry.h"

namespace gradsync::models {

const std::vector<const Strategy*>& all_strategies() {
  static const std::vector<const Strategy*> list = {
      &strategies::ps(),        &strategies::ring(),      &strategies::hierarchical(), &strategies::ps_hra(),
      &strategies::sampled(),   &strategies::onebit(),    &strategies::model_avg(),    &strategies::bmuf(),
      &strategies::downpour(),  &strategies::asgd(),
  };
  return list;
}

}  // namespace gradsync::models
