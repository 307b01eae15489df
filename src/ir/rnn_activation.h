// The activation functions RNN, GRU and LSTM name in their `activations` attribute. The
// importer stores them as these codes (an ints attribute), the interpreter applies them.
#pragma once
#include <cmath>
#include <string>

namespace systolic::ir {

enum class RnnAct : int {
  relu, tanh, sigmoid, affine, leaky_relu, thresholded_relu, scaled_tanh, hard_sigmoid, elu, softsign, softplus,
};

// The code of an ONNX activation name, or -1.
inline int rnn_act_code(const std::string& name) {
  static const char* const kNames[] = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                                       "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  for (int i = 0; i < int(sizeof kNames / sizeof kNames[0]); ++i)
    if (name == kNames[i]) return i;
  return -1;
}

// Whether the function takes alpha / beta, and their defaults (ONNX's for the stand-alone ops;
// Affine and ScaledTanh have none there: 1 and 0, and 1 and 1).
inline bool rnn_act_alpha(RnnAct a) {
  return a == RnnAct::affine || a == RnnAct::leaky_relu || a == RnnAct::thresholded_relu ||
         a == RnnAct::scaled_tanh || a == RnnAct::hard_sigmoid || a == RnnAct::elu;
}
inline bool rnn_act_beta(RnnAct a) {
  return a == RnnAct::affine || a == RnnAct::scaled_tanh || a == RnnAct::hard_sigmoid;
}
inline float rnn_act_default_alpha(RnnAct a) {
  switch (a) {
    case RnnAct::leaky_relu: return 0.01f;
    case RnnAct::hard_sigmoid: return 0.2f;
    default: return 1.f;
  }
}
inline float rnn_act_default_beta(RnnAct a) {
  switch (a) {
    case RnnAct::hard_sigmoid: return 0.5f;
    case RnnAct::scaled_tanh: return 1.f;
    default: return 0.f;
  }
}

inline float rnn_act(RnnAct a, float alpha, float beta, float x) {
  switch (a) {
    case RnnAct::relu: return x > 0.f ? x : 0.f;
    case RnnAct::tanh: return std::tanh(x);
    case RnnAct::sigmoid: return 1.f / (1.f + std::exp(-x));
    case RnnAct::affine: return alpha * x + beta;
    case RnnAct::leaky_relu: return x >= 0.f ? x : alpha * x;
    case RnnAct::thresholded_relu: return x > alpha ? x : 0.f;
    case RnnAct::scaled_tanh: return alpha * std::tanh(beta * x);
    case RnnAct::hard_sigmoid: return std::fmax(0.f, std::fmin(1.f, alpha * x + beta));
    case RnnAct::elu: return x >= 0.f ? x : alpha * (std::exp(x) - 1.f);
    case RnnAct::softsign: return x / (1.f + std::fabs(x));
    case RnnAct::softplus: return x > 20.f ? x : std::log1p(std::exp(x));  // exp would overflow
  }
  return x;
}

}  // namespace systolic::ir
