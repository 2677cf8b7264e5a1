// Internal to the importers: line handling, the one table reader every tool parser uses,
// and what each tool parser extracts from a text before import.cpp merges the tools.
// Not a public header: include models/topology/importers/import.h instead.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/topology/importers/nccl_log.h"
#include "models/topology/importers/nccl_tests.h"
#include "models/topology/matrix_form.h"

namespace gradsync::models::importers {

// ---------------------------------------------------------------------------------------
// Text and tokens

// A text split into lines ("\r\n" and "\n" both end a line; a trailing "\r" is dropped).
// Terminal escape sequences are removed from every line (strip_escape_sequences), so every
// reader sees the text a terminal showed. Indices are 0-based; messages use 1-based line numbers.
struct SourceText {
  std::string name;  // file name as given, for messages
  std::vector<std::string> lines;

  std::size_t size() const { return lines.size(); }
  // "<name>:<line>"
  std::string where(std::size_t index) const;
  // Throws InputError("<name>:<line>: <what>").
  [[noreturn]] void fail(std::size_t index, const std::string& what) const;
};

// The longest line a reader takes. The tools print far shorter lines (an 8-GPU host's NCCL path
// line is about 600 characters); the readers' std::regex recurses once a character, so a line of
// tens of thousands overflows the stack: split_lines rejects a longer line (InputError naming it).
inline constexpr std::size_t kMaxLineLength = 8192;
SourceText split_lines(const std::string& text, const std::string& name);
// A line without the escape sequences a terminal capture keeps (nvidia-smi underlines its
// header: ESC[4m ... ESC[0m): every ECMA-48 control sequence ESC '[' <parameter bytes 0x30-0x3F>
// <intermediate bytes 0x20-0x2F> <final byte 0x40-0x7E> (colours, underline, cursor moves) and
// every character-set designation ESC ( B (what `tput sgr0` prints). An ESC that starts no
// complete sequence is kept, for the reader to reject as the bad byte it is.
std::string strip_escape_sequences(std::string_view line);
// Printed tool output is ASCII / UTF-8 text; anything else (a binary file, a stray byte in a
// name) is an InputError naming the line and column ("...; expected <expected>"), before it
// reaches the JSON gradsync writes.
void check_utf8(const SourceText& src, const std::string& expected);
// A file's whole text. InputError "<path>: no such file" (or: is a directory, cannot be read).
std::string read_text_file(const std::string& path);

std::string_view trim(std::string_view text);
bool is_blank(std::string_view line);
// Splits on spaces and tabs.
std::vector<std::string> tokens(std::string_view line);
// "\"tok\""
std::string quote_token(std::string_view token);

// A whole token as a finite number ("12.5", "1e3"); nullopt otherwise.
std::optional<double> parse_number(std::string_view token);
// A whole token as a non-negative integer ("0", "12"); nullopt otherwise.
std::optional<std::size_t> parse_index(std::string_view token);

// ---------------------------------------------------------------------------------------
// Tables: a header of column labels, then one row per device. Used for every matrix of
// p2pBandwidthLatencyTest ("   D\D     0      1", rows "     0 538.62   5.72"),
// nvbandwidth ("           0         1", rows " 0       N/A    764.71") and
// nvidia-smi topo ("\tGPU0\tGPU1\tCPU Affinity...", rows "GPU0\t X \tPIX...").

enum class TableLabels {
  index,  // columns and rows labelled 0, 1, 2, ...
  gpu,    // columns and rows labelled GPU0, GPU1, ...
};

struct TableSpec {
  std::string title;          // how messages name the table
  TableLabels labels = TableLabels::index;
  std::vector<std::string> corners;  // tokens accepted before the first column label ("D\\D", "GPU", "CPU")
  std::optional<std::size_t> columns;  // expected number of labelled columns, when already known
  std::string columns_origin;          // why that many ("one per GPU listed in the Device lines")
  std::size_t rows = 0;                // rows to read; 0 = one per column
  // The header may go on after the labelled columns (NIC0, "CPU Affinity", ...) and rows may
  // carry more cells than columns (NIC classes, affinities); at least `min_row_cells` are needed.
  bool trailing_cells = false;
  std::size_t min_row_cells = 0;
};

struct Table {
  std::string title;
  std::size_t header_line = 0;  // line indices (0-based)
  std::vector<std::size_t> row_lines;
  std::vector<std::string> header_tail;  // header tokens after the labelled columns
  std::size_t columns = 0;
  std::vector<std::vector<std::string>> cells;  // [row][cell], row label removed
};

// Reads a table whose header is the first non-blank line at or after `pos`; on return `pos`
// is the line after the last row. Throws InputError (file:line) when the header is missing,
// columns are not numbered 0..n-1 (GPU0..GPUn-1), a row label is out of order, a row has the
// wrong number of cells, or the table ends before all its rows.
Table read_table(const SourceText& src, std::size_t& pos, const TableSpec& spec);

// Is this line the header of a table with the given labels (optionally after a corner token)?
bool looks_like_header(std::string_view line, TableLabels labels, const std::vector<std::string>& corners = {});

struct NumberRules {
  std::string expected;           // "a bandwidth in GB/s"
  double scale = 1.0;             // file unit -> SI
  bool allow_na = false;          // "N/A" cells become empty
  bool positive_off_diagonal = false;  // off-diagonal values must be > 0 (bandwidths)
  // Bounds in the file's unit (a unit mistake or an overflowing figure is an error): values
  // above `maximum` anywhere, and positive values below `minimum_positive`.
  double maximum = std::numeric_limits<double>::infinity();
  double minimum_positive = 0;
  std::string bounds{};  // how messages state them: "between 1e-06 and 1e+06 GB/s"
};

// The table's cells as numbers (SI), [row][column]. Throws InputError naming the line and
// the bad token: `p2p.txt:27: "5.7x" is not a number; expected a bandwidth in GB/s`.
std::vector<std::vector<std::optional<double>>> table_numbers(const SourceText& src, const Table& table,
                                                              const NumberRules& rules);

// A square numeric table split into off-diagonal pairs and the diagonal.
struct SquareNumbers {
  PairMatrix pairs;
  std::vector<std::optional<double>> diagonal;
};
SquareNumbers square_numbers(const SourceText& src, const Table& table, const NumberRules& rules);

// ---------------------------------------------------------------------------------------
// What each tool parser extracts. Line indices refer to the SourceText it was read from.

struct P2pTestOutput {
  std::size_t line = 0;  // first recognised line
  std::size_t gpu_count = 0;
  std::vector<std::string> device_names;
  std::optional<std::vector<std::vector<bool>>> connectivity;  // P2P Connectivity Matrix or the CAN/CANNOT lines
  // Keyed "p2p_enabled", "p2p_disabled", "p2p_enabled_reads".
  std::map<std::string, MeasurementSet> sets;
  std::map<std::string, std::vector<std::optional<double>>> local_Bps;  // unidirectional diagonals, per set
  std::map<std::string, std::size_t> table_lines;  // table title -> line, to reject repeats
  std::vector<std::string> notes;
};

struct NvbandwidthTable {
  std::string testcase;  // "device_to_device_memcpy_write_ce"
  std::string title;     // the description line
  std::string variant;   // "Read1", "Total", ... or ""
  std::size_t title_line = 0;
  Table table;
  std::vector<std::vector<std::optional<double>>> values;  // as printed, in the file's unit
};

struct NvbandwidthOutput {
  std::size_t line = 0;
  std::string version;
  std::size_t gpu_count = 0;
  std::size_t gpu_count_line = 0;
  std::vector<NvbandwidthTable> tables;
  std::vector<std::string> waived;   // test cases nvbandwidth skipped
  std::vector<std::string> testcases_run;
  std::string current_testcase;      // from the last "Running <testcase>." line
  std::vector<std::string> notes;
};

struct SmiTopoOutput {
  std::size_t line = 0;
  std::size_t gpu_count = 0;
  std::vector<std::vector<std::string>> classes;
  std::vector<std::string> other_devices;  // NIC0, mlx5_0, ... (the legend's names where it gives them)
  // Each other device's class to each GPU ([device][gpu]: PIX, PXB, PHB, NODE, SYS), from the
  // GPU rows' columns: where a NIC sits beside the GPUs (topology generate --node).
  std::vector<std::vector<std::string>> device_classes;
  // The devices' own rows, where printed: each one's class to each other device ([d][e], "X" on the diagonal).
  std::optional<std::vector<std::vector<std::string>>> device_pair_classes;
  std::vector<std::string> notes;
};

struct SmiP2pOutput {
  std::size_t line = 0;
  std::size_t gpu_count = 0;
  std::string capability;  // "p", "r", "w", "n", "a" from the command line, or "" when not shown
  std::vector<std::vector<std::string>> status;  // OK, NS, CNS, GNS, TNS, U; diagonal X
};

// Everything found in one text.
struct ParsedText {
  SourceText src;
  std::vector<std::string> tools;  // in order of appearance
  std::optional<P2pTestOutput> p2p;
  std::optional<NvbandwidthOutput> nvbandwidth;
  std::optional<SmiTopoOutput> topo;
  std::vector<SmiP2pOutput> topo_p2p;  // one per `nvidia-smi topo -p2p <x>` table
  std::vector<NcclTestsRun> nccl_tests;  // measured collectives, not link measurements
  std::optional<NcclLogFacts> nccl_log;  // what NCCL's INFO lines say of the machine, where the text has them
  std::vector<std::string> notes;      // other tools' output recognised and ignored, ...

  void found(const std::string& tool);
};

inline constexpr const char* kP2pTool = "p2pBandwidthLatencyTest";
inline constexpr const char* kNvbandwidthTool = "nvbandwidth";
inline constexpr const char* kTopoTool = "nvidia-smi topo -m";
inline constexpr const char* kTopoP2pTool = "nvidia-smi topo -p2p";

// Each recogniser looks at line `pos`; when the line belongs to its tool it consumes it (and
// any table that follows), advances `pos` and returns true. Unrecognised lines are left alone.
bool consume_p2p_test(ParsedText& parsed, std::size_t& pos);
bool consume_nvbandwidth(ParsedText& parsed, std::size_t& pos);
bool consume_nvidia_smi_topo(ParsedText& parsed, std::size_t& pos);

// Every nccl-tests run of a text (a pass of its own: its lines belong to no other tool).
std::vector<NcclTestsRun> scan_nccl_tests(const SourceText& src);

// Checks after the whole text was read (e.g. connectivity from the CAN/CANNOT lines).
void finish_p2p_test(ParsedText& parsed);

// ---------------------------------------------------------------------------------------
// What one tool contributes to a MatrixForm, in SI units and our convention (row = sender).

struct ToolMeasurements {
  std::string tool;
  MeasurementSet main;
  std::optional<std::vector<double>> host_to_device_Bps;
  std::optional<std::vector<double>> device_to_host_Bps;
  std::optional<std::vector<double>> device_local_Bps;
  std::map<std::string, MeasurementSet> others;
  // Flows measured at once (nvbandwidth's all_to_one_* / one_to_all_*), GPU ids gpu0, gpu1, ...
  std::vector<ConcurrentProbe> concurrent_probes;
  // Set when the bandwidth matrix lacks a GPU pair: the complete InputError message.
  std::optional<std::string> missing_pair_error;
  // Set when the tool's output holds no usable GPU-to-GPU bandwidth table: why.
  std::optional<std::string> no_bandwidth_reason;
  std::vector<std::string> notes;
};

// The P2P=Enabled tables (or P2P=Disabled when `p2p_enabled` is false) become `main`; the
// other variant goes to others["p2p_disabled"] (or ["p2p_enabled"]).
ToolMeasurements p2p_test_measurements(const ParsedText& parsed, bool p2p_enabled);
// Picks nvbandwidth's test cases (write CE > read CE > write SM > read SM, ...).
ToolMeasurements nvbandwidth_measurements(const ParsedText& parsed);

}  // namespace gradsync::models::importers
