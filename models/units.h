// Unit conversions. Internally everything is SI: bytes, seconds, bytes per second.
// File formats and tables use the units named in their keys (GB/s, us) — GB is 1e9 bytes,
// as CUDA samples, nvbandwidth and nccl-tests report it.
#pragma once

namespace gradsync::models {

inline constexpr double kGB = 1e9;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kUs = 1e-6;

inline constexpr double GBps_to_Bps(double v) { return v * kGB; }
inline constexpr double Bps_to_GBps(double v) { return v / kGB; }
inline constexpr double us_to_s(double v) { return v * kUs; }
inline constexpr double s_to_us(double v) { return v / kUs; }

}  // namespace gradsync::models
