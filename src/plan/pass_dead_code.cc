// Pass "dead-code": keeps the nodes some graph output depends on. Params and inputs stay (they are
// the program's ABI) even when nothing reads them; ParamPrep records unused params.
#include "plan/graph_edit.h"
#include "plan/passes.h"

namespace stitch::plan {

ir::Graph eliminate_dead_code(const ir::Graph& graph, std::vector<Skipped>* skipped) {
  std::vector<bool> live(graph.nodes.size(), false);
  for (const ir::ValueRef& output : graph.outputs)
    if (output.kind == ir::ValueRef::Kind::node) live[output.index] = true;
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    if (!live[i]) continue;
    for_each_ref(graph.nodes[i], [&](const ir::ValueRef& ref) {
      if (ref.kind == ir::ValueRef::Kind::node) live[ref.index] = true;
    });
  }
  GraphRewriter rewriter(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (live[i]) {
      rewriter.keep(static_cast<int>(i));
    } else if (skipped != nullptr) {
      const ir::Node& node = graph.nodes[i];
      skipped->push_back({node.id, node.outputs.empty() ? "no outputs: a check on metadata, no work"
                                                        : "dead: no graph output depends on it"});
    }
  }
  return std::move(rewriter).finish();
}

}  // namespace stitch::plan
