// gradsync sweep: every point of an experiment file through its executors, on local
// worker processes (-j), resumable (--resume), split over mpirun ranks (OUT.rank<r>,
// joined with --merge).
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/cli/output.h"
#include "experiments/cli/selection.h"
#include "experiments/sweep.h"
#include "experiments/table.h"
#include "models/support/error.h"

namespace gradsync::experiments::cli {

namespace {

struct SweepOptions {
  std::string experiment;
  int jobs = 1;
  std::string output;
  std::string format;
  bool resume = false;
  std::string merge;
};

void print_table(const Plan& plan, const std::vector<Point>& points, const std::vector<Outcome>& outcomes) {
  const bool show_executor = plan.executors.size() > 1;
  const bool show_size = !plan.workload || plan.sizes.size() > 1 || plan.sizes[0].has_value();
  bool any_async = false;
  bool any_target = false;
  for (const auto& o : outcomes) {
    any_async = any_async || (o.record && o.record->updates_per_s);
    any_target = any_target || (o.record && (o.record->convergence || !o.record->no_time_to_target.empty()));
  }
  std::vector<std::string> headers = {"strategy", ">GPUs"};
  if (show_executor) headers.push_back("executor");
  headers.push_back("params");
  if (show_size) headers.push_back(">size");
  for (const char* h : {">sync/step", ">iteration", ">epoch", ">speed-up"}) headers.push_back(h);
  if (any_target) {
    headers.push_back(">to target");
    headers.push_back(">speed-up to target");
  }
  for (const char* h : {">comm", ">algbw GB/s", ">busbw GB/s"}) headers.push_back(h);
  if (any_async) {
    headers.push_back(">updates/s");
    headers.push_back(">staleness mean/max");
  }
  Table table(headers);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const Outcome& o = outcomes[i];
    std::vector<std::string> row = {p.choice->strategy->name, std::to_string(p.placement->size())};
    if (show_executor) row.push_back(p.executor->name());
    if (!o.record) {
      row.push_back("skipped");
      table.add_row(row);
      table.add_note_row("^ " + located_error(*p.choice, o.error));
      continue;
    }
    const auto& r = *o.record;
    auto opt = [](const std::optional<double>& v, int decimals) { return v ? format_fixed(*v, decimals) : "-"; };
    row.push_back(params_text(r, p.choice->params));
    if (show_size) row.push_back(p.size ? format_bytes(*p.size) : "");
    row.push_back(format_seconds(r.time_per_sync_s));
    row.push_back(r.time_per_iteration_s ? format_seconds(*r.time_per_iteration_s) : "-");
    row.push_back(r.time_per_epoch_s ? format_seconds(*r.time_per_epoch_s) : "-");
    row.push_back(r.speedup_vs_1gpu ? format_fixed(*r.speedup_vs_1gpu, 2) + "x" : "-");
    if (any_target) {
      row.push_back(time_to_target_cell(r));
      row.push_back(convergence_speedup_cell(r));
    }
    row.push_back(r.time_per_iteration_s ? format_fixed(100 * r.communication_share(), 0) + "%" : "-");
    row.push_back(opt(r.algbw_GBps(), 2));
    row.push_back(opt(r.busbw_GBps(), 2));
    if (any_async) {
      row.push_back(r.updates_per_s ? format_fixed(*r.updates_per_s, 1) : "");
      row.push_back(r.mean_staleness ? format_fixed(*r.mean_staleness, 2) + " / " + std::to_string(*r.max_staleness) : "");
    }
    table.add_row(row);
  }
  print_plan_heading(std::cout, "sweep", plan);
  std::cout << table.render();
  if (plan.workload && !plan.sizes[0]) {
    const auto& w = *plan.workload;
    std::cout << "\nspeed-up: one GPU training alone (" << format_seconds(w.compute_s() * w.minibatches_per_epoch)
              << " per epoch, no synchronisation) / epoch time; epoch = minibatches / N x iteration (source A, eqs. 5-8)\n";
    if (any_target) {
      for (const std::string& line : convergence_footnote(w)) std::cout << line << "\n";
    }
  }
}

int run_sweep(const SweepOptions& o) {
  if (!o.merge.empty()) {
    if (!o.experiment.empty() || !o.output.empty() || o.resume) {
      throw models::InputError("--merge " + o.merge + ": expected no experiment file, -o or --resume with it "
                               "(--merge OUT joins OUT.rank0, OUT.rank1, ... into OUT)");
    }
    const std::string format = choose_format(o.format, o.merge);
    if (format == "table") throw models::InputError("--merge " + o.merge + ": expected a .jsonl or .csv file name");
    merge_rank_files(o.merge, format, std::cerr);
    return 0;
  }
  if (o.experiment.empty()) {
    throw models::InputError("sweep: expected an experiment JSON file (see gradsync sweep --help), or --merge OUT");
  }
  const MpiRank mpi = mpi_rank_from_environment();
  const std::string format = choose_format(o.format, o.output);
  if (o.resume && o.output.empty()) throw models::InputError("--resume: expected -o FILE (the result file to continue)");
  if (mpi.size > 1 && (o.output.empty() || o.output == "-")) {
    throw models::InputError("sweep under mpirun (" + std::to_string(mpi.size) +
                             " ranks): expected -o FILE; each rank writes FILE.rank<r>, joined by gradsync sweep --merge FILE");
  }
  if (format == "table" && !o.output.empty() && o.output != "-") {
    throw models::InputError("-o " + o.output + ": --format table writes no file; expected json or csv");
  }

  const Experiment e = load_experiment(o.experiment);
  const Plan plan = make_plan(e);
  const std::vector<Point> points = plan_points(plan);
  std::vector<std::string> keys;
  std::map<std::string, std::size_t> index_of;
  for (const auto& p : points) {
    keys.push_back(point_key(plan, p));
    index_of.emplace(keys.back(), p.index);
  }
  const bool to_file = !o.output.empty() && o.output != "-";
  const std::string file = mpi.size > 1 ? o.output + ".rank" + std::to_string(mpi.rank) : o.output;
  if (to_file) models::check_output_path(file, "-o");

  // What this process computes: its rank's share, minus what the file already holds.
  std::vector<std::optional<std::string>> texts(points.size());
  std::vector<std::string> foreign;  // records of the file that are not points of this experiment
  std::size_t reused = 0;
  if (o.resume && std::filesystem::exists(file)) {
    std::size_t dropped = 0;
    for (const auto& stored : read_sweep_file(file, format)) {
      auto it = index_of.find(stored.key);
      if (it == index_of.end()) {
        // After the experiment's points, numbered so that they stay with this rank's share.
        const std::size_t size = static_cast<std::size_t>(mpi.size);
        const std::size_t first_round = (points.size() + size - 1) / size;
        foreign.push_back(with_index(stored, point_of_rank(first_round + foreign.size(), mpi.rank, mpi.size), format));
      } else if (rank_of_point(it->second, mpi.size) != mpi.rank || texts[it->second]) {
        ++dropped;  // another rank's point, or a duplicate
      } else {
        texts[it->second] = with_index(stored, it->second, format);
        ++reused;
      }
    }
    if (dropped) std::cerr << "sweep: " << dropped << " records of " << file << " belong to other ranks or repeat a point; dropped\n";
    if (!foreign.empty()) {
      std::cerr << "sweep: " << foreign.size() << " records of " << file
                << " are not points of this experiment; kept at the end\n";
    }
  }
  std::vector<Job> jobs(points.size());
  std::vector<std::size_t> todo;
  std::size_t share = 0;
  for (const auto& p : points) {
    if (rank_of_point(p.index, mpi.size) != mpi.rank) continue;
    ++share;
    if (texts[p.index]) continue;
    jobs[p.index] = Job{point_request(plan, p), p.executor, plan.settings, point_label(p)};
    todo.push_back(p.index);
  }
  const int workers = std::max(1, std::min<int>(o.jobs, static_cast<int>(todo.size())));
  std::cerr << "sweep: " << o.experiment << ": " << points.size() << " points";
  if (mpi.size > 1) std::cerr << "; rank " << mpi.rank << " of " << mpi.size << " takes " << share;
  if (o.resume) std::cerr << "; " << reused << " already in " << file;
  std::cerr << "; computing " << todo.size() << " on " << workers << (workers == 1 ? " process" : " worker processes") << "\n";

  auto assemble = [&] {
    std::string text = format == "csv" ? sweep_csv_header() : "";
    for (const auto& t : texts) {
      if (t) text += *t + "\n";
    }
    for (const auto& t : foreign) text += t + "\n";
    return text;
  };

  std::vector<Outcome> outcomes(points.size());
  std::vector<std::string> skipped;
  Progress progress = Progress::for_stderr(todo.size());
  using clock = std::chrono::steady_clock;
  auto last_write = clock::now();
  std::size_t since_write = 0;
  const std::size_t every = std::max<std::size_t>(5, todo.size() / 10);
  evaluate_jobs(jobs, todo, workers, [&](std::size_t index, const Outcome& out) {
    outcomes[index] = out;
    progress.step(jobs[index].label);
    if (!out.record) {
      skipped.push_back(jobs[index].label + ": " + located_error(*points[index].choice, out.error));
      return;
    }
    if (to_file) {
      texts[index] = sweep_line(*out.record, index, keys[index], format);
      ++since_write;
      // Checkpoint: an interrupted sweep keeps what it finished (continue with --resume).
      if (since_write >= every || clock::now() - last_write > std::chrono::seconds(2)) {
        models::write_file_atomically(file, assemble());
        last_write = clock::now();
        since_write = 0;
      }
    }
  });
  progress.finish();

  if (!todo.empty() && skipped.size() == todo.size() && reused == 0) {
    throw models::InputError(o.experiment + ": no point could be evaluated; " + skipped.front());
  }
  for (const auto& s : skipped) std::cerr << "sweep: skipped " << s << "\n";

  if (to_file) {
    models::write_file_atomically(file, assemble());
    std::size_t count = foreign.size();
    for (const auto& t : texts) count += t ? 1 : 0;
    std::cerr << "wrote " << count << " records to " << file;
    if (o.resume) std::cerr << " (" << reused << " kept, " << (todo.size() - skipped.size()) << " computed)";
    std::cerr << "\n";
    if (mpi.size > 1) {
      std::cerr << "rank " << mpi.rank << " of " << mpi.size << ": when every rank is done, join the parts with: gradsync sweep --merge "
                << o.output << "\n";
    }
    return 0;
  }
  if (format != "table") {
    std::string text = format == "csv" ? sweep_csv_header() : "";
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (outcomes[i].record) text += sweep_line(*outcomes[i].record, i, keys[i], format) + "\n";
    }
    models::write_file_atomically("-", text);
    return 0;
  }
  print_table(plan, points, outcomes);
  return 0;
}

}  // namespace

Action add_sweep(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand("sweep", "Evaluate every point of an experiment file, in parallel, resumable, under mpirun");
  cmd->footer(
      "The experiment file is the one `gradsync simulate` reads (topology, workload or sizes_bytes, gpus or ranks,\n"
      "strategies with parameters, executors " + models::join(models::executor_names(), "/") + ", simulator settings).\n"
      "Records keep the experiment's point order whatever -j; JSON lines and CSV carry two more fields,\n"
      "point_index and point (the point's identity: topology, executor, strategy, given parameters, ranks,\n"
      "bytes or workload), which --resume and --merge use. With -o the file is rewritten atomically every few\n"
      "points, so an interrupted sweep keeps its progress; --resume then computes only what is missing.\n"
      "Under mpirun (OMPI_COMM_WORLD_SIZE / _RANK set) the points are dealt to the ranks in rounds, every other\n"
      "round in reverse (so that analytic and simulated points split evenly); rank r writes\n"
      "OUT.rank<r>; join the parts with `gradsync sweep --merge OUT`.\n"
      "Examples:\n"
      "  gradsync sweep experiments/specs/source-a-simulate.json\n"
      "  gradsync sweep experiments/specs/source-a-sweep.json -j 2 -o out/sweep.jsonl\n"
      "  gradsync sweep experiments/specs/source-a-sweep.json -j 2 -o out/sweep.jsonl --resume\n"
      "  mpirun -np 4 gradsync sweep experiments/specs/source-a-sweep.json -o out/sweep.csv && gradsync sweep --merge out/sweep.csv");
  cmd->add_option("experiment", o->experiment, "an experiment JSON file")->check(CLI::ExistingFile);
  cmd->add_option("-j,--jobs", o->jobs, "local worker processes (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--output,-o", o->output, "write records to this file (.jsonl or .csv), atomically");
  cmd->add_option("--format,-f", o->format, "table, json (JSON lines) or csv (default: table, or from -o's extension)")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  cmd->add_flag("--resume", o->resume, "keep the points already in -o's file and compute the rest");
  cmd->add_option("--merge", o->merge, "join OUT.rank0, OUT.rank1, ... (written under mpirun) into OUT, then delete them");
  return [o] { return run_sweep(*o); };
}

}  // namespace gradsync::experiments::cli
