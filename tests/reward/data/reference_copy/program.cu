// Fixture: the reference re-expressed through libtorch (a copy of the reference, not a CUDA program).
#include <cuda_runtime.h>
#include <torch/extension.h>

#include "stitch/program.h"

torch::Tensor forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  return torch::relu(torch::addmm(bias, x, weight.t()));
}
