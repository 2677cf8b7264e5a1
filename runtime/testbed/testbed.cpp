#include "runtime/testbed/testbed.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "models/support/error.h"
#include "models/support/process.h"

namespace gradsync::testbed {

namespace fs = std::filesystem;

namespace {

std::string ip_of(const char* net, std::size_t i) {
  return std::string(net) + "." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
}

using Command = std::vector<std::string>;

// Runs a command; returns its exit status and output (standard error included).
int run(const Command& command, std::string* output = nullptr) {
  const auto r = models::run_process(command);
  if (output) *output = r.out;
  return r.status;
}

std::string text_of(const Command& command) { return models::join(command, " "); }

std::string bits_per_second(double bytes_per_second) {
  return std::to_string(static_cast<long long>(std::llround(bytes_per_second * 8))) + "bit";
}

// Frames on the shaped network sized to its slowest link: each lasts kFrameSeconds there, from
// 1500 to 9000 bytes. A frame is what a full token bucket lets through at once after an idle
// spell: with 9000-byte frames on the source-A box at 1/500 (8.9 MB/s), a training step's first
// round after its compute passed its 9.6 KB messages in a third of their time (a 2-GPU ring's
// reduce-scatter 260 us, its all-gather 857 us), and validate --to-target predicted the 2-GPU
// runs 35-60 % too slow. Not smaller on faster links: the two cores pay per frame (with 1500-byte
// frames they spent 63 % of their time in softirq and 8-rank rings ran 30-45 % slow; at 3000
// bytes the 8-GPU box at 1/500, 25 MB/s links, measured its ring 36-75 % slower).
constexpr double kFrameSeconds = 3.5e-4;
constexpr double kSmallestFrame = 1500, kLargestFrame = 9000;

double frame_bytes(double slowest_Bps) { return std::round(std::clamp(slowest_Bps * kFrameSeconds, kSmallestFrame, kLargestFrame)); }

// Token bucket on one veth end's egress: the link's rate in that direction. The bucket holds
// two frames (or 1 ms of traffic if that is more); a second, one-frame bucket at 1.02 x the
// rate (tbf's peakrate) keeps what the first one saved during an idle spell from leaving at
// veth speed: without it a 16 KiB message after a pause passed at once, and 1-bit SGD's
// small messages ran 40 % faster than the link. The queue holds 100 ms.
Command shape(const Command& where, const std::string& dev, double bytes_per_second, double frame_bytes) {
  const auto burst = static_cast<long long>(std::max(2 * frame_bytes, bytes_per_second * 0.001));
  const auto frame = static_cast<long long>(frame_bytes) + 100;  // with the link-layer header
  Command c = where;
  for (const std::string& a : {std::string("tc"), std::string("qdisc"), std::string("replace"), std::string("dev"), dev,
                               std::string("root"), std::string("tbf"), std::string("rate"), bits_per_second(bytes_per_second),
                               std::string("burst"), std::to_string(burst), std::string("peakrate"),
                               bits_per_second(bytes_per_second * 1.02), std::string("mtu"), std::to_string(frame),
                               std::string("latency"), std::string("100ms")}) {
    c.push_back(a);
  }
  return c;
}

// A command run inside namespace `ns`.
Command in_ns(const std::string& ns, Command command = {}) {
  Command c = {"ip", "netns", "exec", ns};
  c.insert(c.end(), command.begin(), command.end());
  return c;
}

}  // namespace

bool running_as_root() { return ::geteuid() == 0; }

models::ordered_json TestbedPlan::state() const {
  models::ordered_json eps = models::ordered_json::array();
  for (const auto& e : endpoints) eps.push_back({{"node", e.node}, {"netns", e.netns}, {"data_ip", e.data_ip}, {"mgmt_ip", e.mgmt_ip}});
  return {{"name", name}, {"scale", scale}, {"endpoints", eps}, {"notes", notes}};
}

TestbedPlan plan_testbed(const models::Topology& t, double scale) {
  if (!(scale > 0) || !std::isfinite(scale)) {
    throw models::InputError("--scale " + std::to_string(scale) + ": expected a factor greater than 0 (e.g. 0.01)");
  }
  if (t.links().size() + 1 != t.node_count()) {
    throw models::InputError("testbed: topology \"" + t.name() + "\" has " + std::to_string(t.links().size()) + " links for " +
                             std::to_string(t.node_count()) +
                             " nodes, so it has cycles (NVLink meshes, several paths); the testbed emulates trees of "
                             "switches only (bridges would loop)");
  }
  TestbedPlan plan;
  plan.name = t.name();
  plan.scale = scale;
  std::map<std::size_t, std::string> netns, bridge;
  std::vector<int> degree(t.node_count(), 0);
  for (const auto& l : t.links()) {
    ++degree[l.a];
    ++degree[l.b];
  }
  std::size_t endpoint_count = 0;
  for (std::size_t i = 0; i < t.node_count(); ++i) {
    if (models::forwards_traffic(t.node(i).kind) && t.node(i).kind != models::NodeKind::nic) {
      bridge[i] = std::string(kTestbedPrefix) + "br" + std::to_string(i);
      continue;
    }
    if (t.node(i).kind == models::NodeKind::nic) {  // a NIC forwards: a bridge as well
      bridge[i] = std::string(kTestbedPrefix) + "br" + std::to_string(i);
      continue;
    }
    if (degree[i] != 1) {
      throw models::InputError("testbed: endpoint \"" + t.node(i).id + "\" has " + std::to_string(degree[i]) +
                               " links; the testbed gives each endpoint one network interface (a leaf of the tree)");
    }
    TestbedEndpoint e{t.node(i).id, std::string(kTestbedPrefix) + "-" + t.node(i).id, ip_of("10.77", endpoint_count),
                      ip_of("10.78", endpoint_count)};
    netns[i] = e.netns;
    plan.endpoints.push_back(e);
    ++endpoint_count;
  }
  if (endpoint_count > 2000) throw models::InputError("testbed: at most 2000 endpoints");

  double slowest = std::numeric_limits<double>::infinity();
  for (const auto& l : t.links()) slowest = std::min(slowest, l.bandwidth_Bps * scale);
  const double frame = frame_bytes(slowest);
  const std::string mtu = std::to_string(static_cast<long long>(frame));
  auto& up = plan.up;
  const std::string mgmt = std::string(kTestbedPrefix) + "mgmt";
  up.push_back({"ip", "link", "add", mgmt, "type", "bridge"});
  up.push_back({"ip", "addr", "add", "10.78.255.254/16", "dev", mgmt});
  up.push_back({"ip", "link", "set", mgmt, "up"});
  for (const auto& [node, name] : bridge) {
    up.push_back({"ip", "link", "add", name, "type", "bridge", "forward_delay", "0", "stp_state", "0"});
    up.push_back({"ip", "link", "set", name, "mtu", mtu});
    up.push_back({"ip", "link", "set", name, "up"});
  }
  for (std::size_t k = 0; k < plan.endpoints.size(); ++k) {
    const auto& e = plan.endpoints[k];
    const std::string m = std::string(kTestbedPrefix) + "m" + std::to_string(k);
    up.push_back({"ip", "netns", "add", e.netns});
    up.push_back(in_ns(e.netns, {"ip", "link", "set", "lo", "up"}));
    // Large messages come in bursts with idle gaps between: keep TCP's window across them.
    up.push_back(in_ns(e.netns, {"sysctl", "-qw", "net.ipv4.tcp_slow_start_after_idle=0"}));
    up.push_back({"ip", "link", "add", m + "a", "type", "veth", "peer", "name", m + "b"});
    up.push_back({"ip", "link", "set", m + "a", "master", mgmt, "up"});
    up.push_back({"ip", "link", "set", m + "b", "netns", e.netns});
    up.push_back(in_ns(e.netns, {"ip", "link", "set", m + "b", "name", "mgmt0"}));
    up.push_back(in_ns(e.netns, {"ip", "addr", "add", e.mgmt_ip + "/16", "dev", "mgmt0"}));
    up.push_back(in_ns(e.netns, {"ip", "link", "set", "mgmt0", "up"}));
  }
  bool half = false;
  for (std::size_t l = 0; l < t.links().size(); ++l) {
    const auto& link = t.links()[l];
    half = half || !link.full_duplex;
    const std::string a = std::string(kTestbedPrefix) + std::to_string(l) + "a", b = std::string(kTestbedPrefix) + std::to_string(l) + "b";
    up.push_back({"ip", "link", "add", a, "type", "veth", "peer", "name", b});
    up.push_back({"ip", "link", "set", a, "mtu", mtu});
    up.push_back({"ip", "link", "set", b, "mtu", mtu});
    const double rate = link.bandwidth_Bps * scale;
    for (const auto& [node, dev] : {std::pair{link.a, a}, std::pair{link.b, b}}) {
      if (netns.count(node)) {
        const std::string& ns = netns.at(node);
        const auto ep = std::find_if(plan.endpoints.begin(), plan.endpoints.end(), [&](const auto& e) { return e.netns == ns; });
        up.push_back({"ip", "link", "set", dev, "netns", ns});
        up.push_back(in_ns(ns, {"ip", "link", "set", dev, "name", "data0"}));
        up.push_back(in_ns(ns, {"ip", "addr", "add", ep->data_ip + "/16", "dev", "data0"}));
        up.push_back(in_ns(ns, {"ip", "link", "set", "data0", "up"}));
        up.push_back(shape(in_ns(ns), "data0", rate, frame));
      } else {
        up.push_back({"ip", "link", "set", dev, "master", bridge.at(node), "up"});
        up.push_back(shape({}, dev, rate, frame));
      }
    }
  }
  char text[200];
  std::snprintf(text, sizeof text, "bandwidths scaled by %g (a 5.96 GB/s link becomes %.1f MB/s)", scale, 5.96e3 * scale);
  plan.notes.push_back(text);
  std::snprintf(text, sizeof text, "frames of %s bytes (%g ms at the slowest link, %g-%g)", mtu.c_str(), kFrameSeconds * 1e3,
                kSmallestFrame, kLargestFrame);
  plan.notes.push_back(text);
  plan.notes.push_back("latency is not emulated (no netem in this kernel): links have the veth + TCP latency");
  if (half) plan.notes.push_back("half-duplex links are shaped per direction, like full-duplex ones");
  return plan;
}

models::json testbed_state() {
  const fs::path file = fs::path(kTestbedStateDir) / "state.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return models::json::object();
  std::ifstream in(file);
  try {
    return models::json::parse(in);
  } catch (const std::exception&) {
    return models::json::object();
  }
}

std::vector<TestbedEndpoint> testbed_endpoints() {
  std::vector<TestbedEndpoint> out;
  const auto state = testbed_state();
  if (!state.contains("endpoints")) return out;
  for (const auto& e : state.at("endpoints")) {
    out.push_back({e.at("node").get<std::string>(), e.at("netns").get<std::string>(), e.at("data_ip").get<std::string>(),
                   e.at("mgmt_ip").get<std::string>()});
  }
  return out;
}

namespace {

// Ends the launchers of jobs in the testbed (mpirun and the shell around it, outside the
// namespaces): their command line names our rsh agent. A launcher caught while starting its
// daemons would otherwise wait for them forever once the namespaces are gone.
void kill_testbed_launchers() {
  const std::string agent = std::string(kTestbedStateDir) + "/rsh-agent";
  for (const auto& [pid, cmdline] : models::process_command_lines()) {
    if (pid <= 1 || pid == ::getpid()) continue;
    if (cmdline.find(agent) != std::string::npos) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
}

}  // namespace

std::vector<std::string> testbed_down() {
  std::vector<std::string> removed;
  std::string out;
  kill_testbed_launchers();
  // Namespaces first (their interfaces go with them), then our links and bridges. What
  // still runs in a namespace (ranks of a killed job) is ended first: a deleted namespace
  // lives on as long as a process holds it.
  run({"ip", "netns", "list"}, &out);
  std::istringstream ns_list(out);
  for (std::string line; std::getline(ns_list, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(std::string(kTestbedPrefix) + "-", 0) == 0) {
      std::string pids;
      if (run({"ip", "netns", "pids", name}, &pids) == 0) {
        std::istringstream list(pids);
        for (long pid; list >> pid;) {
          if (pid > 1 && pid != ::getpid()) ::kill(static_cast<pid_t>(pid), SIGKILL);
        }
      }
      if (run({"ip", "netns", "delete", name}) == 0) removed.push_back("namespace " + name);
    }
  }
  run({"ip", "-o", "link", "show"}, &out);
  std::istringstream links(out);
  std::vector<std::string> bridges;
  for (std::string line; std::getline(links, line);) {
    // "12: gs3a@gs3b: <...>" or "5: gsbr2: <...>"
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 2);
    name = name.substr(0, name.find_first_of("@:"));
    static const std::regex ours("^" + std::string(kTestbedPrefix) + "(br[0-9]+|mgmt|m[0-9]+[ab]|[0-9]+[ab])$");
    if (!std::regex_match(name, ours)) continue;
    if (name.rfind(std::string(kTestbedPrefix) + "br", 0) == 0 || name == std::string(kTestbedPrefix) + "mgmt") {
      bridges.push_back(name);
      continue;
    }
    if (run({"ip", "link", "delete", name}) == 0) removed.push_back("link " + name);
  }
  for (const auto& b : bridges) {
    if (run({"ip", "link", "delete", b}) == 0) removed.push_back("bridge " + b);
  }
  std::error_code ec;
  fs::remove_all(kTestbedStateDir, ec);
  // The emulated hosts' temporary folders.
  for (const auto& entry : fs::directory_iterator("/tmp", ec)) {
    if (entry.path().filename().string().rfind(std::string(kTestbedPrefix) + "-", 0) == 0) fs::remove_all(entry.path(), ec);
  }
  return removed;
}

void testbed_up(const TestbedPlan& plan) {
  if (!running_as_root()) throw models::InputError("testbed up: needs root (network namespaces, bridges and tc)");
  testbed_down();  // idempotent: whatever an earlier run or crash left goes first
  for (const auto& command : plan.up) {
    std::string out;
    if (run(command, &out) != 0) {
      testbed_down();
      throw models::InputError("testbed up: `" + text_of(command) + "` failed: " + out.substr(0, out.find('\n')) +
                               "; nothing is left behind");
    }
  }
  std::error_code ec;
  fs::create_directories(kTestbedStateDir, ec);
  const fs::path dir(kTestbedStateDir);
  models::write_file_atomically((dir / "state.json").string(), plan.state().dump(2) + "\n");
  std::string hosts, hostfile;
  for (const auto& e : plan.endpoints) {
    hosts += e.mgmt_ip + " " + e.netns + "\n";
    hostfile += e.mgmt_ip + " slots=1\n";
  }
  models::write_file_atomically((dir / "hosts").string(), hosts);
  models::write_file_atomically((dir / "hostfile").string(), hostfile);
  // The rsh agent: mpirun calls it as `agent HOST COMMAND...`; it runs COMMAND in HOST's namespace.
  const std::string agent = "#!/bin/sh\n"
                            "# gradsync testbed: enter the namespace of an emulated host (OpenMPI plm_rsh_agent).\n"
                            "host=\"$1\"; shift\n"
                            "ns=$(awk -v h=\"$host\" '$1 == h { print $2 }' " + std::string(kTestbedStateDir) + "/hosts)\n"
                            "[ -n \"$ns\" ] || { echo \"gradsync testbed: no namespace for host $host\" >&2; exit 2; }\n"
                            "# Its own hostname and temporary folder: OpenMPI names session files after the host.\n"
                            "mkdir -p /tmp/$ns\n"
                            "exec ip netns exec \"$ns\" unshare --uts /bin/sh -c \"hostname $ns; export TMPDIR=/tmp/$ns; $*\"\n";
  models::write_file_atomically((dir / "rsh-agent").string(), agent);
  fs::permissions(dir / "rsh-agent", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                         fs::perms::others_read | fs::perms::others_exec, ec);
}

std::vector<std::string> testbed_mpirun(int np, const std::vector<std::string>& nodes) {
  const auto endpoints = testbed_endpoints();
  if (endpoints.empty()) throw models::InputError("testbed: none is up (gradsync testbed up TOPOLOGY)");
  std::vector<const TestbedEndpoint*> chosen;
  if (nodes.empty()) {
    if (np < 1 || static_cast<std::size_t>(np) > endpoints.size()) {
      throw models::InputError("testbed: " + std::to_string(np) + " processes for " + std::to_string(endpoints.size()) + " endpoints");
    }
    for (int i = 0; i < np; ++i) chosen.push_back(&endpoints[static_cast<std::size_t>(i)]);
  } else {
    for (const auto& n : nodes) {
      auto it = std::find_if(endpoints.begin(), endpoints.end(), [&](const auto& e) { return e.node == n; });
      if (it == endpoints.end()) throw models::InputError("testbed: no endpoint \"" + n + "\" in the running testbed");
      chosen.push_back(&*it);
    }
  }
  std::string hosts;
  for (std::size_t i = 0; i < chosen.size(); ++i) hosts += (i ? "," : "") + chosen[i]->mgmt_ip;
  const std::string dir = kTestbedStateDir;
  std::vector<std::string> command = {"mpirun", "--allow-run-as-root", "-np", std::to_string(chosen.size()), "--host", hosts, "--map-by", "node",
          "--mca", "plm_rsh_agent", dir + "/rsh-agent", "--mca", "oob_tcp_if_include", "10.78.0.0/16",
          "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.77.0.0/16", "--mca", "routed", "direct",
          // The emulated hosts share one machine: no hwloc topology in shared memory, no binding.
          "--mca", "rtc", "^hwloc", "--bind-to", "none"};
  for (std::string& o : mpirun_job_options()) command.push_back(std::move(o));
  return command;
}

std::vector<std::string> mpirun_job_options() {
  return {"--mca", "mpi_yield_when_idle", "1", "--mca", "orte_allowed_exit_without_sync", "1"};
}

}  // namespace gradsync::testbed
