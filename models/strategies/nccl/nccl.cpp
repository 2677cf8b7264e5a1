// The nccl strategy: NCCL 2.30.7's collectives (NVIDIA/nccl 5067397c) as NCCL runs them: its
// all-reduce, all-gather, reduce-scatter, broadcast and reduce, and its point-to-point alltoall and
// sendrecv (collective=...). NCCL's own planner decides on every machine (plan.h: its view of each
// host, its channel search, its cost model; planned.h: the plan as a schedule; transports.h: what
// P2P and SHM move within a host). This file holds the strategy's parameters (NCCL's environment
// variables among them) and the range over the facts the inputs leave open.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/executors/result.h"
#include "models/strategies/common.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/nccl/planned.h"
#include "models/strategies/nccl/point_to_point.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/units.h"
#include "models/topology/importers/nccl_tests.h"

namespace gradsync::models::strategies {

namespace nccl_strategy {

// NCCL's releases by major.minor, for the nccl_version parameter: 2.4 .. 2.30.
std::vector<std::string> nccl_versions() {
  std::vector<std::string> v;
  for (int minor = 4; minor <= 30; ++minor) v.push_back("2." + std::to_string(minor));
  return v;
}

// Launching the kernels: the cost per GPU a host thread drives (launch_us), times the GPUs it
// drives (gpus_per_thread).
double launch_seconds(const StrategyContext& ctx) {
  return ctx.params.number("launch_us") * 1e-6 * static_cast<double>(ctx.params.integer("gpus_per_thread"));
}

// The algorithms besides the ring (NCCL_ALGO's names).
std::vector<std::string> not_ring_algorithms() { return {"Tree", "NVLS", "NVLSTree", "CollnetChain", "CollnetDirect"}; }

// nccl-tests' collectives, everywhere.
ParamSpec collective_param() {
  ParamSpec p{"collective", "all_reduce",
              "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv (nccl-tests' *_perf; the "
              "size is the whole buffer, as they print it; broadcast and reduce with root 0, their default). all_gather and "
              "reduce_scatter are half of NCCL's ring; broadcast and reduce its ring cut into a chain at the root, each "
              "channel's part pipelined along it in chunks of one step; alltoall a message of S/N from every rank to every "
              "other at once, sendrecv S from each rank to the next, each over its pair's transport (NCCL's point-to-point "
              "work)",
              word_domain({"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"}, false)};
  for (const char* other : {"all_gather", "reduce_scatter", "broadcast", "reduce"}) {
    p.excludes.push_back({other, "algorithm", not_ring_algorithms(),
                          "gradsync builds NCCL's all-gather, reduce-scatter, broadcast and reduce on its ring only"});
  }
  for (const char* p2p : {"alltoall", "sendrecv"}) {
    p.excludes.push_back({p2p, "algorithm", not_ring_algorithms(),
                          "NCCL's alltoall and sendrecv are point-to-point work (sends and receives), run by none of its collective "
                          "algorithms"});
    p.excludes.push_back({p2p, "protocol", {"LL128"}, "NCCL's point-to-point work runs LL or Simple"});
  }
  return p;
}

std::optional<bool> on_off(const StrategyContext& ctx, const char* name) {
  const std::string& v = ctx.params.text(name);
  if (v == "auto") return std::nullopt;
  return v == "on";
}

nccl::Plan planner_plan(const StrategyContext& ctx) {
  nccl::PlanOptions o;
  const std::string& algorithm = ctx.params.text("algorithm");
  if (algorithm != "auto") o.forced_algorithm = nccl::algorithm_from_name(algorithm);
  const std::string& protocol = ctx.params.text("protocol");
  if (protocol != "auto") o.forced_protocol = nccl::protocol_from_name(protocol);
  const std::string& level = ctx.params.text("p2p_level");
  if (level != "auto") o.p2p_level = nccl::path_type_from_name(level);
  const std::string& gdr = ctx.params.text("gdr_level");
  if (gdr != "auto") o.gdr_level = nccl::path_type_from_name(gdr);
  const std::string& cpu = ctx.params.text("cpu");
  if (cpu != "auto") o.cpu_vendor = cpu;
  const std::string& version = ctx.params.text("nccl_version");
  o.nccl_version = version == "auto" ? nccl::kNcclVersion : nccl::nccl_version_code(version + ".0");
  o.nccl_version_stated = version != "auto";
  o.nvls = on_off(ctx, "nvls");
  o.gpudirect = on_off(ctx, "gpudirect");
  o.vm = on_off(ctx, "vm");
  o.collnet = ctx.params.text("collnet") == "on";
  if (ctx.params.text("min_ctas") != "auto") o.min_ctas = static_cast<int>(ctx.params.integer("min_ctas"));
  if (ctx.params.text("max_ctas") != "auto") o.max_ctas = static_cast<int>(ctx.params.integer("max_ctas"));
  if (ctx.params.text("channels") != "auto") o.min_ctas = o.max_ctas = static_cast<int>(ctx.params.integer("channels"));
  if (ctx.params.text("net_latency_us") != "auto") o.net_latency_us = ctx.params.number("net_latency_us");
  o.ib_qps = static_cast<int>(ctx.params.integer("ib_qps"));
  o.adaptive_routing = on_off(ctx, "adaptive_routing");
  o.net_flow_share = ctx.params.number("net_flow_share");
  o.collective = *nccl::collective_from_name(ctx.params.text("collective"));
  nccl::check_alltoall_scale(o.collective, ctx.N());
  // NCCL 2.4's size rule between its two all-reduce algorithms, where a log or the user set it.
  if (const int a = nccl::tree_threshold_algorithm(ctx, o.collective, static_cast<double>(ctx.bytes())); a >= 0) o.forced_algorithm = a;
  if (nccl::all_gather_like(o.collective)) {
    // All-gather and reduce-scatter as NCCL's ring: what its cost model would pick otherwise
    // (PAT, NVLS) is said, not built.
    if (o.forced_algorithm >= 0 && o.forced_algorithm != nccl::kRing) {
      throw InputError("--param algorithm=" + algorithm + " collective=" + ctx.params.text("collective") +
                       ": gradsync builds NCCL's all-gather and reduce-scatter on its ring only so far");
    }
    int picked = -1;
    if (o.forced_algorithm < 0) {
      const nccl::Plan free = nccl::make_plan(ctx.topology, ctx.placement.ranks, ctx.bytes(), o);
      if (free.choice.time_us >= 0 && free.algorithm() != nccl::kRing) picked = free.algorithm();
      o.forced_algorithm = nccl::kRing;
    }
    nccl::Plan plan = nccl::make_plan(ctx.topology, ctx.placement.ranks, ctx.bytes(), o);
    plan.picked_instead = picked;
    return plan;
  }
  nccl::Plan plan = nccl::make_plan(ctx.topology, ctx.placement.ranks, ctx.bytes(), o);
  if (plan.choice.time_us < 0 && ctx.N() > 1) {
    throw InputError("--param algorithm=" + algorithm + " protocol=" + protocol +
                     ": NCCL would not run this here (NVLS needs an NVSwitch with Hopper or later GPUs and NVLink SHARP on; "
                     "NVLSTree also needs two hosts or more; CollnetChain and CollnetDirect need collnet=on, two hosts or "
                     "more of at most 8 GPUs, and CollnetDirect an NVSwitch; LL128 and NVLS have protocol limits)");
  }
  return plan;
}

// How much the facts the plan assumed matter: the plan again under each one's other value, its
// algorithm and bus bandwidth by the plan's closed form, and the range they span.
// Each open fact's plan on a thread of its own (each searches its hosts again: a tenth of a
// second on a large cluster), started before the schedule is built so that they run beside it.
std::vector<std::future<nccl::Plan>> plan_open_facts(const StrategyContext& ctx, const nccl::Plan& plan) {
  std::vector<std::future<nccl::Plan>> plans;
  if (ctx.N() < 2) return plans;
  for (const nccl::Assumption& a : plan.assumed) {
    plans.push_back(std::async(std::launch::async, [&ctx, &a] {
      return nccl::make_plan(ctx.topology, ctx.placement.ranks, ctx.bytes(), a.with_other);
    }));
  }
  return plans;
}

// Where the inputs leave SHM's rate open: the share of the PCIe rate GPU threads reach through
// host memory, fitted to each published machine alone, spans this (docs/fidelity.md, `gradsync
// calibrate`); the default is the fit across them all.
constexpr double kShmEfficiencyLow = 0.45, kShmEfficiencyHigh = 0.8;
// launch_us's other values: fitted to each published machine alone (`gradsync calibrate FILE
// --grid launch_us=0,0.5,1,2,3,4,5,6,8,10`) the launch cost runs from 0 (the 2080 Ti pair) to 10
// us (the A100 PCIe pair, whose small sizes are noisy); its 20th and 80th percentiles over the
// eleven machines: a fact every prediction leaves open, so its range is the middle of the
// machines', and what lies beyond is the model's own error (calibrate's bands measure it at the
// fitted value, OpenFact::measured_in_band).
constexpr double kLaunchLow = 2, kLaunchHigh = 6;
// gdr_cpu_share's other values: the lowest fitted to one published cluster whose GPUDirect RDMA
// crosses the host bridge (Polaris's 0.55; the A100 PCIe pair's 0.6), and none lost (as through a
// PCIe switch).
constexpr double kGdrCpuShareLow = 0.55, kGdrCpuShareHigh = 1.0;

// How far the model itself misses where every fact is known: the 5th and 95th percentiles of the
// signed error (predicted / measured - 1) of the held-out predictions over every published table,
// each machine predicted with the constants fitted on the others and weighing alike (`gradsync
// calibrate`'s last table; docs/fidelity.md gives the commands), by what the model knows of a prediction before it
// is measured: one host or several, collectives or point-to-point work, and the size (the model
// misses most at mid sizes, where launches, protocols and pipelines weigh, least where bandwidth
// rules). Most published clusters' runs leave the CPU, NVLink SHARP, GPUDirect RDMA, whether
// they ran in VMs and how their fabric routes open; their bands are calibrate's with those given as
// the runs had them (`-p cpu=intel -p nvls=on -p gpudirect=on -p vm=off -p adaptive_routing=off`; the CPU changes no plan but the two whose
// NICs sit on their AMD CPUs, where NCCL's search charges Intel's host bridge more). The launch cost, open in every small and mid-size
// prediction, is no bar: the bands are measured at its fitted value (OpenFact::measured_in_band).
// Each prediction names its band (the fact's assumed value), so that calibrate can restate it
// from the other machines' errors.
struct ErrorBand {
  bool across_hosts, point_to_point;
  double from_bytes;  // the band holds from this size to the next band's
  double low, high;
};
constexpr std::array<double, 4> kBandSizes = {0, 1 * kMiB, 16 * kMiB, 256 * kMiB};
constexpr ErrorBand kErrorBands[] = {
    {false, false, 0, -0.34, 0.60},       {false, false, 1 * kMiB, -0.40, 0.50},
    {false, false, 16 * kMiB, -0.13, 0.17}, {false, false, 256 * kMiB, -0.05, 0.04},
    {false, true, 0, -0.15, 1.48},        {false, true, 1 * kMiB, -0.06, 2.94},
    {false, true, 16 * kMiB, -0.05, 0.61},  {false, true, 256 * kMiB, -0.05, 0.09},
    {true, false, 0, -0.50, 5.24},        {true, false, 1 * kMiB, -0.46, 2.09},
    {true, false, 16 * kMiB, -0.18, 0.49},  {true, false, 256 * kMiB, -0.21, 0.30},
    {true, true, 0, -0.62, 0.00},         {true, true, 1 * kMiB, -0.54, 0.07},
    {true, true, 16 * kMiB, -0.33, 0.38},   {true, true, 256 * kMiB, -0.34, 0.38},
};

// The band of a prediction, and its name ("one host, collectives, 16 - 256 MiB").
const ErrorBand& error_band(bool across_hosts, bool point_to_point, double bytes) {
  double from = 0;
  for (const double b : kBandSizes) {
    if (bytes >= b) from = b;
  }
  for (const ErrorBand& e : kErrorBands) {
    if (e.across_hosts == across_hosts && e.point_to_point == point_to_point && e.from_bytes == from) return e;
  }
  throw std::logic_error("nccl: no error band for this prediction");
}
std::string band_name(const ErrorBand& e) {
  const auto at = std::find(kBandSizes.begin(), kBandSizes.end(), e.from_bytes);
  const auto mib = [](double b) { return format_fixed(b / kMiB, 0); };
  const std::string sizes = at + 1 == kBandSizes.end() ? mib(*at) + " MiB and more" : mib(*at) + " - " + mib(*(at + 1)) + " MiB";
  return std::string(e.across_hosts ? "across hosts" : "one host") + ", " + (e.point_to_point ? "point-to-point" : "collectives") +
         ", " + sizes;
}

// An alltoall's blocks off 16-byte alignment go a byte at a time (misaligned_alltoall). Each
// thread's loop then moves one byte per load where aligned copies move 16, with Unroll x 8 one-byte
// packs in flight where aligned ones have Unroll 16-byte packs: half the bytes (common_kernel.h,
// reduceCopy). Bound by instructions alone that is 16 times slower; waiting on memory too, 32.
// The one published run of it (8 x A100 SXM, 5 and 7 ranks) measured 27-32 times at 200 MB and
// more, slower still at 1-50 MB.
constexpr int kBytewiseInstructionBound = 16;
constexpr int kBytewiseSlowdown = 2 * kBytewiseInstructionBound;

// Whether some ranks of one host talk over SHM in this plan.
bool uses_shm(const nccl::Plan& plan) {
  for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
    const nccl::HostLinks& l = plan.host_links(h);
    for (int a = 0; a < l.ranks; ++a) {
      for (int b = 0; b < l.ranks; ++b) {
        if (!l.p2p_between(a, b)) return true;
      }
    }
  }
  return false;
}

// The open facts, from their plans (plan_open_facts): each other value's time relative to the
// assumed one's by the plan's closed form, into the schedule (records turn them into bus
// bandwidths and a range), and said in a note.
void open_facts(const StrategyContext& ctx, const nccl::Plan& plan, std::vector<std::future<nccl::Plan>>& plans, Schedule& s) {
  if (plans.size() != plan.assumed.size() || ctx.N() < 2 || ctx.elements == 0) return;
  const double launch = launch_seconds(ctx);
  const double factor = collective_busbw_factor(ctx.N(), ctx.params.values());
  auto seconds_under = [&](const nccl::Plan& p, const std::map<std::string, std::string>& params) {
    if (params.empty()) return nccl::planned_seconds(ctx, p, launch);
    StrategyParams changed = ctx.params;
    for (const auto& [k, v] : params) changed.set(k, v);
    const StrategyContext other{ctx.topology, ctx.placement, changed, ctx.elements, ctx.element_bytes, ctx.workload, false, {}};
    return nccl::planned_seconds(other, p, launch_seconds(other));
  };
  const double assumed_s = seconds_under(plan, {});
  if (!(assumed_s > 0)) return;
  // Another value's busbw against the assumed one's, as the record's range applies it: the
  // closed form gives the ratio, the executor's time the figure (a walk may differ from the closed
  // form, so the note says no absolute figure the table beside it could contradict).
  auto busbw_change = [&](double seconds) {
    const double change = assumed_s / seconds - 1;
    return std::abs(change) < 0.005 ? std::string("busbw as assumed") : "busbw " + format_percent(change, 0, true);
  };
  std::vector<nccl::Assumption> facts = plan.assumed;
  std::vector<nccl::Plan> other_plans;
  for (auto& f : plans) other_plans.push_back(f.get());
  // A fitted constant the plan leans on, unless the user stated it: its other plausible values,
  // each with what it stands for, as facts of the same plan under another value of the parameter
  // (at its default, or at the value calibrate is trying for it).
  std::set<std::string> fitted, independent;  // facts of fitted constants; those that no transport decides
  auto fitted_fact = [&](bool applies, const std::string& param, const std::string& fact, const std::string& fitted_on,
                         const std::vector<std::pair<double, std::string>>& others) {
    fitted.insert(fact);
    const ParamSpec* spec = find_param(ctx.params.strategy(), param);
    if (!applies || !spec || ctx.params.stated(param)) return;
    for (const auto& [value, what] : others) {
      nccl::Assumption a{fact, ctx.params.text(param) + " (fitted across the published " + fitted_on + ")", format_fixed(value, 2) + " (" + what + ")", {}};
      a.params = {{param, format_fixed(value, 2)}};
      facts.push_back(a);
      other_plans.push_back(plan);
    }
  };
  // SHM's share prices SHM's hops, and without GPUDirect RDMA the staging of a ring's network
  // traffic through host memory (transports.cpp net_channel_cap).
  const bool staged = plan.hosts.size() > 1 && !plan.host.gdr && plan.algorithm() == nccl::kRing;
  fitted_fact(uses_shm(plan) || staged, "shm_efficiency", "SHM's share of the PCIe rate", "machines",
              {{kShmEfficiencyLow, "the slowest machine's"}, {kShmEfficiencyHigh, "the fastest machine's"}});
  independent.insert("launch cost per GPU a thread drives, us");
  fitted_fact(true, "launch_us", "launch cost per GPU a thread drives, us", "machines",
              {{kLaunchLow, "a quick machine's: the 20th percentile of their own fits"},
               {kLaunchHigh, "a slow machine's: the 80th percentile"}});
  fitted_fact(plan.gdr_through_cpu, "gdr_cpu_share", "GPUDirect RDMA's share of the NIC through the host bridge", "clusters",
              {{kGdrCpuShareLow, "the slowest cluster's"}, {kGdrCpuShareHigh, "none lost, as through a PCIe switch"}});
  const std::size_t plan_facts = plan.assumed.size();
  // On one host every fact decides one thing (which transport each hop takes): one group.
  const std::string group = plan.hosts.size() == 1 ? "NCCL's transports" : "";
  // Across hosts GPUDirect RDMA off and a VM that sends it through the root complex are two
  // answers to one question (how the NICs reach the GPUs' memory): the range takes the worse of
  // them, not both at once.
  auto group_of = [&](const std::string& fact) {
    if (independent.count(fact)) return std::string();
    if (plan.hosts.size() > 1 && (fact == "GPUDirect RDMA" || fact == "virtual machine")) return std::string("how the NICs reach GPU memory");
    return group;
  };
  // Said as "fact: assumed (other: result; other: result)", a fact's other values together.
  struct Told {
    std::string fact, head;           // the fact's name; "fact: assumed"
    std::vector<std::string> others;  // "other: result"
  };
  std::vector<Told> told;
  std::set<std::string> moves;  // the facts told whose other values move the busbw
  for (std::size_t i = 0; i < facts.size(); ++i) {
    const nccl::Assumption& a = facts[i];
    const nccl::Plan& other = other_plans[i];
    std::string result;
    OpenFact* fact = nullptr;
    for (OpenFact& f : s.open_facts) {
      if (f.name == a.fact) fact = &f;
    }
    if (!fact) {
      s.open_facts.push_back(OpenFact{a.fact, a.value.substr(0, a.value.find(" (")), {}, group_of(a.fact)});
      fact = &s.open_facts.back();
      fact->measured_in_band = independent.count(a.fact) > 0;
    }
    const std::string head = a.fact + ": " + a.value.substr(0, a.value.find(" ("));
    if (other.choice.time_us < 0) {
      result = "the chosen algorithm would not run";
      moves.insert(head);
    } else {
      const double t = seconds_under(other, a.params);
      fact->relative_time.emplace_back(a.other.substr(0, a.other.find(" (")), t / assumed_s);
      result = std::string(nccl::algorithm_name(other.algorithm())) + "/" + nccl::protocol_name(other.protocol()) + ", " +
               busbw_change(t);
      if (std::abs(assumed_s / t - 1) >= 0.005) moves.insert(head);
    }
    if (told.empty() || told.back().head != head) told.push_back({a.fact, head, {}});
    told.back().others.push_back(a.other + ": " + result);
    // SHM's share matters as much under another fact's plan that also moves bytes over SHM:
    // those cases join the SHM fact's values (one group: the range takes the whole case).
    if (i >= plan_facts && !group.empty() && !independent.count(a.fact)) {
      for (std::size_t j = 0; j < plan_facts; ++j) {
        if (other_plans[j].choice.time_us < 0 || !uses_shm(other_plans[j])) continue;
        std::map<std::string, std::string> params = facts[j].params;
        params.insert(a.params.begin(), a.params.end());
        const double t = seconds_under(other_plans[j], params);
        const std::string other_value = facts[j].other.substr(0, facts[j].other.find(" ("));
        fact->relative_time.emplace_back(a.other.substr(0, a.other.find(" (")) + " with " + facts[j].fact + " " + other_value, t / assumed_s);
      }
    }
  }
  // A fitted constant whose other values change nothing here (the launch cost at large sizes)
  // goes unsaid; a fact of the inputs is said whatever it moves.
  std::erase_if(told, [&](const Told& t) { return !moves.count(t.head) && fitted.count(t.fact); });
  std::string said;
  for (const auto& [fact, head, others] : told) {
    said += (said.empty() ? "" : ", ") + head + " (";
    for (std::size_t k = 0; k < others.size(); ++k) said += (k ? "; " : "") + others[k];
    said += ")";
  }
  // An alltoall of blocks off NCCL's 16-byte copies: how much slower its byte-wise copies are.
  if (nccl::misaligned_alltoall(ctx, plan)) {
    const ParamSpec* spec = find_param(ctx.params.strategy(), "bytewise_slowdown");
    const std::uint64_t block = ctx.elements / static_cast<std::uint64_t>(ctx.N()) * static_cast<std::uint64_t>(ctx.element_bytes);
    said += std::string(said.empty() ? "" : ", ") + "alltoall blocks of " + std::to_string(block) +
            " bytes, off 16-byte alignment: NCCL copies them a byte at a time, " + ctx.params.text("bytewise_slowdown") +
            " times slower";
    if (spec && ctx.params.text("bytewise_slowdown") == spec->default_value) {
      const double t = seconds_under(plan, {{"bytewise_slowdown", std::to_string(kBytewiseInstructionBound)}});
      s.open_facts.push_back(OpenFact{"byte-wise copies of misaligned alltoall blocks",
                                      std::to_string(kBytewiseSlowdown) + " times slower (instructions and memory)",
                                      {{std::to_string(kBytewiseInstructionBound) + " times slower (instructions alone)", t / assumed_s}},
                                      ""});
      said += " (" + std::to_string(kBytewiseInstructionBound) + " times, bound by instructions alone: " + busbw_change(t) + ")";
    }
  }
  // The model's own error, as its held-out figures have it.
  const ErrorBand& band = error_band(plan.hosts.size() > 1, nccl::point_to_point(plan.collective), ctx.bytes());
  s.open_facts.push_back(OpenFact{"the model's own error", band_name(band),
                                  {{"measured slower, as the held-out 95th percentile", 1 + band.high},
                                   {"measured faster, as the held-out 5th percentile", 1 + band.low}}, ""});
  // A fact whose values all give the assumed time changes nothing here: said, but no range.
  std::erase_if(s.open_facts, [](const OpenFact& f) {
    return std::all_of(f.relative_time.begin(), f.relative_time.end(), [](const auto& v) { return std::abs(v.second - 1) < 0.005; });
  });
  if (said.empty()) return;
  ResultRecord probe;
  probe.bytes = ctx.bytes();
  probe.time_per_sync_s = assumed_s;
  probe.busbw_factor = factor;
  probe.open_facts = s.open_facts;
  const auto range = probe.busbw_range_GBps();
  const double assumed_busbw = *probe.busbw_GBps();
  s.notes.push_back("open facts: " + said + "; the busbw range is " + format_percent(range->first / assumed_busbw - 1, 0, true) + " .. " +
                    format_percent(range->second / assumed_busbw - 1, 0, true) +
                    " of the prediction over them and the model's held-out error (" + band_name(band) + ": " + format_fixed(100 * band.low, 0) +
                    " .. +" + format_fixed(100 * band.high, 0) + " %)");
}

std::string collective_phase(const StrategyContext& ctx) {
  std::string c = ctx.params.text("collective");
  std::replace(c.begin(), c.end(), '_', '-');
  return c;
}

void resolve_planned(const StrategyContext& ctx, const nccl::Plan& plan) {
  ctx.resolved_as("algorithm", nccl::algorithm_name(plan.algorithm()));
  ctx.resolved_as("protocol", nccl::protocol_name(plan.protocol()));
  const bool nvls = plan.algorithm() == nccl::kNvls || plan.algorithm() == nccl::kNvlsTree;
  ctx.resolved_as("channels", std::to_string(nvls ? plan.nvls_channels : plan.comm.channels));
}

// NCCL_ALGO: the ring and the tree run everywhere; NVLS where every host of the ranks has an
// NVSwitch and Hopper or later GPUs (one host), NVLS tree across two or more such hosts.
ParamSpec algorithm_param() {
  ParamDomain d = word_domain({"Ring", "Tree"}, true);
  // NVLS and CollNet where the ranks' hosts can run them.
  const auto more = [](const ParamContext& c) {
    std::vector<std::string> v = nccl::nvls_algorithms(c.topology, c.placement.ranks);
    for (std::string& a : nccl::collnet_algorithms(c.topology, c.placement.ranks)) v.push_back(std::move(a));
    return v;
  };
  d.values = more;
  d.values_text = [more](const ParamContext& c) {
    const std::vector<std::string> v = more(c);
    return v.empty() ? std::string("NVLS or CollNet where the ranks' hosts can run them (not here: NVLS needs NVSwitch hosts with "
                                   "Hopper or later GPUs, CollNet two hosts or more)")
                     : join(v, ", ") + (v.back().rfind("Collnet", 0) == 0 ? " (CollNet with collnet=on)" : "");
  };
  ParamSpec p{"algorithm", "auto",
              "Ring, Tree, NVLS, NVLSTree, CollnetChain or CollnetDirect (NCCL_ALGO); auto: the fastest by NCCL's cost "
              "model (across hosts the tree is NCCL's double binary tree; NVLS needs NVSwitch hosts with Hopper or later "
              "GPUs, NVLSTree two of them or more; CollNet needs collnet=on)",
              std::move(d)};
  // A search takes NCCL's own pick (shown as what it became: algorithm=NVLSTree), then weighs it
  // against each algorithm the ranks can run, forced (NCCL_ALGO), on the GPUs of its best choice:
  // recommend says why NCCL's pick wins, or that a forced one beats it. (CollNet only with
  // collnet=on: the search leaves out values that a fixed or default parameter excludes.)
  p.search = [](const ParamContext&) { return std::vector<std::string>{"auto"}; };
  p.weigh = [more](const ParamContext& c) {
    std::vector<std::string> v = {"Ring", "Tree"};
    for (std::string& a : more(c)) v.push_back(std::move(a));
    return v;
  };
  for (const char* nvls : {"NVLS", "NVLSTree"}) {
    p.excludes.push_back({nvls, "protocol", {"LL", "LL128"}, "NCCL runs NVLS with its Simple protocol only"});
    p.excludes.push_back({nvls, "nvls", {"off"}, "NVLS needs NVLink SHARP"});
  }
  for (const char* collnet : {"CollnetChain", "CollnetDirect"}) {
    p.excludes.push_back({collnet, "protocol", {"LL", "LL128"}, "NCCL runs CollNet with its Simple protocol only"});
    p.excludes.push_back({collnet, "collnet", {"off"}, "CollNet runs only where it is enabled (collnet=on)"});
  }
  return p;
}

Strategy definition() {
  Strategy s;
  s.name = "nccl";
  s.summary = "NCCL's collectives by NCCL 2.30.7's planner: P2P/SHM/NET per hop, channels, ring/tree/NVLS and "
              "LL/LL128/Simple by its cost model, reduction fused into the copy; all-reduce, all-gather, reduce-scatter, "
              "broadcast, reduce, alltoall and sendrecv (collective=...); the range the inputs' open facts span";
  s.source = "NVIDIA NCCL 2.30.7 (src/graph/tuning.cc, paths.cc, topo.cc; src/transport/shm.cc)";
  s.order = 27;
  // recommend compares schedules on gradsync's engine; NCCL's fused one on a single PCIe host is
  // its own (tried when named). Across hosts and on NVSwitch hosts it is what the cluster runs:
  // a search weighs it beside the others.
  s.searched = false;
  s.searched_on = [](const Topology& t) {
    for (std::size_t g : t.gpus()) {
      if (nccl::nvswitch_of(t, g)) return true;
    }
    return nccl::hosts_of(t, t.gpus()).size() > 1;
  };
  s.params = {
      collective_param(),
      algorithm_param(),
      ParamSpec{"protocol", "auto", "LL, LL128 or Simple (NCCL_PROTO); auto: the fastest by NCCL's cost model, LL128 only on "
                                    "rings that are NVLink end to end",
                word_domain({"LL", "LL128", "Simple"}, true)},
      ParamSpec{"channels", "auto", "rings run at once (NCCL_MIN_CTAS = NCCL_MAX_CTAS); auto: what NCCL's search finds, "
                                    "doubled as NCCL does",
                integer_domain(1, 64, 0, true)},
      ParamSpec{"p2p_level", "auto",
                "NCCL_P2P_LEVEL: the farthest path class (PIX, PXB, PHB, NODE, SYS) P2P is used over; auto: NCCL's "
                "default: since 2.23 PXB, or SYS between the two GPUs of an AMD host; before 2.23 SYS, or PXB with Intel "
                "and ARM CPUs (the driver must allow peer access too)",
                word_domain({"NVL", "PIX", "PXB", "PHB", "NODE", "SYS"}, true)},
      ParamSpec{"tree_threshold", "auto",
                "NCCL_TREE_THRESHOLD (NCCL 2.4 only: removed in 2.5, which ignores it): an all-reduce of fewer bytes "
                "runs on trees, of as many or more on rings (0: rings at every size); auto: NCCL's cost model",
                integer_domain(0, 1e15, 0, true)},
      ParamSpec{"min_ctas", "auto", "NCCL_MIN_CTAS: at least this many channels",
                integer_domain(1, 64, 0, true)},
      ParamSpec{"max_ctas", "auto", "NCCL_MAX_CTAS: at most this many channels",
                integer_domain(1, 64, 0, true)},
      ParamSpec{"gdr_level", "auto",
                "NCCL_NET_GDR_LEVEL: the farthest path class between a GPU and a NIC that GPUDirect RDMA is used over "
                "(else staged through host memory); auto: NCCL's default (the GPU and NIC under one PCIe root: PXB)",
                word_domain({"PIX", "PXB", "PHB", "SYS"}, true)},
      ParamSpec{"vm", "auto",
                "the hosts are virtual machines without PCIe ATS, whose ACS sends GPUDirect RDMA through the CPU's root "
                "complex (at gdr_cpu_share of the NIC); auto: the hosts' fact (topology generate --vm), else not, an open fact "
                "across hosts",
                word_domain({"on", "off"}, true)},
      ParamSpec{"ib_qps", "1",
                "NCCL_IB_QPS_PER_CONNECTION: queue pairs each connection of NCCL's IB transport (InfiniBand, RoCE) spreads "
                "its bytes over",
                integer_domain(1, 128, 0)},
      ParamSpec{"adaptive_routing", "auto",
                "whether the fabric between the hosts routes packets adaptively (InfiniBand adaptive routing), so that no "
                "queue pair of NCCL's IB transport keeps to one path; auto: the NICs' fact (topology generate "
                "--adaptive-routing), else not (static routing, each queue pair at most net_flow_share of its NIC), an open "
                "fact across hosts",
                word_domain({"on", "off"}, true)},
      ParamSpec{"gpudirect", "auto", "GPUDirect RDMA between GPUs and NICs (nvidia-peermem); auto: the NICs' fact, else on",
                word_domain({"on", "off"}, true)},
      ParamSpec{"nvls", "auto", "NVLink SHARP on NVSwitch hosts (NCCL_NVLS_ENABLE); auto: the switch's fact, else on with "
                                "Hopper or later GPUs",
                word_domain({"on", "off"}, true)},
      ParamSpec{"collnet", "off",
                "CollNet (NCCL_COLLNET_ENABLE=1 with a SHARP plugin): the network's switches reduce across hosts, and NCCL "
                "weighs CollnetChain, CollnetDirect and NVLS across hosts; needs NICs whose network reduces (the NICs' "
                "fact; where not stated, assumed since asked for)",
                word_domain({"on", "off"}, false)},
      ParamSpec{"cpu", "auto", "the host's CPU (NCCL's default P2P level and latencies depend on it); auto: the "
                               "topology's, else not known",
                word_domain({"amd", "intel", "arm"}, true)},
      ParamSpec{"nccl_version", "auto",
                "the NCCL release (major.minor) whose rules differ where NCCL changed them (the default P2P level in 2.23; "
                "the cost model's latencies and rules it chooses with in 2.8, 2.12, 2.18, 2.21 and 2.23); "
                "auto: a log's, else 2.30 (with the older cost models' choices as an open fact where they differ)",
                word_domain(nccl_versions(), true)},
      ParamSpec{"pcie", "auto", "the GPUs' PCIe generation (x16) for SHM; auto: measured host copies, else the GPU model",
                word_domain({"gen3", "gen4", "gen5", "gen6"}, true)},
      ParamSpec{"in_place", "off",
                "whether each rank's result takes the place of its input (nccl-tests' in-place columns); off: out of "
                "place, as nccl-tests' first columns, where an all-gather on rings and an alltoall also copy each "
                "rank's own block within its GPU",
                word_domain({"on", "off"}, false)},
      ParamSpec{"gpus_per_thread", "1", "GPUs one host thread launches kernels for (nccl-tests -g N: N)",
                integer_domain(1, 1024, 16)},
      ParamSpec{"shm_efficiency", "0.7", "share of its PCIe rate SHM reaches (fitted once across the published machines; "
                                         "0.45-0.8 fitted to each that runs SHM alone)",
                real_domain(0, 1, false, true)},
      ParamSpec{"ll_channel_GBps", "7", "LL's payload rate per channel over PCIe (fitted once across the published "
                                          "machines)",
                rate_domain(false)},
      ParamSpec{"p2p_channel_GBps", "13", "what one channel's threads copy over PCIe at most, GB/s (Simple; fitted once "
                                            "across the published machines)",
                rate_domain(false)},
      ParamSpec{"launch_us", "4", "launch cost per GPU a thread drives, us (fitted once across the published machines)",
                real_domain(0, 1e6, true, true, 100)},
      ParamSpec{"bytewise_slowdown", std::to_string(kBytewiseSlowdown),
                "how many times slower NCCL copies an alltoall's blocks that are off 16-byte alignment, a byte at a time "
                "(src/device/common_kernel.h: 16 times the instructions a byte, and half the bytes in flight a thread)",
                real_domain(1, 1e6, false, true, 1000)},
      ParamSpec{"net_latency_us", "auto",
                "the latency the network plugin reports to NCCL, us (OFI_NCCL_NET_LATENCY), which NCCL's cost model adds "
                "to each step between hosts; auto: aws-ofi-nccl's on EFA (75: p4d, p5 and its default; 35 on p5en and p6, "
                "150 on p3dn), 0 for NCCL's own IB and socket transports and on Slingshot",
                real_domain(0, 1e6, true, true, 1000, true)},
      ParamSpec{"gdr_cpu_share", "0.6",
                "share of its NIC's rate GPUDirect RDMA reaches where it crosses a CPU's host bridge (PHB or SYS "
                "between GPU and NIC), which NVIDIA's GPUDirect RDMA guide says yields worse performance without saying "
                "how much (fitted once across the published multi-node runs; 0.55-0.6 fitted to each that has it)",
                real_domain(0, 1, false, true)},
      ParamSpec{"net_message_us", "3",
                "what each point-to-point message between hosts adds to its batch's step, us: NCCL's proxy posts and "
                "completes each on its own (fitted once across the published multi-node runs)",
                real_domain(0, 1e4, true, true, 64)},
      ParamSpec{"net_flow_share", "0.4",
                "share of its NIC one queue pair of NCCL's IB transport moves at most where the fabric routes each queue "
                "pair on one path (static routing: NCCL_IB_QPS_PER_CONNECTION's routing entropy; fitted once across the "
                "published multi-node runs)",
                real_domain(0, 1, false, true)},
      ParamSpec{"net_window_MiB", "4",
                "bytes in flight a channel's connection between hosts needs to fill its NIC, MiB: with NCCL's 8 steps "
                "of its buffer it moves their share of the NIC's rate (fitted once across the published multi-node runs)",
                real_domain(0, 1e6, false, true, 64)},
  };
  for (ParamSpec& p : s.params) {
    if (p.name == "algorithm" || p.name == "protocol" || p.name == "channels") {
      p.resolved = true;
      p.shown = ParamSpec::Shown::when_resolved;
    }
  }
  s.states_open_facts = true;
  s.decided_by = [](const ResultRecord& r) {
    // The planner's first note: the algorithm and protocol NCCL's cost model chose (or the
    // settings forced them), with its figures.
    for (const std::string& note : r.notes) {
      if (note.find("by NCCL 2.30.7's planner") == std::string::npos) continue;
      const bool forced = note.find("(NCCL_ALGO=") != std::string::npos || note.find("(NCCL_PROTO=") != std::string::npos ||
                          note.find("(NCCL_TREE_THRESHOLD=") != std::string::npos;
      return (forced ? "NCCL runs " : "NCCL's cost model picks ") + note;
    }
    return std::string();
  };
  s.params_from_environment = [](const std::map<std::string, std::string>& env) {
    std::map<std::string, std::string> out;
    auto word = [&](const char* key, const char* param, std::vector<std::string> words) {
      const auto it = env.find(key);
      if (it == env.end()) return;
      for (const std::string& w : words) {
        std::string a = w, b = it->second;
        std::transform(a.begin(), a.end(), a.begin(), ::tolower);
        std::transform(b.begin(), b.end(), b.begin(), ::tolower);
        if (a == b) out[param] = w;
      }
    };
    word("NCCL_ALGO", "algorithm", {"Ring", "Tree", "NVLS", "NVLSTree", "CollnetChain", "CollnetDirect"});
    word("NCCL_PROTO", "protocol", {"LL", "LL128", "Simple"});
    word("NCCL_P2P_LEVEL", "p2p_level", {"NVL", "PIX", "PXB", "PHB", "NODE", "SYS"});
    word("NCCL_NET_GDR_LEVEL", "gdr_level", {"PIX", "PXB", "PHB", "SYS"});
    if (const auto it = env.find("NCCL_TREE_THRESHOLD"); it != env.end()) {
      char* end = nullptr;
      const long long v = std::strtoll(it->second.c_str(), &end, 10);
      if (end != it->second.c_str() && *end == '\0' && v >= 0) out["tree_threshold"] = std::to_string(v);
    }
    // NCCL's integer levels for both (paths.cc: 1 PIX, 2 PXB, 3 PHB, 4 SYS, 5 SYS; 0, LOC, is not
    // among the parameter's choices and is left out).
    static const std::array<const char*, 6> levels = {"", "PIX", "PXB", "PHB", "SYS", "SYS"};
    for (const auto& [key, param] : {std::pair<const char*, const char*>{"NCCL_P2P_LEVEL", "p2p_level"}, {"NCCL_NET_GDR_LEVEL", "gdr_level"}}) {
      const auto it = env.find(key);
      if (it != env.end() && it->second.size() == 1 && it->second[0] >= '1' && it->second[0] <= '5') out[param] = levels[static_cast<std::size_t>(it->second[0] - '0')];
    }
    // Whole counts, each within its parameter's domain.
    struct Count {
      const char* key;
      const char* param;
      long most;
    };
    for (const Count& c : {Count{"NCCL_MIN_CTAS", "min_ctas", 64}, Count{"NCCL_MAX_CTAS", "max_ctas", 64},
                           Count{"NCCL_IB_QPS_PER_CONNECTION", "ib_qps", 128}}) {
      const auto it = env.find(c.key);
      if (it == env.end()) continue;
      char* end = nullptr;
      const long v = std::strtol(it->second.c_str(), &end, 10);
      if (end != it->second.c_str() && *end == '\0' && v >= 1 && v <= c.most) out[c.param] = std::to_string(v);
    }
    if (const auto it = env.find("NCCL_COLLNET_ENABLE"); it != env.end() && (it->second == "0" || it->second == "1")) {
      out["collnet"] = it->second == "1" ? "on" : "off";
    }
    if (const auto it = env.find("NCCL_NVLS_ENABLE"); it != env.end() && (it->second == "0" || it->second == "1")) {
      out["nvls"] = it->second == "1" ? "on" : "off";
    }
    return out;
  };
  s.test_variants = {{{}}, {{"protocol=LL"}}, {{"protocol=Simple", "channels=4"}}, {{"algorithm=Tree"}},
                     {{"algorithm=Tree", "protocol=LL"}}, {{"collective=all_gather"}}, {{"collective=reduce_scatter", "protocol=LL"}},
                     {{"collective=broadcast"}}, {{"collective=reduce", "protocol=LL"}}, {{"collective=alltoall"}},
                     {{"collective=sendrecv"}}};
  s.busbw_factor = collective_busbw_factor;
  s.closed_form = [](const StrategyContext& ctx) {
    const nccl::Plan planned = planner_plan(ctx);
    resolve_planned(ctx, planned);
    return formulas::Breakdown{{{collective_phase(ctx), nccl::planned_seconds(ctx, planned, launch_seconds(ctx))}}};
  };
  s.build = [](const StrategyContext& ctx) {
    const nccl::Plan planned = planner_plan(ctx);
    resolve_planned(ctx, planned);
    std::vector<std::future<nccl::Plan>> facts;
    if (ctx.explain) facts = plan_open_facts(ctx, planned);
    Schedule s = nccl::planned_schedule(ctx, planned, launch_seconds(ctx));
    for (std::string& line : nccl::describe_plan(ctx, planned)) s.notes.push_back(std::move(line));
    if (ctx.explain) open_facts(ctx, planned, facts, s);
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace nccl_strategy

}  // namespace gradsync::models::strategies
