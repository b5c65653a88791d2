// EmitContext (emit_context.h): buffers, body steps, stores and functor members of one program.
#include "codegen/emit_context.h"

#include <cctype>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>

#include "codegen/emit_elementwise.h"

namespace stitch::codegen {

using plan::Access;
using plan::Body;
using plan::Operand;
using plan::Store;

int64_t align256(int64_t bytes) {
  return (bytes + 255) / 256 * 256;
}

std::string c_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::float32:
      return "float";
    case ir::DType::float64:
      return "double";
    case ir::DType::int64:
      return "int64_t";
    case ir::DType::int32:
      return "int32_t";
    case ir::DType::int16:
      return "int16_t";
    case ir::DType::int8:
      return "int8_t";
    case ir::DType::uint8:
      return "uint8_t";
    case ir::DType::boolean:
      return "bool";
    default:
      return "";
  }
}

std::string int_list(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values)
    text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

int64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

void append_inits(std::string& list, const Members& members) {
  for (const auto& [decl, init] : members)
    list += (list.empty() ? "" : ", ") + init;
}

// When the load's shape is the index space's, the strides apply to the coordinates directly;
// otherwise the row-major linear index `linear` is unravelled by the load's own shape (planner
// contract).
std::string index_expr(const Access& access, const std::vector<int64_t>& space,
                       const std::vector<std::string>& coords, const std::string& linear) {
  std::string expr = std::to_string(access.offset);
  if (access.shape == space) {
    for (size_t d = 0; d < coords.size(); ++d)
      if (access.strides[d] != 0 && access.shape[d] != 1)
        expr += fmt::format(" + {} * {}", coords[d], access.strides[d]);
    return expr;
  }
  // Unravel: coordinate d = (linear / prod(shape[d+1:])) % shape[d]. Size-1 dims and dims that
  // merge with the next (stride[d] == stride[d+1] * shape[d+1]) are folded first: fewer divisions.
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < access.shape.size(); ++d) {
    if (access.shape[d] == 1) continue;
    if (!shape.empty() && strides.back() == access.strides[d] * access.shape[d]) {
      shape.back() *= access.shape[d];
      strides.back() = access.strides[d];
      continue;
    }
    shape.push_back(access.shape[d]);
    strides.push_back(access.strides[d]);
  }
  // Below 2^32 elements the divisions are 32-bit: a division by a constant is then a multiply-high
  // and a shift, where a 64-bit one is a dozen instructions (a reduction's per-element load of an
  // NCHW tensor spent most of its time there).
  const bool narrow = numel(shape) <= int64_t{UINT32_MAX};
  const std::string unravelled = narrow ? fmt::format("static_cast<uint32_t>({})", linear) : linear;
  const char* const suffix = narrow ? "u" : "";
  int64_t inner = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (strides[d] != 0) {
      const std::string coordinate =
          inner == 1
              ? fmt::format("{} % {}{}", unravelled, shape[d], suffix)
              : fmt::format("({} / {}{}) % {}{}", unravelled, inner, suffix, shape[d], suffix);
      expr += narrow ? fmt::format(" + static_cast<int64_t>({}) * {}", coordinate, strides[d])
                     : fmt::format(" + ({}) * {}", coordinate, strides[d]);
    }
    inner *= shape[d];
  }
  return expr;
}

EmitContext::EmitContext(const plan::Plan& plan, const EmitOptions& options)
    : plan_(plan), options_(options) {
  for (const auto& slot : plan_.buffers)
    slots_[slot.value] = &slot;
  // Params follow the at-init results in the persistent block.
  int64_t offset = align256(plan_.host.persistent_bytes);
  for (const auto& param : plan_.graph.params) {
    param_offsets_.push_back(offset);
    offset += align256(std::max<int64_t>(param.type.bytes(), 1));
  }
  persistent_total_ = offset;
}

const ir::TensorType& EmitContext::type_of(const ir::ValueRef& ref) const {
  return plan_.graph.type_of(ref);
}

Result<std::string> EmitContext::buffer_base(const ir::ValueRef& ref) const {
  switch (ref.kind) {
    case ir::ValueRef::Kind::input:
      return fmt::format("static_cast<char*>(inputs[{}].data)", ref.index);
    case ir::ValueRef::Kind::param:
      return fmt::format("(s->persistent + {})", param_offsets_.at(ref.index));
    case ir::ValueRef::Kind::node:
      break;
  }
  std::string name = plan_.graph.name_of(ref);
  auto found = slots_.find(name);
  if (found == slots_.end()) return make_error("value '{}' has no buffer in the plan", name);
  const plan::BufferSlot& slot = *found->second;
  switch (slot.where) {
    case plan::BufferSlot::Where::arena:
      return fmt::format("(s->arena_base + {})", slot.offset);
    case plan::BufferSlot::Where::output:
      return fmt::format("static_cast<char*>(outputs[{}].data)", slot.offset);
    case plan::BufferSlot::Where::persistent:
      return fmt::format("(s->persistent + {})", slot.offset);
  }
  return make_error("value '{}': unknown buffer kind", name);
}

Result<std::string> EmitContext::typed_base(const ir::ValueRef& ref, bool writable) const {
  STITCH_ASSIGN_OR_RETURN(std::string base, buffer_base(ref));
  std::string type = c_type(type_of(ref).dtype);
  if (type.empty())
    return make_error("value '{}' has dtype {}, outside what the emitter handles",
                      plan_.graph.name_of(ref), ir::dtype_name(type_of(ref).dtype));
  return fmt::format("reinterpret_cast<{}{}*>({})", writable ? "" : "const ", type, base);
}

Result<std::string> EmitContext::access_pointer(const Access& access) const {
  STITCH_ASSIGN_OR_RETURN(std::string base, typed_base(access.base));
  return fmt::format("{} + {}", base, access.offset);
}

Access EmitContext::store_access(const ir::ValueRef& value) const {
  const auto found = plan_.values.find(plan_.graph.name_of(value));
  if (found != plan_.values.end()) return found->second;
  Access whole{value, 0, type_of(value).shape, ir::contiguous_strides(type_of(value).shape)};
  return whole;
}

namespace {

// The value every element of a constant creation op holds: full / full_like (a number or a bool
// fill), zeros_like, ones_like; nullopt for anything else.
std::optional<double> constant_fill(const ir::Node& node) {
  switch (node.op) {
    case ir::Op::zeros_like:
      return 0.0;
    case ir::Op::ones_like:
      return 1.0;
    case ir::Op::full:
    case ir::Op::full_like: {
      const ir::Arg* fill = node.arg_or_kwarg(1, "fill_value");
      if (fill == nullptr) return std::nullopt;
      if (auto flag = fill->as_bool(); flag && !fill->as_double()) return *flag ? 1.0 : 0.0;
      return fill->as_double();
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

Result<std::vector<std::string>> EmitContext::emit_steps(
    CodeWriter& w, const Body& body, const std::vector<std::string>& loads,
    const std::vector<std::string>& index_values, const std::string& prefix) const {
  std::vector<std::string> steps;
  for (size_t k = 0; k < body.steps.size(); ++k) {
    const plan::BodyStep& step = body.steps[k];
    if (step.node < 0 || step.node >= static_cast<int>(plan_.graph.nodes.size()))
      return make_error("body step {} refers to node {}", k, step.node);
    std::vector<std::string> operands;
    for (const Operand& operand : step.operands) {
      STITCH_ASSIGN_OR_RETURN(std::string text, operand_expr(operand, loads, steps, index_values));
      operands.push_back(text);
    }
    const ir::Node& node = plan_.graph.nodes[step.node];
    std::string expr;
    if (const auto fill = constant_fill(node); fill && operands.empty()) {
      expr = float_literal(*fill);  // a fill: a constant pad's border, a mask, a zero column
    } else {
      STITCH_ASSIGN_OR_RETURN(expr, render_elementwise(node, operands));
    }
    std::string name = fmt::format("{}{}", prefix, k);
    w.line("const float {} = {};  // {}", name, expr, plan_.graph.nodes[step.node].id);
    steps.push_back(name);
  }
  return steps;
}

Result<std::string> EmitContext::operand_expr(const Operand& operand,
                                              const std::vector<std::string>& loads,
                                              const std::vector<std::string>& steps,
                                              const std::vector<std::string>& index_values) const {
  switch (operand.kind) {
    case Operand::Kind::load:
      if (operand.index < 0 || operand.index >= static_cast<int>(loads.size()))
        return make_error("operand refers to load {} of {}", operand.index, loads.size());
      return loads[operand.index];
    case Operand::Kind::step:
      if (operand.index < 0 || operand.index >= static_cast<int>(steps.size()))
        return make_error("operand refers to step {} before it is computed", operand.index);
      return steps[operand.index];
    case Operand::Kind::scalar:
      return float_literal(operand.scalar);
    case Operand::Kind::index:
      if (operand.index < 0 || operand.index >= static_cast<int>(index_values.size()))
        return make_error("operand refers to index value {}", operand.index);
      return index_values[operand.index];
  }
  return make_error("unknown operand kind");
}

Result<std::string> EmitContext::store_statement(const Store& store, const std::string& member,
                                                 const std::string& linear,
                                                 const std::string& value) const {
  return store_statement_at(store, member, store_index(store.value, linear), value);
}

std::string EmitContext::store_index(const ir::ValueRef& value, const std::string& linear) const {
  // A window of a cat's buffer: the member points at its first element (store_members), the
  // strides apply to the value's own coordinates, unravelled from the linear index.
  Access window = store_access(value);
  if (window.is_contiguous()) return linear;
  window.offset = 0;
  return index_expr(window, {}, {}, linear);
}

Result<std::string> EmitContext::store_statement_at(const Store& store, const std::string& member,
                                                    const std::string& linear,
                                                    const std::string& value) const {
  ir::DType dtype = type_of(store.value).dtype;
  if (dtype == ir::DType::boolean)
    return fmt::format("{}[{}] = ({} != 0.0f);", member, linear, value);
  if (dtype == ir::DType::float32) return fmt::format("{}[{}] = {};", member, linear, value);
  return fmt::format("{}[{}] = static_cast<{}>({});", member, linear, c_type(dtype), value);
}

Status EmitContext::emit_store_line(CodeWriter& w, const Store& store, size_t j,
                                    const std::vector<std::string>& loads,
                                    const std::vector<std::string>& steps,
                                    const std::vector<std::string>& index_values) const {
  STITCH_ASSIGN_OR_RETURN(std::string value, operand_expr(store.from, loads, steps, index_values));
  STITCH_ASSIGN_OR_RETURN(std::string statement,
                          store_statement(store, fmt::format("out{}", j), "e", value));
  w.line("{}", statement);
  return {};
}

Result<Members> EmitContext::pointer_members(const std::vector<Access>& accesses,
                                             const std::string& prefix) const {
  Members members;
  for (size_t j = 0; j < accesses.size(); ++j) {
    STITCH_ASSIGN_OR_RETURN(std::string init, typed_base(accesses[j].base));
    std::string type = c_type(type_of(accesses[j].base).dtype);
    members.push_back({fmt::format("const {}* {}{};", type, prefix, j), init});
  }
  return members;
}

Result<Members> EmitContext::store_members(const std::vector<Store>& stores) const {
  Members members;
  for (size_t j = 0; j < stores.size(); ++j) {
    const Access window = store_access(stores[j].value);
    STITCH_ASSIGN_OR_RETURN(std::string init, typed_base(window.base, true));
    if (window.offset != 0) init += fmt::format(" + {}", window.offset);
    members.push_back({fmt::format("{}* out{};", c_type(type_of(stores[j].value).dtype), j), init});
  }
  return members;
}

std::string EmitContext::functor_name(const plan::Subtask& subtask, std::string_view role) {
  std::string name = subtask.id + "_" + std::string(role);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

void open_functor(CodeWriter& w, const std::string& name,
                  std::initializer_list<const Members*> member_lists,
                  const std::string& signature) {
  w.open("struct {} {{", name);
  for (const Members* members : member_lists)
    for (const auto& [decl, init] : *members)
      w.line("{}", decl);
  w.open("{} {{", signature);
}

void close_functor(CodeWriter& w) {
  w.close();
  w.close(";");
  w.blank();
}

std::vector<std::string> emit_load_lines(CodeWriter& w, const std::vector<Access>& accesses,
                                         const std::vector<int64_t>& space,
                                         const std::vector<std::string>& coords) {
  std::vector<std::string> names;
  for (size_t j = 0; j < accesses.size(); ++j) {
    names.push_back(fmt::format("x{}", j));
    w.line("const float {} = static_cast<float>(l{}[{}]);", names.back(), j,
           index_expr(accesses[j], space, coords, "e"));
  }
  return names;
}

Result<Members> emit_load_functor(EmitContext& ctx, const std::string& name,
                                  const std::string& signature, const std::string& linear_line,
                                  const std::vector<Access>& loads,
                                  const std::vector<int64_t>& space,
                                  const std::vector<std::string>& coords,
                                  const std::optional<Body>& prologue) {
  STITCH_ASSIGN_OR_RETURN(Members members, ctx.pointer_members(loads, "l"));
  CodeWriter& f = ctx.pieces().functors;
  open_functor(f, name, {&members}, signature);
  f.line("{}", linear_line);
  f.line("(void)e;");
  std::vector<std::string> names = emit_load_lines(f, loads, space, coords);
  if (prologue) {
    STITCH_ASSIGN_OR_RETURN(std::vector<std::string> steps,
                            ctx.emit_steps(f, *prologue, names, {}, "v"));
    f.line("return {};", steps.empty() ? names[0] : steps.back());
  } else {
    f.line("return x0;");
  }
  close_functor(f);
  return members;
}

}  // namespace stitch::codegen
