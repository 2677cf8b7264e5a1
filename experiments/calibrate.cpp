#include "experiments/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "models/support/error.h"
#include "models/support/stats.h"
#include "models/strategies/strategy.h"

namespace gradsync::experiments {
namespace {

constexpr std::size_t kMaxAxisValues = 1000;
constexpr std::size_t kMaxGridPoints = 200000;

double grid_number(const std::string& item, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    throw models::InputError("--grid " + item + ": \"" + text + "\" is not a number; expected name=lo:hi:step or "
                             "name=v1,v2,...");
  }
  return v;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string value_text(double v) { return models::number_text(v); }

// The open fact by which a prediction states its own error band (the nccl strategy's).
constexpr const char* kModelErrorFact = "the model's own error";

// The tables of a machine the strategy models (every collective, or only all-reduce), each at one
// size per octave from 64 KiB (the size nearest the octave's power of two): a table printed in
// fine steps counts as much as one printed at nccl-tests' default factor 2.
std::vector<models::NcclTestsRun> tables_of(const CalibrationMachine& m, const CalibrateOptions& options) {
  std::vector<models::NcclTestsRun> out;
  for (const auto& run : m.runs) {
    if ((options.all_reduce_only && run.collective != "all_reduce") || run.collective.empty() || run.ranks() < 2) continue;
    models::NcclTestsRun trimmed = run;
    trimmed.rows.clear();
    std::map<int, const models::NcclTestsRow*> nearest;  // octave -> row
    for (const auto& row : run.rows) {
      if (row.bytes < kSmallFrom) continue;
      const double octave = std::log2(row.bytes);
      const int k = static_cast<int>(std::lround(octave));
      const auto it = nearest.find(k);
      if (it == nearest.end() || std::abs(std::log2(it->second->bytes) - k) > std::abs(octave - k)) nearest[k] = &row;
    }
    for (const auto& [k, row] : nearest) trimmed.rows.push_back(*row);
    if (!trimmed.rows.empty()) out.push_back(std::move(trimmed));
  }
  return out;
}

// What a band's restatement needs of a record: its size, time and bus factor (a slim copy: a
// calibration keeps one per prediction of every grid point).
models::ResultRecord timing_of(const models::ResultRecord& r) {
  models::ResultRecord slim;
  slim.bytes = r.bytes;
  slim.time_per_sync_s = r.time_per_sync_s;
  slim.busbw_factor = r.busbw_factor;
  return slim;
}

MachineErrors errors_of(const std::vector<CompareRun>& compared, const std::string& executor) {
  MachineErrors e;
  for (const auto& c : compared) {
    for (const auto& p : c.points) {
      const auto it = p.predicted.find(executor);
      if (it == p.predicted.end()) continue;
      const double err = std::abs(busbw_error(it->second, p.measured));
      const bool large = p.bytes >= kLargeFrom;
      (large ? e.large : e.small).push_back(err);
      (large ? e.large_held : e.small_held).push_back(range_holds(it->second, p.measured));
      (large ? e.large_width : e.small_width).push_back(range_width(it->second));
      const auto band = std::find_if(it->second.open_facts.begin(), it->second.open_facts.end(),
                                     [](const models::OpenFact& f) { return f.name == kModelErrorFact; });
      const bool banded = band != it->second.open_facts.end();
      const bool known = std::all_of(it->second.open_facts.begin(), it->second.open_facts.end(),
                                     [](const models::OpenFact& f) { return f.measured_in_band || f.name == kModelErrorFact; });
      if (banded && known) e.known[band->assumed].push_back(busbw_error(it->second, p.measured));
      BandedPoint b;
      b.band = banded ? band->assumed : "";
      b.large = large;
      b.predicted = timing_of(it->second);
      b.predicted.open_facts = it->second.open_facts;
      b.measured = timing_of(p.measured);
      e.banded.push_back(std::move(b));
    }
  }
  return e;
}

}  // namespace

GridAxis parse_grid_axis(const std::string& item, const models::Strategy& strategy) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
    throw models::InputError("--grid " + item + ": expected name=lo:hi:step or name=v1,v2,...");
  }
  GridAxis axis;
  axis.param = item.substr(0, eq);
  if (!models::declares(strategy, axis.param)) {
    throw models::InputError("--grid " + item + ": strategy " + strategy.name + " has no parameter " + axis.param);
  }
  const std::string rest = item.substr(eq + 1);
  if (rest.find(':') != std::string::npos) {
    const auto parts = split_on(rest, ':');
    if (parts.size() != 3) throw models::InputError("--grid " + item + ": expected name=lo:hi:step");
    const double lo = grid_number(item, parts[0]), hi = grid_number(item, parts[1]), step = grid_number(item, parts[2]);
    if (!(step > 0) || hi < lo) {
      throw models::InputError("--grid " + item + ": expected lo <= hi and a step > 0");
    }
    const double count = std::floor((hi - lo) / step + 1e-9) + 1;
    if (count > static_cast<double>(kMaxAxisValues)) {
      throw models::InputError("--grid " + item + ": " + value_text(count) + " values; expected at most " +
                               std::to_string(kMaxAxisValues) + " per parameter");
    }
    // Each value from lo by whole steps, rounded to the step's precision so that 0.1 x 3 prints as 0.3.
    for (int i = 0; i < static_cast<int>(count); ++i) {
      axis.values.push_back(std::stod(value_text(std::round((lo + i * step) * 1e9) / 1e9)));
    }
  } else {
    for (const auto& v : split_on(rest, ',')) axis.values.push_back(grid_number(item, v));
    if (axis.values.size() > kMaxAxisValues) {
      throw models::InputError("--grid " + item + ": expected at most " + std::to_string(kMaxAxisValues) + " values");
    }
  }
  // Every value must be one the parameter takes (its domain's bounds).
  for (const double v : axis.values) {
    models::StrategyParams check(strategy, {{axis.param, value_text(v)}});
    (void)check.number(axis.param);
  }
  return axis;
}

double PooledFigures::objective() const {
  return (large ? large->median_abs + large->p90_abs : 0.0) + (small ? small->median_abs : 0.0);
}

PooledFigures pool(const std::vector<const MachineErrors*>& errors) {
  std::vector<double> large, small, large_width, small_width;
  std::vector<bool> large_held, small_held;
  // Each machine weighs alike in a band, as in the fit: a machine of many tables does not set it.
  std::map<std::string, std::vector<std::pair<double, double>>> known;
  for (const auto* e : errors) {
    for (const auto& [band, v] : e->known) {
      for (const double x : v) known[band].emplace_back(x, 1.0 / static_cast<double>(v.size()));
    }
    large.insert(large.end(), e->large.begin(), e->large.end());
    small.insert(small.end(), e->small.begin(), e->small.end());
    large_held.insert(large_held.end(), e->large_held.begin(), e->large_held.end());
    small_held.insert(small_held.end(), e->small_held.begin(), e->small_held.end());
    large_width.insert(large_width.end(), e->large_width.begin(), e->large_width.end());
    small_width.insert(small_width.end(), e->small_width.begin(), e->small_width.end());
  }
  PooledFigures f;
  f.large = summarize_errors(std::move(large), large_held, std::move(large_width));
  f.small = summarize_errors(std::move(small), small_held, std::move(small_width));
  for (const auto& [band, v] : known) {
    // A band always holds the prediction itself.
    f.bands[band] = ErrorBandFigure{std::min(0.0, models::weighted_percentile(v, 0.05)),
                                    std::max(0.0, models::weighted_percentile(v, 0.95)), static_cast<int>(v.size())};
  }
  return f;
}

MachineErrors with_bands(const MachineErrors& errors, const ErrorBands& bands) {
  MachineErrors out = errors;
  out.large_held.clear();
  out.small_held.clear();
  out.large_width.clear();
  out.small_width.clear();
  for (const BandedPoint& p : errors.banded) {
    models::ResultRecord restated = p.predicted;
    const auto band = bands.find(p.band);
    for (models::OpenFact& f : restated.open_facts) {
      if (f.name != kModelErrorFact || band == bands.end()) continue;
      f.relative_time = {{"measured slower", 1 + band->second.high}, {"measured faster", 1 + band->second.low}};
    }
    (p.large ? out.large_held : out.small_held).push_back(range_holds(restated, p.measured));
    (p.large ? out.large_width : out.small_width).push_back(range_width(restated));
  }
  return out;
}

std::vector<std::string> Calibration::items(const CalibrateOptions& options, std::size_t point) const {
  std::vector<std::string> out;
  for (std::size_t a = 0; a < options.grid.size(); ++a) {
    out.push_back(options.grid[a].param + "=" + value_text(points.at(point)[a]));
  }
  return out;
}

PooledFigures Calibration::figures(std::size_t point, const std::vector<bool>& use) const {
  std::vector<const MachineErrors*> e;
  for (std::size_t m = 0; m < machines.size(); ++m) {
    if (use[m]) e.push_back(&errors.at(point)[m]);
  }
  return pool(e);
}

double Calibration::objective(std::size_t point, const std::vector<bool>& use) const {
  double sum = 0;
  int count = 0;
  for (std::size_t m = 0; m < machines.size(); ++m) {
    if (!use[m]) continue;
    sum += pool({&errors.at(point)[m]}).objective();
    ++count;
  }
  return count > 0 ? sum / count : 0.0;
}

std::vector<MachineErrors> Calibration::held_out_with_others_bands() const {
  std::vector<MachineErrors> out;
  for (std::size_t m = 0; m < best_without.size(); ++m) {
    std::vector<const MachineErrors*> others;
    for (std::size_t k = 0; k < best_without.size(); ++k) {
      if (k != m) others.push_back(&errors.at(best_without[k])[k]);
    }
    out.push_back(with_bands(errors.at(best_without[m])[m], pool(others).bands));
  }
  return out;
}

std::size_t calibration_count(const std::vector<CalibrationMachine>& machines, const CalibrateOptions& options) {
  std::size_t points = 1;
  for (const auto& a : options.grid) points *= a.values.size();
  std::size_t sizes = 0;
  for (const auto& m : machines) {
    for (const auto& run : tables_of(m, options)) sizes += run.rows.size();
  }
  return (points + 1) * sizes;
}

Calibration calibrate(const std::vector<CalibrationMachine>& machines, const CalibrateOptions& options,
                      models::Progress* progress) {
  if (machines.empty()) throw models::InputError("no machines to calibrate on; expected files with nccl-tests logs");
  if (options.grid.empty()) throw models::InputError("no --grid given; expected at least one parameter to fit");
  for (std::size_t a = 0; a < options.grid.size(); ++a) {
    for (std::size_t b = 0; b < a; ++b) {
      if (options.grid[a].param == options.grid[b].param) {
        throw models::InputError("--grid " + options.grid[a].param + " is given twice; expected one axis per parameter");
      }
    }
    for (const auto& fixed : options.params) {
      if (fixed.rfind(options.grid[a].param + "=", 0) == 0) {
        throw models::InputError("--param " + fixed + " and --grid " + options.grid[a].param +
                                 " name the same parameter; expected it fixed or fitted, not both");
      }
    }
  }
  std::size_t total = 1;
  for (const auto& a : options.grid) {
    total *= a.values.size();
    if (total > kMaxGridPoints) {
      throw models::InputError("--grid: more than " + std::to_string(kMaxGridPoints) +
                               " points; expected a coarser grid (fewer values per parameter)");
    }
  }

  Calibration c;
  std::vector<std::vector<models::NcclTestsRun>> tables;
  for (const auto& m : machines) {
    c.machines.push_back(m.name);
    tables.push_back(tables_of(m, options));
    if (tables.back().empty()) {
      throw models::InputError(m.name + ": no " + (options.all_reduce_only ? "all-reduce " : "") +
                               "table of nccl-tests with sizes of 64 KiB or more; expected *_perf output beside the "
                               "machine's tool outputs");
    }
    c.tables += static_cast<int>(tables.back().size());
  }

  auto evaluate = [&](const std::vector<std::string>& grid_items) {
    CompareOptions co;
    co.strategy = options.strategy;
    co.params = options.params;
    co.params.insert(co.params.end(), grid_items.begin(), grid_items.end());
    for (const auto& axis : options.grid) co.fitted.push_back(axis.param);
    co.executors = {options.executor};
    co.in_place = options.in_place;
    co.settings = options.settings;
    std::vector<MachineErrors> per_machine;
    for (std::size_t m = 0; m < machines.size(); ++m) {
      per_machine.push_back(errors_of(compare_runs(*machines[m].topology, tables[m], co, progress), options.executor));
    }
    return per_machine;
  };

  c.default_errors = evaluate({});
  // Every point of the grid, the last axis fastest.
  std::vector<std::size_t> index(options.grid.size(), 0);
  for (std::size_t p = 0; p < total; ++p) {
    std::vector<double> point;
    for (std::size_t a = 0; a < options.grid.size(); ++a) point.push_back(options.grid[a].values[index[a]]);
    c.points.push_back(point);
    c.errors.push_back(evaluate(c.items(options, p)));
    for (std::size_t a = options.grid.size(); a-- > 0;) {
      if (++index[a] < options.grid[a].values.size()) break;
      index[a] = 0;
    }
  }

  // The least objective over a set of machines, each machine's own objective weighing alike (a
  // file of many tables must not outvote the others); the first such point on a tie.
  auto best_over = [&](const std::vector<bool>& use) {
    std::size_t best = 0;
    double least = std::numeric_limits<double>::infinity();
    for (std::size_t p = 0; p < c.points.size(); ++p) {
      const double o = c.objective(p, use);
      if (o < least) {
        least = o;
        best = p;
      }
    }
    return best;
  };
  c.best = best_over(std::vector<bool>(machines.size(), true));
  if (machines.size() >= 2) {
    for (std::size_t m = 0; m < machines.size(); ++m) {
      std::vector<bool> others(machines.size(), true);
      others[m] = false;
      c.best_without.push_back(best_over(others));
    }
  }
  return c;
}

}  // namespace gradsync::experiments
