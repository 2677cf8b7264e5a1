#include "models/support/units.h"

#include <cmath>
#include <cstdlib>

#include "models/support/error.h"
#include "models/support/format.h"

namespace gradsync::models {

double parse_bytes(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit(end ? end : "");
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KiB") scale = 1024.0;
  else if (unit == "M" || unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "kB" || unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  if (text.empty() || end == text.c_str() || scale == 0 || !std::isfinite(v) || v < 0) {
    throw InputError(what + " \"" + text +
                     "\": expected a size in bytes, optionally with a unit: B, K or KiB, M or MiB, G or GiB (powers of 2), "
                     "kB, MB, GB (powers of 10), e.g. 64MiB");
  }
  const double bytes = v * scale;
  if (bytes > kMaxBytes) throw InputError(what + " \"" + text + "\": expected a size of at most 1 PiB (1125899906842624 bytes)");
  // Whole bytes ("1.5KiB" is 1536 bytes; "1.5" is not a size).
  const double whole = std::round(bytes);
  if (std::fabs(bytes - whole) > 1e-6 * std::max(1.0, bytes)) {
    throw InputError(what + " \"" + text + "\": " + format_fixed(bytes, 3) + " bytes; expected a whole number of bytes");
  }
  return whole;
}

}  // namespace gradsync::models
