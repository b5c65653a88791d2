// What tokens cost: USD per million prompt and completion tokens per model, as configured
// (stitchcuda.toml's [prices."MODEL"]), read by the roles' exchange records and the usage ledger
// alike. Reasoning tokens are completion tokens and priced as such.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "llm/chat.h"

namespace stitch::llm {

struct ModelPrice {
  double prompt_usd_per_million = 0;
  double completion_usd_per_million = 0;
  bool operator==(const ModelPrice&) const = default;
};

using PriceTable = std::map<std::string, ModelPrice>;  // by model

// The cost of `usage` on `model` in USD; nullopt when `prices` has no such model.
inline std::optional<double> cost_usd(const PriceTable& prices, const std::string& model,
                                      const Usage& usage) {
  auto found = prices.find(model);
  if (found == prices.end()) return std::nullopt;
  const ModelPrice& rates = found->second;
  return (static_cast<double>(usage.prompt_tokens) * rates.prompt_usd_per_million +
          static_cast<double>(usage.completion_tokens) * rates.completion_usd_per_million) /
         1e6;
}

}  // namespace stitch::llm
