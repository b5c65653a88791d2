// Recurrent layers kept whole at capture (aten.lstm.input, aten.gru.input, aten.rnn_tanh.input,
// aten.rnn_relu.input): reading their arguments into a RecurrentSpec's geometry, and why the
// built-in Coder refuses the ones cuDNN's inference-mode RNN (kernels/rnn.cuh) cannot run.
//
// Arguments, in PyTorch's order: input, hx (LSTM: the list [h0, c0]; GRU / RNN: h0), params (the
// flat weight list), has_biases, num_layers, dropout, train, bidirectional, batch_first.
// Outputs: (output, h_n) and, LSTM, c_n.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

// The spec of recurrent node `node` without its Accesses and stores: cell, sizes and flags.
// An error names what the built-in Coder does not cover (dropout while training, LSTM
// projections, non-float32 data, unbatched or packed input, a parameter list or state whose
// shapes differ from PyTorch's layout for these sizes).
Result<RecurrentSpec> recurrent_geometry(const ir::Graph& graph, const ir::Node& node);

// The tensor arguments in the spec's order: x, h0, (c0), then the params.
std::vector<ir::ValueRef> recurrent_operands(const ir::Node& node);

// Elements of parameter `index` of PyTorch's flat list for `spec`'s sizes. Mirrors
// kernels/rnn.cuh's rnn_param_elements / rnn_param_count (the planner does not include CUDA
// headers); the program's load_weights checks every matrix against cuDNN's at init.
int64_t recurrent_param_elements(const RecurrentSpec& spec, int index);
int recurrent_param_count(const RecurrentSpec& spec);
int recurrent_gates(RecurrentCell cell);

}  // namespace stitch::plan
