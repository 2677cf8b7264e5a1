// Numbers as gradsync prints them (tables, notes, messages), in one place. Formatting is
// fmt's (Debian's libfmt, header-only here): printf's conversions without its buffers.
#pragma once

#include <string>

namespace gradsync::models {

// A number as printf's %.<digits>g writes it: "1e+06", "0.5"; 17 digits give back the same double.
std::string number_text(double v, int digits = 6);
// printf's %.<decimals>f: "3.14".
std::string format_fixed(double value, int decimals);
// "12.3 us", "4.56 ms", "1.23 s", "1242.6 s"; 0 is "0".
std::string format_seconds(double seconds);
// "418.7 MB": B, kB, MB (one decimal), GB (two), powers of 10 as nccl-tests and nvbandwidth count.
std::string format_bytes(double bytes);
// "4.46 GB/s" from bytes per second (three significant digits).
std::string format_rate(double bytes_per_second);
// "4.46 GB/s" with a fixed number of decimals (tables of links).
std::string format_GBps(double bytes_per_second, int decimals = 2);
// A share as a percentage: 0.123 -> "12.3 %" ("+12.3 %" with `sign`).
std::string format_percent(double share, int decimals = 1, bool sign = false);

}  // namespace gradsync::models
