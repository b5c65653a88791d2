// Pass "recurrences": a Python-loop RNN cell, which torch.export captures as one copy of the cell
// per time step, becomes one recurrent layer (aten.rnn_tanh / aten.rnn_relu, cuDNN's RNN, the
// path nn.RNN takes), and per-step maps of its hidden states that are stacked into one tensor
// become one GEMM over all steps' states.
//
// A step of the recurrence is, for t = 0..T-1 (the Elman cell, nn.Linear on a cat):
//   c_t = cat([x_t, h_{t-1}], 1)   (or cat([h_{t-1}, x_t], 1))
//   h_t = act(addmm(b, c_t, M))    (or act(mm(c_t, M))), act ∈ {tanh, relu}
// with x_t = select(X, d, i0 + t) (d = 0 sequence-major, d = 1 batch-first), the same M ([I + H,
// H]) and b ([H]) in every step, and h_{t-1} the previous step's output. Since
// c_t @ M = x_t @ M[:I] + h_{t-1} @ M[I:], that is nn.RNN with w_ih = M[:I]ᵀ, w_hh = M[I:]ᵀ,
// b_ih = b and b_hh = 0: cuDNN runs the x side of all steps as one GEMM and only the
// h-recurrence sequentially. Steps are recognised by structure (the same op sequence, step t's
// state read from step t-1's output), never by names; a chain needs two or more steps.
//
// A cat along dim 0 of g(h_t) over consecutive steps, where g is the same chain of row-wise ops in
// every piece (addmm / mm with h as the rows, unary elementwise ops: the per-step h2o Linear of a
// stacked output), becomes g applied once to the states viewed as [T·B, H]: the result is the
// cat's value, written straight into its buffer.
//
// Every other use of an h_t reads the layer's output at step t, so the rewrite is exact for any
// consumer; the per-step nodes that become dead are removed.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "plan/graph_edit.h"
#include "plan/passes.h"

namespace stitch::plan {
namespace {

using ir::Op;
using ir::ValueRef;

std::optional<ValueRef> ref_at(const ir::Node& node, size_t index) {
  if (index >= node.args.size() || !node.args[index].is_ref()) return std::nullopt;
  return *node.args[index].ref();
}

bool is_node(const ValueRef& ref) {
  return ref.kind == ValueRef::Kind::node;
}

// The same tensor: one value, or the same view ops (same args) of the same value. Each step of a
// captured loop views the weights anew (its own permute of the Linear's weight).
bool same_value(const ir::Graph& graph, const ValueRef& a, const ValueRef& b) {
  if (a == b) return true;
  if (!is_node(a) || !is_node(b) || a.out != b.out) return false;
  const ir::Node& na = graph.nodes[a.index];
  const ir::Node& nb = graph.nodes[b.index];
  if (na.op != nb.op || !ir::is_view(na.op) || na.outputs != nb.outputs || na.kwargs != nb.kwargs ||
      na.args.size() != nb.args.size())
    return false;
  for (size_t i = 0; i < na.args.size(); ++i) {
    const ValueRef* ra = na.args[i].ref();
    const ValueRef* rb = nb.args[i].ref();
    if ((ra == nullptr) != (rb == nullptr)) return false;
    if (ra ? !same_value(graph, *ra, *rb) : !(na.args[i] == nb.args[i])) return false;
  }
  return true;
}

bool same_optional(const ir::Graph& graph, const std::optional<ValueRef>& a,
                   const std::optional<ValueRef>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || same_value(graph, *a, *b);
}

// A value read by exactly one node and not a graph output.
bool single_use(const Uses& uses, const ValueRef& ref) {
  return !uses.is_graph_output(ref) && uses.consumers(ref).size() == 1;
}

// One step's nodes, before its state piece is known (both cat pieces are candidates).
struct Cell {
  int cat = -1, product = -1, activation = -1;
  Op act = Op::tanh;
  ValueRef pieces[2];
  ValueRef weight;                       // M, [I + H, H]
  std::optional<ValueRef> bias;          // b, [H]
  int state = -1;                        // which piece is h_{t-1}; -1 until linked
  int predecessor = -1, successor = -1;  // activation nodes of the neighbouring steps
};

// The cell whose activation is node `index`, if its shape fits the Elman step.
std::optional<Cell> match_cell(const ir::Graph& graph, const Uses& uses, int index) {
  const ir::Node& act = graph.nodes[index];
  if ((act.op != Op::tanh && act.op != Op::relu) || act.args.size() != 1 || !act.kwargs.empty())
    return std::nullopt;
  const auto product = ref_at(act, 0);
  if (!product || !is_node(*product) || product->out != 0 || !single_use(uses, *product))
    return std::nullopt;
  const ir::Node& mm = graph.nodes[product->index];
  if ((mm.op != Op::addmm && mm.op != Op::mm) || !mm.kwargs.empty()) return std::nullopt;
  const size_t first = mm.op == Op::addmm ? 1 : 0;
  if (mm.args.size() != first + 2) return std::nullopt;
  const auto cat = ref_at(mm, first), weight = ref_at(mm, first + 1);
  if (!cat || !weight || !is_node(*cat) || !single_use(uses, *cat)) return std::nullopt;
  const ir::Node& cat_node = graph.nodes[cat->index];
  const ir::TensorType& h = act.outputs[0];
  if (cat_node.op != Op::cat || h.rank() != 2 || h.dtype != ir::DType::float32) return std::nullopt;
  const ir::Arg* dim = cat_node.arg_or_kwarg(1, "dim");
  const int64_t cat_dim = dim ? dim->as_int().value_or(0) : 0;
  const ir::ArgList* list = cat_node.args.empty() ? nullptr : cat_node.args[0].list();
  if ((cat_dim != 1 && cat_dim != -1) || list == nullptr || list->size() != 2) return std::nullopt;
  Cell cell;
  cell.cat = cat->index;
  cell.product = product->index;
  cell.activation = index;
  cell.act = act.op;
  cell.weight = *weight;
  for (size_t k = 0; k < 2; ++k) {
    const ValueRef* piece = (*list)[k].ref();
    if (piece == nullptr || graph.type_of(*piece).rank() != 2 ||
        graph.type_of(*piece).shape[0] != h.shape[0] ||
        graph.type_of(*piece).dtype != ir::DType::float32)
      return std::nullopt;
    cell.pieces[k] = *piece;
  }
  if (mm.op == Op::addmm) {
    cell.bias = ref_at(mm, 0);
    if (!cell.bias || graph.type_of(*cell.bias).shape != std::vector<int64_t>{h.shape[1]})
      return std::nullopt;
  }
  const ir::TensorType& m = graph.type_of(*weight);
  if (m.rank() != 2 || m.shape[1] != h.shape[1] || m.shape[0] != cat_node.outputs[0].shape[1])
    return std::nullopt;
  return cell;
}

// x_t = select(X, d, index) of a rank-3 X, d ∈ {0, 1}.
struct StepInput {
  ValueRef base;
  int64_t dim = 0, index = 0;
};
std::optional<StepInput> step_input(const ir::Graph& graph, const ValueRef& piece) {
  if (!is_node(piece)) return std::nullopt;
  const ir::Node& node = graph.nodes[piece.index];
  const auto base = ref_at(node, 0);
  if (node.op != Op::select_int || !base || graph.type_of(*base).rank() != 3) return std::nullopt;
  const ir::Arg* dim_arg = node.arg_or_kwarg(1, "dim");
  const ir::Arg* index_arg = node.arg_or_kwarg(2, "index");
  if (dim_arg == nullptr || !dim_arg->as_int() || index_arg == nullptr || !index_arg->as_int())
    return std::nullopt;
  int64_t dim = *dim_arg->as_int();
  if (dim < 0) dim += 3;
  if (dim != 0 && dim != 1) return std::nullopt;
  int64_t index = *index_arg->as_int();
  if (index < 0) index += graph.type_of(*base).shape[dim];
  return StepInput{*base, dim, index};
}

// A recognised recurrence: its steps' activation nodes in order, and what the layer reads.
struct Chain {
  std::vector<int> steps;  // activation node of each step
  int state = 0;           // position of h in the cats
  StepInput first_input;
};

// Links the cells into chains (a cell's state piece is another cell's output) and keeps the chains
// whose steps agree: same activation, weight, bias and state position, inputs consecutive
// selects of one tensor.
std::vector<Chain> find_chains(const ir::Graph& graph, std::map<int, Cell>& cells) {
  for (auto& [index, cell] : cells) {
    int links = 0;
    for (int k = 0; k < 2; ++k) {
      const ValueRef& piece = cell.pieces[k];
      if (!is_node(piece) || piece.out != 0) continue;
      auto it = cells.find(piece.index);
      if (it == cells.end()) continue;
      ++links;
      cell.state = k;
      cell.predecessor = piece.index;
    }
    if (links != 1) {  // h0 of a chain, or both pieces are states: not a step
      cell.state = -1;
      cell.predecessor = -1;
    }
  }
  // A state read by two steps forks: neither continues the chain.
  std::map<int, int> successors;
  for (auto& [index, cell] : cells)
    if (cell.predecessor >= 0) ++successors[cell.predecessor];
  for (auto& [index, cell] : cells)
    if (cell.predecessor >= 0 && successors[cell.predecessor] == 1)
      cells[cell.predecessor].successor = index;
    else
      cell.predecessor = -1;

  std::vector<Chain> chains;
  for (auto& [index, head] : cells) {
    if (head.predecessor >= 0 || head.successor < 0) continue;
    const Cell& second = cells[head.successor];
    Chain chain;
    chain.state = second.state;
    const auto first = step_input(graph, head.pieces[1 - chain.state]);
    if (!first) continue;
    chain.first_input = *first;
    bool agree = true;
    for (int step = index; step >= 0 && agree; step = cells[step].successor) {
      const Cell& cell = cells[step];
      const auto input = step_input(graph, cell.pieces[1 - chain.state]);
      const int64_t t = static_cast<int64_t>(chain.steps.size());
      const ir::TensorType& h = graph.nodes[step].outputs[0];
      agree = (step == index || cell.state == chain.state) && cell.act == head.act && input &&
              graph.type_of(cell.pieces[chain.state]).shape == h.shape &&
              same_value(graph, input->base, first->base) && input->dim == first->dim &&
              input->index == first->index + t && same_value(graph, cell.weight, head.weight) &&
              same_optional(graph, cell.bias, head.bias);
      if (agree) chain.steps.push_back(step);
    }
    // A chain is cut at the first step that differs; what is left must still be a recurrence.
    if (chain.steps.size() >= 2) chains.push_back(std::move(chain));
  }
  return chains;
}

// g's ops for one stacked piece, from the state outward: each reads the previous value as its
// first tensor (addmm's mat1).
struct MapOp {
  int node = -1;
  size_t operand = 0;  // the argument holding the previous value
};

// Walks a stacked piece back to the state it maps: nullopt unless every op is row-wise and read
// only by the next. `step_of` maps a chain step's activation node to its step number.
std::optional<std::pair<int, std::vector<MapOp>>> trace_piece(const ir::Graph& graph,
                                                              const Uses& uses, ValueRef value,
                                                              const std::map<int, int>& step_of) {
  std::vector<MapOp> ops;
  for (;;) {
    if (!is_node(value) || value.out != 0) return std::nullopt;
    if (auto it = step_of.find(value.index); it != step_of.end()) {
      std::reverse(ops.begin(), ops.end());
      return std::make_pair(it->second, ops);
    }
    const ir::Node& node = graph.nodes[value.index];
    size_t operand = 0;
    if (node.op == Op::addmm)
      operand = 1;
    else if (node.op != Op::mm && ir::op_category(node.op) != ir::OpCategory::elementwise_unary)
      return std::nullopt;
    const auto previous = ref_at(node, operand);
    if (!previous || node.outputs.size() != 1 || node.outputs[0].rank() != 2) return std::nullopt;
    if (node.op == Op::addmm) {  // a bias per column broadcasts over any rows; one per row not
      const auto bias = ref_at(node, 0);
      if (!bias || graph.type_of(*bias).rank() > 2 ||
          (graph.type_of(*bias).rank() == 2 && graph.type_of(*bias).shape[0] != 1))
        return std::nullopt;
    }
    for (size_t i = 0; i < node.args.size(); ++i)  // unary ops take no second tensor
      if (i != operand && node.args[i].is_ref() && node.op != Op::addmm && node.op != Op::mm)
        return std::nullopt;
    if (!ops.empty() && !single_use(uses, value)) return std::nullopt;
    ops.push_back({value.index, operand});
    value = *previous;
  }
}

bool same_map_op(const ir::Graph& graph, const MapOp& a, const MapOp& b) {
  const ir::Node& na = graph.nodes[a.node];
  const ir::Node& nb = graph.nodes[b.node];
  if (na.op != nb.op || na.kwargs != nb.kwargs || na.args.size() != nb.args.size() ||
      na.outputs[0].shape != nb.outputs[0].shape || na.outputs[0].dtype != nb.outputs[0].dtype)
    return false;
  for (size_t i = 0; i < na.args.size(); ++i) {
    if (i == a.operand) continue;
    const ValueRef* ra = na.args[i].ref();
    const ValueRef* rb = nb.args[i].ref();
    if ((ra == nullptr) != (rb == nullptr)) return false;
    if (ra ? !same_value(graph, *ra, *rb) : !(na.args[i] == nb.args[i])) return false;
  }
  return true;
}

// A cat along dim 0 of g(h_t) over consecutive steps of one chain (pieces [B, N], or [1, B, N]
// views of them).
struct Stack {
  int chain = -1;
  int64_t first_step = 0, steps = 0;
  std::vector<MapOp> ops;  // the first piece's g
};

std::optional<Stack> match_stack(const ir::Graph& graph, const Uses& uses, int index,
                                 const std::vector<std::map<int, int>>& step_of) {
  const ir::Node& node = graph.nodes[index];
  const ir::ArgList* list = node.args.empty() ? nullptr : node.args[0].list();
  const ir::Arg* dim = node.arg_or_kwarg(1, "dim");
  const int64_t rank = node.outputs.empty() ? 0 : node.outputs[0].rank();
  const int64_t cat_dim = dim ? dim->as_int().value_or(0) : 0;
  if (node.op != Op::cat || list == nullptr || list->size() < 2 ||
      (cat_dim != 0 && cat_dim != -rank))
    return std::nullopt;
  for (size_t c = 0; c < step_of.size(); ++c) {
    Stack stack;
    stack.chain = static_cast<int>(c);
    bool ok = true;
    for (size_t p = 0; p < list->size() && ok; ++p) {
      const ValueRef* piece = (*list)[p].ref();
      if (piece == nullptr) return std::nullopt;
      ValueRef value = *piece;
      if (is_node(value) && (graph.nodes[value.index].op == Op::unsqueeze ||
                             graph.nodes[value.index].op == Op::view)) {  // stack's [1, B, N]
        const auto inner = ref_at(graph.nodes[value.index], 0);
        const auto& shape = graph.type_of(value).shape;
        if (!inner || shape.size() != 3 || shape[0] != 1 || !single_use(uses, value) ||
            std::vector<int64_t>(shape.begin() + 1, shape.end()) != graph.type_of(*inner).shape)
          return std::nullopt;
        value = *inner;
      } else if (graph.type_of(value).rank() != 2) {
        return std::nullopt;
      }
      const auto traced = trace_piece(graph, uses, value, step_of[c]);
      if (!traced) {
        ok = false;
        break;
      }
      if (p == 0) {
        stack.first_step = traced->first;
        stack.ops = traced->second;
      }
      ok = traced->first == stack.first_step + static_cast<int64_t>(p) &&
           traced->second.size() == stack.ops.size() &&
           (stack.ops.empty() || single_use(uses, node_value(traced->second.back().node)));
      for (size_t k = 0; ok && k < stack.ops.size(); ++k)
        ok = same_map_op(graph, stack.ops[k], traced->second[k]);
    }
    if (!ok) continue;
    stack.steps = static_cast<int64_t>(list->size());
    return stack;
  }
  return std::nullopt;
}

// The new graph's nodes for one chain, emitted where its first step's activation was.
class ChainEmitter {
 public:
  ChainEmitter(const ir::Graph& source, GraphRewriter& rewriter)
      : source_(source), rewriter_(rewriter) {}

  // Emits the recurrent layer and maps every step's h_t to its output at step t.
  ValueRef emit_layer(const Chain& chain, const std::map<int, Cell>& cells) {
    const Cell& head = cells.at(chain.steps.front());
    const ir::Node& origin = source_.nodes[head.product];
    const ir::TensorType& h = source_.nodes[head.activation].outputs[0];
    const int64_t batch = h.shape[0], hidden = h.shape[1];
    const int64_t steps = static_cast<int64_t>(chain.steps.size());
    const StepInput& in = chain.first_input;
    const bool batch_first = in.dim == 1;
    const ir::TensorType& x_type = source_.type_of(in.base);
    const int64_t input = x_type.shape[2];
    const std::string id = source_.nodes[head.activation].id + "_rnn";

    ValueRef x = rewriter_.mapped(in.base);
    if (in.index != 0 || steps != x_type.shape[in.dim]) {
      std::vector<int64_t> shape = x_type.shape;
      shape[in.dim] = steps;
      x = add(id + "_x", Op::slice_tensor,
              {ref_arg(x), ir::Arg{in.dim}, ir::Arg{in.index}, ir::Arg{in.index + steps},
               ir::Arg{int64_t{1}}},
              contiguous_type(shape, x_type.dtype), origin);
    }
    const ValueRef h0 =
        add(id + "_h0", Op::unsqueeze,
            {ref_arg(rewriter_.mapped(head.pieces[chain.state])), ir::Arg{int64_t{0}}},
            contiguous_type({1, batch, hidden}, h.dtype), origin);
    // w_ih = M[x rows]ᵀ, w_hh = M[h rows]ᵀ: views of the weight (materialize makes them dense,
    // once at init when M is a param).
    const ValueRef weight = rewriter_.mapped(head.weight);
    auto rows_t = [&](const std::string& suffix, int64_t start, int64_t count) {
      const ValueRef rows = add(id + "_" + suffix + "_rows", Op::slice_tensor,
                                {ref_arg(weight), ir::Arg{int64_t{0}}, ir::Arg{start},
                                 ir::Arg{start + count}, ir::Arg{int64_t{1}}},
                                contiguous_type({count, hidden}, h.dtype), origin);
      return add(id + "_" + suffix, Op::permute, {ref_arg(rows), int_list_arg({1, 0})},
                 contiguous_type({hidden, count}, h.dtype), origin);
    };
    const bool state_first = chain.state == 0;
    ir::ArgList params{ref_arg(rows_t("w_ih", state_first ? hidden : 0, input)),
                       ref_arg(rows_t("w_hh", state_first ? 0 : input, hidden))};
    if (head.bias) {
      params.push_back(ref_arg(rewriter_.mapped(*head.bias)));
      ir::Node zeros = new_node(id + "_b_hh", Op::full, {int_list_arg({hidden}), ir::Arg{0.0}},
                                {contiguous_type({hidden}, h.dtype)}, origin);
      zeros.kwargs = {{"dtype", ir::Arg{h.dtype}}};
      params.push_back(ref_arg(rewriter_.add(std::move(zeros))));
    }
    const std::vector<int64_t> y_shape = batch_first ? std::vector<int64_t>{batch, steps, hidden}
                                                     : std::vector<int64_t>{steps, batch, hidden};
    ir::Node layer = new_node(
        id, head.act == Op::tanh ? Op::rnn_tanh_input : Op::rnn_relu_input,
        {ref_arg(x), ref_arg(h0), ir::Arg{std::move(params)}, ir::Arg{head.bias.has_value()},
         ir::Arg{int64_t{1}}, ir::Arg{0.0}, ir::Arg{false}, ir::Arg{false}, ir::Arg{batch_first}},
        {contiguous_type(y_shape, h.dtype), contiguous_type({1, batch, hidden}, h.dtype)}, origin);
    const ValueRef y = rewriter_.add(std::move(layer));
    const ValueRef h_n{ValueRef::Kind::node, y.index, 1};
    for (int64_t t = 0; t < steps; ++t) {
      const bool last = t + 1 == steps;
      const ValueRef state = add(fmt::format("{}_h{}", id, t + 1), Op::select_int,
                                 {ref_arg(last ? h_n : y), ir::Arg{last ? int64_t{0} : in.dim},
                                  ir::Arg{last ? int64_t{0} : t}},
                                 contiguous_type({batch, hidden}, h.dtype), origin);
      rewriter_.map_value(node_value(chain.steps[t]), state);
    }
    return y;
  }

  // Emits g once over the states of the stack's steps, [T·B, H] rows in step order.
  ValueRef emit_stack(const Stack& stack, const ValueRef& y, bool batch_first, int cat) {
    const ir::Node& origin = source_.nodes[cat];
    const ir::TensorType& y_type = rewriter_.graph().type_of(y);
    const int64_t batch = y_type.shape[batch_first ? 0 : 1], hidden = y_type.shape[2];
    const int64_t total = batch_first ? y_type.shape[1] : y_type.shape[0];
    ValueRef states = y;
    if (batch_first)
      states = add(origin.id + "_states_t", Op::permute, {ref_arg(y), int_list_arg({1, 0, 2})},
                   contiguous_type({total, batch, hidden}, y_type.dtype), origin);
    if (stack.first_step != 0 || stack.steps != total)
      states = add(origin.id + "_states_steps", Op::slice_tensor,
                   {ref_arg(states), ir::Arg{int64_t{0}}, ir::Arg{stack.first_step},
                    ir::Arg{stack.first_step + stack.steps}, ir::Arg{int64_t{1}}},
                   contiguous_type({stack.steps, batch, hidden}, y_type.dtype), origin);
    ValueRef value = add(origin.id + "_states", Op::view,
                         {ref_arg(states), int_list_arg({stack.steps * batch, hidden})},
                         contiguous_type({stack.steps * batch, hidden}, y_type.dtype), origin);
    for (const MapOp& op : stack.ops) {
      ir::Node node = rewriter_.copy_node(op.node);
      node.args[op.operand] = ref_arg(value);
      node.outputs[0] =
          contiguous_type({stack.steps * batch, node.outputs[0].shape[1]}, node.outputs[0].dtype);
      node.id = origin.id + "_" + node.id;
      value = rewriter_.add(std::move(node));
    }
    const ir::TensorType& cat_type = origin.outputs[0];
    if (rewriter_.graph().type_of(value).shape != cat_type.shape)
      value = add(origin.id + "_stacked", Op::view, {ref_arg(value), int_list_arg(cat_type.shape)},
                  contiguous_type(cat_type.shape, cat_type.dtype), origin);
    return value;
  }

 private:
  ValueRef add(const std::string& id, Op op, std::vector<ir::Arg> args, ir::TensorType type,
               const ir::Node& origin) {
    return rewriter_.add(new_node(id, op, std::move(args), {std::move(type)}, origin));
  }

  const ir::Graph& source_;
  GraphRewriter& rewriter_;
};

}  // namespace

Result<ir::Graph> fold_unrolled_recurrences(const ir::Graph& graph) {
  const Uses uses(graph);
  std::map<int, Cell> cells;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (auto cell = match_cell(graph, uses, static_cast<int>(i)))
      cells[static_cast<int>(i)] = *cell;
  if (cells.size() < 2) return graph;
  const std::vector<Chain> chains = find_chains(graph, cells);
  if (chains.empty()) return graph;

  std::vector<std::map<int, int>> step_of(chains.size());
  std::map<int, int> head_of;  // first step's activation → chain
  std::vector<bool> replaced(graph.nodes.size(), false);
  for (size_t c = 0; c < chains.size(); ++c)
    for (size_t t = 0; t < chains[c].steps.size(); ++t) {
      const Cell& cell = cells.at(chains[c].steps[t]);
      step_of[c][cell.activation] = static_cast<int>(t);
      if (t == 0) head_of[cell.activation] = static_cast<int>(c);
      replaced[cell.cat] = replaced[cell.product] = replaced[cell.activation] = true;
    }
  std::map<int, Stack> stacks;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (auto stack = match_stack(graph, uses, static_cast<int>(i), step_of))
      stacks[static_cast<int>(i)] = *stack;

  GraphRewriter rewriter(graph);
  ChainEmitter emitter(graph, rewriter);
  std::vector<std::optional<ValueRef>> layers(chains.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const int index = static_cast<int>(i);
    if (auto head = head_of.find(index); head != head_of.end()) {
      layers[head->second] = emitter.emit_layer(chains[head->second], cells);
    } else if (auto stack = stacks.find(index); stack != stacks.end()) {
      const Chain& chain = chains[stack->second.chain];
      rewriter.map_value(node_value(index),
                         emitter.emit_stack(stack->second, *layers[stack->second.chain],
                                            chain.first_input.dim == 1, index));
    } else if (!replaced[i]) {
      rewriter.keep(index);
    }
  }
  return eliminate_dead_code(std::move(rewriter).finish(), nullptr);
}

}  // namespace stitch::plan
