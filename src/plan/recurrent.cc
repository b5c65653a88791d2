// Recurrent layers: geometry and refusals (recurrent.h).
#include "plan/recurrent.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace stitch::plan {

namespace {

using ir::Op;

std::optional<RecurrentCell> cell_of(Op op) {
  switch (op) {
    case Op::lstm_input:
      return RecurrentCell::lstm;
    case Op::gru_input:
      return RecurrentCell::gru;
    case Op::rnn_tanh_input:
      return RecurrentCell::rnn_tanh;
    case Op::rnn_relu_input:
      return RecurrentCell::rnn_relu;
    default:
      return std::nullopt;
  }
}

// The hx argument's tensors: LSTM [h0, c0], the others h0.
std::vector<ir::ValueRef> states_of(const ir::Node& node) {
  std::vector<ir::ValueRef> states;
  if (node.args.size() < 2) return states;
  if (const ir::ValueRef* ref = node.args[1].ref()) states.push_back(*ref);
  if (const auto* list = node.args[1].list())
    for (const ir::Arg& item : *list)
      if (const ir::ValueRef* ref = item.ref()) states.push_back(*ref);
  return states;
}

std::vector<ir::ValueRef> params_of(const ir::Node& node) {
  std::vector<ir::ValueRef> params;
  if (node.args.size() < 3 || node.args[2].list() == nullptr) return params;
  for (const ir::Arg& item : *node.args[2].list())
    if (const ir::ValueRef* ref = item.ref()) params.push_back(*ref);
  return params;
}

Status check_float32(const ir::Graph& graph, const ir::ValueRef& value, const char* what) {
  const ir::DType dtype = graph.type_of(value).dtype;
  if (dtype != ir::DType::float32)
    return make_error("a recurrent layer on {} {} is not covered (cuDNN's RNN runs float32 here)",
                      ir::dtype_name(dtype), what);
  return {};
}

}  // namespace

int recurrent_gates(RecurrentCell cell) {
  return cell == RecurrentCell::lstm ? 4 : cell == RecurrentCell::gru ? 3 : 1;
}

int recurrent_param_count(const RecurrentSpec& spec) {
  return static_cast<int>(spec.layers) * (spec.bidirectional ? 2 : 1) * (spec.has_biases ? 4 : 2);
}

int64_t recurrent_param_elements(const RecurrentSpec& spec, int index) {
  const int directions = spec.bidirectional ? 2 : 1;
  const int per_direction = spec.has_biases ? 4 : 2;
  const int layer = index / (per_direction * directions);
  const int which = index % per_direction;  // 0 w_ih, 1 w_hh, 2 b_ih, 3 b_hh
  const int64_t rows = recurrent_gates(spec.cell) * spec.hidden_size;
  const int64_t in = layer == 0 ? spec.input_size : directions * spec.hidden_size;
  return which == 0 ? rows * in : which == 1 ? rows * spec.hidden_size : rows;
}

std::vector<ir::ValueRef> recurrent_operands(const ir::Node& node) {
  std::vector<ir::ValueRef> operands;
  if (!node.args.empty() && node.args[0].ref()) operands.push_back(*node.args[0].ref());
  for (const ir::ValueRef& state : states_of(node))
    operands.push_back(state);
  for (const ir::ValueRef& param : params_of(node))
    operands.push_back(param);
  return operands;
}

Result<RecurrentSpec> recurrent_geometry(const ir::Graph& graph, const ir::Node& node) {
  const auto cell = cell_of(node.op);
  if (!cell) return make_error("not a recurrent layer");
  if (node.args.size() < 9 || !node.args[0].ref() || node.args[2].list() == nullptr)
    return make_error("recurrent layer arguments not understood");
  RecurrentSpec spec;
  spec.cell = *cell;
  spec.has_biases = node.args[3].as_bool().value_or(true);
  spec.layers = node.args[4].as_int().value_or(0);
  const double dropout = node.args[5].as_double().value_or(0);
  const bool train = node.args[6].as_bool().value_or(false);
  spec.bidirectional = node.args[7].as_bool().value_or(false);
  spec.batch_first = node.args[8].as_bool().value_or(false);
  if (dropout > 0 && train)
    return make_error(
        "a recurrent layer with dropout {} in training mode is not covered (random masks "
        "between layers; cuDNN's RNN runs in inference mode here)",
        dropout);
  const ir::TensorType& x = graph.type_of(*node.args[0].ref());
  STITCH_TRY(check_float32(graph, *node.args[0].ref(), "input"));
  if (x.rank() != 3)
    return make_error("an unbatched (or packed-sequence) recurrent input of rank {} is not covered",
                      x.rank());
  spec.seq_len = x.shape[spec.batch_first ? 1 : 0];
  spec.batch = x.shape[spec.batch_first ? 0 : 1];
  spec.input_size = x.shape[2];
  const std::vector<ir::ValueRef> states = states_of(node);
  const size_t want_states = *cell == RecurrentCell::lstm ? 2 : 1;
  if (states.size() != want_states)
    return make_error("a recurrent layer needs {} initial state tensor(s), has {}", want_states,
                      states.size());
  const ir::TensorType& h0 = graph.type_of(states[0]);
  if (h0.rank() != 3) return make_error("a recurrent initial state of rank {}", h0.rank());
  spec.hidden_size = h0.shape[2];
  const int64_t directions = spec.bidirectional ? 2 : 1;
  if (spec.layers < 1 || h0.shape[0] != spec.layers * directions || h0.shape[1] != spec.batch)
    return make_error("recurrent initial state [{}] does not match {} layer(s), batch {}",
                      fmt::join(h0.shape, ", "), spec.layers, spec.batch);
  for (const ir::ValueRef& state : states) {
    STITCH_TRY(check_float32(graph, state, "state"));
    if (graph.type_of(state).shape != h0.shape)
      return make_error("LSTM projections (proj_size) are not covered: h0 and c0 differ in shape");
  }
  const std::vector<ir::ValueRef> params = params_of(node);
  if (static_cast<int>(params.size()) != recurrent_param_count(spec))
    return make_error("a recurrent layer with {} parameters where PyTorch's layout has {}{}",
                      params.size(), recurrent_param_count(spec),
                      *cell == RecurrentCell::lstm ? " (LSTM projections are not covered)" : "");
  for (size_t i = 0; i < params.size(); ++i) {
    STITCH_TRY(check_float32(graph, params[i], "parameters"));
    if (graph.type_of(params[i]).numel() != recurrent_param_elements(spec, static_cast<int>(i)))
      return make_error(
          "recurrent parameter {} has {} elements where PyTorch's layout has {} (LSTM "
          "projections are not covered)",
          i, graph.type_of(params[i]).numel(), recurrent_param_elements(spec, static_cast<int>(i)));
  }
  return spec;
}

}  // namespace stitch::plan
