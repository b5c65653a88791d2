// Scans in pass "lower" (lowering.h). A flip of a scan's result over dims that include the
// scanned one is a reverse scan of the flipped input:
//
//   flip_D(scan_d(z)) = scan_d(flip_D(z), reverse)   for d in D
//
// (a flip along another dim commutes with the scan; one along d turns it around). So the reverse
// cumsum written flip(cumsum(flip(x))) becomes one reverse scan reading x (its two flips fold into
// x's own Access, pass "views") and writing the result in place, where the scan and a flipped copy
// would move the data twice. The scan node keeps its op and dim; the planner's flag is its kwarg
// "reverse" (docs/plan-format.md), which ScanSpec::reverse reads.
#include <algorithm>

#include "plan/access.h"
#include "plan/kernel_layouts.h"
#include "plan/lowering.h"
#include "plan/op_traits.h"

namespace stitch::plan {

namespace {

using ir::Op;

// The flip's dims, wrapped; nullopt when malformed.
std::optional<std::vector<int64_t>> flip_dims(const ir::Node& flip, int64_t rank) {
  const ir::Arg* dims = flip.arg_or_kwarg(1, "dims");
  auto list = dims != nullptr ? dims->as_int_list() : std::nullopt;
  if (!list) return std::nullopt;
  std::vector<int64_t> wrapped;
  for (int64_t d : *list) {
    auto w = wrap_dim(d, rank);
    if (!w) return std::nullopt;
    wrapped.push_back(*w);
  }
  return wrapped;
}

}  // namespace

std::map<int, int> find_flipped_scans(const ir::Graph& graph, const Uses& uses) {
  std::map<int, int> found;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& flip = graph.nodes[i];
    const ir::Arg* self = flip.arg_or_kwarg(0, "self");
    if (flip.op != Op::flip || self == nullptr || !self->is_ref()) continue;
    const ir::ValueRef scanned = *self->ref();
    if (scanned.kind != ir::ValueRef::Kind::node || scanned.out != 0) continue;
    const ir::Node& scan = graph.nodes[scanned.index];
    const auto geometry = scan_geometry(graph, scan);
    if (!geometry || uses.is_graph_output(scanned) || uses.consumers(scanned).size() != 1) continue;
    const auto dims = flip_dims(flip, flip.outputs[0].rank());
    if (!dims || std::find(dims->begin(), dims->end(), geometry->dim) == dims->end()) continue;
    found[static_cast<int>(i)] = scanned.index;
  }
  return found;
}

namespace lowering {

Result<bool> lower_flipped_scan(Lowerer& lowerer, int scan_index) {
  const ir::Node& flip = lowerer.origin();
  const ir::Node& scan = lowerer.source().nodes[scan_index];
  const ir::ValueRef z = lowerer.rewriter().mapped(*scan.args.at(0).ref());
  const ir::TensorType& input = lowerer.type(z);
  const ir::ValueRef flipped =
      lowerer.emit("input", Op::flip, {ref_arg(z), lowerer.rewriter().remap(flip.args.at(1))},
                   {contiguous_type(input.shape, input.dtype)});
  std::vector<ir::Arg> args{ref_arg(flipped)};
  for (size_t a = 1; a < scan.args.size(); ++a)
    args.push_back(lowerer.rewriter().remap(scan.args[a]));
  std::vector<std::pair<std::string, ir::Arg>> kwargs;
  for (const auto& [name, arg] : scan.kwargs)
    if (name != "reverse") kwargs.emplace_back(name, lowerer.rewriter().remap(arg));
  kwargs.emplace_back("reverse", ir::Arg{!scan_reverse(scan)});
  lowerer.map_output(
      0, lowerer.emit("scan", scan.op, std::move(args), {flip.outputs[0]}, std::move(kwargs)));
  return true;
}

}  // namespace lowering

}  // namespace stitch::plan
