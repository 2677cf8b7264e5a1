// gradsync-train: real training under mpirun, each step's gradient synchronised by a strategy's
// own schedule. Every rank is a replica of one model (training/mlp.h: libtorch), the same
// initial weights on every rank; each step, rank r takes its share of the global batch of the
// digits data (training/digits.h), computes its gradient, and the schedule executor
// (runtime/executor.h) runs the strategy's schedule on it, on the backend's memory and
// transport, as gradsync-run does with made-up inputs; the result, as a mean, is the gradient
// of the optimizer's step. So a run with N ranks of b rows each follows the run of one rank of
// N x b rows, step for step, as far as float rounding lets it: that is what the tests check.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "models/support/error.h"
#include "models/support/json_input.h"
#include "models/topology/topology_io.h"
#include "models/workload/workload.h"
#include "models/topology/uniform_topologies.h"
#include "runtime/cli_flags.h"
#include "runtime/mpi_main.h"
#include "runtime/executor.h"
#include "runtime/backends/catalogue.h"
#include "runtime/run_backends.h"
#include "training/compute_clock.h"
#include "training/digits.h"
#include "training/text.h"
#include "training/mlp.h"
#include "training/noise_scale.h"

namespace gs = gradsync;
using gs::runtime::cli::integer_in;
using gs::runtime::cli::number_in;

namespace {

struct Options {
  std::string strategy = "ring";
  std::vector<std::string> params;
  std::string topology;
  std::string backend = "mpi_host";
  std::string model = "mlp";  // mlp: the digits; lm: a language model on a text
  std::string data;
  std::string corpus;
  int vocabulary = 2000;
  int context = 4;
  int embedding = 32;
  int batch = 16;  // rows a rank takes each step
  int epochs = 3;
  int steps = 0;   // 0: whole epochs
  double learning_rate = 0.1;
  double momentum = 0.9;
  int hidden = 64;
  int test_rows = 0;  // 0: 297 of the digits, a tenth of a text's rows
  std::uint64_t seed = 1;
  int warm_start = 0;        // epochs trained by one worker before the strategy takes over
  int eval_every = 0;        // 0: at each epoch's end only
  double target_loss = -1;   // < 0: none
  std::string target_on = "test";  // the loss --target-loss is of: the held-out rows' (test) or the training rows' (train)
  bool stop_at_target = false;
  bool no_noise_scale = false;  // skip the noise scale's all-reduce (a run timed against a model)
  std::string output;
  std::string workload_output;
};

// What gradsync-train can run so far: schedules after which every worker holds the sum (or the
// mean) of what the workers put in, by the strategy's own arithmetic (1-bit SGD's quantised
// sums, with their residuals carried to the next step, too): of the gradients every step, or of
// the models every T steps (model averaging). Returns what the sum is divided by (1: a sum).
// `rows_dropped`: a strategy that sends some rows of the gradient (source A's sampling): a row
// ends as the sum over the ranks that sent it, and a row nobody sent is dropped (zeroed), so
// every replica takes the same step.
int summing_divisor(const gs::models::Schedule& s, const std::string& name, bool rows_dropped = false) {
  int divisor = 0;
  std::string why;
  const bool async_round = std::any_of(s.rounds.begin(), s.rounds.end(), [](const gs::models::Round& r) { return r.asynchronous; });
  if (s.asynchronous || async_round) {
    why = "a server applies pushes as they come (asynchronous rounds), which needs the optimizer on the server";
  } else if (s.period_steps > 1 && !s.averages_models) {
    why = "it synchronises every few steps without averaging the models";
  }
  for (const auto& e : s.expected) {
    if (!why.empty()) break;
    if (e.slice.bytes == 0) continue;
    if (e.numeric_only && s.averages_models) {
      divisor = s.workers;  // the strategy's own update of the models' sum (BMUF): the new model as it is
    } else if (e.numeric_only) {
      why = "its workers end with values of its own arithmetic, not the sum or mean of the gradients";
    } else if (rows_dropped && (e.own_only || (!e.all_workers && !e.contributors.empty())) && e.holders.empty() && e.divisor == 1) {
      divisor = divisor == 0 ? 1 : divisor;
    } else if (!e.all_workers || e.own_only || e.transposed_blocks != 0 || e.from_previous != 0 || !e.holders.empty()) {
      why = "its workers do not all end with the sum or mean of what every worker put in";
    } else if (divisor != 0 && e.divisor != divisor) {
      why = "its regions end as different sums";
    } else {
      divisor = e.divisor;
    }
  }
  if (!why.empty()) {
    throw gs::models::InputError("--strategy " + name + ": " + why +
                                 "; gradsync-train runs, so far, the strategies that all-reduce the gradient every step (ring, "
                                 "ps, halving_doubling, hierarchical, nccl, zero1, zero2, fsdp, onebit; sampled on --model lm), average the models "
                                 "every T steps (model_avg, bmuf), or push to a server of their own (downpour, asgd; ps_hra's groups)");
  }
  return divisor == 0 ? 1 : divisor;
}

// What a model trains on: rows of `width` inputs and a class each (the digits' pixels and
// digit; a text's context words and the word after them), the last `test_rows` held out.
struct Dataset {
  std::vector<float> x;
  std::vector<int> y;
  int width = 0;
  int classes = 0;
  int vocabulary = 0;  // > 0: the inputs are word ids
  std::string what;  // "the digits data (1797 images", ...
  std::size_t rows() const { return y.size(); }
};

Dataset load_dataset(const Options& o) {
  Dataset d;
  if (o.model == "lm") {
    const std::string path = o.corpus.empty() ? gs::training::default_text_path() : o.corpus;
    const gs::training::Text text = gs::training::load_text(path);
    gs::training::Ngrams g = gs::training::make_ngrams(text, o.vocabulary, o.context);
    d.width = g.context;
    d.classes = d.vocabulary = static_cast<int>(g.vocabulary.size());
    d.what = "the text " + path + " (" + std::to_string(text.sources.size()) + " file" + (text.sources.size() == 1 ? "" : "s") +
             ", " + std::to_string(text.words.size()) + " words and sentence ends, " +
             std::to_string(g.vocabulary.size() - 2) + " kept, the rest <unk> in " +
             std::to_string(g.rows() ? 100 * g.unknown_rows / g.rows() : 0) + " % of the rows; " + std::to_string(g.rows()) + " rows";
    d.x = std::move(g.inputs);
    d.y = std::move(g.next);
  } else {
    gs::training::Digits g = gs::training::load_digits(o.data.empty() ? gs::training::default_digits_path() : o.data);
    d.width = gs::training::Digits::kPixels;
    d.classes = gs::training::Digits::kClasses;
    d.what = "the digits data (" + std::to_string(g.rows()) + " images";
    d.x = std::move(g.pixels);
    d.y = std::move(g.labels);
  }
  return d;
}

int train(const Options& o, MPI_Comm comm, int rank, int size) {
  gs::training::use_one_thread();
  const Dataset data = load_dataset(o);
  const int test_rows = o.test_rows > 0 ? o.test_rows : o.model == "lm" ? static_cast<int>(std::clamp<std::size_t>(data.rows() / 10, 1, 1000000)) : 297;
  if (test_rows < 1 || static_cast<std::size_t>(test_rows) >= data.rows()) {
    throw gs::models::InputError("--test-rows " + std::to_string(test_rows) + ": the data has " + std::to_string(data.rows()) +
                                 " rows; expected at least 1 and fewer than that");
  }
  const std::size_t train_rows = data.rows() - static_cast<std::size_t>(test_rows);
  const bool whole_training_loss = o.model != "lm" || o.target_on == "train";

  gs::training::MlpOptions mo;
  mo.inputs = data.width;
  mo.vocabulary = data.vocabulary;
  mo.embedding = o.embedding;
  mo.hidden = o.hidden;
  mo.classes = data.classes;
  mo.learning_rate = o.learning_rate;
  mo.momentum = o.momentum;
  mo.seed = o.seed;
  gs::training::Mlp model(mo);

  // The strategy's schedule for this model's gradient on these ranks.
  gs::models::LoadedTopology loaded = o.topology.empty()
                                                ? gs::models::LoadedTopology{gs::models::flat_topology(size), std::nullopt}
                                                : gs::models::load_topology_file(gs::models::resolve_topology_path(o.topology));
  gs::models::PredictRequest q;
  q.topology = &loaded.topology;
  q.strategy = &gs::models::find_strategy(o.strategy);
  q.params = gs::models::SyncParams::parse(o.params);
  q.placement = gs::models::first_gpus(loaded.topology, size);
  // The model as a workload: its layers in the gradient's order, and the rows a rank takes a step
  // (what the strategies' sample-counted defaults divide: asgd's 256 samples, model averaging's
  // 40,000). The perceptron is one layer; the language model's layers whose rows are words (the
  // embedding, the output's weights and biases) say so, for the strategies that sample rows.
  gs::models::Workload workload;
  workload.name = o.model == "lm" ? "text-lm" : "digits-mlp";
  auto layer = [](const std::string& name, std::int64_t params, std::optional<std::int64_t> rows = std::nullopt) {
    gs::models::Layer l;
    l.name = name;
    l.params = params;
    l.rows = rows;
    return l;
  };
  if (o.model == "lm") {
    const std::int64_t v = mo.vocabulary, e = mo.embedding, h = mo.hidden, c = mo.inputs;
    workload.layers = {layer("embedding", v * e, v), layer("hidden", h * c * e + h), layer("output", v * h, v), layer("output bias", v, v)};
  } else {
    workload.layers = {layer("mlp", static_cast<std::int64_t>(model.parameter_count()))};
  }
  std::int64_t described = 0;
  for (const auto& l : workload.layers) described += l.params;
  if (described != static_cast<std::int64_t>(model.parameter_count())) {
    throw std::logic_error("gradsync-train: the workload's layers hold " + std::to_string(described) + " parameters, the model " +
                           std::to_string(model.parameter_count()));
  }
  workload.samples_per_minibatch = o.batch;
  workload.compute_s_per_minibatch = 0;
  q.workload = &workload;
  // An asynchronous server serves on a process of its own: the last one (gradsync-run's rule).
  // Downpour's and ASGD's every round is asynchronous; PS-HRA's groups all-reduce in step and
  // only their representatives' exchange with the server is. A strategy with a server is built
  // for size - 1 workers first (its groups must divide those), and for every process if its
  // server turns out to serve in step (the parameter server: on process 0 beside a worker).
  const auto serves_asynchronously = [](const gs::models::Schedule& s) {
    return s.asynchronous || std::any_of(s.rounds.begin(), s.rounds.end(), [](const gs::models::Round& r) { return r.asynchronous; });
  };
  const auto build_for = [&](int worker_processes) {
    if (o.topology.empty()) loaded = gs::models::LoadedTopology{gs::models::flat_topology(worker_processes), std::nullopt};
    q.topology = &loaded.topology;
    q.placement = gs::models::first_gpus(loaded.topology, worker_processes);
    return gs::models::build_schedule(q);
  };
  std::optional<gs::models::BuiltSchedule> served;
  std::optional<gs::models::InputError> served_error;
  if (q.strategy->uses_server && size >= 2) {
    try {
      gs::models::BuiltSchedule b = build_for(size - 1);
      if (serves_asynchronously(b.schedule)) served = std::move(b);
    } catch (const gs::models::InputError& e) {
      served_error = e;
    }
  }
  gs::models::BuiltSchedule built = served ? std::move(*served) : build_for(size);
  const bool asynchronous = served.has_value() || serves_asynchronously(built.schedule);
  if (asynchronous && !served) {
    if (served_error) {  // its server's process leaves size - 1 workers, which the strategy refused
      throw gs::models::InputError(std::string(served_error->what()) + " (of the " + std::to_string(size) +
                                   " processes, the last is its server's: " + std::to_string(size - 1) + " workers)");
    }
    throw gs::models::InputError("--strategy " + o.strategy + ": its server needs a process of its own; run 2 processes or more");
  }
  if (asynchronous && o.warm_start > 0) throw gs::models::InputError("--warm-start: not with an asynchronous strategy (" + o.strategy + ")");
  const gs::models::Schedule& schedule = built.schedule;
  const int workers = asynchronous ? size - 1 : size;
  const bool serving = asynchronous && rank >= workers;  // this process is the server's
  if (schedule.workers != workers) {
    throw gs::models::InputError("--strategy " + o.strategy + ": its schedule has " + std::to_string(schedule.workers) +
                                 " workers for " + std::to_string(size) + " processes; expected one worker a process" +
                                 (asynchronous ? " and one for the server" : ""));
  }
  // A strategy that samples each step's rows (source A's), on a model whose layers have word rows:
  // each step sends the rows of the words in each rank's minibatch (V_base, which every rank
  // knows: the order is shared), so its schedule is built again every step.
  const bool rows_each_step = q.strategy->samples_minibatch_rows &&
                              std::any_of(workload.layers.begin(), workload.layers.end(), [](const auto& l) { return l.rows.has_value(); });
  const int divisor = asynchronous ? 1 : summing_divisor(schedule, o.strategy, rows_each_step);
  const bool averages = schedule.averages_models;
  const std::size_t period = averages || asynchronous ? static_cast<std::size_t>(std::max(1, schedule.period_steps)) : 1;
  const std::size_t global = static_cast<std::size_t>(o.batch) * static_cast<std::size_t>(workers);
  if (global > train_rows) {
    throw gs::models::InputError("--batch " + std::to_string(o.batch) + " on " + std::to_string(workers) + " workers: a global batch of " +
                                 std::to_string(global) + " rows, more than the " + std::to_string(train_rows) + " to train on");
  }
  const std::size_t steps_per_epoch = train_rows / global;
  // A warm-start epoch (source D's parallelizationStartEpoch) is one worker's: every rank takes
  // the same rows (rank 0's batch), so every replica takes the same step without synchronising.
  const std::size_t warm_steps_per_epoch = train_rows / static_cast<std::size_t>(o.batch);
  gs::runtime::Backend backend = gs::runtime::make_backend(o.backend, comm);
  gs::runtime::ScheduleExecutor executor(schedule, gs::runtime::map_participants(schedule, size), rank, *backend.memory,
                                         *backend.transport);
  std::vector<float> mine;
  // The buffers start with the initial model: state a strategy keeps across synchronisations
  // (BMUF's global model) starts from it.
  const std::vector<float> initial = model.parameters();
  executor.reset([&](int, std::uint64_t e) { return initial[e]; });
  std::vector<float> pulled = initial;  // asynchronous: the server's model as last pulled
  // Row sampling's schedule and executor of the step (rows_each_step), and the share it sent.
  std::optional<gs::models::BuiltSchedule> step_built;
  std::optional<gs::runtime::ScheduleExecutor> step_executor;
  double sent_rows_bytes = 0, all_rows_bytes = 0;
  int step_divisor = 1;
  std::vector<std::uint64_t> staleness;  // asynchronous, on the server: pushes by updates applied since their pull

  if (rank == 0) {
    if (o.model == "lm") {
      std::printf("# gradsync-train: a feed-forward language model (each word from the %d before it: embeddings of %d, %d tanh "
                  "units, a softmax over %d words; %zu parameters) on %s: %zu to train, %d to test), SGD lr %g momentum %g; "
                  "loss: cross-entropy a word (perplexity e^loss)\n",
                  mo.inputs, mo.embedding, mo.hidden, mo.classes, model.parameter_count(), data.what.c_str(), train_rows, test_rows,
                  o.learning_rate, o.momentum);
    } else {
      std::printf("# gradsync-train: an MLP (%d-%d-%d, %zu parameters) on %s: %zu to train, %d to test), SGD lr %g momentum %g\n",
                  mo.inputs, mo.hidden, mo.classes, model.parameter_count(), data.what.c_str(), train_rows, test_rows,
                  o.learning_rate, o.momentum);
    }
    std::string what = averages                     ? "the models averaged every " + std::to_string(period) + " steps"
                       : schedule.asynchronous      ? "each worker's change to the model pushed to a server, which adds it, and the "
                                                      "server's model pulled, every " + std::to_string(period) + " steps"
                       : asynchronous               ? "the workers' changes to the model summed in the schedule's synchronous rounds, "
                                                      "each sum pushed to a server in its asynchronous rounds (the server adds each as "
                                                      "it comes) and the server's model pulled and passed on, every " +
                                                          std::to_string(period) + " steps"
                                                    : std::string("the gradient synchronised");
    if (asynchronous && !schedule.asynchronous) {
      for (const std::string& note : schedule.notes) what += "; " + note;
    }
    std::printf("# %d %s x %d rows a step (global batch %zu), %s by %s on backend %s\n", workers, asynchronous ? "workers" : "ranks",
                o.batch, global, what.c_str(), o.strategy.c_str(), backend.name.c_str());
    if (o.warm_start > 0) {
      std::printf("# warm start: the first %d epoch%s on one worker (%d rows a step, every rank alike), as CNTK's "
                  "parallelizationStartEpoch\n",
                  o.warm_start, o.warm_start == 1 ? "" : "s", o.batch);
    }
    std::printf("# %5s  %7s  %8s  %10s  %9s  %13s  %11s  %8s\n", "epoch", "steps", "samples", "train loss", "test loss",
                "test accuracy", "noise scale", "time (s)");
  }
  int epochs = o.epochs;
  if (o.steps > 0) {  // enough epochs for the steps: the warm ones first
    const std::size_t warm = static_cast<std::size_t>(o.warm_start) * warm_steps_per_epoch;
    const std::size_t left = static_cast<std::size_t>(o.steps) > warm ? static_cast<std::size_t>(o.steps) - warm : 0;
    const std::size_t warm_epochs = std::min<std::size_t>(static_cast<std::size_t>(o.warm_start),
                                                          (static_cast<std::size_t>(o.steps) + warm_steps_per_epoch - 1) / warm_steps_per_epoch);
    epochs = static_cast<int>(warm_epochs + (left + steps_per_epoch - 1) / steps_per_epoch);
  }
  std::vector<std::size_t> order(train_rows);
  const auto width = static_cast<std::size_t>(data.width);
  std::vector<float> x(static_cast<std::size_t>(o.batch) * width);
  std::vector<int> y(static_cast<std::size_t>(o.batch));
  std::size_t step = 0, samples = 0, evaluations = 0;
  std::size_t parallel_steps = 0;  // steps after the warm start: a period counts these
  std::string records;
  std::optional<std::size_t> reached;  // samples when the test loss first met --target-loss
  bool stop = false;                   // --stop-at-target, and rank 0 reached it
  const auto t0 = std::chrono::steady_clock::now();
  // What is reported at each evaluation covers the steps since the last one.
  double loss_sum = 0;
  std::size_t since = 0;
  gs::training::NoiseScale noise;
  // Each rank's compute, timed apart from the synchronisation (training/compute_clock.h).
  gs::training::ComputeClock clock;
  // Time spent testing, left out of train_seconds (the time a run to a target is compared by).
  double evaluating_s = 0;
  auto evaluate = [&](int epoch) {
    const auto e0 = std::chrono::steady_clock::now();
    const double trained_s = std::chrono::duration<double>(e0 - t0).count() - evaluating_s;
    double loss = since > 0 ? loss_sum / static_cast<double>(since) : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, comm);
    clock.reduce(comm, rank, 0);
    loss /= workers;  // an asynchronous server adds 0
    // Only the model that is judged is tested (rank 0's; an asynchronous server's): ranks that
    // share cores would otherwise still be testing theirs when rank 0 starts the next step.
    gs::training::Scores test{};
    double train_set_loss = 0;
    if (rank == (asynchronous ? workers : 0)) {
      test = model.evaluate(data.x.data() + train_rows * width, data.y.data() + train_rows, static_cast<std::size_t>(test_rows));
      // The loss over every training row: what the optimisation reaches, apart from how it
      // generalises (a language model's, a score per word for each of its 200,000 rows, only
      // where --target-on train asks for it: ten times its test's work).
      if (whole_training_loss) train_set_loss = model.evaluate(data.x.data(), data.y.data(), train_rows).loss;
    }
    if (asynchronous) {  // the model trained is the server's, as of its last push
      double scores[3] = {test.loss, test.accuracy, train_set_loss};
      MPI_Bcast(scores, 3, MPI_DOUBLE, workers, comm);
      test = {scores[0], scores[1]};
      train_set_loss = scores[2];
    }
    const double target_of = o.target_on == "train" ? train_set_loss : test.loss;
    if (o.target_loss >= 0 && !reached && target_of <= o.target_loss) reached = samples;
    if (o.stop_at_target) {  // rank 0's verdict for all (model averaging's replicas differ between averagings)
      int met = reached ? 1 : 0;
      MPI_Bcast(&met, 1, MPI_INT, 0, comm);
      stop = met == 1;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) {
      const std::string scale = noise.steps() > 0 ? std::to_string(static_cast<long long>(std::llround(noise.simple()))) : "-";
      std::printf("  %5d  %7zu  %8zu  %10.4f  %9.4f  %12.1f%%  %11s  %8.2f\n", epoch, step, samples, loss, test.loss,
                  100 * test.accuracy, scale.c_str(), seconds);
      nlohmann::json r{{"epoch", epoch},       {"steps", step},          {"samples", samples},
                       {"train_loss", loss},   {"test_loss", test.loss}, {"test_accuracy", test.accuracy},
                       {"seconds", seconds},   {"ranks", workers},       {"batch_per_rank", o.batch},
                       {"strategy", o.strategy}, {"learning_rate", o.learning_rate}, {"momentum", o.momentum},
                       {"seed", o.seed},       {"warm_start_epochs", o.warm_start}};
      r["train_seconds"] = trained_s;
      if (whole_training_loss) r["train_set_loss"] = train_set_loss;
      if (const auto c = clock.per_step()) r["compute_s_per_step"] = *c;
      if (const auto c = clock.slowest_per_step()) r["compute_s_per_step_slowest"] = *c;
      if (rows_each_step && all_rows_bytes > 0) r["gradient_sent_share"] = sent_rows_bytes / all_rows_bytes;
      if (noise.steps() > 0) {
        r["noise_scale"] = noise.simple();
        r["gradient_norm_sq"] = noise.gradient_norm_sq();
        r["gradient_noise_trace"] = noise.trace();
      }
      records += r.dump() + "\n";
    }
    ++evaluations;
    loss_sum = 0;
    since = 0;
    noise = gs::training::NoiseScale{};
    MPI_Barrier(comm);  // the next step starts together, as after a synchronisation
    evaluating_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
  };
  for (int epoch = 1; epoch <= epochs && !stop; ++epoch) {
    // The same order on every rank: each epoch's shuffle from the seed.
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937_64 shuffle(o.seed * 1000003ULL + static_cast<std::uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), shuffle);
    const bool warm = epoch <= o.warm_start;
    const std::size_t steps_now = warm ? warm_steps_per_epoch : steps_per_epoch;
    for (std::size_t k = 0; k < steps_now && !stop && (o.steps == 0 || step < static_cast<std::size_t>(o.steps)); ++k) {
      for (int i = 0; i < o.batch && !serving; ++i) {
        const std::size_t row = warm ? order[k * static_cast<std::size_t>(o.batch) + static_cast<std::size_t>(i)]
                                     : order[k * global + static_cast<std::size_t>(rank * o.batch + i)];
        std::copy_n(data.x.begin() + static_cast<long>(row * width), width, x.begin() + static_cast<long>(static_cast<std::size_t>(i) * width));
        y[static_cast<std::size_t>(i)] = data.y[row];
      }
      if (!serving) {
        clock.time([&] { loss_sum += model.gradient(x.data(), y.data(), y.size(), mine); });
        clock.computed();
      }
      if (rows_each_step && !warm) {
        workload.minibatch_rows.assign(static_cast<std::size_t>(workers), {});
        for (int r = 0; r < workers; ++r) {
          auto& rows = workload.minibatch_rows[static_cast<std::size_t>(r)];
          for (int i = 0; i < o.batch; ++i) {
            const std::size_t row = order[k * global + static_cast<std::size_t>(r * o.batch + i)];
            for (std::size_t c = 0; c < width; ++c) rows.push_back(static_cast<std::int64_t>(data.x[row * width + c]));
            rows.push_back(data.y[row]);
          }
          std::sort(rows.begin(), rows.end());
          rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
        }
        step_built = gs::models::build_schedule(q);
        step_divisor = summing_divisor(step_built->schedule, o.strategy, true);
        step_executor.reset();
        step_executor.emplace(step_built->schedule, gs::runtime::map_participants(step_built->schedule, size), rank, *backend.memory,
                              *backend.transport);
        for (const auto& e : step_built->schedule.expected) sent_rows_bytes += e.own_only ? 0 : e.slice.bytes;
        all_rows_bytes += step_built->schedule.gradient_bytes;
      }
      // The schedule's sum of what each rank puts in, as the mean.
      auto synchronise = [&](const std::vector<float>& in) {
        if (rows_each_step) {
          step_executor->reset([&](int, std::uint64_t e) { return in[e]; });
          step_executor->run();
          std::vector<float> out = step_executor->gradient(rank);
          // A row nobody sent is dropped: every replica takes the same step.
          for (const auto& e : step_built->schedule.expected) {
            if (!e.own_only) continue;
            const auto first = static_cast<std::size_t>(e.slice.offset / sizeof(float));
            std::fill_n(out.begin() + static_cast<long>(first), e.slice.bytes / sizeof(float), 0.0F);
          }
          for (float& v : out) v /= static_cast<float>(size) / static_cast<float>(step_divisor);
          return out;
        }
        executor.refill([&](int, std::uint64_t e) { return in[e]; });
        executor.run();
        std::vector<float> out = executor.gradient(rank);
        if (divisor != size) {
          const float by = static_cast<float>(size) / static_cast<float>(divisor);
          for (float& v : out) v /= by;
        }
        return out;
      };
      if (warm) {
        clock.time([&] { model.step(mine); });  // one worker's step, taken alike by every replica
        clock.alone();  // no rank waits for another
        samples += static_cast<std::size_t>(o.batch);
        ++step;
        ++since;
        if (o.eval_every > 0 && step % static_cast<std::size_t>(o.eval_every) == 0) evaluate(epoch);
        continue;
      }
      if (parallel_steps == 0 && o.warm_start > 0) {
        // The strategy starts from the warm model: state it keeps across synchronisations
        // (BMUF's global model) starts there, as it would have started from the initial one.
        const std::vector<float> warmed = model.parameters();
        executor.reset([&](int, std::uint64_t e) { return warmed[e]; });
      }
      if (asynchronous) {
        // Downpour / ASGD: each worker steps on its own gradient; every `step` steps it pushes its
        // change to the model since it last pulled, the server adds each push to its sum as it
        // arrives (their order, and so the staleness, as the run makes them), and the worker
        // continues from the server's model: the initial model plus that sum. With plain SGD and a
        // push every step this is asynchronous SGD with the optimizer on the server.
        if (!serving) clock.time([&] { model.step(mine); });
        if ((parallel_steps + 1) % period == 0) {
          if (serving) {
            const gs::runtime::SyncStats stats = executor.run();
            if (staleness.size() < stats.staleness.size()) staleness.resize(stats.staleness.size(), 0);
            for (std::size_t s = 0; s < stats.staleness.size(); ++s) staleness[s] += stats.staleness[s];
          } else {
            const std::vector<float> now = model.parameters();
            executor.refill([&](int, std::uint64_t e) { return now[e] - pulled[e]; });
            executor.run();
          }
          const std::vector<float> sum = executor.gradient(serving ? executor.hosted().front() : rank);
          for (std::size_t e = 0; e < sum.size(); ++e) pulled[e] = initial[e] + sum[e];
          model.set_parameters(pulled);
        }
      } else if (averages) {
        // Model averaging: each replica steps on its own gradient; every T steps the models'
        // mean (BMUF: the block update of it) replaces them.
        clock.time([&] { model.step(mine); });
        clock.step();
        if ((parallel_steps + 1) % period == 0) {
          clock.synchronising();
          model.set_parameters(synchronise(model.parameters()));
          if (schedule.resets_local_momentum) model.reset_momentum();
        }
      } else {
        clock.step();
        clock.synchronising();
        const std::vector<float> synced = synchronise(mine);
        // The noise scale's two norms: each rank's gradient over its rows, the mean over all.
        if (size > 1 && !o.no_noise_scale) {
          double small_sq = 0, big_sq = 0;
          for (float v : mine) small_sq += static_cast<double>(v) * v;
          for (float v : synced) big_sq += static_cast<double>(v) * v;
          MPI_Allreduce(MPI_IN_PLACE, &small_sq, 1, MPI_DOUBLE, MPI_SUM, comm);
          noise.add(small_sq / size, big_sq, o.batch, static_cast<double>(global));
        }
        clock.time([&] { model.step(synced); });
      }
      samples += global;
      ++parallel_steps;
      ++step;
      ++since;
      if (o.eval_every > 0 && step % static_cast<std::size_t>(o.eval_every) == 0) evaluate(epoch);
    }
    if (since > 0 && !stop) evaluate(epoch);
  }
  if (rank == 0 && clock.per_step()) {
    std::printf("# compute per step on rank 0: %.1f us (forward, backward and the optimizer's update, %zu steps)", 1e6 * *clock.per_step(),
                clock.steps());
    if (const auto slowest = clock.slowest_per_step()) {
      std::printf("; the slowest rank's between synchronisations: %.1f us a step", 1e6 * *slowest);
    }
    std::printf("\n");
  }
  if (rank == 0 && all_rows_bytes > 0) {
    std::printf("# rows sampled: %.1f %% of the gradient in some rank's rows (the union) on average, each step's own words; "
                "the rest dropped\n", 100 * sent_rows_bytes / all_rows_bytes);
  }
  if (rank == 0 && o.target_loss >= 0) {
    if (reached) {
      std::printf("# samples to a %s loss of %g: %zu (%.1f epochs of %zu rows)\n", o.target_on == "train" ? "training" : "test",
                  o.target_loss, *reached,
                  static_cast<double>(*reached) / static_cast<double>(train_rows), train_rows);
    } else {
      std::printf("# samples to a %s loss of %g: not reached in %zu\n", o.target_on == "train" ? "training" : "test", o.target_loss,
                  samples);
    }
  }
  // Every replica must hold the same weights: the synchronised gradient is the same everywhere.
  std::vector<float> params = model.parameters();
  std::vector<float> first = params;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, comm);
  double differ = 0, norm = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    differ = std::max(differ, static_cast<double>(std::abs(params[i] - first[i])));
    norm += static_cast<double>(params[i]) * params[i];
  }
  MPI_Allreduce(MPI_IN_PLACE, &differ, 1, MPI_DOUBLE, MPI_MAX, comm);
  // Between averagings the replicas differ by design; asynchronous workers always may.
  const bool must_agree = !asynchronous && (!averages || parallel_steps % period == 0);
  if (asynchronous) {  // the server's staleness histogram, to rank 0
    unsigned long long bins = staleness.size();
    MPI_Bcast(&bins, 1, MPI_UNSIGNED_LONG_LONG, workers, comm);
    staleness.resize(bins, 0);
    MPI_Bcast(staleness.data(), static_cast<int>(bins), MPI_UINT64_T, workers, comm);
  }
  if (rank == 0) {
    const std::string why = asynchronous ? ", asynchronous: each worker continues from the model it pulled"
                            : must_agree ? ""
                                         : ", " + std::to_string(parallel_steps % period) + " steps since the last averaging";
    std::printf("# replicas: %s (largest difference from rank 0's weights: %g%s); weights' L2 norm %.9g\n",
                differ == 0 ? "identical" : must_agree ? "DIFFER" : "apart", differ, why.c_str(), std::sqrt(norm));
    if (asynchronous) {
      std::uint64_t pushes = 0;
      std::string shown;
      for (std::size_t s = 0; s < staleness.size(); ++s) {
        pushes += staleness[s];
        if (staleness[s] > 0) shown += " " + std::to_string(s) + ": " + std::to_string(staleness[s]);
      }
      std::printf("# server: %llu pushes applied; staleness (updates applied between a worker's pull and its push):%s\n",
                  static_cast<unsigned long long>(pushes), shown.c_str());
    }
    if (!o.output.empty()) {
      gs::models::write_file_atomically(o.output, records);
      std::printf("# wrote %zu records to %s\n", evaluations, o.output.c_str());
    }
    if (!o.workload_output.empty()) {
      // The model as gradsync predicts a workload: its layers, a rank's rows a step, an epoch of
      // the training rows on one GPU, and the compute per step rank 0 timed (4-byte gradients).
      workload.dtype_bytes = 4;
      workload.minibatches_per_epoch = std::max<std::int64_t>(1, static_cast<std::int64_t>(train_rows) / o.batch);
      workload.compute_s_per_minibatch = clock.per_step().value_or(0);
      workload.minibatch_rows.clear();
      workload.description = "gradsync-train's " + std::string(o.model == "lm" ? "feed-forward language model on its text" : "perceptron on the digits") +
                             ", " + std::to_string(o.batch) + " rows a GPU; compute per step as gradsync-train timed it on rank 0 of " +
                             std::to_string(workers) + " (" + o.strategy + ")";
      gs::models::write_file_atomically(o.workload_output, gs::models::workload_to_json(workload).dump(1) + "\n");
      std::printf("# wrote the model as a workload to %s\n", o.workload_output.c_str());
    }
  }
  return differ == 0 || !must_agree ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const gs::runtime::MpiWorld world = gs::runtime::join_mpi(argc, argv);
  MPI_Comm comm = world.comm;
  const int rank = world.rank, size = world.size;

  Options o;
  CLI::App app{"gradsync-train: train a model for real under mpirun (one process a rank), each step's gradient synchronised by a "
               "strategy's own schedule, and print the loss, the test accuracy and the gradient noise scale as it goes.",
               "gradsync-train"};
  app.footer("The model: a two-layer perceptron (libtorch) on the UCI handwritten digits (scikit-learn's copy, which\n"
             "scripts/setup.sh installs), or with --model lm source A's feed-forward n-gram language model on a text\n"
             "(Moby-Dick, which scripts/setup.sh installs: each word predicted from the --context words before it).\n"
             "Rank r takes rows r*b .. r*b+b-1 of each global batch of N x b rows; the\n"
             "strategy's schedule turns the N gradients into their mean on every rank, and each replica steps with it\n"
             "(model_avg: each steps on its own, and every T steps the models' mean replaces them; bmuf: their block\n"
             "momentum update of that mean, the local momentum then reset; downpour and asgd: each pushes its change\n"
             "to the model to a server on the last process, which adds the pushes as they come, and continues from\n"
             "the server's model; ps_hra: each group of workers sums its changes in step, its representative pushes\n"
             "the sum to that server and passes the server's model back to the group; sampled, on the language model: each rank sends the rows of its minibatch's words, the\n"
             "most frequent and some random ones, a row ends as the sum of those who sent it, and the rest are dropped).\n"
             "--warm-start trains the first epochs\n"
             "on one worker first, as source D advises for 1-bit SGD.\n"
             "Examples:\n"
             "  mpirun -np 4 gradsync-train --strategy ring --batch 16 --epochs 3\n"
             "  mpirun -np 1 gradsync-train --batch 64 --epochs 3      # the same training on one rank\n"
             "  mpirun -np 4 gradsync-train --strategy model_avg -p T=8 --lr 0.4 --target-loss 0.4\n"
             "  mpirun -np 4 gradsync-train --strategy onebit -p feedback=off --momentum 0   # 1-bit SGD's ablation\n"
             "  mpirun -np 5 gradsync-train --strategy downpour -p step=1 --momentum 0   # 4 workers and their server\n"
             "  mpirun -np 5 gradsync-train --strategy ps_hra -p k=2 --momentum 0   # 2 groups of 2 and their server\n"
             "  mpirun -np 4 gradsync-train --strategy ps -o train.jsonl\n"
             "  mpirun -np 4 gradsync-train --model lm --batch 64 --lr 0.5 --momentum 0 --epochs 1   # a language model\n"
             "  mpirun -np 4 gradsync-train --model lm --strategy sampled --batch 64 --lr 0.5 --momentum 0 --epochs 1");
  app.add_option("--strategy", o.strategy, "the strategy whose schedule synchronises the replicas: those that all-reduce the gradient "
                                          "every step (ring, ps, halving_doubling, hierarchical, nccl, zero1, zero2, fsdp, onebit), "
                                          "sampled (source A's rows of each step's words, --model lm), "
                                          "model_avg and bmuf (-p T=STEPS), the asynchronous downpour and asgd (-p step=STEPS), and ps_hra "
                                          "(-p k=GROUPS: rings in step inside each group, the groups' sums pushed asynchronously); "
                                          "a strategy's asynchronous server runs on one process more than the workers)")
      ->default_val(o.strategy);
  app.add_option("--param,-p", o.params, "strategy parameter key=value (repeatable)");
  app.add_option("--topology,-t", o.topology, "topology the schedule is built for (default: all ranks alike)");
  app.add_option("--backend", o.backend, gs::runtime::backends_help())
      ->check(gs::runtime::cli::one_of(gs::runtime::backend_names()))
      ->default_val(o.backend);
  app.add_option("--model", o.model, "mlp: a perceptron on the digits (--data); lm: a feed-forward language model on a text (--corpus)")
      ->check(CLI::IsMember({"mlp", "lm"}))
      ->default_val(o.model);
  app.add_option("--corpus", o.corpus, "--model lm: the text, a file or a folder of .txt files (default: the folder configure found: " +
                                           (gs::training::default_text_path().empty() ? std::string("none") : gs::training::default_text_path()) + ")");
  app.add_option("--vocabulary", o.vocabulary, "--model lm: the most frequent words kept (the rest are one word, <unk>)")
      ->check(integer_in(1, 1000000))
      ->default_val(o.vocabulary);
  app.add_option("--context", o.context, "--model lm: the words before the one predicted")->check(integer_in(1, 64))->default_val(o.context);
  app.add_option("--embedding", o.embedding, "--model lm: numbers in a word's embedding")->check(integer_in(1, 4096))->default_val(o.embedding);
  app.add_option("--data", o.data, "--model mlp: the digits data (CSV, gzip or plain; default: the file configure found: " +
                                       (gs::training::default_digits_path().empty() ? std::string("none") : gs::training::default_digits_path()) + ")");
  app.add_option("--batch,-b", o.batch, "rows a rank takes each step")->check(integer_in(1, 100000))->default_val(o.batch);
  app.add_option("--epochs", o.epochs, "passes over the training rows")->check(integer_in(1, 100000))->default_val(o.epochs);
  app.add_option("--steps", o.steps, "stop after this many steps instead (the last epoch then ends early)")->check(integer_in(1, 100000000));
  app.add_option("--lr", o.learning_rate, "learning rate")->check(number_in(0, 1e6, true))->default_val(o.learning_rate);
  app.add_option("--momentum", o.momentum, "SGD momentum")->check(number_in(0, 1))->default_val(o.momentum);
  app.add_option("--hidden", o.hidden, "units in the hidden layer")->check(integer_in(1, 1000000))->default_val(o.hidden);
  app.add_option("--test-rows", o.test_rows, "the last rows of the data, held out to test (default: 297 of the digits, a tenth of a text's)")
      ->check(integer_in(1, 1000000));
  app.add_option("--seed", o.seed, "initial weights and the batches' order")->default_val(o.seed);
  app.add_option("--warm-start", o.warm_start,
                 "train the first this many epochs on one worker before the strategy takes over (source D's warm start, "
                 "CNTK's parallelizationStartEpoch; 1-bit SGD needs it)")
      ->check(integer_in(0, 100000))
      ->default_val(o.warm_start);
  app.add_option("--eval-every", o.eval_every, "also test (and print a row) every this many steps; default: at each epoch's end")
      ->check(integer_in(1, 100000000));
  auto* target = app.add_option("--target-loss", o.target_loss, "report the samples seen when the test loss first reached this (at a row)")
      ->check(number_in(0, 1e6));
  app.add_option("--target-on", o.target_on,
                 "the loss --target-loss is of: test (the held-out rows') or train (every training row's: what the optimisation "
                 "reaches, apart from how it generalises)")
      ->check(CLI::IsMember({"test", "train"}))
      ->default_val(o.target_on)
      ->needs(target);
  app.add_flag("--no-noise-scale", o.no_noise_scale,
               "do not measure the gradient noise scale: it all-reduces one more number each step, which a run timed against "
               "a model of the strategy's synchronisation should leave out");
  app.add_flag("--stop-at-target", o.stop_at_target, "stop at the first row whose loss (--target-on) meets --target-loss")->needs(target);
  app.add_option("-o,--output", o.output, "write a record per row (JSON lines) here");
  app.add_option("--workload-out", o.workload_output,
                 "write the model as a workload here (its layers, the rows a rank takes a step, the compute per step rank 0 timed): "
                 "gradsync predict --workload");

  if (const auto done = gs::runtime::parse_flags_or_exit(app, argc, argv, rank, "gradsync-train")) return *done;
  int status = 0;
  try {
    status = train(o, comm, rank, size);
  } catch (const gs::models::InputError& e) {
    if (rank == 0) std::cerr << "gradsync-train: error: " << e.what() << "\n";
    status = 2;
  } catch (const std::exception& e) {
    std::cerr << "gradsync-train: rank " << rank << ": error: " << e.what() << std::endl;
    MPI_Abort(comm, 1);
  }
  MPI_Finalize();
  return status;
}
