// Unit conversions. Internally everything is SI: bytes, seconds, bytes per second.
// File formats and tables use the units named in their keys (GB/s, us) — GB is 1e9 bytes,
// as CUDA samples, nvbandwidth and nccl-tests report it.
#pragma once

#include <string>

namespace gradsync::models {

inline constexpr double kGB = 1e9;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kUs = 1e-6;

// What inputs may say (checked when files and flags are read, so that a unit mistake — bytes/s
// written as GB/s, seconds as us — or an overflowing figure is an error rather than a nonsense
// result): bandwidths from 1 kB/s to 1 PB/s, latencies up to 1000 s, sizes up to 1 PiB (whole
// bytes, exact in a double).
inline constexpr double kMinBandwidth_GBps = 1e-6;
inline constexpr double kMaxBandwidth_GBps = 1e6;
inline constexpr double kMaxLatency_us = 1e9;
inline constexpr double kMaxBytes = 1125899906842624.0;  // 2^50 = 1 PiB
// Sampling (models/strategies/sampling.h) keeps a few bytes per row of a layer and draws every word of
// a minibatch: a vocabulary of at most 10^7 rows, minibatches of at most 10^6 words (more
// could only hang a run: 4.9e7 words took over 10 s, found by fuzzing).
inline constexpr long kMaxSampledRows = 10'000'000;
inline constexpr long kMaxSampledWords = 1'000'000;

// A size in bytes, as every flag of both front ends takes it (--size, -b, -e, --sizes,
// --measure-size): a number (integer, decimal or with an exponent) and an optional unit —
// B; K or KiB, M or MiB, G or GiB (powers of 2, as nccl-tests' -b and -e take them); kB or
// KB, MB, GB (powers of 10) — making a whole number of bytes, at most 1 PiB. Otherwise an
// InputError: `what` "TEXT": what was expected.
double parse_bytes(const std::string& text, const std::string& what);

inline constexpr double GBps_to_Bps(double v) { return v * kGB; }
inline constexpr double Bps_to_GBps(double v) { return v / kGB; }
inline constexpr double us_to_s(double v) { return v * kUs; }
inline constexpr double s_to_us(double v) { return v / kUs; }

}  // namespace gradsync::models
