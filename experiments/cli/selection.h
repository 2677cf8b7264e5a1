// What predict and simulate share on the command line: which topology, workload or
// sizes, strategies and their parameters, GPU counts or an explicit rank order; how to
// write the results; and running the resulting points into a table or records.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/experiment.h"

namespace gradsync::experiments::cli {

struct SelectionOptions {
  std::string experiment;  // an experiment JSON file (positional, simulate only)
  std::string topology;
  std::string workload;
  std::string size;
  std::vector<std::string> strategies;
  std::vector<std::string> params;
  std::string gpus;
  std::string ranks;
  std::string ring_order;
  bool overlap = false;
  std::string bucket_cap = "25MiB";
  std::string first_bucket = "1MiB";
  double overlap_slowdown = 0;
  std::string format;
  std::string output;
  std::string trace;
};

void add_selection_options(CLI::App* cmd, SelectionOptions& o);
// --overlap and its bucket settings.
void add_overlap_options(CLI::App* cmd, SelectionOptions& o);
void add_output_options(CLI::App* cmd, SelectionOptions& o, bool with_trace);
// "  analytic  the strategy's schedule walked on the topology..." — a line per executor, for help texts.
std::string executor_help();

// Flags -> experiment (executors given by the verb).
Experiment experiment_from_flags(const SelectionOptions& o, const std::vector<std::string>& executors);

// Evaluates every point, prints a table (or writes JSON lines / CSV), writes the trace.
// `verb` names the command in the header.
// "gradsync VERB: topology ..., workload ..., executor ..." and a blank line.
void print_plan_heading(std::ostream& out, const std::string& verb, const Plan& plan);
int run_plan(const Plan& plan, const SelectionOptions& o, const std::string& verb);

}  // namespace gradsync::experiments::cli
