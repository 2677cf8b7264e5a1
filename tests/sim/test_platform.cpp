// The SimGrid platform has the model's routes, and a lone transfer under CM02 takes
// exactly latency + bytes / bottleneck bandwidth.
#include <gtest/gtest.h>

#include "models/support/process.h"
#include "models/topology/topology_io.h"
#include "sim/platform.h"
#include "sim/simulator.h"

using namespace gradsync;
namespace s4u = simgrid::s4u;

void body();

TEST(SimPlatform, RoutesAndLoneTransferMatchTheModel) {
  // SimGrid allows one engine per process: run in a child, as the simulator does.
  const std::string failures = gradsync::models::run_in_child([] {
    const int before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    body();
    const auto* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
    std::string text;
    for (int i = before; i < result->total_part_count(); ++i) text += result->GetTestPartResult(i).message();
    return text;
  }, "platform test");
  EXPECT_EQ(failures, "");
}

void body() {
  int argc = 1;
  char name[] = "test";
  char* argv[] = {name, nullptr};
  s4u::Engine engine(&argc, argv);
  sim::set_network_model(engine, "CM02");
  auto loaded = models::load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/pcie-8gpu-2switch.json");
  const auto& t = loaded.topology;
  const auto platform = sim::build_platform(t);
  const std::size_t g0 = *t.find("gpu0"), g5 = *t.find("gpu5");

  std::vector<s4u::Link*> links;
  double latency = 0;
  platform.host(g0)->route_to(platform.host(g5), links, &latency);
  ASSERT_EQ(links.size(), t.route(g0, g5).size());
  EXPECT_NEAR(latency, t.route_latency_s(g0, g5), 1e-15);
  double bottleneck = 1e300;
  for (auto* l : links) bottleneck = std::min(bottleneck, l->get_bandwidth());
  EXPECT_DOUBLE_EQ(bottleneck, t.route_bottleneck_Bps(g0, g5));

  const double bytes = 64e6;
  double arrived = -1;
  s4u::Actor::create("sender", platform.host(g0), [&] {
    s4u::Mailbox::by_name("box")->put(new double(1), static_cast<uint64_t>(bytes));
  });
  s4u::Actor::create("receiver", platform.host(g5), [&] {
    delete s4u::Mailbox::by_name("box")->get<double>();
    arrived = s4u::Engine::get_clock();
  });
  engine.run();
  EXPECT_NEAR(arrived, t.route_latency_s(g0, g5) + bytes / t.route_bottleneck_Bps(g0, g5), 1e-9);
}
