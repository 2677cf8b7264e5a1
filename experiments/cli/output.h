// Writing result records: a table on the terminal, JSON lines or CSV to a file or stdout.
#pragma once

#include <string>
#include <vector>

#include "models/result.h"

namespace gradsync::experiments::cli {

// "table", "json" or "csv"; from --format, else from the -o extension (.jsonl/.json, .csv), else table.
std::string choose_format(const std::string& format, const std::string& output);
std::string records_text(const std::vector<models::ResultRecord>& records, const std::string& format);

// Checks, before any work, that a file can be written at `path` ("" and "-" always can): its
// folder exists and it is not itself a folder. Otherwise an InputError naming `flag` and the path.
void check_output_path(const std::string& path, const std::string& flag);

}  // namespace gradsync::experiments::cli
