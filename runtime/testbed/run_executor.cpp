// The "run" executor: the strategy's schedule for real — gradsync-run under mpirun, one
// process per rank, here (host ranks) or wherever RunSettings::launcher starts them (the
// emulated cluster's namespaces) — with every element checked. It links no MPI: it starts
// the programs and reads back the record gradsync-run writes.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "models/support/error.h"
#include "models/executors/executor.h"
#include "models/support/process.h"
#include "models/topology/topology_io.h"
#include "runtime/testbed/testbed.h"

namespace gradsync::testbed {

namespace {

namespace fs = std::filesystem;

// A temporary folder, removed with everything in it when this goes.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    std::string pattern = (fs::temp_directory_path() / "gradsync-run-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("run: cannot create a temporary folder");
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string program_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

class RunExecutor final : public models::Executor {
 public:
  std::string name() const override { return "run"; }
  std::string summary() const override {
    return "a real run: gradsync-run under mpirun, one process per rank (host ranks here, or the emulated cluster), "
           "every element checked";
  }
  int order() const override { return 40; }
  bool measures() const override { return true; }
  bool slow() const override { return true; }

  models::ResultRecord evaluate(const models::PredictRequest& q, const models::ExecutorSettings& settings,
                                models::Trace*) const override {
    const models::RunSettings& rs = settings.run;
    (void)models::build_schedule(q);  // bad parameters fail here, with the models' message, before anything starts
    TemporaryFolder folder;
    std::string topology = rs.topology_file;
    if (topology.empty()) {
      topology = (folder.path() / "topology.json").string();
      models::write_file_atomically(topology, models::topology_to_graph_json(*q.topology).dump(2) + "\n");
    }
    const std::string records = (folder.path() / "run.jsonl").string();
    std::vector<std::string> command = rs.launcher;
    if (command.empty()) {
      command = {"mpirun", "--oversubscribe", "-np", std::to_string(q.placement.size())};
      for (std::string& o : testbed::mpirun_job_options()) command.push_back(std::move(o));
    }
    command.push_back(rs.program.empty() ? program_dir() + "/gradsync-run" : rs.program);
    for (const std::string& a : {std::string("--strategy"), q.strategy->name}) command.push_back(a);
    for (const auto& item : q.params.items()) {
      command.push_back("--param");
      command.push_back(item);
    }
    std::vector<std::string> ranks;
    for (std::size_t node : q.placement.ranks) ranks.push_back(q.topology->node(node).id);
    for (const std::string& a : {std::string("--topology"), topology, std::string("--ranks"), models::join(ranks, ","),
                                 std::string("-n"), std::to_string(rs.iterations), std::string("-w"), std::to_string(rs.warmup),
                                 std::string("-o"), records}) {
      command.push_back(a);
    }
    if (q.bytes) {
      command.push_back("-b");
      command.push_back(std::to_string(static_cast<long long>(*q.bytes)));
    } else {
      // The training step (gradsync-run --workload): the workload as a file, its buckets beside
      // the backward pass with overlap.
      const std::string workload = (folder.path() / "workload.json").string();
      models::write_file_atomically(workload, models::workload_to_json(*q.workload).dump(1) + "\n");
      for (const std::string& a : {std::string("--workload"), workload, std::string("--compute-work"), rs.compute_work}) command.push_back(a);
      if (q.overlap) {
        if (q.overlap->slowdown > 0) {
          throw models::InputError("--executor run: --overlap-slowdown is a model's assumption; a real run slows what it slows");
        }
        for (const std::string& a : {std::string("--overlap"), std::string("--bucket-cap"),
                                     std::to_string(static_cast<long long>(q.overlap->bucket_cap_bytes)), std::string("--first-bucket"),
                                     std::to_string(static_cast<long long>(q.overlap->first_bucket_bytes))}) {
          command.push_back(a);
        }
      }
    }
    if (!rs.backend.empty()) {
      command.push_back("--backend");
      command.push_back(rs.backend);
    }
    if (rs.check) command.push_back("--check");
    if (rs.timeout_s > 0) {
      command.push_back("--timeout");
      command.push_back(models::format_fixed(rs.timeout_s, 0));
    }
    models::ProcessOptions o;
    if (::geteuid() == 0) o.env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
    const auto result = models::run_process(command, o);
    std::ifstream in(records);
    std::string line;
    if (result.status != 0 || !std::getline(in, line)) {
      throw models::InputError("run: the real run failed (`" + models::join(command, " ") + "`):\n" + result.out);
    }
    models::ResultRecord r = models::record_from_json(models::ordered_json::parse(line));
    if (!rs.note.empty()) r.notes.push_back(rs.note);
    return r;
  }
};

const models::ExecutorRegistration run_registered(std::make_unique<RunExecutor>());

}  // namespace

}  // namespace gradsync::testbed
