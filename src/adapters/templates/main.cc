// Standalone runner for an exported StitchCUDA program (best/main.cc): loads program.so, reads the
// params and inputs from safetensors files, runs one forward pass, writes the outputs, and
// optionally times N more passes with CUDA events. Needs no PyTorch and no Python.
//
//   ./main --params weights.safetensors --inputs inputs.safetensors --out outputs.safetensors
//          [--iters N] [--warmup W] [--program program.so] [--manifest manifest.json]
//
// Params are looked up by their graph.json names (the keys of the capture's weights.safetensors);
// inputs by graph input name ("x") or by position ("input0", the keys of
// reference/inputs.safetensors); outputs are written as output0, output1, ... (the keys of
// reference/outputs.safetensors). program.so and manifest.json default to the files beside this
// executable.
//
// Build (in best/):  nvcc -std=c++17 -O2 -I include main.cc -o main -ldl
// -DSTITCH_MAIN_HOST_MEMORY builds it without CUDA (any C++17 compiler): tensors then live in host
// memory and time is measured with a steady clock. That mode exists for tests of programs that run
// on the host, such as the fake program of tests/adapters.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stitch/program.h"

#ifndef STITCH_MAIN_HOST_MEMORY
#include <cuda_runtime.h>
#endif

namespace {

using json = nlohmann::json;

// Indexed by stitch_dtype (program.h): graph.json spelling, safetensors spelling, bytes.
constexpr int kDTypeCount = 10;
const char* const kGraphNames[kDTypeCount] = {"float32", "float64", "float16", "bfloat16", "int64",
                                              "int32",   "int16",   "int8",    "uint8",    "bool"};
const char* const kSafetensorsNames[kDTypeCount] = {"F32", "F64", "F16", "BF16", "I64",
                                                    "I32", "I16", "I8",  "U8",   "BOOL"};
const int kDTypeBytes[kDTypeCount] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};

[[noreturn]] void fail(const std::string& message) {
  throw std::runtime_error(message);
}

int dtype_from(const char* const names[], const std::string& name, const std::string& where) {
  for (int i = 0; i < kDTypeCount; ++i)
    if (name == names[i]) return i;
  fail(where + ": unknown dtype '" + name + "'");
}

struct HostTensor {
  int dtype = 0;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

std::string describe(int dtype, const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "] " + kGraphNames[dtype];
}

uint64_t byte_size(int dtype, const std::vector<int64_t>& shape) {
  uint64_t n = static_cast<uint64_t>(kDTypeBytes[dtype]);
  for (int64_t d : shape) {
    if (d < 0) fail("negative dimension in " + describe(dtype, shape));
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

// safetensors: 8-byte little-endian header length N, N bytes of JSON, then the data.
std::map<std::string, HostTensor> read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot open");
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char length_bytes[8] = {};
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(length_bytes), 8))
    fail(path + ": too short for a safetensors file");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i)
    header_size = (header_size << 8) | length_bytes[i];
  if (header_size > file_size - 8) fail(path + ": header length past the end of the file");
  std::string header_text(header_size, '\0');
  in.read(header_text.data(), static_cast<std::streamsize>(header_size));
  json header = json::parse(header_text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) fail(path + ": header is not a JSON object");
  const uint64_t data_offset = 8 + header_size;
  std::map<std::string, HostTensor> tensors;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = path + ": " + name;
    try {
      HostTensor tensor;
      tensor.dtype = dtype_from(kSafetensorsNames, info.at("dtype").get<std::string>(), where);
      tensor.shape = info.at("shape").get<std::vector<int64_t>>();
      const auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > file_size - data_offset ||
          offsets[1] - offsets[0] != byte_size(tensor.dtype, tensor.shape))
        fail(where + ": data_offsets do not match the file or the shape");
      tensor.bytes.resize(offsets[1] - offsets[0]);
      in.seekg(static_cast<std::streamoff>(data_offset + offsets[0]));
      if (!in.read(tensor.bytes.data(), static_cast<std::streamsize>(tensor.bytes.size())))
        fail(where + ": read failed");
      tensors.emplace(name, std::move(tensor));
    } catch (const json::exception& e) {
      fail(where + ": malformed entry: " + e.what());
    }
  }
  return tensors;
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, const HostTensor*>>& tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    header[name] = {{"dtype", kSafetensorsNames[tensor->dtype]},
                    {"shape", tensor->shape},
                    {"data_offsets", {offset, offset + tensor->bytes.size()}}};
    offset += tensor->bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the reference writer pads the header to 8 bytes
  unsigned char length_bytes[8];
  for (int i = 0; i < 8; ++i)
    length_bytes[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path + ": cannot create");
  out.write(reinterpret_cast<const char*>(length_bytes), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& entry : tensors)
    out.write(entry.second->bytes.data(), static_cast<std::streamsize>(entry.second->bytes.size()));
  if (!out.flush()) fail(path + ": write failed");
}

// ---- Memory and timing: the device, or the host for STITCH_MAIN_HOST_MEMORY ---------------------
#ifdef STITCH_MAIN_HOST_MEMORY
using Stream = void*;
void* device_alloc(size_t bytes) {
  return std::malloc(bytes ? bytes : 1);
}
void device_free(void* p) {
  std::free(p);
}
void copy_to_device(void* dst, const void* src, size_t n) {
  std::memcpy(dst, src, n);
}
void copy_to_host(void* dst, const void* src, size_t n) {
  std::memcpy(dst, src, n);
}
Stream make_stream() {
  return nullptr;
}
void destroy_stream(Stream) {}
void synchronize(Stream) {}

class IterationTimer {
 public:
  void start(Stream) { begin_ = std::chrono::steady_clock::now(); }
  void stop(Stream) {
    ms_.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin_)
            .count());
  }
  std::vector<double> milliseconds() { return ms_; }

 private:
  std::chrono::steady_clock::time_point begin_;
  std::vector<double> ms_;
};
#else
void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(status));
}
using Stream = cudaStream_t;
void* device_alloc(size_t bytes) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  return p;
}
void device_free(void* p) {
  cudaFree(p);
}
void copy_to_device(void* dst, const void* src, size_t n) {
  check_cuda(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}
void copy_to_host(void* dst, const void* src, size_t n) {
  check_cuda(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
}
Stream make_stream() {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return stream;
}
void destroy_stream(Stream stream) {
  cudaStreamDestroy(stream);
}
void synchronize(Stream stream) {
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  // Side streams a program forgot to join still count: the device-wide sync sees their errors.
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// One event pair per iteration, read after the last one, so timing adds no host sync in between.
class IterationTimer {
 public:
  ~IterationTimer() {
    for (cudaEvent_t e : events_)
      cudaEventDestroy(e);
  }
  void start(Stream stream) { record(stream); }
  void stop(Stream stream) { record(stream); }
  std::vector<double> milliseconds() {
    std::vector<double> ms;
    for (size_t i = 0; i + 1 < events_.size(); i += 2) {
      check_cuda(cudaEventSynchronize(events_[i + 1]), "cudaEventSynchronize");
      float elapsed = 0;
      check_cuda(cudaEventElapsedTime(&elapsed, events_[i], events_[i + 1]),
                 "cudaEventElapsedTime");
      ms.push_back(elapsed);
    }
    return ms;
  }

 private:
  void record(Stream stream) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
    check_cuda(cudaEventRecord(e, stream), "cudaEventRecord");
  }
  std::vector<cudaEvent_t> events_;
};
#endif

// A tensor in the program's memory space, freed on scope exit.
struct DeviceTensor {
  stitch_tensor view{};
  uint64_t bytes = 0;

  DeviceTensor(int dtype, const std::vector<int64_t>& shape) {
    if (shape.size() > STITCH_MAX_RANK)
      fail("rank above STITCH_MAX_RANK: " + describe(dtype, shape));
    bytes = byte_size(dtype, shape);
    view.data = device_alloc(bytes);
    view.dtype = static_cast<stitch_dtype>(dtype);
    view.rank = static_cast<int32_t>(shape.size());
    int64_t stride = 1;
    for (int d = view.rank - 1; d >= 0; --d) {
      view.shape[d] = shape[d];
      view.strides[d] = stride;
      stride *= shape[d];
    }
  }
  ~DeviceTensor() { device_free(view.data); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
};

struct Spec {
  std::string name;
  int dtype = 0;
  std::vector<int64_t> shape;
};

std::vector<Spec> specs_of(const json& manifest, const char* key) {
  std::vector<Spec> specs;
  int index = 0;
  for (const json& entry : manifest.at(key)) {
    Spec spec;
    spec.name = entry.value("name", std::string(key) + std::to_string(index));
    spec.dtype = dtype_from(kGraphNames, entry.at("dtype").get<std::string>(),
                            std::string("manifest.json ") + key);
    spec.shape = entry.at("shape").get<std::vector<int64_t>>();
    specs.push_back(std::move(spec));
    ++index;
  }
  return specs;
}

// The tensor for `spec` from `file`, under its name or (inputs) its positional key; checked.
const HostTensor& take(const std::map<std::string, HostTensor>& file, const std::string& path,
                       const Spec& spec, const std::string& positional_key) {
  auto it = file.find(spec.name);
  if (it == file.end() && !positional_key.empty()) it = file.find(positional_key);
  if (it == file.end())
    fail(path + ": no tensor named '" + spec.name + "'" +
         (positional_key.empty() ? "" : " or '" + positional_key + "'"));
  if (it->second.dtype != spec.dtype || it->second.shape != spec.shape)
    fail(path + ": '" + it->first + "' is " + describe(it->second.dtype, it->second.shape) +
         ", the program needs " + describe(spec.dtype, spec.shape));
  return it->second;
}

struct Options {
  std::string params, inputs, out, program, manifest;
  int iters = 0;
  int warmup = 3;
};

std::string executable_dir() {
  char buffer[4096];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return ".";
  std::string path(buffer, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

const char kUsage[] =
    "usage: main --params weights.safetensors --inputs inputs.safetensors --out "
    "outputs.safetensors\n"
    "            [--iters N] [--warmup W] [--program program.so] [--manifest manifest.json]\n";

Options parse_options(int argc, char** argv) {
  Options options;
  const std::string dir = executable_dir();
  options.program = dir + "/program.so";
  options.manifest = dir + "/manifest.json";
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) fail(flag + " needs a value\n" + kUsage);
    std::string value = argv[++i];
    if (flag == "--params")
      options.params = value;
    else if (flag == "--inputs")
      options.inputs = value;
    else if (flag == "--out")
      options.out = value;
    else if (flag == "--program")
      options.program = value;
    else if (flag == "--manifest")
      options.manifest = value;
    else if (flag == "--iters")
      options.iters = std::stoi(value);
    else if (flag == "--warmup")
      options.warmup = std::stoi(value);
    else
      fail("unknown option " + flag + "\n" + kUsage);
  }
  if (options.params.empty() || options.inputs.empty() || options.out.empty())
    fail(std::string("--params, --inputs and --out are required\n") + kUsage);
  if (options.iters < 0 || options.warmup < 0) fail("--iters and --warmup must be >= 0");
  return options;
}

// The ABI's entry points, typed by their declarations in program.h.
struct ProgramApi {
  decltype(&stitch_abi_version) abi_version;
  decltype(&stitch_init) init;
  decltype(&stitch_forward) forward;
  decltype(&stitch_destroy) destroy;
  decltype(&stitch_last_error) last_error;
};

template <typename F>
F symbol(void* handle, const char* name, const std::string& path) {
  void* p = dlsym(handle, name);
  if (!p) fail(path + ": does not export " + name);
  return reinterpret_cast<F>(p);
}

ProgramApi load_program(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail(std::string("dlopen: ") + dlerror());
  ProgramApi api{};
  api.abi_version = symbol<decltype(api.abi_version)>(handle, "stitch_abi_version", path);
  api.init = symbol<decltype(api.init)>(handle, "stitch_init", path);
  api.forward = symbol<decltype(api.forward)>(handle, "stitch_forward", path);
  api.destroy = symbol<decltype(api.destroy)>(handle, "stitch_destroy", path);
  api.last_error = symbol<decltype(api.last_error)>(handle, "stitch_last_error", path);
  if (api.abi_version() != STITCH_ABI_VERSION)
    fail(path + ": built for ABI version " + std::to_string(api.abi_version()) +
         ", this runner speaks version " + std::to_string(STITCH_ABI_VERSION));
  return api;
}

int run(const Options& options) {
  std::ifstream manifest_in(options.manifest);
  if (!manifest_in) fail(options.manifest + ": cannot open");
  const json manifest = json::parse(manifest_in);
  const std::vector<Spec> param_specs = specs_of(manifest, "params");
  const std::vector<Spec> input_specs = specs_of(manifest, "inputs");
  const std::vector<Spec> output_specs = specs_of(manifest, "outputs");
  const ProgramApi api = load_program(options.program);

  const auto param_file = read_safetensors(options.params);
  const auto input_file = read_safetensors(options.inputs);
  std::vector<std::unique_ptr<DeviceTensor>> params, inputs, outputs;
  std::vector<stitch_tensor> param_views, input_views, output_views;
  for (const Spec& spec : param_specs) {
    const HostTensor& host = take(param_file, options.params, spec, "");
    params.push_back(std::make_unique<DeviceTensor>(spec.dtype, spec.shape));
    copy_to_device(params.back()->view.data, host.bytes.data(), host.bytes.size());
    param_views.push_back(params.back()->view);
  }
  for (size_t i = 0; i < input_specs.size(); ++i) {
    const HostTensor& host =
        take(input_file, options.inputs, input_specs[i], "input" + std::to_string(i));
    inputs.push_back(std::make_unique<DeviceTensor>(input_specs[i].dtype, input_specs[i].shape));
    copy_to_device(inputs.back()->view.data, host.bytes.data(), host.bytes.size());
    input_views.push_back(inputs.back()->view);
  }
  for (const Spec& spec : output_specs) {
    outputs.push_back(std::make_unique<DeviceTensor>(spec.dtype, spec.shape));
    output_views.push_back(outputs.back()->view);
  }

  void* state = nullptr;
  if (int status = api.init(param_views.data(), static_cast<int>(param_views.size()), &state))
    fail("stitch_init failed (status " + std::to_string(status) + "): " + api.last_error(nullptr));
  Stream stream = make_stream();
  auto forward = [&]() {
    int status = api.forward(state, input_views.data(), static_cast<int>(input_views.size()),
                             output_views.data(), static_cast<int>(output_views.size()),
                             static_cast<void*>(stream));
    if (status)
      fail("stitch_forward failed (status " + std::to_string(status) +
           "): " + api.last_error(state));
  };
  forward();
  synchronize(stream);

  std::vector<HostTensor> results(output_specs.size());
  std::vector<std::pair<std::string, const HostTensor*>> named;
  for (size_t i = 0; i < output_specs.size(); ++i) {
    results[i].dtype = output_specs[i].dtype;
    results[i].shape = output_specs[i].shape;
    results[i].bytes.resize(outputs[i]->bytes);
    copy_to_host(results[i].bytes.data(), outputs[i]->view.data, outputs[i]->bytes);
    named.emplace_back("output" + std::to_string(i), &results[i]);
  }
  write_safetensors(options.out, named);
  std::printf("wrote %zu output(s) to %s\n", named.size(), options.out.c_str());

  if (options.iters > 0) {
    for (int i = 0; i < options.warmup; ++i)
      forward();
    synchronize(stream);
    IterationTimer timer;
    for (int i = 0; i < options.iters; ++i) {
      timer.start(stream);
      forward();
      timer.stop(stream);
    }
    synchronize(stream);
    std::vector<double> ms = timer.milliseconds();
    std::sort(ms.begin(), ms.end());
    const size_t n = ms.size();
    const double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    std::printf("median_ms %.6f over %zu iterations (min %.6f, max %.6f; warmup %d)\n", median, n,
                ms.front(), ms.back(), options.warmup);
  }
  api.destroy(state);
  destroy_stream(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_options(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "main: %s\n", e.what());
    return 1;
  }
}
