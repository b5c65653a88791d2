// Bench records shared by the tests of src/bench/: a small hand-computable set (see the expected
// numbers in bench_summary_test.cc) and a richer one with every field set and text that needs
// escaping.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_results.h"

namespace stitch::bench::testing {

inline BenchRecord make_record(std::string task, std::string level, BenchOutcome outcome,
                               std::optional<double> ours_ms, std::vector<BaselineTime> baselines) {
  BenchRecord r;
  r.task = std::move(task);
  r.level = std::move(level);
  r.outcome = outcome;
  r.ours_ms = ours_ms;
  r.baselines = std::move(baselines);
  r.gpu = "NVIDIA H200";
  r.attempts = 1;
  return r;
}

// level1: A (2× eager, exactly 1× compile), B (0.5× eager, no compile baseline), C (compile
// error, eager timed), D (1.5× eager, 3× compile); level2: E (2× eager, no compile).
inline std::vector<BenchRecord> hand_computed_records() {
  BenchRecord a =
      make_record("A", "level1", BenchOutcome::passed, 1.0, {{"eager", 2.0}, {"compile", 1.0}});
  a.floor_ms = 0.5;  // 50% of the roofline floor
  return {
      a,
      make_record("B", "level1", BenchOutcome::passed, 2.0, {{"eager", 1.0}}),
      make_record("C", "level1", BenchOutcome::compile_error, std::nullopt, {{"eager", 3.0}}),
      make_record("D", "level1", BenchOutcome::passed, 1.0, {{"eager", 1.5}, {"compile", 3.0}}),
      make_record("E", "level2", BenchOutcome::passed, 4.0, {{"eager", 8.0}}),
  };
}

inline const char* kEvilName = "<script>alert(1)</script>&\"";

// Every field set on the first record; awkward text and numbers elsewhere.
inline std::vector<BenchRecord> rich_records() {
  BenchRecord gemm =
      make_record("12_Gemm_Multiply_LeakyReLU", "level2", BenchOutcome::passed, 0.123456,
                  {{"eager", 0.4567}, {"compile", 0.31}, {"reduce-overhead", 0.2899}});
  gemm.task_file = "KernelBench/level2/12_Gemm_Multiply_LeakyReLU.py";
  gemm.run_dir = "runs/12_Gemm_Multiply_LeakyReLU-20250101T000000Z";
  gemm.reason = "passed 5 input sets";
  gemm.ours_p10_ms = 0.1201;
  gemm.ours_p90_ms = 0.1302;
  gemm.attempts = 3;
  gemm.wall_s = 41.27;
  gemm.top_kernels = {{"gemm_tf32x3<128, 128, 32>", 0.0811}, {"leaky_relu_epilogue&bias", 0.0213}};
  gemm.refine_before_ms = 0.2011;
  gemm.floor_ms = 0.0617;
  gemm.finished_at = "2025-01-01T00:01:02.003Z";

  BenchRecord evil = make_record(kEvilName, "level1", BenchOutcome::passed, 1.6, {{"eager", 2.0}});
  evil.reason = "reason with <b>tags</b> & 'quotes'";
  evil.top_kernels = {{"<img src=x onerror=alert(1)>", 1.25}};
  evil.attempts = 2;
  evil.wall_s = 7.05;

  BenchRecord broken = make_record("19_ReLU", "level1", BenchOutcome::wrong, std::nullopt,
                                   {{"eager", 0.0151}, {"compile", 0.0202}});
  broken.reason = "output 0: 1024 of 4096 elements off | max abs error 3.2e-01";
  broken.attempts = 5;
  broken.wall_s = 120.5;

  BenchRecord refused = make_record("45_LSTM", "level3", BenchOutcome::refused, std::nullopt, {});
  refused.reason = "op aten.lstm.input is not in the kernel library";

  BenchRecord slow =
      make_record("3_Matmul", "level1", BenchOutcome::passed, 3.3333, {{"eager", 1.1111}});
  slow.attempts = 4;
  slow.wall_s = 12.0;
  return {gemm, evil, broken, refused, slow};
}

}  // namespace stitch::bench::testing
