// Writing result records: a table on the terminal, JSON lines or CSV to a file or stdout.
#pragma once

#include <string>
#include <vector>

#include "models/support/json_input.h"
#include "models/executors/result.h"
#include "models/strategies/strategy.h"
#include "models/workload/workload.h"

namespace gradsync::experiments::cli {

// "table", "json" or "csv"; from --format, else from the -o extension (.jsonl/.json, .csv), else table.
std::string choose_format(const std::string& format, const std::string& output);
std::string records_text(const std::vector<models::ResultRecord>& records, const std::string& format);

using models::check_output_path;  // models/support/json_input.h

// The table's params column: what "auto" became for the parameters that show it (k=2,
// server=host, T=625) and the strategy's inner one, then whatever the user set — except the
// ones shown elsewhere (device rates). The rest is in the JSON / CSV records.
std::string params_text(const models::ResultRecord& record, const models::SyncParams& given);

// With a workload's convergence facts: the time to its target ("41 ms", "41 ms (33-52 ms)") and the
// convergence speed-up ("3.10x", "3.10x (2.5-3.6x)"); "?" where the strategy's cost in samples is
// not known, "-" without facts.
std::string time_to_target_cell(const models::ResultRecord& record);
std::string convergence_speedup_cell(const models::ResultRecord& record);
// What those two columns mean for the workload, in lines for under a table; none without facts.
std::vector<std::string> convergence_footnote(const models::Workload& workload);

}  // namespace gradsync::experiments::cli
