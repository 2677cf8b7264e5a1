// Uniform topologies the executors are compared on (models/uniform_topologies.h).
#pragma once

#include "models/uniform_topologies.h"

namespace test_topologies {

// Every GPU pair joined by its own link.
inline gradsync::models::Topology full_mesh(int n, double GBps = 10, double latency_us = 4) {
  return gradsync::models::mesh_topology("mesh", n, [&](int, int) { return gradsync::models::UniformLink{GBps, latency_us}; });
}

// N GPUs and host memory, each on its own link to one switch (pair latency `latency_us`).
inline gradsync::models::Topology star(int n, double GBps = 10, double latency_us = 4) {
  gradsync::models::StarSpec s;
  s.gpus = n;
  s.hub_id = "sw";
  s.gpu_link = {GBps, latency_us / 2};
  s.host = gradsync::models::UniformLink{GBps, latency_us / 2};
  return gradsync::models::star_topology(s);
}

}  // namespace test_topologies
