// What the runner is asked to run: the tensors of slots.json (docs/verify-protocol.md) parsed into
// plain structs, the dtype table the runner needs (it does not link the IR), and the built-in spec
// of --self-test, which needs no judge.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stitch/program.h"
#include "util/result.h"

namespace stitch::runner {

inline constexpr int kIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)

struct DTypeInfo {
  std::string_view name;  // graph.json spelling
  stitch_dtype dtype;
  int size;  // bytes per element
  bool floating;
};
std::optional<DTypeInfo> dtype_from_name(std::string_view name);
const DTypeInfo& dtype_info(stitch_dtype dtype);

// How fresh values of an input are drawn (graph.json `distribution`).
enum class DistributionKind : uint8_t {
  uniform,    // rand: U[0, 1)
  normal,     // randn: N(0, 1)
  randint,    // randint:LOW:HIGH, integers in [low, high)
  bernoulli,  // bernoulli:P
  fixed,      // fixed or unknown: reuse the values of check set 0
};
struct Distribution {
  DistributionKind kind = DistributionKind::normal;
  double a = 0;  // randint low, bernoulli p
  double b = 0;  // randint high
};
Result<Distribution> parse_distribution(std::string_view text);
std::string distribution_text(const Distribution& distribution);

struct TensorSpec {
  std::string name;
  stitch_dtype dtype = STITCH_FLOAT32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements
  Distribution distribution;     // inputs only (params use normal in --self-test)
  // Outputs only: the buffer whose value after the call this output is (slots.json "state"),
  // empty for forward's own outputs. A state output differs between calls by design.
  std::string state;

  int64_t numel() const;
  // Bytes from the first element to one past the last one reachable through the strides.
  uint64_t storage_bytes() const;
  bool contiguous() const;
  stitch_tensor to_abi(void* data) const;
};

// One tensor of the judge's: a CUDA IPC handle and the tensor's offset inside that allocation.
struct IpcRef {
  std::string handle_hex;  // 128 hex characters
  uint64_t offset_bytes = 0;
};

struct SlotSet {
  std::vector<IpcRef> inputs;
  std::vector<IpcRef> outputs;
};

struct RunSpec {
  int device = 0;
  std::vector<TensorSpec> params;
  std::vector<IpcRef> param_refs;  // empty in --self-test
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<SlotSet> check_sets;  // --self-test: sets of the runner's own, refs empty
  std::vector<SlotSet> spot_slots;
  bool self_test = false;
};

// Parses slots.json. With self_test, IPC handles are not required (shapes are taken, handles
// ignored) and `self_test_check_sets` sets are synthesised.
Result<RunSpec> parse_slots(std::string_view json_text, bool self_test, int self_test_check_sets);
Result<RunSpec> load_slots(const std::filesystem::path& path, bool self_test,
                           int self_test_check_sets);

// The spec --self-test uses without --slots: y = f(x, scale, shift) with scale, shift [1024] and
// x, y [4096, 1024] float32 — the signature of tests/programs/scale_shift_relu.cu.
RunSpec default_self_test_spec(int check_sets);

// Hex of a cudaIpcMemHandle_t → its bytes.
Result<std::vector<uint8_t>> parse_ipc_handle(std::string_view hex);

}  // namespace stitch::runner
