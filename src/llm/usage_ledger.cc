#include "llm/usage_ledger.h"

#include <fstream>

#include "llm/chat_wire.h"
#include "util/json_fields.h"

namespace stitch::llm {

using nlohmann::json;

namespace {

constexpr std::string_view kFormat = "stitchcuda-llm-usage";
constexpr int kVersion = 1;

Usage& operator+=(Usage& sum, const Usage& usage) {
  sum.prompt_tokens += usage.prompt_tokens;
  sum.completion_tokens += usage.completion_tokens;
  sum.reasoning_tokens += usage.reasoning_tokens;
  sum.estimated = sum.estimated || usage.estimated;
  return sum;
}

UsageTotals totals_of(const std::vector<LedgerLine>& lines) {
  UsageTotals totals;
  for (const LedgerLine& line : lines) {
    totals.requests += line.requests;
    totals.usage += line.usage;
    if (line.cost_usd)
      totals.cost_usd += *line.cost_usd;
    else
      totals.cost_complete = false;
  }
  return totals;
}

}  // namespace

void UsageLedger::add(const std::string& role, const std::string& model, const Usage& usage) {
  std::lock_guard lock(mutex_);
  auto& [requests, sum] = sums_[{role, model}];
  requests += 1;
  sum += usage;
}

std::vector<LedgerLine> UsageLedger::lines() const {
  std::lock_guard lock(mutex_);
  std::vector<LedgerLine> out;
  for (const auto& [key, value] : sums_)
    out.push_back(LedgerLine{key.first, key.second, value.first, value.second,
                             cost_usd(prices_, key.second, value.second)});
  return out;
}

UsageTotals UsageLedger::totals() const {
  return totals_of(lines());
}

json ledger_to_json(const UsageLedger& ledger) {
  std::vector<LedgerLine> lines = ledger.lines();
  UsageTotals totals = totals_of(lines);
  return {{"format", kFormat},
          {"version", kVersion},
          {"lines", json_array(lines,
                               [](const LedgerLine& line) {
                                 return json{{"role", line.role},
                                             {"model", line.model},
                                             {"requests", line.requests},
                                             {"usage", usage_to_json(line.usage)},
                                             {"cost_usd", optional_number(line.cost_usd)}};
                               })},
          {"totals",
           {{"requests", totals.requests},
            {"usage", usage_to_json(totals.usage)},
            {"cost_usd", totals.cost_usd},
            {"cost_complete", totals.cost_complete}}}};
}

Status write_usage_ledger(const std::filesystem::path& path, const UsageLedger& ledger) {
  std::ofstream out(path);
  out << ledger_to_json(ledger).dump(2) << '\n';
  out.close();
  if (!out) return make_error(ErrorKind::machine, "writing {}", path.string());
  return {};
}

Result<UsageReport> usage_report_from_json(const json& doc) {
  STITCH_TRY(check_file_format(doc, "usage.json", kFormat, kVersion));
  UsageReport report;
  STITCH_ASSIGN_OR_RETURN(report.lines, read_array<LedgerLine>(doc, "lines", [](const json& item) {
                            LedgerLine line{string_or(item, "role"), string_or(item, "model"),
                                            static_cast<int64_t>(number_or(item, "requests", 0)),
                                            usage_from_json(item.value("usage", json::object())),
                                            number_field(item, "cost_usd")};
                            return Result<LedgerLine>(std::move(line));
                          }));
  report.totals = totals_of(report.lines);
  return report;
}

Result<UsageReport> read_usage_ledger(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorKind::bad_input, "cannot read {}", path.string());
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error(ErrorKind::bad_input, "{}: not JSON", path.string());
  auto report = usage_report_from_json(doc);
  if (!report.ok()) return report.error().with_context(path.string());
  return report;
}

}  // namespace stitch::llm
