// PyTorch adapter for an exported StitchCUDA program (best/stitch_extension.cpp): a torch C++
// extension that dlopen()s program.so and hands torch tensors to its C ABI
// (include/stitch/program.h). model_new.py builds it with torch.utils.cpp_extension.load; it can
// also be used directly:
//
//   program = ext.Program("best/program.so")   # dlopen + ABI version check
//   program.init([params...])                  # graph.json `params` order; replaces any old state
//   program.forward([inputs...], [outputs...], torch.cuda.current_stream().cuda_stream)
//   program.destroy()                          # also done when the object dies
//
// No CUDA headers: the stream travels as an integer and reaches the program as void*, so the
// extension compiles with a CPU-only torch as well. Tensors are passed as they are (data_ptr,
// dtype, shape, strides in elements): the caller makes them contiguous and puts them on the right
// device. Every failure raises RuntimeError with the program's stitch_last_error() text.
#include <dlfcn.h>
#include <torch/extension.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "stitch/program.h"

namespace {

stitch_dtype to_stitch_dtype(const torch::Tensor& t, const std::string& what) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return STITCH_FLOAT32;
    case torch::kFloat64:
      return STITCH_FLOAT64;
    case torch::kFloat16:
      return STITCH_FLOAT16;
    case torch::kBFloat16:
      return STITCH_BFLOAT16;
    case torch::kInt64:
      return STITCH_INT64;
    case torch::kInt32:
      return STITCH_INT32;
    case torch::kInt16:
      return STITCH_INT16;
    case torch::kInt8:
      return STITCH_INT8;
    case torch::kUInt8:
      return STITCH_UINT8;
    case torch::kBool:
      return STITCH_BOOL;
    default:
      throw std::runtime_error(what + ": dtype " + std::string(c10::toString(t.scalar_type())) +
                               " has no stitch_dtype");
  }
}

stitch_tensor to_stitch_tensor(const torch::Tensor& t, const std::string& what) {
  if (t.dim() > STITCH_MAX_RANK)
    throw std::runtime_error(what + ": rank " + std::to_string(t.dim()) + " is above " +
                             std::to_string(STITCH_MAX_RANK));
  stitch_tensor view{};
  view.data = t.data_ptr();
  view.dtype = to_stitch_dtype(t, what);
  view.rank = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    view.shape[d] = t.size(d);
    view.strides[d] = t.stride(d);
  }
  return view;
}

std::vector<stitch_tensor> to_stitch_tensors(const std::vector<torch::Tensor>& tensors,
                                             const char* what) {
  std::vector<stitch_tensor> views;
  views.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    views.push_back(to_stitch_tensor(tensors[i], std::string(what) + " " + std::to_string(i)));
  return views;
}

// One loaded program.so and at most one state of it.
class Program {
 public:
  explicit Program(const std::string& path) : path_(path) {
    // Never dlclose()d: the program links the CUDA runtime and libraries, whose teardown while
    // other code still holds their handles is not worth the few kilobytes it would free.
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    abi_version_ = symbol<decltype(abi_version_)>("stitch_abi_version");
    init_ = symbol<decltype(init_)>("stitch_init");
    forward_ = symbol<decltype(forward_)>("stitch_forward");
    destroy_ = symbol<decltype(destroy_)>("stitch_destroy");
    last_error_ = symbol<decltype(last_error_)>("stitch_last_error");
    if (abi_version_() != STITCH_ABI_VERSION)
      throw std::runtime_error(path + ": built for ABI version " + std::to_string(abi_version_()) +
                               ", this adapter speaks version " +
                               std::to_string(STITCH_ABI_VERSION));
  }
  ~Program() { destroy(); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  void init(const std::vector<torch::Tensor>& params) {
    std::vector<stitch_tensor> views = to_stitch_tensors(params, "param");
    destroy();
    void* state = nullptr;
    int status = init_(views.data(), static_cast<int>(views.size()), &state);
    if (status != STITCH_OK) throw std::runtime_error(failure("stitch_init", status, nullptr));
    state_ = state;
  }

  void forward(const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& outputs,
               int64_t stream) {
    if (!state_) throw std::runtime_error(path_ + ": forward before init");
    std::vector<stitch_tensor> input_views = to_stitch_tensors(inputs, "input");
    std::vector<stitch_tensor> output_views = to_stitch_tensors(outputs, "output");
    int status;
    {
      // The program may run for a while (or sync its stream): other Python threads may go on.
      pybind11::gil_scoped_release release;
      status = forward_(state_, input_views.data(), static_cast<int>(input_views.size()),
                        output_views.data(), static_cast<int>(output_views.size()),
                        reinterpret_cast<void*>(static_cast<intptr_t>(stream)));
    }
    if (status != STITCH_OK) throw std::runtime_error(failure("stitch_forward", status, state_));
  }

  void destroy() {
    if (state_) destroy_(state_);
    state_ = nullptr;
  }

  bool initialized() const { return state_ != nullptr; }
  int abi_version() const { return abi_version_(); }
  const std::string& path() const { return path_; }

 private:
  template <typename F>
  F symbol(const char* name) {
    void* p = dlsym(handle_, name);
    if (!p) throw std::runtime_error(path_ + ": does not export " + name);
    return reinterpret_cast<F>(p);
  }

  std::string failure(const char* call, int status, void* state) const {
    const char* text = last_error_(state);
    return path_ + ": " + call + " failed (status " + std::to_string(status) +
           "): " + (text && *text ? text : "no error text");
  }

  std::string path_;
  void* handle_ = nullptr;
  void* state_ = nullptr;
  // The ABI's entry points, typed by their declarations in program.h.
  decltype(&stitch_abi_version) abi_version_ = nullptr;
  decltype(&stitch_init) init_ = nullptr;
  decltype(&stitch_forward) forward_ = nullptr;
  decltype(&stitch_destroy) destroy_ = nullptr;
  decltype(&stitch_last_error) last_error_ = nullptr;
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "dlopen()s a StitchCUDA program.so and calls its C ABI with torch tensors";
  m.attr("ABI_VERSION") = STITCH_ABI_VERSION;
  pybind11::class_<Program>(m, "Program")
      .def(pybind11::init<const std::string&>(), pybind11::arg("path"))
      .def("init", &Program::init, pybind11::arg("params"))
      .def("forward", &Program::forward, pybind11::arg("inputs"), pybind11::arg("outputs"),
           pybind11::arg("stream") = 0)
      .def("destroy", &Program::destroy)
      .def_property_readonly("initialized", &Program::initialized)
      .def_property_readonly("abi_version", &Program::abi_version)
      .def_property_readonly("path", &Program::path);
}
