// Uniform topologies the executors are compared on (built from JSON, as users write them).
#pragma once

#include <sstream>
#include <string>

#include "models/topology_io.h"

namespace test_topologies {

// Every GPU pair joined by its own link.
inline gradsync::models::Topology full_mesh(int n, double GBps = 10, double latency_us = 4) {
  std::ostringstream j;
  j << R"({"name": "mesh", "nodes": [)";
  for (int i = 0; i < n; ++i) j << (i ? "," : "") << R"({"id": "gpu)" << i << R"(", "kind": "gpu"})";
  j << R"(], "links": [)";
  bool first = true;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      j << (first ? "" : ",") << R"({"a": "gpu)" << a << R"(", "b": "gpu)" << b << R"(", "bandwidth_GBps": )" << GBps
        << R"(, "latency_us": )" << latency_us << "}";
      first = false;
    }
  }
  j << "]}";
  return std::move(gradsync::models::load_topology(gradsync::models::JsonView::parse(j.str(), "mesh.json")).topology);
}

// N GPUs and host memory, each on its own link to one switch (pair latency `latency_us`).
inline gradsync::models::Topology star(int n, double GBps = 10, double latency_us = 4) {
  std::ostringstream j;
  j << R"({"name": "star", "nodes": [{"id": "sw", "kind": "pcie_switch"}, {"id": "host", "kind": "host_memory"})";
  for (int i = 0; i < n; ++i) j << R"(, {"id": "gpu)" << i << R"(", "kind": "gpu"})";
  j << R"(], "links": [{"a": "host", "b": "sw", "bandwidth_GBps": )" << GBps << R"(, "latency_us": )" << latency_us / 2 << "}";
  for (int i = 0; i < n; ++i) {
    j << R"(, {"a": "gpu)" << i << R"(", "b": "sw", "bandwidth_GBps": )" << GBps << R"(, "latency_us": )" << latency_us / 2
      << "}";
  }
  j << "]}";
  return std::move(gradsync::models::load_topology(gradsync::models::JsonView::parse(j.str(), "star.json")).topology);
}

}  // namespace test_topologies
