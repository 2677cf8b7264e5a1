#include "models/strategies/registry.h"

namespace gradsync::models {

const std::vector<const Strategy*>& all_strategies() {
  static const std::vector<const Strategy*> list = {
      &strategies::ps(),
      &strategies::ring(),
      &strategies::hierarchical(),
      &strategies::ps_hra(),
  };
  return list;
}

}  // namespace gradsync::models
