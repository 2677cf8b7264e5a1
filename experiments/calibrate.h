// gradsync calibrate: fit a strategy's constants once across several machines' nccl-tests
// tables, and check that the fit generalises by leaving each machine out.
//
// Every point of a grid over the named parameters predicts every table of every machine the
// strategy models (compare_runs, one executor; every collective, or only all-reduce), each table
// at one size per octave from 64 KiB (a table printed in finer steps weighs as much as one of
// nccl-tests' default factor 2). Each machine's objective is the median + 90th percentile of
// |error| at sizes >= 1 MiB plus the median at 64 KiB - 1 MiB over its tables (the accuracy
// targets' three figures); the point with the least mean of the machines' objectives is the fit,
// so that a machine of many tables weighs no more than one of a few (a fit to one machine is
// what it must not be). Leave-one-machine-out: each machine is then predicted with the point
// fitted on the others only, and the held-out errors are pooled over all tables. Nothing here knows which strategy it fits.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "experiments/compare.h"

namespace gradsync::experiments {

// One grid axis: a parameter and the values tried, parsed from "name=lo:hi:step" or
// "name=v1,v2,..." (InputError for a malformed item, a parameter the strategy does not
// declare, or a value outside its domain).
struct GridAxis {
  std::string param;
  std::vector<double> values;
};
GridAxis parse_grid_axis(const std::string& item, const models::Strategy& strategy);

struct CalibrationMachine {
  std::string name;
  const models::Topology* topology = nullptr;
  std::vector<models::NcclTestsRun> runs;
};

struct CalibrateOptions {
  std::string strategy = "nccl";
  std::vector<std::string> params;  // fixed --param items (not on the grid)
  std::vector<GridAxis> grid;
  std::string executor = "analytic";
  bool in_place = false;
  bool all_reduce_only = false;  // only the all-reduce tables count
  models::ExecutorSettings settings;
};

// A prediction against the band of the model's own error it states (the fact "the model's own
// error", whose assumed value names the band), kept so that its range can be restated with
// another band: the range is the band's times the other open facts' (ResultRecord::busbw_range_GBps).
struct BandedPoint {
  std::string band;  // the band's name as the prediction states it ("" where none)
  bool large = false;  // >= 1 MiB
  models::ResultRecord predicted;  // bytes, time, busbw factor and open facts only
  models::ResultRecord measured;   // bytes, time and busbw factor only
};

// |errors| of one machine at one grid point, by size, with whether each prediction's stated
// range held the measurement and the range's width (hi / lo - 1).
struct MachineErrors {
  std::vector<double> large;  // sizes >= 1 MiB
  std::vector<double> small;  // 64 KiB .. 1 MiB
  std::vector<bool> large_held, small_held;
  std::vector<double> large_width, small_width;
  // Signed (predicted / measured - 1) where the prediction left nothing open but the model's own
  // error, by the band it states: what that error is, measured.
  std::map<std::string, std::vector<double>> known;
  std::vector<BandedPoint> banded;  // every prediction, in the order of large / small (band "" where it states none)
};

// The model's own error by band: the 5th and 95th percentiles of the signed errors of
// predictions whose facts were all known, each machine weighing alike (widened to 0 where both lie on one side: a band always
// holds the prediction itself), and how many there were.
struct ErrorBandFigure {
  double low = 0, high = 0;
  int sizes = 0;
};
using ErrorBands = std::map<std::string, ErrorBandFigure>;

struct PooledFigures {
  std::optional<ErrorSummary> large, small;
  ErrorBands bands;
  double objective() const;  // median + 90th percentile at >= 1 MiB + median at 64 KiB - 1 MiB
};
PooledFigures pool(const std::vector<const MachineErrors*>& errors);

// The machine's errors with every stated range restated with `bands` (a band they lack stays as
// stated): whether each then holds the measurement, and its width.
MachineErrors with_bands(const MachineErrors& errors, const ErrorBands& bands);

struct Calibration {
  std::vector<std::string> machines;
  std::vector<std::vector<double>> points;           // each grid point: one value per axis
  std::vector<std::vector<MachineErrors>> errors;    // [point][machine]
  std::vector<MachineErrors> default_errors;         // [machine], the parameters' defaults
  std::size_t best = 0;                              // fitted on every machine
  std::vector<std::size_t> best_without;             // [machine]: fitted on the others
  int tables = 0;                                    // tables compared

  // The --param items of a point ("shm_efficiency=0.66", ...).
  std::vector<std::string> items(const CalibrateOptions& options, std::size_t point) const;
  // Pooled over the machines whose flag is set.
  PooledFigures figures(std::size_t point, const std::vector<bool>& machines) const;
  // What the fit minimises: the mean of those machines' own objectives at the point.
  double objective(std::size_t point, const std::vector<bool>& machines) const;
  // Leave one machine out for the error bands too (they are fitted across machines as well): each
  // machine at the point fitted on the others, its ranges restated with the bands of the other
  // machines' held-out errors. Needs best_without.
  std::vector<MachineErrors> held_out_with_others_bands() const;
};

// How many predictions calibrate() makes (for progress).
std::size_t calibration_count(const std::vector<CalibrationMachine>& machines, const CalibrateOptions& options);

// Throws InputError when a machine has no all-reduce table with sizes of 64 KiB or more.
// best_without is filled when two machines or more are given.
Calibration calibrate(const std::vector<CalibrationMachine>& machines, const CalibrateOptions& options,
                      models::Progress* progress = nullptr);

}  // namespace gradsync::experiments
