// A small classifier trained with a maintained library (PyTorch's C++ API, libtorch): two fully
// connected layers with a ReLU between, cross-entropy loss, SGD with momentum. Its gradient
// comes out as one flat buffer and goes back in the same way, so that a strategy's schedule can
// synchronise it between the ranks in between (training/train_main.cpp). No libtorch type shows
// here: only training/mlp.cpp includes libtorch's headers (a slow parse, and one that clang 14
// cannot do as C++20).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace gradsync::training {

// With `vocabulary` > 0 the inputs are `inputs` word ids (as floats) and the first layer looks
// each up in an embedding of `embedding` numbers (source A's feed-forward n-gram language model:
// the context's embeddings side by side, a tanh hidden layer, a softmax over the vocabulary).
struct MlpOptions {
  int inputs = 64;
  int vocabulary = 0;  // > 0: the inputs are word ids, 0 .. vocabulary - 1
  int embedding = 32;  // numbers a word's embedding holds (vocabulary > 0)
  int hidden = 64;
  int classes = 10;
  double learning_rate = 0.1;
  double momentum = 0.9;
  std::uint64_t seed = 1;  // the initial weights: the same on every rank for the same seed
};

struct Scores {
  double loss = 0;      // mean cross-entropy
  double accuracy = 0;  // share of rows classified right
};

class Mlp {
 public:
  explicit Mlp(const MlpOptions& options);
  ~Mlp();
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  std::size_t parameter_count() const;
  // The gradient of the mean loss over `rows` rows (x: rows x inputs), flat, into `flat`;
  // returns the loss.
  double gradient(const float* x, const int* y, std::size_t rows, std::vector<float>& flat);
  // One optimizer step with `flat` as the gradient.
  void step(const std::vector<float>& flat);
  Scores evaluate(const float* x, const int* y, std::size_t rows) const;
  std::vector<float> parameters() const;
  // The weights from one flat buffer, as parameters() gives them (model averaging's result).
  void set_parameters(const std::vector<float>& flat);
  // Forgets the optimizer's momentum: the next step starts it afresh from its gradient.
  void reset_momentum();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Run libtorch on one thread (each rank is a process; more threads only contend).
void use_one_thread();

}  // namespace gradsync::training
