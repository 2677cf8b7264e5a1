#include "models/workload/pytorch_listing.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/units.h"
#include "models/topology/importers/parse_util.h"

namespace gradsync::models {

namespace {

constexpr const char* kExample = "encoder.layer.0.attention.self.query.weight torch.Size([1024, 1024])";

struct Parameter {
  std::string name;
  std::vector<std::int64_t> shape;
  int dtype_bytes = 0;  // 0: not printed
  bool trainable = true;
  std::int64_t elements = 1;
};

std::string trim(const std::string& s) { return std::string(importers::trim(s)); }

int bytes_of_dtype(const std::string& dtype) {
  static const std::map<std::string, int> sizes = {
      {"float32", 4}, {"float", 4},          {"float16", 2},      {"half", 2},           {"bfloat16", 2},
      {"float64", 8}, {"double", 8},         {"float8_e4m3fn", 1}, {"float8_e5m2", 1}, {"float8_e4m3fnuz", 1},
      {"float8_e5m2fnuz", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

Parameter parse_line(const std::string& line, const std::string& where) {
  auto fail = [&](const std::string& why) -> void {
    throw InputError(where + ": " + why + "; expected NAME SHAPE as PyTorch prints named_parameters(), e.g. `" + kExample +
                     "`; got `" + line + "`");
  };
  Parameter p;
  std::string rest = trim(line);
  const auto space = rest.find_first_of(" \t");
  if (space == std::string::npos) fail("no shape after the name");
  p.name = rest.substr(0, space);
  while (!p.name.empty() && (p.name.back() == ':' || p.name.back() == ',')) p.name.pop_back();
  if (p.name.empty()) fail("no parameter name");
  rest = rest.substr(space);
  // The shape: torch.Size([a, b]), [a, b] or (a, b).
  static const std::regex shape_re(R"(torch\.Size\(\[([^\]]*)\]\)|\[([^\]]*)\]|\(([^)]*)\))");
  std::smatch m;
  if (!std::regex_search(rest, m, shape_re)) fail("no shape (torch.Size([...]), [...] or (...))");
  const std::string dims = m[1].matched ? m[1].str() : m[2].matched ? m[2].str() : m[3].str();
  rest = m.prefix().str() + " " + m.suffix().str();
  std::string dim;
  std::vector<std::string> parts;
  for (char c : dims + ",") {
    if (c == ',') {
      parts.push_back(trim(dim));
      dim.clear();
    } else {
      dim += c;
    }
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // (5,) and []
  for (const std::string& d : parts) {
    if (d.empty() || d.size() > 15 || !std::all_of(d.begin(), d.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
      fail("a dimension \"" + d + "\" that is not a whole number");
    }
    p.shape.push_back(std::stoll(d));
  }
  // What may stand beside it: the dtype, requires_grad.
  static const std::regex word_re(R"(\S+)");
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), word_re); it != std::sregex_iterator(); ++it) {
    std::string w = it->str();
    while (!w.empty() && (w.back() == ',' || w.back() == ':')) w.pop_back();
    if (w.empty()) continue;
    if (w.rfind("dtype=", 0) == 0) w = w.substr(6);
    if (w.rfind("requires_grad=", 0) == 0) w = w.substr(14);
    if (w == "True" || w == "False") {
      p.trainable = w == "True";
    } else if (w.rfind("torch.", 0) == 0) {
      p.dtype_bytes = bytes_of_dtype(w.substr(6));
      if (p.dtype_bytes == 0) fail("a dtype " + w + " that is not a floating-point type");
    } else {
      fail("\"" + w + "\" beside the shape");
    }
  }
  return p;
}

bool is_lookup(const std::string& module, const Parameter& p) {
  if (p.shape.size() != 2) return false;
  const std::string last = module.substr(module.rfind('.') == std::string::npos ? 0 : module.rfind('.') + 1);
  std::string lower;
  for (char c : last) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("embed") != std::string::npos || lower == "wte" || lower == "wpe";
}

}  // namespace

Workload workload_from_listing(const std::string& text, const std::string& source, const ListingOptions& o) {
  std::vector<std::pair<std::string, Parameter>> params;  // module, parameter
  std::map<int, int> dtype_counts;
  const importers::SourceText lines = importers::split_lines(text, source);
  importers::check_utf8(lines, "the parameter listing PyTorch prints (ASCII or UTF-8)");
  for (std::size_t i = 0; i < lines.lines.size(); ++i) {
    const std::string t = trim(lines.lines[i]);
    if (t.empty() || t[0] == '#') continue;
    const std::string where = lines.where(i);
    Parameter p = parse_line(t, where);
    const int bytes = o.dtype_bytes.value_or(p.dtype_bytes > 0 ? p.dtype_bytes : 4);
    double elements = 1;
    for (std::int64_t d : p.shape) elements *= static_cast<double>(d);
    if (elements * bytes > kMaxBytes) {
      throw InputError(where + ": " + p.name + " holds " + format_bytes(elements * bytes) + "; expected at most 1 PiB");
    }
    p.elements = static_cast<std::int64_t>(elements);
    if (o.tokens && p.shape.size() > 2) {
      throw InputError(where + ": " + p.name + " is a convolution's weight (" + std::to_string(p.shape.size()) +
                       " dimensions): its FLOPs depend on the feature maps, which a parameter listing does not show; give a "
                       "measured --compute-s without --tokens");
    }
    // Frozen parameters have no gradient, nor do empty ones (a dimension of 0, as PyTorch allows).
    if (!p.trainable || p.elements == 0) continue;
    ++dtype_counts[p.dtype_bytes];
    const auto dot = p.name.rfind('.');
    params.emplace_back(dot == std::string::npos ? p.name : p.name.substr(0, dot), p);
  }
  if (params.empty()) throw InputError(source + ": no trainable parameters listed; expected a line per parameter, e.g. `" + kExample + "`");

  Workload w;
  w.name = o.name.empty() ? std::filesystem::path(source).stem().string() : o.name;
  if (w.name.empty()) w.name = "model";
  // The workload's dtype: the option, else the dtype most parameters print, else fp32.
  int common = 4, most = 0;
  for (const auto& [bytes, count] : dtype_counts) {
    if (bytes > 0 && count > most) common = bytes, most = count;
  }
  w.dtype_bytes = o.dtype_bytes.value_or(common);
  w.minibatches_per_epoch = o.minibatches_per_epoch;
  std::map<std::string, int> seen;
  std::string current;
  for (const auto& [module, p] : params) {
    if (w.layers.empty() || module != current) {
      Layer l;
      const int n = ++seen[module];
      l.name = n == 1 ? module : module + "#" + std::to_string(n);
      w.layers.push_back(l);
      current = module;
    }
    Layer& l = w.layers.back();
    l.params += p.elements;
    if (!o.dtype_bytes && p.dtype_bytes > 0 && p.dtype_bytes != w.dtype_bytes) l.dtype_bytes = p.dtype_bytes;
    if (is_lookup(module, p)) {
      l.rows = p.shape[0];
    } else if (o.tokens) {
      // The dense rule: a weight used once per token, a multiply-add (2 FLOPs) forward.
      const double forward = 2.0 * static_cast<double>(p.elements) * static_cast<double>(*o.tokens);
      l.forward_flops += forward;
      l.backward_flops += 2.0 * forward;
    }
  }
  for (Layer& l : w.layers) {
    if (l.rows && l.params % *l.rows != 0) l.rows.reset();  // an embedding module that holds more than its table
  }
  w.samples_per_minibatch = o.tokens;
  w.compute_s_per_minibatch = o.compute_s;
  if (o.device_TFLOPS) w.device_TFLOPS = o.device_TFLOPS;
  w.description = "from the PyTorch parameter listing " + source + ": " + std::to_string(w.layers.size()) + " modules" +
                  (o.tokens ? ", FLOPs by the dense rule (2 per weight and token forward, twice that backward) over " +
                                  std::to_string(*o.tokens) + " tokens"
                            : std::string()) +
                  (o.compute_s ? ", a measured " + format_seconds(*o.compute_s) + " per minibatch" : std::string()) +
                  (o.device_TFLOPS ? " at " + format_fixed(*o.device_TFLOPS, 1) + " TFLOPS" : std::string());
  return w;
}

}  // namespace gradsync::models
