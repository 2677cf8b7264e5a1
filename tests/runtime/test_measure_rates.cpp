// What gradsync-run measure makes of a probe's time: the bandwidth term without the latency
// the probe also paid (the models add the latency back once per transfer).
#include <gtest/gtest.h>

#include "runtime/measure.h"

#include <vector>

using gradsync::runtime::rate_without_latency;

TEST(MeasureRates, APairProbeLeavesItsLatencyOut) {
  // 4 MiB in 800 us, 75 us of it latency: 4 MiB / 725 us.
  const double bytes = 4 << 20;
  EXPECT_DOUBLE_EQ(rate_without_latency(bytes, bytes / 800e-6, 75e-6), bytes / 725e-6);
  // Both directions at once: twice the bytes, one latency.
  EXPECT_DOUBLE_EQ(rate_without_latency(2 * bytes, 2 * bytes / 800e-6, 75e-6), 2 * bytes / 725e-6);
  // Latency + bytes / the result gives the probe's time back.
  const double rate = rate_without_latency(bytes, bytes / 170e-3, 15e-6);
  EXPECT_NEAR(15e-6 + bytes / rate, 170e-3, 1e-12);
  // No latency measured, or a probe no longer than it: the rate as it was.
  EXPECT_DOUBLE_EQ(rate_without_latency(bytes, 5e9, 0), 5e9);
  EXPECT_DOUBLE_EQ(rate_without_latency(8, 8 / 10e-6, 20e-6), 8 / 10e-6);
}

// A busy machine delays every probe by a scheduler tick or two while the ranks wait to be
// scheduled. Made up of what the emulated 11.92 MB/s link showed beside two busy processes on
// two cores (single 32 KiB probes took 7-15 ms instead of 2.75): a pass's single probe and its
// stream of 16 pay delays alike (here the same tick, or one tick apart in one pass in four),
// plus a 9 KB frame the token bucket lets through at once and 20 us of latency; the difference
// leaves them out.
TEST(MeasureRates, AStreamAgainstASingleProbeLeavesABusyMachinesDelaysOut) {
  using gradsync::runtime::rate_from_streams;
  const double bytes = 32768, rate = 11.92e6, burst = 9000 / rate, latency = 20e-6, tick = 4e-3;
  std::vector<double> single, stream;
  for (int pass = 0; pass < 8; ++pass) {
    const double delay = (1 + pass % 3) * tick;  // 4, 8 or 12 ms
    single.push_back(delay + latency + bytes / rate - burst);
    stream.push_back(delay + (pass % 4 == 3 ? tick : 0) + latency + 16 * bytes / rate - burst);
  }
  // Read as single probes, the link looks about a third as fast as it is.
  EXPECT_LT(bytes / single[1], 0.3 * rate);
  const auto r = rate_from_streams(bytes, 16, single, stream);
  ASSERT_TRUE(r);
  EXPECT_NEAR(r->rate_Bps / rate, 1.0, 1e-9);
  // What every single probe paid beside its bytes: the median delay, the latency, less the burst.
  EXPECT_NEAR(r->overhead_s, 8e-3 + latency - burst, 1e-9);
  // A stream no longer than its single probe tells no rate; nor does a single message.
  EXPECT_FALSE(rate_from_streams(bytes, 16, {5e-3, 6e-3}, {5e-3, 5.5e-3}));
  EXPECT_FALSE(rate_from_streams(bytes, 1, single, stream));
  EXPECT_FALSE(rate_from_streams(bytes, 16, {}, {}));
}

TEST(MeasureRates, AProbeOnABusyPairLeavesThePairsOverheadOut) {
  using gradsync::runtime::rate_without_overhead;
  // Both ways at once, 2 x 32 KiB in 14 ms of which 8 ms the pair's overhead: 64 KiB / 6 ms.
  EXPECT_DOUBLE_EQ(rate_without_overhead(65536, 14e-3, 8e-3, 30e6), 65536 / 6e-3);
  // Never above what the pair carries alone, nor from an overhead as long as the probe.
  EXPECT_DOUBLE_EQ(rate_without_overhead(65536, 9e-3, 8e-3, 20e6), 20e6);
  EXPECT_DOUBLE_EQ(rate_without_overhead(65536, 7e-3, 8e-3, 20e6), 20e6);
}

// Latency as lockstep rounds meet it: of 4 ranks, the pair (0, 1) is shift 1 one way and shift 3
// the other, (0, 2) shift 2 both ways; a pair takes the larger of its two shifts' rounds where
// that is above its ping-pong's, and the matrix stays symmetric.
TEST(MeasureRates, APairsLatencyIsTheLargerOfItsPingPongAndItsShiftsRounds) {
  using gradsync::runtime::raise_to_rounds;
  const std::size_t n = 4;
  std::vector<double> latency(n * n, 0.0);
  const auto set = [&](std::size_t i, std::size_t j, double v) { latency[i * n + j] = latency[j * n + i] = v; };
  set(0, 1, 16e-6);
  set(1, 2, 16e-6);
  set(2, 3, 16e-6);
  set(0, 3, 90e-6);  // a slow pair: its ping-pong stands
  set(0, 2, 30e-6);
  set(1, 3, 30e-6);
  const std::vector<double> rounds = {0, 40e-6, 65e-6, 50e-6};
  EXPECT_EQ(raise_to_rounds(latency, n, rounds), 5);
  for (auto [i, j] : std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {1, 2}, {2, 3}}) {
    EXPECT_DOUBLE_EQ(latency[i * n + j], 50e-6) << i << "-" << j;  // shift 1 or 3: the larger, 3's
    EXPECT_DOUBLE_EQ(latency[j * n + i], 50e-6) << j << "-" << i;
  }
  EXPECT_DOUBLE_EQ(latency[0 * n + 3], 90e-6);
  EXPECT_DOUBLE_EQ(latency[3 * n + 0], 90e-6);
  EXPECT_DOUBLE_EQ(latency[0 * n + 2], 65e-6);
  EXPECT_DOUBLE_EQ(latency[3 * n + 1], 65e-6);
  // Rounds no slower than the ping-pongs (ranks with cores of their own): nothing changes.
  const std::vector<double> before = latency;
  EXPECT_EQ(raise_to_rounds(latency, n, {0, 10e-6, 10e-6, 10e-6}), 0);
  EXPECT_EQ(latency, before);
  // Two ranks: one shift, both ways.
  std::vector<double> two = {0, 16e-6, 16e-6, 0};
  EXPECT_EQ(raise_to_rounds(two, 2, {0, 20e-6}), 1);
  EXPECT_DOUBLE_EQ(two[1], 20e-6);
  EXPECT_DOUBLE_EQ(two[2], 20e-6);
}
