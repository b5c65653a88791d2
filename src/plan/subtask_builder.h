// Internal to build_subtasks (subtasks.cc, subtask_kinds.cc): a SpecBuilder walks the fusion groups
// and adds each group's subtask(s) through the add_<kind> of its GroupKind (subtask_kinds.cc); the
// steps those share (bodies, prologues, register epilogues, push) and the BodyBuilder that turns
// a group's nodes into a Body are in subtasks.cc.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan/fusion.h"
#include "plan/graph_edit.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan::subtask_building {

// The loads and steps of one Body over `index_shape`, and the Operand each value of it is known by.
class BodyBuilder {
 public:
  BodyBuilder(const ir::Graph& graph, const ValueMap& values, const std::set<int>& folded,
              std::vector<int64_t> index_shape)
      : graph_(graph), values_(values), folded_(folded), index_shape_(std::move(index_shape)) {}

  void add_register_value(const ir::ValueRef& value);
  void add_step(int index);

  std::optional<Operand> find(const ir::ValueRef& value) const {
    auto it = known_.find(value_key(value));
    if (it == known_.end()) return std::nullopt;
    return it->second;
  }

  void make_first_load(int index);

  Body& body() { return body_; }

 private:
  Operand operand(const ir::Arg& arg, const ir::Node& consumer);

  const ir::Graph& graph_;
  const ValueMap& values_;
  const std::set<int>& folded_;
  std::vector<int64_t> index_shape_;
  Body body_;
  std::map<std::string, Operand> known_;
};

class SpecBuilder {
 public:
  SpecBuilder(const ir::Graph& graph, const ValueMap& values, const Fusion& fusion)
      : graph_(graph), values_(values), fusion_(fusion), uses_(graph) {}

  Result<std::vector<Subtask>> run();

 private:
  // Shared by the adders (subtasks.cc).
  void push(const Group& group, SubtaskSpec spec, const std::string& name);
  void add_body_stores(const std::vector<int>& body, BodyBuilder& builder,
                       std::vector<Store>& stores);
  std::optional<Body> register_epilogue(const Group& group, std::vector<int64_t> index_shape,
                                        std::vector<Store>& stores);
  Access add_prologue(const std::vector<int>& prologue, const std::vector<int64_t>& index_shape,
                      std::optional<Body>& out);

  // One per GroupKind (subtask_kinds.cc).
  Status add_matmul(const Group& group);
  Status add_reduction(const Group& group);
  Status add_row(const Group& group);
  Status add_elementwise(const Group& group);
  Status add_copy(const Group& group);
  Status add_pool(const Group& group);
  Status add_conv(const Group& group);
  void add_opaque(const Group& group);
  void add_attention(const Group& group);
  Status add_scan(const Group& group);
  Status add_gather(const Group& group);
  Status add_recurrent(const Group& group);

  const ir::Graph& graph_;
  const ValueMap& values_;
  const Fusion& fusion_;
  Uses uses_;
  std::set<int> members_;
  std::vector<Subtask> subtasks_;
};

}  // namespace stitch::plan::subtask_building
