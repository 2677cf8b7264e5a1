// Strict reading of JSON input files. A JsonView is a value together with the file it
// came from and its JSON pointer, so that every complaint can say exactly where:
//
//   topologies/x.json: /links/3/bandwidth_GBps: got -1; expected a positive number
//
// Objects are checked against the keys a reader knows; an unknown key is an error with
// a "did you mean" suggestion (a misspelt key must never be silently ignored).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradsync::models {

using json = nlohmann::json;
// Documents gradsync writes keep their keys in a readable order.
using ordered_json = nlohmann::ordered_json;

class JsonView {
 public:
  // Parses `text` (named `source` in messages). Syntax errors and numbers too large for a
  // double report line and column; a key given twice in one object is an error (JSON
  // readers would silently keep one of the two values).
  static JsonView parse(const std::string& text, const std::string& source);
  // Reads and parses a file; a missing or unreadable file is an InputError.
  static JsonView load_file(const std::string& path);
  // Wraps an existing value (e.g. built in code).
  static JsonView wrap(json value, const std::string& source);
  static JsonView wrap(const ordered_json& value, const std::string& source);

  const json& value() const { return *value_; }
  const std::string& source() const { return *source_; }
  const std::string& pointer() const { return pointer_; }
  // "FILE: /a/b" (or "FILE" at the root).
  std::string where() const;

  // Throws InputError: "FILE: /path: got VALUE; expected WHAT".
  [[noreturn]] void fail(const std::string& expected) const;
  // Throws InputError with a free-form message about this place: "FILE: /path: MESSAGE".
  [[noreturn]] void fail_message(const std::string& message) const;

  // --- objects ---
  // Requires an object whose keys are all in `allowed` (unknown keys are errors).
  void expect_object(const std::vector<std::string>& allowed) const;
  bool has(const std::string& key) const;  // present and not null
  JsonView at(const std::string& key) const;  // required member
  std::optional<JsonView> get(const std::string& key) const;  // absent or null -> nullopt

  // --- arrays ---
  std::vector<JsonView> items() const;  // requires an array
  std::vector<JsonView> items(std::size_t expected_size, const std::string& what) const;

  // --- scalars ---
  bool is_null() const { return value_->is_null(); }
  bool is_object() const { return value_->is_object(); }
  std::string as_string() const;
  bool as_bool() const;
  double as_number() const;  // finite number
  double as_positive() const;  // finite, > 0
  double as_non_negative() const;  // finite, >= 0
  std::int64_t as_integer() const;
  std::int64_t as_integer_at_least(std::int64_t minimum) const;
  std::int64_t as_integer_in(std::int64_t minimum, std::int64_t maximum) const;  // "an integer between MIN and MAX"
  // Finite, minimum <= v <= maximum; `what` names the quantity: "expected WHAT between MIN and MAX".
  double as_number_in(double minimum, double maximum, const std::string& what) const;

  JsonView child(const json& value, const std::string& token) const;

 private:
  JsonView(std::shared_ptr<const json> root, const json* value, std::shared_ptr<const std::string> source,
           std::string pointer)
      : root_(std::move(root)), value_(value), source_(std::move(source)), pointer_(std::move(pointer)) {}

  std::shared_ptr<const json> root_;  // keeps the document alive
  const json* value_;
  std::shared_ptr<const std::string> source_;
  std::string pointer_;
};

// Unit-checked readers shared by every file that holds link figures: a bandwidth in GB/s
// (> 0, and between kMinBandwidth_GBps and kMaxBandwidth_GBps so that a unit mistake is
// caught) and a latency in us (>= 0, at most kMaxLatency_us); see models/support/units.h.
double read_bandwidth_GBps(const JsonView& v);
double read_latency_us(const JsonView& v);

// A short rendering of a JSON value for messages (long values are cut).
std::string describe_value(const json& value);

// Indented JSON in which arrays of numbers stay on one line (matrices print one row per line).
std::string pretty_json(const ordered_json& value);

// Writes `text` to `path` atomically (temporary file in the same folder, then rename),
// so that an interrupted write never leaves a half-written file; missing folders are made
// first. "-" writes to stdout.
void write_file_atomically(const std::string& path, const std::string& text);
// Checks, before any work, that a file can be written at `path` ("" and "-" always can): it is
// not a folder, and its folder exists or can be made (the nearest existing one is a folder);
// nothing is made yet. Otherwise an InputError naming `flag` and the path.
void check_output_path(const std::string& path, const std::string& flag);

}  // namespace gradsync::models
