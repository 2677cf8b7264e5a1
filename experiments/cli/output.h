// Writing result records: a table on the terminal, JSON lines or CSV to a file or stdout.
#pragma once

#include <string>
#include <vector>

#include "models/support/json_input.h"
#include "models/executors/result.h"
#include "models/strategies/strategy.h"

namespace gradsync::experiments::cli {

// "table", "json" or "csv"; from --format, else from the -o extension (.jsonl/.json, .csv), else table.
std::string choose_format(const std::string& format, const std::string& output);
std::string records_text(const std::vector<models::ResultRecord>& records, const std::string& format);

using models::check_output_path;  // models/support/json_input.h

// The table's params column: what "auto" became for the parameters that show it (k=2,
// server=host, T=625) and the strategy's inner one, then whatever the user set — except the
// ones shown elsewhere (device rates). The rest is in the JSON / CSV records.
std::string params_text(const models::ResultRecord& record, const models::SyncParams& given);

}  // namespace gradsync::experiments::cli
