// Session: the timing phase (docs/verify-protocol.md "Runner phases" step 4). Every iteration —
// warm-up or timed — runs on one of several private input sets, re-randomised before the call;
// outputs are poisoned, persisting L2 is reset and L2 flushed; after the call the same checks as
// in correctness run (outside the timed region). Randomly chosen timed iterations are re-run on
// fresh buffers and compared (output caches, phase detection: rows 5, 6) and copied to the judge's
// spot slots.
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "runner/session.h"

namespace stitch::runner {
namespace {

using nlohmann::json;

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace

// The same event pattern as call_forward around a call that launches nothing. What remains between
// the caller's-stream end event and the after-synchronize event is the method's fixed cost; an
// iteration whose gap is much larger left work running outside the caller's stream.
Status Session::measure_empty_sync_gap(int calls) {
  for (int i = 0; i < calls; ++i) {
    STITCH_TRY(reset_caches(i));
    cudaEventRecord(start_event_, stream_);
    cudaEventRecord(stream_end_event_, stream_);
    cudaError_t status = cudaDeviceSynchronize();
    if (status == cudaSuccess) status = cudaEventRecord(end_event_, stream_);
    if (status == cudaSuccess) status = cudaEventSynchronize(end_event_);
    if (status != cudaSuccess) return cuda_error(status, "measuring the synchronize cost");
    timing_.empty_sync_gap_ms.push_back(event_ms(stream_end_event_, end_event_));
  }
  return {};
}

Result<Flow> Session::time_forward() {
  report_.set_phase("timing");
  const int iterations = std::max(options_.timing_iters, 0);
  const int warmup = std::max(options_.warmup, 0);
  // Which timed iterations are re-checked; the first spot_slots.size() of them also go to the
  // judge. Drawn before any call, from the runner's own generator.
  std::vector<int> order(iterations);
  std::iota(order.begin(), order.end(), 0);
  for (int i = iterations - 1; i > 0; --i)
    std::swap(order[i], order[next_seed() % (i + 1)]);
  size_t picked =
      std::min<size_t>(std::max<size_t>(spec_.spot_slots.size(),
                                        static_cast<size_t>(std::max(options_.rechecks, 0))),
                       order.size());
  std::map<int, int> spot_index;  // timed iteration → index among the picked ones
  for (size_t i = 0; i < picked; ++i)
    spot_index[order[i]] = static_cast<int>(i);
  for (const auto& [iteration, index] : spot_index)
    timing_.spot_iterations.push_back(iteration);

  report_.update([&](json& doc) {
    doc["timing"] = {
        {"warmup", warmup},
        {"iterations", iterations},
        {"sets", timing_sets_.size()},
        {"l2_flush_bytes", l2_flush_.bytes()},
        {"launch_counting", options_.launch_counting == LaunchCounting::off   ? "off"
                            : options_.launch_counting == LaunchCounting::all ? "all"
                                                                              : "untimed"},
        {"rechecks", json::array()}};
  });
  if (iterations > 0) STITCH_TRY(measure_empty_sync_gap(20));
  for (int it = 0; it < warmup + iterations; ++it) {
    bool timed = it >= warmup;
    if (timed && it == warmup && options_.launch_counting == LaunchCounting::untimed)
      launches_.set_enabled(false);
    if (timed && it == warmup) report_.mark(MarkKind::timed_loop_begin);
    if (timed) {  // the channel's latency now, for the supervisor's cross-check (timing_check.h)
      report_.mark(MarkKind::probe_begin, it - warmup);
      report_.mark(MarkKind::probe_end, it - warmup);
    }
    auto found = timed ? spot_index.find(it - warmup) : spot_index.end();
    STITCH_FLOW(timed_iteration(it, timed, found != spot_index.end(),
                                found != spot_index.end() ? found->second : -1));
  }
  if (iterations > 0) report_.mark(MarkKind::timed_loop_end);

  // Unjoined side-stream work makes the caller's stream finish early; the synchronized time
  // still counts it. A large gap is worth a warning even when the snapshot check missed it.
  double gap = median(timing_.synced_ms) - median(timing_.gpu_ms);
  if (!timing_.gpu_ms.empty() && gap > 0.1 && gap > 0.5 * median(timing_.gpu_ms))
    report_.add_finding("side_stream",
                        fmt::format("median time to device idle exceeds the caller's stream time "
                                    "by {:.3f} ms (work outside the caller's stream?)",
                                    gap),
                        /*fatal=*/false);
  report_.update([&](json& doc) {
    json& timing = doc["timing"];
    timing["gpu_ms"] = timing_.gpu_ms;
    timing["synced_ms"] = timing_.synced_ms;
    timing["wall_ms"] = timing_.wall_ms;
    timing["empty_sync_gap_ms"] = timing_.empty_sync_gap_ms;
    timing["spot_iterations"] = timing_.spot_iterations;
    timing["canaries_intact"] = timing_.canaries_intact;
    timing["inputs_unchanged"] = timing_.inputs_unchanged;
  });
  return Flow::proceed;
}

Result<Flow> Session::timed_iteration(int iteration, bool timed, bool spot, int spot_index) {
  IoSet& set = timing_sets_[iteration % timing_sets_.size()];
  std::string label = timed ? fmt::format("timing iteration {}", iteration - options_.warmup)
                            : fmt::format("warm-up iteration {}", iteration);
  for (size_t j = 0; j < spec_.inputs.size(); ++j)
    STITCH_TRY(fill_input(set.inputs[j].data(), spec_.inputs[j], j));
  STITCH_ASSIGN_OR_RETURN(uint64_t checksum_before, input_checksum(set));
  STITCH_TRY(poison_outputs(set, 0));
  STITCH_TRY(reset_caches(iteration));

  CallRecord record;
  STITCH_FLOW(call_forward(set, {label, false, timed ? iteration - options_.warmup : -1}, record));

  STITCH_ASSIGN_OR_RETURN(uint64_t damage, canary_damage(set));
  if (damage > 0) {
    timing_.canaries_intact = false;
    report_.add_finding(
        "guard_band",
        fmt::format("{}: {} canary bytes around the program's buffers overwritten", label, damage));
    STITCH_TRY(restore_canaries(set));
  }
  STITCH_ASSIGN_OR_RETURN(uint64_t checksum_after, input_checksum(set));
  if (checksum_after != checksum_before) {
    timing_.inputs_unchanged = false;
    report_.add_finding("mutates_inputs", fmt::format("{}: inputs changed by the call", label));
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<uint64_t> poison, poison_remaining(set, 0));
  report_poison(poison, label);
  if (timed) {
    timing_.gpu_ms.push_back(record.gpu_ms);
    timing_.synced_ms.push_back(record.synced_ms);
    timing_.wall_ms.push_back(record.wall_ms);
  }
  if (spot) {
    STITCH_FLOW(recheck(set, iteration - options_.warmup));
    if (spot_index >= 0 && static_cast<size_t>(spot_index) < spec_.spot_slots.size())
      STITCH_TRY(copy_to_spot_slot(set, spot_index));
  }
  return Flow::proceed;
}

Result<Flow> Session::recheck(IoSet& timed_set, int iteration) {
  for (size_t j = 0; j < spec_.inputs.size(); ++j)
    STITCH_CUDA_TRY(
        cudaMemcpyAsync(recheck_io_.inputs[j].data(), timed_set.inputs[j].data(),
                        spec_.inputs[j].storage_bytes(), cudaMemcpyDeviceToDevice, stream_),
        "copying inputs for a recheck");
  STITCH_TRY(poison_outputs(recheck_io_, 1));
  CallRecord record;
  std::string label = fmt::format("recheck of timing iteration {}", iteration);
  STITCH_FLOW(call_forward(recheck_io_, {label}, record));
  STITCH_ASSIGN_OR_RETURN(uint64_t damage, canary_damage(recheck_io_));
  if (damage > 0) {
    report_.add_finding("guard_band",
                        fmt::format("{}: {} canary bytes overwritten", label, damage));
    STITCH_TRY(restore_canaries(recheck_io_));
  }
  for (size_t k = 0; k < spec_.outputs.size(); ++k) {
    // A state output (a running statistic) moves on with every call, the recheck's included.
    if (!spec_.outputs[k].state.empty()) continue;
    STITCH_ASSIGN_OR_RETURN(
        CompareCounts counts,
        compare(timed_set.outputs[k].data(), recheck_io_.outputs[k].data(), spec_.outputs[k],
                options_.recheck_atol, options_.recheck_rtol));
    double max_diff = 0;
    std::memcpy(&max_diff, &counts.max_abs_diff_bits, sizeof max_diff);
    report_.update([&](json& doc) {
      doc["timing"]["rechecks"].push_back({{"iteration", iteration},
                                           {"output", k},
                                           {"bit_mismatches", counts.bit_mismatches},
                                           {"tolerance_mismatches", counts.tolerance_mismatches},
                                           {"max_abs_diff", max_diff}});
    });
    if (counts.tolerance_mismatches > 0)
      report_.add_finding(
          "output_cache",
          fmt::format("timing iteration {}: output {} differs in {} elements (max |diff| {:.3g}) "
                      "from a call on the same inputs in fresh buffers: results reused across "
                      "calls, or timed calls computed differently",
                      iteration, k, counts.tolerance_mismatches, max_diff));
  }
  return Flow::proceed;
}

Status Session::copy_to_spot_slot(const IoSet& timed_set, int spot_index) {
  const SlotSet& slot = spec_.spot_slots[spot_index];
  STITCH_TRY(
      copy_to_slots(slot.inputs, timed_set.inputs, spec_.inputs, "copying inputs to a spot slot"));
  STITCH_TRY(copy_to_slots(slot.outputs, timed_set.outputs, spec_.outputs,
                           "copying outputs to a spot slot"));
  STITCH_CUDA_TRY(cudaStreamSynchronize(stream_), "copying to a spot slot");
  ipc_.close_all();
  return {};
}

}  // namespace stitch::runner
