#include "models/support/json_input.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <unistd.h>

#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::models {
namespace {

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// Line and column (1-based) of a byte offset.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number";
    default: return "a value";
  }
}

}  // namespace

std::string describe_value(const json& value) {
  std::string text;
  if (value.is_object()) {
    text = "an object";
  } else if (value.is_array()) {
    text = "an array of " + std::to_string(value.size());
  } else {
    text = value.dump();
  }
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

namespace {

// Follows the parser through the document to name the place of a key given twice in one
// object (nlohmann's reader keeps the last value silently). One frame per open object or
// array: its keys so far, or the index of the next element.
class DuplicateKeyCheck {
 public:
  struct Duplicate {
    std::string pointer, key;
  };

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames_.push_back(Frame{event == json::parse_event_t::array_start, 0, {}, {}});
        break;
      case json::parse_event_t::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) throw Duplicate{pointer() + "/" + escape_pointer_token(f.key), f.key};
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        element_done();
        break;
      case json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool array;
    std::size_t index;
    std::string key;
    std::set<std::string> keys;
  };

  void element_done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  // The pointer of the innermost open object or array.
  std::string pointer() const {
    std::string out;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      out += "/" + (frames_[i].array ? std::to_string(frames_[i].index) : escape_pointer_token(frames_[i].key));
    }
    return out;
  }

  std::vector<Frame> frames_;
};

}  // namespace

JsonView JsonView::parse(const std::string& text, const std::string& source) {
  auto src = std::make_shared<const std::string>(source);
  json parsed;
  try {
    parsed = json::parse(text, DuplicateKeyCheck());
  } catch (const DuplicateKeyCheck::Duplicate& d) {
    throw InputError(source + ": " + d.pointer + ": the key '" + d.key +
                     "' is given twice in one object; expected each key once");
  } catch (const json::out_of_range& e) {
    // 406: a number that does not fit in a double ("1e400"). The message names the token;
    // its first occurrence in the text gives the line.
    std::string what = e.what();
    const auto open = what.find('\''), close = what.rfind('\'');
    const std::string token = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    const std::size_t at = token.empty() ? std::string::npos : text.find(token);
    std::ostringstream msg;
    msg << source;
    if (at != std::string::npos) {
      const auto [line, column] = line_column(text, at);
      msg << ":" << line << ":" << column;
    }
    msg << ": " << (token.empty() ? std::string("a number") : "the number " + token)
        << " is too large for a double; expected a finite number (at most about 1.8e308)";
    throw InputError(msg.str());
  } catch (const json::parse_error& e) {
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line L, column C: ..."
    std::string what = e.what();
    const auto colon = what.find("] ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    // Drop nlohmann's own "parse error at line L, column C: " — the position is printed in front.
    const auto detail = what.find(": ");
    if (what.rfind("parse error", 0) == 0 && detail != std::string::npos) what = what.substr(detail + 2);
    const auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    std::ostringstream msg;
    msg << source << ":" << line << ":" << column << ": not valid JSON (" << what << ")";
    throw InputError(msg.str());
  }
  auto root = std::make_shared<const json>(std::move(parsed));
  const json* ptr = root.get();
  return JsonView(std::move(root), ptr, std::move(src), "");
}

JsonView JsonView::load_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a folder, expected a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot be read");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse(buffer.str(), path);
}

JsonView JsonView::wrap(json value, const std::string& source) {
  auto root = std::make_shared<const json>(std::move(value));
  const json* ptr = root.get();
  return JsonView(std::move(root), ptr, std::make_shared<const std::string>(source), "");
}

JsonView JsonView::wrap(const ordered_json& value, const std::string& source) {
  return wrap(json::parse(value.dump()), source);
}

namespace {
void pretty(const ordered_json& v, int indent, std::string& out) {
  const std::string pad(indent, ' '), inner(indent + 2, ' ');
  if (v.is_object()) {
    if (v.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    std::size_t i = 0;
    for (const auto& [key, member] : v.items()) {
      out += inner + ordered_json(key).dump() + ": ";
      pretty(member, indent + 2, out);
      out += (++i < v.size()) ? ",\n" : "\n";
    }
    out += pad + "}";
  } else if (v.is_array()) {
    const bool flat = std::all_of(v.begin(), v.end(), [](const ordered_json& x) { return x.is_primitive(); });
    if (flat) {
      out += v.dump();
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < v.size(); ++i) {
      out += inner;
      pretty(v[i], indent + 2, out);
      out += (i + 1 < v.size()) ? ",\n" : "\n";
    }
    out += pad + "]";
  } else {
    out += v.dump();
  }
}
}  // namespace

std::string pretty_json(const ordered_json& value) {
  std::string out;
  pretty(value, 0, out);
  return out + "\n";
}

std::string JsonView::where() const { return pointer_.empty() ? *source_ : *source_ + ": " + pointer_; }

void JsonView::fail(const std::string& expected) const {
  throw InputError(where() + ": got " + describe_value(*value_) + "; expected " + expected);
}

void JsonView::fail_message(const std::string& message) const { throw InputError(where() + ": " + message); }

JsonView JsonView::child(const json& value, const std::string& token) const {
  return JsonView(root_, &value, source_, pointer_ + "/" + escape_pointer_token(token));
}

void JsonView::expect_object(const std::vector<std::string>& allowed) const {
  if (!value_->is_object()) fail("an object with keys: " + join(allowed));
  for (const auto& [key, member] : value_->items()) {
    bool known = false;
    for (const auto& k : allowed) known = known || (k == key);
    if (!known) {
      throw InputError(child(member, key).where() + ": unknown key '" + key + "'" + did_you_mean(key, allowed) +
                       "; valid keys here: " + join(allowed));
    }
  }
}

bool JsonView::has(const std::string& key) const {
  return value_->is_object() && value_->contains(key) && !(*value_)[key].is_null();
}

JsonView JsonView::at(const std::string& key) const {
  if (!value_->is_object()) fail("an object");
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) {
    throw InputError(where() + (pointer_.empty() ? ": " : " ") + "is missing the required key '" + key + "'");
  }
  return child(*it, key);
}

std::optional<JsonView> JsonView::get(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return child(value_->at(key), key);
}

std::vector<JsonView> JsonView::items() const {
  if (!value_->is_array()) fail("an array");
  std::vector<JsonView> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) out.push_back(child((*value_)[i], std::to_string(i)));
  return out;
}

std::vector<JsonView> JsonView::items(std::size_t expected_size, const std::string& what) const {
  if (!value_->is_array() || value_->size() != expected_size) {
    fail("an array of " + std::to_string(expected_size) + " " + what);
  }
  return items();
}

std::string JsonView::as_string() const {
  if (!value_->is_string()) fail("a string");
  return value_->get<std::string>();
}

bool JsonView::as_bool() const {
  if (!value_->is_boolean()) fail("true or false");
  return value_->get<bool>();
}

double JsonView::as_number() const {
  if (!value_->is_number()) fail("a number, not " + type_name(*value_));
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("a finite number");
  return v;
}

double JsonView::as_positive() const {
  const double v = as_number();
  if (!(v > 0)) fail("a number greater than 0");
  return v;
}

double JsonView::as_non_negative() const {
  const double v = as_number();
  if (v < 0) fail("a number of at least 0");
  return v;
}

std::int64_t JsonView::as_integer() const {
  if (value_->is_number_integer() || value_->is_number_unsigned()) {
    if (value_->is_number_unsigned() && value_->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      fail("an integer that fits in 64 bits");
    }
    return value_->get<std::int64_t>();
  }
  if (value_->is_number_float()) {
    const double v = value_->get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15) return static_cast<std::int64_t>(v);
  }
  fail("an integer");
}

std::int64_t JsonView::as_integer_at_least(std::int64_t minimum) const {
  const std::int64_t v = as_integer();
  if (v < minimum) fail("an integer of at least " + std::to_string(minimum));
  return v;
}

std::int64_t JsonView::as_integer_in(std::int64_t minimum, std::int64_t maximum) const {
  const std::string expected = "an integer between " + std::to_string(minimum) + " and " + std::to_string(maximum);
  if (!value_->is_number()) fail(expected);
  if (value_->is_number_float()) {
    const double v = value_->get<double>();
    if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(minimum) || v > static_cast<double>(maximum)) {
      fail(expected);
    }
  } else if (value_->is_number_unsigned() && value_->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    fail(expected);
  }
  const std::int64_t v = as_integer();
  if (v < minimum || v > maximum) fail(expected);
  return v;
}


double JsonView::as_number_in(double minimum, double maximum, const std::string& what) const {
  const double v = as_number();
  if (!(v >= minimum && v <= maximum)) fail(what + " between " + number_text(minimum) + " and " + number_text(maximum));
  return v;
}

double read_bandwidth_GBps(const JsonView& v) {
  const double x = v.as_positive();
  if (x < kMinBandwidth_GBps || x > kMaxBandwidth_GBps) {
    v.fail("a bandwidth in GB/s between " + number_text(kMinBandwidth_GBps) + " (1 kB/s) and " +
           number_text(kMaxBandwidth_GBps) + " (1 PB/s)");
  }
  return x;
}

double read_latency_us(const JsonView& v) {
  const double x = v.as_non_negative();
  if (x > kMaxLatency_us) v.fail("a latency in us of at most " + number_text(kMaxLatency_us) + " (1000 s)");
  return x;
}

void check_output_path(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  if (path.empty() || path == "-") return;
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw InputError(flag + " " + path + ": is a folder; expected a file name");
  // Missing folders are made when the file is written; the nearest one that exists must be a folder.
  fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::path wanted = folder;
  while (!fs::exists(folder, ec) && folder.has_parent_path() && folder.parent_path() != folder) folder = folder.parent_path();
  if (fs::exists(folder, ec) && !fs::is_directory(folder, ec)) {
    throw InputError(flag + " " + path + ": cannot make the folder " + wanted.string() + ": " + folder.string() + " is a file");
  }
}

void write_file_atomically(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text << std::flush;
    return;
  }
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    fs::create_directories(folder, ec);
    if (ec || !fs::is_directory(folder)) throw InputError(path + ": cannot make the folder " + folder.string() + ": " + ec.message());
  }
  // A target that exists and is not a file (/dev/null, a terminal, a named pipe) is written in
  // place: a rename would put a file where the device was (as root, /dev/null itself).
  if (fs::exists(target, ec) && !fs::is_regular_file(target, ec) && !fs::is_directory(target, ec)) {
    std::ofstream out(target, std::ios::binary);
    if (!out) throw InputError(path + ": cannot be written");
    out << text;
    out.flush();
    if (!out) throw InputError(path + ": writing failed");
    return;
  }
  const fs::path temp = folder / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write in " + folder.string());
    out << text;
    out.flush();
    if (!out) {
      out.close();
      fs::remove(temp, ec);
      throw InputError(path + ": writing failed (disk full?)");
    }
  }
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw InputError(path + ": cannot be replaced: " + ec.message());
  }
}

}  // namespace gradsync::models
