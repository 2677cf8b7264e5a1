// Bad input, loader by loader (issue 7, "Hardening"): every rule of the house as a table row.
// Each row takes an input that loads (checked first), breaks one thing, and asserts that the
// loader throws one InputError whose single-line message holds the exact pieces named in the
// row: the file, the JSON pointer or line, the offending value and what was expected.
//
// Loaders: topology JSON (graph form and matrix form, models/topology/topology_io.cpp and
// models/topology/matrix_form.cpp), workload JSON (models/workload/workload.cpp), experiment JSON and its plan
// (experiments/experiment.cpp), and the tool importers (models/topology/importers/):
// p2pBandwidthLatencyTest, nvbandwidth, nvidia-smi topo -m / -p2p.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>
#include <filesystem>
#include <iterator>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "experiments/experiment.h"
#include "models/support/error.h"
#include "models/topology/importers/import.h"
#include "models/support/json_input.h"
#include "models/executors/predict.h"
#include "models/strategies/strategy.h"
#include "models/topology/placement.h"
#include "models/topology/uniform_topologies.h"
#include "models/topology/topology_io.h"
#include "models/workload/workload.h"

using namespace gradsync;
using models::InputError;

namespace {

struct Case {
  std::string name;               // the rule the row breaks
  std::string input;              // the whole bad input
  std::vector<std::string> expected;  // exact substrings of the message
};

// The InputError's message, or a text that fails every expectation.
std::string error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not an InputError but: ") + e.what() + ")";
  }
  return "(no error: the input was accepted)";
}

// Runs every row through `load` and checks its message.
void check_table(const std::vector<Case>& table, const std::function<void(const std::string&)>& load,
                 const std::string& source) {
  for (const auto& c : table) {
    SCOPED_TRACE(c.name);
    const std::string message = error_of([&] { load(c.input); });
    EXPECT_EQ(message.rfind(source, 0), 0u) << "the message does not start with the file name " << source << ":\n" << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not a one-line message:\n" << message;
    for (const auto& part : c.expected) {
      EXPECT_NE(message.find(part), std::string::npos) << "missing: " << part << "\n--- got:\n" << message;
    }
  }
}

// `text` with the first `from` after position `at` replaced (the test fails when `from` is absent).
std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "the table's base input has no " << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// --- topology, graph form -----------------------------------------------------------------

const std::string kGraph =
    R"({"name": "t", "nodes": [{"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"}, {"id": "sw", "kind": "pcie_switch"}],)"
    R"( "links": [{"a": "gpu0", "b": "sw", "bandwidth_GBps": 5.96, "latency_us": 1.0, "duplex": "full"},)"
    R"( {"a": "gpu1", "b": "sw", "bandwidth_GBps": 4.46, "latency_us": 1.5}]})";

void load_topology_text(const std::string& text, const std::string& source) {
  models::load_topology(models::JsonView::parse(text, source));
}

TEST(BadInput, TopologyGraphForm) {
  const std::string g = kGraph;
  ASSERT_NO_THROW(load_topology_text(g, "topo.json"));
  const std::vector<Case> table = {
      {"unknown top-level key", replace(g, "\"links\"", "\"link\""),
       {"topo.json: /link: unknown key 'link' (did you mean 'links'?); valid keys here: name, description, nodes, links"}},
      {"unknown link key", replace(g, "\"latency_us\": 1.0", "\"latency_s\": 1.0"),
       {"topo.json: /links/0/latency_s: unknown key 'latency_s' (did you mean 'latency_us'?)"}},
      {"unknown node key", replace(g, "\"kind\": \"pcie_switch\"", "\"knd\": \"pcie_switch\""),
       {"topo.json: /nodes/2/knd: unknown key 'knd' (did you mean 'kind'?); valid keys here: id, kind"}},
      {"zero bandwidth", replace(g, "5.96", "0"), {"topo.json: /links/0/bandwidth_GBps: got 0; expected a number greater than 0"}},
      {"negative bandwidth", replace(g, "4.46", "-2"), {"topo.json: /links/1/bandwidth_GBps: got -2; expected a number greater than 0"}},
      {"bandwidth as a string", replace(g, "5.96", "\"5.96\""),
       {"topo.json: /links/0/bandwidth_GBps: got \"5.96\"; expected a number, not a string"}},
      {"bandwidth far too large (bytes/s given as GB/s)", replace(g, "5.96", "5.96e9"),
       {"topo.json: /links/0/bandwidth_GBps: got 5960000000.0; expected a bandwidth in GB/s between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)"}},
      {"bandwidth too small to route over", replace(g, "5.96", "1e-320"),
       {"topo.json: /links/0/bandwidth_GBps: got 1e-320; expected a bandwidth in GB/s between 1e-06"}},
      {"number beyond a double", replace(g, "5.96", "1e400"),
       {"topo.json:1:", "the number 1e400 is too large for a double; expected a finite number"}},
      {"NaN is not JSON", replace(g, "5.96", "NaN"), {"topo.json:1:", ": not valid JSON"}},
      {"negative latency", replace(g, "1.5", "-0.5"), {"topo.json: /links/1/latency_us: got -0.5; expected a number of at least 0"}},
      {"latency far too large (s given as us)", replace(g, "1.5", "1e10"),
       {"topo.json: /links/1/latency_us: got 10000000000.0; expected a latency in us of at most 1e+09 (1000 s)"}},
      {"missing latency", replace(g, ", \"latency_us\": 1.5", ""), {"topo.json: /links/1 is missing the required key 'latency_us'"}},
      {"duplicate node id", replace(g, "\"id\": \"gpu1\"", "\"id\": \"gpu0\""),
       {"topo.json: /nodes/1/id: got \"gpu0\"; expected an id not used by another node"}},
      {"unknown node kind", replace(g, "\"pcie_switch\"", "\"pcie_swich\""),
       {"topo.json: /nodes/2/kind: got \"pcie_swich\"; expected one of gpu,", "(did you mean 'pcie_switch'?)"}},
      {"link to an unknown node", replace(g, "\"b\": \"sw\", \"bandwidth_GBps\": 4.46", "\"b\": \"sx\", \"bandwidth_GBps\": 4.46"),
       {"topo.json: /links/1/b: got \"sx\"; expected the id of a node listed in \"nodes\" (did you mean 'sw'?)"}},
      {"link from a node to itself", replace(g, "\"b\": \"sw\"", "\"b\": \"gpu0\""),
       {"topo.json: /links/0/b: got \"gpu0\"; expected a node other than \"a\""}},
      {"the same link twice", replace(g, "]}", ", {\"a\": \"sw\", \"b\": \"gpu1\", \"bandwidth_GBps\": 1, \"latency_us\": 1}]}"),
       {"topo.json: /links/2: a second link between \"sw\" and \"gpu1\"; expected one link per pair"}},
      {"duplex misspelt", replace(g, "\"full\"", "\"fll\""),
       {"topo.json: /links/0/duplex: got \"fll\"; expected \"full\", \"half\" or a share between 0.5 and 1"}},
      {"duplex share out of range", replace(g, "\"full\"", "0.2"), {"topo.json: /links/0/duplex: got 0.2; expected \"full\", \"half\""}},
      {"empty name", replace(g, "\"name\": \"t\"", "\"name\": \"\""), {"topo.json: /name: got \"\"; expected a non-empty name"}},
      {"name not a string", replace(g, "\"name\": \"t\"", "\"name\": 5"), {"topo.json: /name: got 5; expected a string"}},
      {"no nodes", R"({"name": "t", "nodes": [], "links": []})", {"topo.json: the topology has no nodes"}},
      {"no GPU", replace(replace(g, "\"kind\": \"gpu\"", "\"kind\": \"nic\""), "\"kind\": \"gpu\"", "\"kind\": \"nic\""),
       {"topo.json: the topology has no node of kind \"gpu\""}},
      {"no links between the nodes", replace(g, kGraph.substr(kGraph.find("[{\"a\"")), "[]}"),
       {"topo.json: the graph is disconnected: gpu1, sw cannot reach \"gpu0\"; expected every node to be linked"}},
      {"a key given twice", replace(g, "\"name\": \"t\",", "\"name\": \"t\", \"name\": \"u\","),
       {"topo.json: /name: the key 'name' is given twice in one object; expected each key once"}},
      {"a key given twice, nested", replace(g, "{\"a\": \"gpu1\",", "{\"a\": \"gpu1\", \"a\": \"gpu0\","),
       {"topo.json: /links/1/a: the key 'a' is given twice in one object"}},
      {"cut short", "{\"name\": \"t\",\n \"nodes\": [", {"topo.json:2:", ": not valid JSON"}},
      {"empty file", "", {"topo.json:1:1: not valid JSON"}},
      {"not an object", "[1, 2]", {"topo.json: got an array of 2; expected a topology object"}},
      {"a fact on the wrong kind of node", replace(g, "\"kind\": \"pcie_switch\"", "\"kind\": \"pcie_switch\", \"sharp\": true"),
       {"topo.json: /nodes/2/sharp: \"sharp\" is a fact of nic and nvswitch nodes; this node is a pcie_switch"}},
      {"a host's fact on a GPU", replace(g, "\"id\": \"gpu0\", \"kind\": \"gpu\"", "\"id\": \"gpu0\", \"kind\": \"gpu\", \"vm\": true"),
       {"topo.json: /nodes/0/vm: \"vm\" is a fact of cpu_socket and root_complex nodes; this node is a gpu"}},
      {"a host's fact not a boolean", replace(g, "\"kind\": \"pcie_switch\"", "\"kind\": \"root_complex\", \"vm\": \"yes\""),
       {"topo.json: /nodes/2/vm: got \"yes\"; expected true or false"}},
      {"a NIC's ports on a switch", replace(g, "\"kind\": \"pcie_switch\"", "\"kind\": \"pcie_switch\", \"ports\": 2"),
       {"topo.json: /nodes/2/ports: \"ports\" is a fact of nic nodes; this node is a pcie_switch"}},
      {"a NIC of no port", replace(g, "\"kind\": \"pcie_switch\"", "\"kind\": \"nic\", \"ports\": 0"),
       {"topo.json: /nodes/2/ports: got 0; expected an integer between 1 and 8"}},
      {"the fabric's routing on a switch", replace(g, "\"kind\": \"pcie_switch\"", "\"kind\": \"pcie_switch\", \"adaptive_routing\": true"),
       {"topo.json: /nodes/2/adaptive_routing: \"adaptive_routing\" is a fact of nic nodes; this node is a pcie_switch"}},
      {"the fabric's routing not a boolean", replace(g, "\"kind\": \"pcie_switch\"", "\"kind\": \"nic\", \"adaptive_routing\": \"on\""),
       {"topo.json: /nodes/2/adaptive_routing: got \"on\"; expected true or false"}},
      {"a GPU model nobody knows", replace(g, "\"id\": \"gpu0\", \"kind\": \"gpu\"", "\"id\": \"gpu0\", \"kind\": \"gpu\", \"model\": \"H10\""),
       {"topo.json: /nodes/0/model: got \"H10\"; expected a GPU model gradsync knows: TITAN X,", "(did you mean 'A10'?)"}},
      {"neither form", R"({"name": "t"})", {"topo.json: is neither a graph-form topology (keys \"nodes\" and \"links\"), a matrix-form one"}},
      {"both forms", replace(g, "\"nodes\"", "\"gpus\": [\"g0\"], \"nodes\""), {"topo.json: mixes the graph form"}},
  };
  check_table(table, [](const std::string& text) { load_topology_text(text, "topo.json"); }, "topo.json");
}

// --- topology, generated form -------------------------------------------------------------

const std::string kGenerated = R"({"name": "c", "generate": {"nodes": 4, "network": "fat-tree", "nodes_per_leaf": 2}})";

TEST(BadInput, TopologyGeneratedForm) {
  ASSERT_EQ(models::load_topology(models::JsonView::parse(kGenerated, "gen.json")).topology.gpus().size(), 32u);
  const std::string& g = kGenerated;
  const std::vector<Case> table = {
      {"unknown parameter", replace(g, "\"nodes_per_leaf\"", "\"nodes_per_leef\""),
       {"gen.json: /generate/nodes_per_leef: unknown key 'nodes_per_leef' (did you mean 'nodes_per_leaf'?)"}},
      {"unknown key beside generate", replace(g, "\"name\": \"c\"", "\"name\": \"c\", \"nodes\": []"),
       {"gen.json: /nodes: unknown key 'nodes'"}},
      {"a count that is not a whole number", replace(g, "\"nodes\": 4", "\"nodes\": 4.5"),
       {"gen.json: /generate/nodes: got 4.5; expected an integer"}},
      {"a count below its minimum", replace(g, "\"nodes\": 4", "\"nodes\": 0"),
       {"gen.json: /generate/nodes: 0: expected an integer of at least 1"}},
      {"a word not among its choices", replace(g, "\"fat-tree\"", "\"torus\""),
       {"gen.json: /generate/network: got \"torus\"; expected single | fat-tree | rail"}},
      {"an oversubscription below one", replace(g, "\"nodes\": 4", "\"nodes\": 4, \"oversubscription\": 0.5"),
       {"gen.json: /generate/oversubscription: 0.5: expected a ratio of at least 1"}},
      {"a rate as a string", replace(g, "\"nodes\": 4", "\"nodes\": 4, \"nic_GBps\": \"50\""),
       {"gen.json: /generate/nic_GBps: got \"50\"; expected a number, not a string"}},
      {"no name", R"({"generate": {"nodes": 2}})", {"gen.json: is missing the required key 'name'"}},
      {"a GH200's NIC on a PCIe switch", replace(g, "\"nodes\": 4", "\"nodes\": 4, \"gpu\": \"GH200\", \"nic_attach\": \"switch\""),
       {"gen.json: /generate/nic_attach: switch: a GH200 reaches its NICs through its own CPU"}},
  };
  check_table(table, [](const std::string& text) { load_topology_text(text, "gen.json"); }, "gen.json");
}

// --- topology, matrix form ----------------------------------------------------------------

const std::string kMatrix = R"({"name": "m", "gpus": ["g0", "g1"], "bandwidth_GBps": [[null, 5], [5.5, null]]})";

TEST(BadInput, TopologyMatrixForm) {
  const std::string m = kMatrix;
  ASSERT_NO_THROW(load_topology_text(m, "matrix.json"));
  auto with = [&](const std::string& extra) { return replace(m, "]]}", "]], " + extra + "}"); };
  const std::vector<Case> table = {
      {"unknown key", with(R"("bandwith_GBps": 1)"),
       {"matrix.json: /bandwith_GBps: unknown key 'bandwith_GBps' (did you mean 'bandwidth_GBps'?)"}},
      {"a row too short", replace(m, "[5.5, null]", "[5.5]"),
       {"matrix.json: /bandwidth_GBps/1: got an array of 1; expected an array of 2 values (one per GPU)"}},
      {"a row missing", replace(m, "[\"g0\", \"g1\"]", "[\"g0\", \"g1\", \"g2\"]"),
       {"matrix.json: /bandwidth_GBps: got an array of 2; expected an array of 3 rows (one per GPU)"}},
      {"negative bandwidth", replace(m, "null, 5]", "null, -5]"), {"matrix.json: /bandwidth_GBps/0/1: got -5; expected a number greater than 0"}},
      {"zero bandwidth", replace(m, "5.5", "0"), {"matrix.json: /bandwidth_GBps/1/0: got 0; expected a number greater than 0"}},
      {"bandwidth far too large", replace(m, "5.5", "5.5e9"),
       {"matrix.json: /bandwidth_GBps/1/0: got 5500000000.0; expected a bandwidth in GB/s between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)"}},
      {"a pair not measured", replace(m, "5.5", "null"),
       {"matrix.json: /bandwidth_GBps/1/0: got null; expected a measured value for the pair (1, 0)"}},
      {"a string cell", replace(m, "5.5", "\"5.5\""), {"matrix.json: /bandwidth_GBps/1/0: got \"5.5\"; expected a number, not a string"}},
      {"a diagonal that is no number", replace(m, "[[null, 5]", "[[\"x\", 5]"),
       {"matrix.json: /bandwidth_GBps/0/0: got \"x\"; expected a number, not a string"}},
      {"number beyond a double", replace(m, "5.5", "1e999"), {"matrix.json:1:", "the number 1e999 is too large for a double"}},
      {"negative latency", with(R"("latency_us": [[null, -1], [1, null]])"),
       {"matrix.json: /latency_us/0/1: got -1; expected a number of at least 0"}},
      {"latency far too large", with(R"("latency_us": [[null, 2e9], [1, null]])"),
       {"matrix.json: /latency_us/0/1: got 2000000000.0; expected a latency in us of at most 1e+09 (1000 s)"}},
      {"negative bidirectional bandwidth", with(R"("bidirectional_GBps": [[null, -1], [1, null]])"),
       {"matrix.json: /bidirectional_GBps/0/1: got -1; expected a number greater than 0"}},
      {"duplicate GPU id", replace(m, "\"g1\"", "\"g0\""), {"matrix.json: /gpus/1: got \"g0\"; expected a GPU id not used before in \"gpus\""}},
      {"no GPUs", R"({"name": "m", "gpus": [], "bandwidth_GBps": []})", {"matrix.json: /gpus: got an array of 0; expected at least one GPU id"}},
      {"empty GPU id", replace(m, "\"g1\"", "\"\""), {"matrix.json: /gpus/1: got \"\"; expected a non-empty GPU id"}},
      {"unknown topo class", with(R"("topo_classes": [["X", "PIXX"], ["PIX", "X"]])"),
       {"matrix.json: /topo_classes/0/1: got \"PIXX\"; expected one of PIX, PXB, PHB, NODE, SYS, SOC, NV<n>"}},
      {"topo class diagonal", with(R"("topo_classes": [["X", "PIX"], ["PIX", "PIX"]])"),
       {"matrix.json: /topo_classes/1/1: got \"PIX\"; expected \"X\" on the diagonal"}},
      {"host figures for too few GPUs", with(R"("host_to_device_GBps": [9])"),
       {"matrix.json: /host_to_device_GBps: got an array of 1; expected an array of 2 values (one per GPU)"}},
      {"zero host bandwidth", with(R"("host_to_device_GBps": [9, 0])"),
       {"matrix.json: /host_to_device_GBps/1: got 0; expected a number greater than 0"}},
      {"probe of an unknown GPU", with(R"("concurrent_probes": [{"flows": [["g0", "g9"], ["g1", "g0"]], "bandwidth_GBps": [1, 1]}])"),
       {"matrix.json: /concurrent_probes/0/flows/0: got an array of 2; expected GPU ids listed in \"gpus\""}},
      {"probe of one flow", with(R"("concurrent_probes": [{"flows": [["g0", "g1"]], "bandwidth_GBps": [1]}])"),
       {"matrix.json: /concurrent_probes/0/flows: got an array of 1; expected at least two flows"}},
      {"probe bandwidths miscounted", with(R"("concurrent_probes": [{"flows": [["g0", "g1"], ["g1", "g0"]], "bandwidth_GBps": [1]}])"),
       {"matrix.json: /concurrent_probes/0/bandwidth_GBps: got an array of 1; expected an array of 2 bandwidths, one per flow"}},
      {"other measurement negative", with(R"("other_measurements": {"x": {"bandwidth_GBps": [[null, -1], [1, null]]}})"),
       {"matrix.json: /other_measurements/x/bandwidth_GBps/0/1: got -1; expected a number greater than 0"}},
      {"other measurement unknown key", with(R"("other_measurements": {"x": {"bandwith_GBps": []}})"),
       {"matrix.json: /other_measurements/x/bandwith_GBps: unknown key 'bandwith_GBps' (did you mean 'bandwidth_GBps'?)"}},
      {"nominal figures without classes", with(R"("nominal": {"pcie_GBps": 24, "inter_socket_GBps": 16, "nvlink_GBps_per_link": 20})"),
       {"matrix.json: /nominal: nominal figures without \"topo_classes\"; expected the nvidia-smi topo -m classes"}},
      {"nominal PCIe rate of zero",
       with(R"("topo_classes": [["X", "PIX"], ["PIX", "X"]], "nominal": {"pcie_GBps": 0, "inter_socket_GBps": 16, "nvlink_GBps_per_link": 20})"),
       {"matrix.json: /nominal/pcie_GBps: got 0; expected a number greater than 0"}},
      {"nominal unknown key",
       with(R"("topo_classes": [["X", "PIX"], ["PIX", "X"]], "nominal": {"pcie_GBs": 24, "inter_socket_GBps": 16, "nvlink_GBps_per_link": 20})"),
       {"matrix.json: /nominal/pcie_GBs: unknown key 'pcie_GBs' (did you mean 'pcie_GBps'?)"}},
      {"peer support not a boolean", with(R"("p2p_supported": [[true, 1], [true, true]])"),
       {"matrix.json: /p2p_supported/0/1: got 1; expected true or false"}},
      {"name missing", replace(m, "\"name\": \"m\", ", ""), {"matrix.json: is missing the required key 'name'"}},
      {"a key given twice", replace(m, "\"gpus\"", "\"gpus\": [\"a\"], \"gpus\""),
       {"matrix.json: /gpus: the key 'gpus' is given twice in one object; expected each key once"}},
  };
  check_table(table, [](const std::string& text) { load_topology_text(text, "matrix.json"); }, "matrix.json");
}

// --- workload -----------------------------------------------------------------------------

const std::string kWorkload = R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "l", "params": 1000, "flops": 5e9}],)"
                              R"( "minibatches_per_epoch": 10, "compute_s_per_minibatch": 0.01})";

void load_workload_text(const std::string& text) { models::workload_from_json(models::JsonView::parse(text, "workload.json")); }

TEST(BadInput, Workload) {
  const std::string w = kWorkload;
  ASSERT_NO_THROW(load_workload_text(w));
  const std::string tflops = replace(w, "\"compute_s_per_minibatch\": 0.01", "\"device_TFLOPS\": 10");
  ASSERT_NO_THROW(load_workload_text(tflops));
  const std::vector<Case> table = {
      {"unknown layer key", replace(w, "\"params\"", "\"parms\""),
       {"workload.json: /layers/0/parms: unknown key 'parms' (did you mean 'params'?); valid keys here: name, params, dtype_bytes, flops, forward_flops, backward_flops, forward_s, backward_s, rows"}},
      {"unknown key", replace(w, "\"minibatches_per_epoch\"", "\"minibatches_per_epoc\""),
       {"workload.json: /minibatches_per_epoc: unknown key 'minibatches_per_epoc' (did you mean 'minibatches_per_epoch'?)"}},
      {"unsupported value size", replace(w, "\"dtype_bytes\": 4", "\"dtype_bytes\": 3"),
       {"workload.json: /dtype_bytes: got 3; expected 1, 2, 4 or 8 bytes per value"}},
      {"negative params", replace(w, "1000", "-1"), {"workload.json: /layers/0/params: got -1; expected an integer of at least 0"}},
      {"fractional params", replace(w, "1000", "1.5"), {"workload.json: /layers/0/params: got 1.5; expected an integer"}},
      {"params beyond 64 bits", replace(w, "1000", "1e30"), {"workload.json: /layers/0/params: got 1e+30; expected an integer"}},
      {"params beyond 1 PiB of gradient", replace(w, "1000", "300000000000000"),
       {"workload.json: /layers/0/params: got 300000000000000; expected at most 281474976710656 params (a gradient of at most 1 PiB)"}},
      {"layers that overflow the gradient",
       replace(w, "{\"name\": \"l\", \"params\": 1000, \"flops\": 5e9}",
               "{\"name\": \"a\", \"params\": 200000000000000}, {\"name\": \"b\", \"params\": 200000000000000}"),
       {"workload.json: /layers/1/params: got 200000000000000; expected params that keep the gradient within 1 PiB"}},
      {"no layers", replace(w, "[{\"name\": \"l\", \"params\": 1000, \"flops\": 5e9}]", "[]"),
       {"workload.json: /layers: got an array of 0; expected at least one layer"}},
      {"duplicate layer name", replace(w, "}],", "}, {\"name\": \"l\", \"params\": 5}],"),
       {"workload.json: /layers/1/name: got \"l\"; expected a layer name not used by another layer"}},
      {"empty layer name", replace(w, "{\"name\": \"l\"", "{\"name\": \"\""), {"workload.json: /layers/0/name: got \"\"; expected a non-empty layer name"}},
      {"negative compute time", replace(w, "0.01", "-0.01"),
       {"workload.json: /compute_s_per_minibatch: got -0.01; expected seconds between 0 and 1e+06"}},
      {"compute time that overflows an epoch", replace(w, "0.01", "1e300"),
       {"workload.json: /compute_s_per_minibatch: got 1e+300; expected seconds between 0 and 1e+06"}},
      {"both compute figures", replace(w, "0.01}", "0.01, \"device_TFLOPS\": 10}"),
       {"workload.json: needs exactly one of \"compute_s_per_minibatch\" (a measured time), \"device_TFLOPS\""}},
      {"no compute figure", replace(w, ", \"compute_s_per_minibatch\": 0.01", ""), {"workload.json: needs exactly one of"}},
      {"zero minibatches", replace(w, "\"minibatches_per_epoch\": 10", "\"minibatches_per_epoch\": 0"),
       {"workload.json: /minibatches_per_epoch: got 0; expected an integer of at least 1"}},
      {"fractional minibatches", replace(w, "\"minibatches_per_epoch\": 10", "\"minibatches_per_epoch\": 2.5"),
       {"workload.json: /minibatches_per_epoch: got 2.5; expected an integer"}},
      {"TFLOPS without FLOPs", replace(tflops, ", \"flops\": 5e9", ""),
       {"workload.json: /layers: got an array of 1; expected layers with \"flops\""}},
      {"zero TFLOPS", replace(tflops, "\"device_TFLOPS\": 10", "\"device_TFLOPS\": 0"),
       {"workload.json: /device_TFLOPS: got 0; expected a number greater than 0"}},
      {"TFLOPS far too large", replace(tflops, "\"device_TFLOPS\": 10", "\"device_TFLOPS\": 1e12"),
       {"workload.json: /device_TFLOPS: got 1000000000000.0; expected a rate in TFLOPS between 1e-06 and 1e+06"}},
      {"negative FLOPs", replace(w, "5e9", "-1"), {"workload.json: /layers/0/flops: got -1; expected FLOPs per minibatch between 0 and 1e+24"}},
      {"rows that do not divide the params", replace(w, "\"flops\": 5e9", "\"flops\": 5e9, \"rows\": 7"),
       {"workload.json: /layers/0/rows: got 7; expected a row count that divides the layer's 1000 params"}},
      {"zero rows", replace(w, "\"flops\": 5e9", "\"flops\": 5e9, \"rows\": 0"), {"workload.json: /layers/0/rows: got 0; expected an integer of at least 1"}},
      {"zero samples per minibatch", replace(w, "\"dtype_bytes\": 4", "\"dtype_bytes\": 4, \"samples_per_minibatch\": 0"),
       {"workload.json: /samples_per_minibatch: got 0; expected an integer of at least 1"}},
      {"name missing", replace(w, "\"name\": \"w\", ", ""), {"workload.json: is missing the required key 'name'"}},
      {"a key given twice", replace(w, "\"params\": 1000", "\"params\": 1000, \"params\": 2000"),
       {"workload.json: /layers/0/params: the key 'params' is given twice in one object"}},
  };
  check_table(table, load_workload_text, "workload.json");
}

// --- experiment ---------------------------------------------------------------------------

// Loads the experiment, plans it (topology, workload, placements) and predicts every point
// (schedule and costs, analytic executor), as simulate and sweep do; errors of a point come
// through located_error.
void load_and_plan_experiment(const std::string& text) {
  const experiments::Experiment e = experiments::load_experiment(models::JsonView::parse(text, "exp.json"));
  const experiments::Plan plan = experiments::make_plan(e);
  for (const auto& choice : plan.strategies) {
    for (const auto& placement : plan.placements) {
      for (const auto& size : plan.sizes) {
        models::PredictRequest q;
        q.topology = &plan.topology.topology;
        q.workload = size ? nullptr : (plan.workload ? &*plan.workload : nullptr);
        q.bytes = size;
        q.strategy = choice.strategy;
        q.params = choice.params;
        q.placement = placement;
        try {
          models::predict(q);
        } catch (const InputError& err) {
          throw InputError(experiments::located_error(choice, err.what()));
        }
      }
    }
  }
}

TEST(BadInput, Experiment) {
  const std::string x = R"({"topology": "source-a-titanx-4gpu", "strategies": [{"name": "hierarchical", "k": 2}], "gpus": [4],)"
                        R"( "executors": ["analytic", "sim"], "iterations": 10, "speeds": [1, 1, 0.5, 1]})";
  ASSERT_NO_THROW(load_and_plan_experiment(x));
  const std::string sizes = R"({"sizes_bytes": [1048576, 0], "ranks": ["gpu0", "gpu2"]})";
  ASSERT_NO_THROW(load_and_plan_experiment(sizes));
  const std::vector<Case> table = {
      // What the file says.
      {"unknown key", replace(x, "\"strategies\"", "\"strategis\""),
       {"exp.json: /strategis: unknown key 'strategis' (did you mean 'strategies'?); valid keys here: topology,"}},
      {"unknown strategy parameter", replace(x, "\"k\": 2", "\"kk\": 2"),
       {"exp.json: /strategies/0/kk: unknown key 'kk' (did you mean 'k'?); valid keys here: name, k,"}},
      {"unknown strategy", replace(x, "\"hierarchical\"", "\"rng\""),
       {"exp.json: /strategies/0/name: --strategy rng: unknown strategy (did you mean 'ring'?); valid strategies: ps, ring,"}},
      {"strategy not an object", replace(x, "{\"name\": \"hierarchical\", \"k\": 2}", "\"ring\""),
       {"exp.json: /strategies/0: got \"ring\"; expected an object like {\"name\": \"ring\"}"}},
      {"parameter not a scalar", replace(x, "\"k\": 2", "\"k\": [2]"),
       {"exp.json: /strategies/0/k: got an array of 1; expected a number, string or boolean"}},
      {"the same strategy twice", replace(x, "\"k\": 2}", "\"k\": 2}, {\"k\": 2, \"name\": \"hierarchical\"}"),
       {"exp.json: /strategies/1: got an object; expected a strategy with parameters not listed before"}},
      {"no strategies", replace(x, "[{\"name\": \"hierarchical\", \"k\": 2}]", "[]"),
       {"exp.json: /strategies: got an array of 0; expected at least one strategy"}},
      {"zero GPUs", replace(x, "\"gpus\": [4]", "\"gpus\": [0]"), {"exp.json: /gpus/0: got 0; expected an integer of at least 1"}},
      {"fractional GPUs", replace(x, "\"gpus\": [4]", "\"gpus\": [1.5]"), {"exp.json: /gpus/0: got 1.5; expected an integer"}},
      {"GPU count beyond an int", replace(x, "\"gpus\": [4]", "\"gpus\": [10000000000]"),
       {"exp.json: /gpus/0: got 10000000000; expected a GPU count of at most 65536"}},
      {"a GPU count twice", replace(x, "\"gpus\": [4]", "\"gpus\": [2, 2]"),
       {"exp.json: /gpus/1: got 2; expected a GPU count not listed before"}},
      {"no GPU counts", replace(x, "\"gpus\": [4]", "\"gpus\": []"), {"exp.json: /gpus: got an array of 0; expected at least one GPU count"}},
      {"a rank twice", replace(sizes, "\"gpu2\"", "\"gpu0\""), {"exp.json: /ranks/1: got \"gpu0\"; expected a GPU id not listed before"}},
      {"GPU counts and ranks", replace(x, "\"gpus\": [4]", "\"gpus\": [4], \"ranks\": [\"gpu0\"]"),
       {"exp.json: gives both \"gpus\" and \"ranks\"; expected one of them"}},
      {"negative size", replace(sizes, "1048576", "-1"), {"exp.json: /sizes_bytes/0: got -1; expected an integer between 0 and 1125899906842624"}},
      {"fractional size", replace(sizes, "1048576", "1.5"), {"exp.json: /sizes_bytes/0: got 1.5; expected an integer between 0 and 1125899906842624"}},
      {"size beyond 1 PiB", replace(sizes, "1048576", "1e300"), {"exp.json: /sizes_bytes/0: got 1e+300; expected an integer between 0 and"}},
      {"a size twice", replace(sizes, "[1048576, 0]", "[0, 0]"), {"exp.json: /sizes_bytes/1: got 0; expected a size not listed before"}},
      {"sizes and a workload", replace(sizes, "{", "{\"workload\": \"source-a-ffnn-lm\", "),
       {"exp.json: gives both \"workload\" and \"sizes_bytes\"; expected one of them"}},
      {"unknown executor", replace(x, "\"analytic\"", "\"analytik\""),
       {"exp.json: /executors/0: got \"analytik\"; expected one of formula, analytic, sim, run (did you mean 'analytic'?)"}},
      {"an executor twice", replace(x, "\"analytic\", \"sim\"", "\"sim\", \"sim\""),
       {"exp.json: /executors/1: got \"sim\"; expected an executor not listed before"}},
      {"no executors", replace(x, "[\"analytic\", \"sim\"]", "[]"), {"exp.json: /executors: got an array of 0; expected at least one executor"}},
      {"iterations beyond an int", replace(x, "\"iterations\": 10", "\"iterations\": 10000000000"),
       {"exp.json: /iterations: got 10000000000; expected an integer between 1 and 1000000"}},
      {"zero iterations", replace(x, "\"iterations\": 10", "\"iterations\": 0"), {"exp.json: /iterations: got 0; expected an integer between 1 and 1000000"}},
      {"unknown network model", replace(x, "{", "{\"network_model\": \"CM03\", "),
       {"exp.json: /network_model: got \"CM03\"; expected \"CM02\" or \"LV08\""}},
      {"zero latency factor", replace(x, "{", "{\"latency_factor\": 0, "), {"exp.json: /latency_factor: got 0; expected a factor between 1e-06 and 1e+06"}},
      {"huge bandwidth factor", replace(x, "{", "{\"bandwidth_factor\": 1e300, "),
       {"exp.json: /bandwidth_factor: got 1e+300; expected a factor between 1e-06 and 1e+06"}},
      {"a speed near zero", replace(x, "[1, 1, 0.5, 1]", "[1e-300, 1, 0.5, 1]"),
       {"exp.json: /speeds/0: got 1e-300; expected a relative speed between 0.001 and 1000"}},
      {"no speeds", replace(x, "[1, 1, 0.5, 1]", "[]"), {"exp.json: /speeds: got an array of 0; expected at least one relative speed"}},
      {"huge jitter", replace(x, "{", "{\"jitter_cv\": 1e300, "),
       {"exp.json: /jitter_cv: got 1e+300; expected a coefficient of variation between 0 and 10"}},
      {"negative seed", replace(x, "{", "{\"seed\": -1, "), {"exp.json: /seed: got -1; expected an integer of at least 0"}},
      {"description not text", replace(x, "{", "{\"description\": [1], "), {"exp.json: /description: got an array of 1; expected a string"}},
      {"topology not a string", replace(x, "\"source-a-titanx-4gpu\"", "5"), {"exp.json: /topology: got 5; expected a string"}},
      {"a key given twice", replace(x, "\"gpus\": [4]", "\"gpus\": [4], \"gpus\": [2]"),
       {"exp.json: /gpus: the key 'gpus' is given twice in one object; expected each key once"}},
      {"not JSON", "{\"gpus\": [4,]}", {"exp.json:1:13: not valid JSON"}},
      // What the file names: checked when the experiment is planned.
      {"unknown topology", replace(x, "source-a-titanx-4gpu", "source-a-titanx-4gpux"),
       {"exp.json: /topology: got \"source-a-titanx-4gpux\"; expected a topology file or a shipped topology (did you mean "
        "'source-a-titanx-4gpu'?): "}},
      {"unknown workload", replace(x, "{", "{\"workload\": \"source-a-fnn-lm\", "),
       {"exp.json: /workload: got \"source-a-fnn-lm\"; expected a workload file or a preset (did you mean 'source-a-ffnn-lm'?)"}},
      {"more GPUs than the topology has", replace(x, "\"gpus\": [4]", "\"gpus\": [9]"),
       {"exp.json: /gpus/0: got 9; expected a GPU count between 1 and 4 (topology \"source-a-titanx-4gpu\" has 4 GPUs)"}},
      {"a rank on no such GPU", replace(sizes, "\"gpu2\"", "\"gpu9\""),
       {"exp.json: /ranks: \"gpu9\" is not a node of topology \"source-a-titanx-4gpu\" (did you mean 'gpu0'?)"}},
      {"a rank on host memory", replace(sizes, "\"gpu2\"", "\"host\""), {"exp.json: /ranks: \"host\" is a host_memory; expected a GPU"}},
      {"speeds for another GPU count", replace(x, "[1, 1, 0.5, 1]", "[1, 0.5]"),
       {"exp.json: /speeds: has 2 values but a run has 4 ranks; expected one speed per rank"}},
      // Strategy parameters: checked when the strategy builds its schedule.
      {"parameter below its minimum", replace(x, "\"k\": 2", "\"k\": 0"),
       {"exp.json: /strategies/0/k: --param k=0 (strategy hierarchical): expected auto or an integer of at least 1"}},
      {"parameter of the wrong type", replace(x, "\"k\": 2", "\"k\": \"two\""),
       {"exp.json: /strategies/0/k: --param k=two (strategy hierarchical): expected auto or an integer"}},
      {"parameter that does not fit the GPUs", replace(x, "\"k\": 2", "\"k\": 3"),
       {"exp.json: /strategies/0/k: --param k=3 (strategy hierarchical): expected auto or a number of groups that divides N = 4 (1, 2, 4)"}},
      {"a period the simulator cannot run", replace(x, "{\"name\": \"hierarchical\", \"k\": 2}", "{\"name\": \"downpour\", \"step\": 1000000000}"),
       {"exp.json: /strategies/0/step: --param step=1000000000 (strategy downpour): expected auto or an integer of at most 1000000"}},
      {"a reduction rate near zero", replace(x, "\"k\": 2", "\"k\": 2, \"reduce_GBps\": 1e-300"),
       {"exp.json: /strategies/0/reduce_GBps: --param reduce_GBps=1e-300 (strategy hierarchical): expected auto or a rate in GB/s between 1e-06"}},
      {"parameter server on no such rank", replace(x, "{\"name\": \"hierarchical\", \"k\": 2}", "{\"name\": \"ps\", \"server\": \"rank99999999999999999999\"}"),
       {"exp.json: /strategies/0/server: --param server=rank99999999999999999999 (strategy ps): expected auto or rank0 to rank3"}},
  };
  check_table(table, load_and_plan_experiment, "exp.json");
}

// --- tool outputs -------------------------------------------------------------------------

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(GRADSYNC_TEST_FIXTURES) + "/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << "missing fixture " << name;
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string joined(const std::vector<std::string>& lines, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count && i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

// `text` with `from` replaced by `to` on line `line` (1-based); the test fails when the line lacks `from`.
std::string on_line(const std::string& text, std::size_t line, const std::string& from, const std::string& to) {
  auto lines = lines_of(text);
  EXPECT_LE(line, lines.size());
  if (line == 0 || line > lines.size()) return text;
  auto& l = lines[line - 1];
  const auto at = l.find(from);
  EXPECT_NE(at, std::string::npos) << "line " << line << " has no " << from << ": " << l;
  if (at != std::string::npos) l.replace(at, from.size(), to);
  return joined(lines, lines.size());
}

void import_text(const std::string& text, const std::string& source) { models::import_tool_output(text, source); }

TEST(BadInput, P2pBandwidthLatencyTest) {
  const std::string p = fixture("p2p-4gpu-2switch.txt");
  ASSERT_NO_THROW(import_text(p, "p2p.txt"));
  const auto lines = lines_of(p);
  auto duplicated = lines;
  duplicated.insert(duplicated.begin() + 39, lines.begin() + 33, lines.begin() + 39);
  auto short_row = lines;
  short_row[36] = "     1  12.40 420.29   9.23";
  const std::vector<Case> table = {
      {"NaN bandwidth", on_line(p, 36, "12.41", "nan"), {"p2p.txt:36: \"nan\" is not a number; expected a bandwidth in GB/s"}},
      {"infinite bandwidth", on_line(p, 36, "12.41", "inf"), {"p2p.txt:36: \"inf\" is not a number; expected a bandwidth in GB/s"}},
      {"bandwidth far too large", on_line(p, 36, "12.41", "1e300"),
       {"p2p.txt:36: \"1e300\" is out of range; expected a bandwidth in GB/s between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)"}},
      {"bandwidth too small", on_line(p, 36, "12.41", "1e-320"), {"p2p.txt:36: \"1e-320\" is out of range; expected a bandwidth in GB/s between"}},
      {"negative bandwidth", on_line(p, 36, "12.41", "-12.41"), {"p2p.txt:36: \"-12.41\" is negative; expected a bandwidth in GB/s"}},
      {"zero bandwidth between GPUs", on_line(p, 36, "12.41", "0.00"), {"p2p.txt:36: \"0.00\" is not above zero; expected a bandwidth in GB/s"}},
      {"a token that is no number", on_line(p, 36, "12.41", "12.4x"), {"p2p.txt:36: \"12.4x\" is not a number; expected a bandwidth in GB/s"}},
      {"negative latency", on_line(p, 66, "1.82", "-1.82"), {"p2p.txt:66: \"-1.82\" is negative; expected a latency in us"}},
      {"latency far too large", on_line(p, 66, "1.82", "1e10"),
       {"p2p.txt:66: \"1e10\" is out of range; expected a latency in us of at most 1e+09 (1000 s)"}},
      {"connectivity flag not 0 or 1", on_line(p, 24, "1     1     1     1", "1     2     1     1"),
       {"p2p.txt:24: \"2\" is not a connectivity flag; expected 1 (peer access) or 0 (none)"}},
      {"rows out of order", on_line(p, 37, "1 ", "5 "),
       {"p2p.txt:37: row label \"5\" is out of order of the table \"Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\"; expected the row 1"}},
      {"a column too many", on_line(p, 35, "3 ", "3      4 "),
       {"p2p.txt:35: the header of the table \"Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\" lists 5 columns; expected 4"}},
      {"a row too short", joined(short_row, short_row.size()),
       {"p2p.txt:37: row 1 of the table \"Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\" has 3 values; expected 4"}},
      {"cut in a table", joined(lines, 37), {"p2p.txt:37: the file ends after 2 of 4 rows of the table", "; expected the row 2"}},
      {"devices out of order", on_line(p, 4, "Device: 2", "Device: 7"), {"p2p.txt:4: \"7\" is out of order in the device list; expected device 2"}},
      {"peer access of no such device", on_line(p, 6, "Device=1", "Device=9"),
       {"p2p.txt:6: \"Device=0 CAN Access Peer Device=9\" names a device outside 0..3"}},
      {"a table twice", joined(duplicated, duplicated.size()),
       {"p2p.txt:40: a second table \"Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\" (the first is at line 34)"}},
      {"only the P2P=Disabled bandwidth", joined(lines, 33),
       {"p2p.txt: the p2pBandwidthLatencyTest output (line 1) has no \"Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\" table",
        "--p2p disabled"}},
      {"no tool output at all", "hello\nworld\n", {"p2p.txt: no supported tool output found; expected the text output of p2pBandwidthLatencyTest"}},
      {"an empty file", "", {"p2p.txt: no supported tool output found"}},
  };
  check_table(table, [](const std::string& text) { import_text(text, "p2p.txt"); }, "p2p.txt");
}

TEST(BadInput, Nvbandwidth) {
  const std::string n = fixture("nvbandwidth-4gpu-2switch.txt");
  ASSERT_NO_THROW(import_text(n, "nvb.txt"));
  const std::vector<Case> table = {
      {"negative bandwidth", on_line(n, 47, "12.66", "-12.66"), {"nvb.txt:47: \"-12.66\" is negative; expected a bandwidth in GB/s"}},
      {"zero bandwidth between GPUs", on_line(n, 47, "12.66", "0.00"), {"nvb.txt:47: \"0.00\" is not above zero; expected a bandwidth in GB/s"}},
      {"NaN bandwidth", on_line(n, 47, "12.66", "nan"), {"nvb.txt:47: \"nan\" is not a number; expected a bandwidth in GB/s"}},
      {"bandwidth far too large", on_line(n, 47, "12.66", "1e300"),
       {"nvb.txt:47: \"1e300\" is out of range; expected a bandwidth in GB/s between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)"}},
      {"a pair not measured", on_line(n, 47, "12.66", "N/A"),
       {"nvb.txt:47: \"N/A\" in row 0, column 1 of nvbandwidth device_to_device_memcpy_write_ce: no bandwidth measured from gpu0 to gpu1",
        "expected every GPU pair measured"}},
      {"negative host bandwidth", on_line(n, 16, "9.13", "-9.13"), {"nvb.txt:16: \"-9.13\" is negative; expected a bandwidth in GB/s"}},
      {"negative latency", on_line(n, 92, "1381.64", "-1381.64"), {"nvb.txt:92: \"-1381.64\" is negative; expected a latency in ns"}},
      {"latency far too large", on_line(n, 92, "1381.64", "1e15"), {"nvb.txt:92: \"1e15\" is out of range; expected a latency in ns of at most 1e+12"}},
      {"a column label out of place", on_line(n, 46, "3", "4"),
       {"nvb.txt:46: \"4\" is not a column label of the table \"memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\"; expected 3"}},
      {"cut in a table", joined(lines_of(n), 38), {"nvb.txt:38: the file ends after 2 of 4 rows of the table"}},
  };
  check_table(table, [](const std::string& text) { import_text(text, "nvb.txt"); }, "nvb.txt");
}

TEST(BadInput, NvidiaSmiTopo) {
  const std::string t = fixture("topo-4gpu-2switch.txt");
  const std::string p = fixture("p2p-4gpu-2switch.txt");
  ASSERT_NO_THROW(import_text(t + "\n" + p, "topo.txt"));
  const std::string p2p_status = "$ nvidia-smi topo -p2p r\n\tGPU0\tGPU1\nGPU0\tX\tOK\nGPU1\tOK\tX\n";
  const std::vector<Case> table = {
      {"unknown class", on_line(t, 2, "PIX", "PIXX"),
       {"topo.txt:2: \"PIXX\" is not an nvidia-smi topo -m class (GPU0 / GPU1); expected one of PIX, PXB, PHB, NODE, SYS, SOC, NV<n>"}},
      {"diagonal not X", on_line(t, 3, " X ", "PIX"), {"topo.txt:3: \"PIX\" on the diagonal (GPU1 / GPU1) of nvidia-smi topo -m; expected \"X\""}},
      {"rows out of order", on_line(t, 4, "GPU2", "GPU3"),
       {"topo.txt:4: row label \"GPU3\" is out of order of the table \"nvidia-smi topo -m\"; expected the row GPU2"}},
      {"cut in the table", joined(lines_of(t), 3), {"topo.txt:3: the file ends after 2 of 4 rows of the table \"nvidia-smi topo -m\""}},
      {"peer status without classes or a bandwidth measurement", p2p_status,
       {"topo.txt: holds \"nvidia-smi topo -p2p\" results but no bandwidth measurement nor nvidia-smi topo -m classes; "
        "expected also the output of p2pBandwidthLatencyTest or nvbandwidth"}},
      {"unknown peer status", replace(p2p_status, "\tOK\tX", "\tMAYBE\tX"),
       {"topo.txt:4: \"MAYBE\" is not an nvidia-smi topo -p2p r status (GPU1 / GPU0); expected one of OK, NS, CNS, GNS, TNS, U"}},
      {"tools that disagree on the GPU count",
       "\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tPIX\tPHB\t0-11\nGPU1\tPIX\t X \tPHB\t0-11\nGPU2\tPHB\tPHB\t X \t0-11\n\n" + p,
       {"topo.txt:1: nvidia-smi topo -m shows 3 GPUs, but p2pBandwidthLatencyTest (topo.txt:", ") shows 4; expected the outputs of one machine"}},
  };
  check_table(table, [](const std::string& text) { import_text(text, "topo.txt"); }, "topo.txt");
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Strategy parameters: every value outside a parameter's declared choices is refused in one
// place (models::resolve_params), naming the parameter, the value and the choices — for every
// parameter of every registered strategy, not a list kept here.

TEST(BadInput, EveryParameterRefusesAValueOutsideItsChoices) {
  const models::Topology t = models::flat_topology(4);
  int checked = 0;
  for (const models::Strategy* s : models::all_strategies()) {
    for (const models::ParamSpec& p : models::params_of(*s)) {
      SCOPED_TRACE(s->name + " " + p.name);
      models::PredictRequest q;
      q.topology = &t;
      q.strategy = s;
      q.bytes = 1 << 20;
      q.placement = models::first_gpus(t, 4);
      const std::string bogus = "no-such-" + p.name;
      q.params.set(p.name, bogus);
      const std::string message = error_of([&] { (void)models::build_schedule(q); });
      EXPECT_NE(message.find("--param " + p.name + "=" + bogus + " (strategy " + s->name + "): expected "), std::string::npos)
          << message;
      for (const std::string& word : p.domain.words) EXPECT_NE(message.find(word), std::string::npos) << message;
      if (p.domain.allows_auto) {
        EXPECT_NE(message.find("auto"), std::string::npos) << message;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

// An output path that is a device or a pipe (-o /dev/null) is written in place: renaming the
// finished file over it would, as root, leave a regular file where /dev/null was. A named pipe
// stands in for the device here (its reading end opened first, so the write neither blocks nor
// hangs the test if it goes elsewhere): it must still be a pipe afterwards, and hold the text.
TEST(OutputFiles, APathThatIsNotAFileIsWrittenInPlace) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::temp_directory_path() / ("gradsync-out-" + std::to_string(::getpid()));
  fs::remove_all(folder);  // named by the process id: not a dead process's of the same id
  fs::create_directories(folder);
  const fs::path pipe = folder / "pipe";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  gradsync::models::write_file_atomically(pipe.string(), "the text\n");
  char buffer[64] = {};
  const ssize_t got = ::read(reader, buffer, sizeof buffer);
  ::close(reader);
  EXPECT_EQ(std::string(buffer, got > 0 ? static_cast<std::size_t>(got) : 0), "the text\n");
  EXPECT_TRUE(fs::is_fifo(pipe));
  EXPECT_EQ(std::distance(fs::directory_iterator(folder), fs::directory_iterator{}), 1);  // no temporary left
  fs::remove_all(folder);
}
