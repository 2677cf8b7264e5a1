#include "training/mlp.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

namespace gradsync::training {

struct Mlp::Impl {
  torch::nn::Sequential net;
  std::unique_ptr<torch::optim::SGD> optimizer;
  int inputs = 0;
  bool words = false;  // the inputs are word ids
};

Mlp::Mlp(const MlpOptions& o) : impl_(std::make_unique<Impl>()) {
  if (o.inputs < 1 || o.hidden < 1 || o.classes < 2) throw std::invalid_argument("Mlp: inputs, hidden and classes must be positive");
  torch::manual_seed(o.seed);
  impl_->inputs = o.inputs;
  impl_->words = o.vocabulary > 0;
  if (impl_->words) {
    if (o.embedding < 1) throw std::invalid_argument("Mlp: the embedding must hold at least one number");
    impl_->net = torch::nn::Sequential(torch::nn::Embedding(o.vocabulary, o.embedding), torch::nn::Flatten(),
                                       torch::nn::Linear(o.inputs * o.embedding, o.hidden), torch::nn::Tanh(),
                                       torch::nn::Linear(o.hidden, o.classes));
  } else {
    impl_->net = torch::nn::Sequential(torch::nn::Linear(o.inputs, o.hidden), torch::nn::ReLU(), torch::nn::Linear(o.hidden, o.classes));
  }
  impl_->optimizer = std::make_unique<torch::optim::SGD>(impl_->net->parameters(),
                                                         torch::optim::SGDOptions(o.learning_rate).momentum(o.momentum));
}

Mlp::~Mlp() = default;

std::size_t Mlp::parameter_count() const {
  std::size_t n = 0;
  for (const auto& p : impl_->net->parameters()) n += static_cast<std::size_t>(p.numel());
  return n;
}

namespace {

// Word ids (exact in a float) as the embedding's indices.
torch::Tensor rows_of(const float* x, std::size_t rows, int inputs, bool words) {
  const torch::Tensor t = torch::from_blob(const_cast<float*>(x), {static_cast<long>(rows), inputs}, torch::kFloat32);
  return words ? t.to(torch::kLong) : t;
}

torch::Tensor labels_of(const int* y, std::size_t rows) {
  return torch::from_blob(const_cast<int*>(y), {static_cast<long>(rows)}, torch::kInt32).to(torch::kLong);
}

}  // namespace

double Mlp::gradient(const float* x, const int* y, std::size_t rows, std::vector<float>& flat) {
  impl_->optimizer->zero_grad();
  const torch::Tensor loss = torch::nn::functional::cross_entropy(impl_->net->forward(rows_of(x, rows, impl_->inputs, impl_->words)), labels_of(y, rows));
  loss.backward();
  flat.assign(parameter_count(), 0.0F);
  std::size_t at = 0;
  for (const auto& p : impl_->net->parameters()) {
    const torch::Tensor g = p.grad().contiguous();
    const auto n = static_cast<std::size_t>(g.numel());
    std::copy(g.data_ptr<float>(), g.data_ptr<float>() + n, flat.begin() + static_cast<long>(at));
    at += n;
  }
  return loss.item<double>();
}

void Mlp::step(const std::vector<float>& flat) {
  if (flat.size() != parameter_count()) throw std::invalid_argument("Mlp::step: the gradient has the wrong size");
  std::size_t at = 0;
  {
    torch::NoGradGuard no_grad;
    for (auto& p : impl_->net->parameters()) {
      const auto n = static_cast<std::size_t>(p.numel());
      p.mutable_grad() = torch::from_blob(const_cast<float*>(flat.data() + at), p.sizes(), torch::kFloat32).clone();
      at += n;
    }
  }
  impl_->optimizer->step();
}

Scores Mlp::evaluate(const float* x, const int* y, std::size_t rows) const {
  // In parts of at most 4,096 rows: a language model's rows each hold a score per word.
  torch::NoGradGuard no_grad;
  constexpr std::size_t kPart = 4096;
  double loss_sum = 0, right = 0;
  for (std::size_t at = 0; at < rows; at += kPart) {
    const std::size_t n = std::min(kPart, rows - at);
    const torch::Tensor out = impl_->net->forward(rows_of(x + at * static_cast<std::size_t>(impl_->inputs), n, impl_->inputs, impl_->words));
    const torch::Tensor labels = labels_of(y + at, n);
    loss_sum += torch::nn::functional::cross_entropy(out, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    right += out.argmax(1).eq(labels).to(torch::kDouble).sum().item<double>();
  }
  Scores s;
  s.loss = rows > 0 ? loss_sum / static_cast<double>(rows) : 0.0;
  s.accuracy = rows > 0 ? right / static_cast<double>(rows) : 0.0;
  return s;
}

std::vector<float> Mlp::parameters() const {
  std::vector<float> out;
  for (const auto& p : impl_->net->parameters()) {
    const torch::Tensor c = p.detach().contiguous();
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

void Mlp::reset_momentum() { impl_->optimizer->state().clear(); }

void Mlp::set_parameters(const std::vector<float>& flat) {
  if (flat.size() != parameter_count()) throw std::invalid_argument("Mlp::set_parameters: the weights have the wrong size");
  torch::NoGradGuard no_grad;
  std::size_t at = 0;
  for (auto& p : impl_->net->parameters()) {
    const auto n = static_cast<std::size_t>(p.numel());
    p.copy_(torch::from_blob(const_cast<float*>(flat.data() + at), p.sizes(), torch::kFloat32));
    at += n;
  }
}

void use_one_thread() {
  torch::set_num_threads(1);
}

}  // namespace gradsync::training
