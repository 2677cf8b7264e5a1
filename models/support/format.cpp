#include "models/support/format.h"

#include <cmath>

#include <fmt/format.h>

namespace gradsync::models {

std::string number_text(double v, int digits) { return fmt::format("{:.{}g}", v, digits); }

std::string format_fixed(double value, int decimals) { return fmt::format("{:.{}f}", value, decimals); }

std::string format_seconds(double s) {
  if (s == 0) return "0";
  const double a = std::fabs(s);
  if (a < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (a < 1) return fmt::format("{:.2f} ms", s * 1e3);
  if (a < 100) return fmt::format("{:.3f} s", s);
  return fmt::format("{:.1f} s", s);
}

std::string format_bytes(double bytes) {
  if (bytes < 1e3) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1e6) return fmt::format("{:.1f} kB", bytes / 1e3);
  if (bytes < 1e9) return fmt::format("{:.1f} MB", bytes / 1e6);
  return fmt::format("{:.2f} GB", bytes / 1e9);
}

std::string format_rate(double bytes_per_second) { return fmt::format("{:.3g} GB/s", bytes_per_second / 1e9); }

std::string format_GBps(double bytes_per_second, int decimals) { return fmt::format("{:.{}f} GB/s", bytes_per_second / 1e9, decimals); }

std::string format_percent(double share, int decimals, bool sign) {
  return sign ? fmt::format("{:+.{}f} %", 100 * share, decimals) : fmt::format("{:.{}f} %", 100 * share, decimals);
}

}  // namespace gradsync::models
