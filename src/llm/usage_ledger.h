// Token accounting: the usage of every exchange summed per (role, model), and its cost in US
// dollars where a price table names the model. Written as usage.json (write_usage_ledger) and read
// back by read_usage_ledger beside it. Thread-safe: K samples in parallel add to one ledger.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "llm/prices.h"
#include "util/result.h"

namespace stitch::llm {

struct LedgerLine {
  std::string role;
  std::string model;
  int64_t requests = 0;
  Usage usage;
  std::optional<double> cost_usd;  // nullopt: the price table does not name the model
};

struct UsageTotals {
  int64_t requests = 0;
  Usage usage;
  double cost_usd = 0;        // over the lines that have a price
  bool cost_complete = true;  // every line had a price
};

class UsageLedger {
 public:
  explicit UsageLedger(PriceTable prices = {}) : prices_(std::move(prices)) {}

  void add(const std::string& role, const std::string& model, const Usage& usage);
  // Lines sorted by role, then model.
  std::vector<LedgerLine> lines() const;
  UsageTotals totals() const;

 private:
  mutable std::mutex mutex_;
  PriceTable prices_;
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, Usage>> sums_;
};

nlohmann::json ledger_to_json(const UsageLedger& ledger);
Status write_usage_ledger(const std::filesystem::path& path, const UsageLedger& ledger);

// What usage.json holds: its lines (costs as written) and totals.
struct UsageReport {
  std::vector<LedgerLine> lines;
  UsageTotals totals;
};
Result<UsageReport> usage_report_from_json(const nlohmann::json& doc);
Result<UsageReport> read_usage_ledger(const std::filesystem::path& path);

}  // namespace stitch::llm
