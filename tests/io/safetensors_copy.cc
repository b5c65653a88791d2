// safetensors_copy IN OUT: reads every tensor of IN (memory-mapped, validated) and writes them
// again to OUT with the C++ writer, in header order with the same metadata. Used by
// test_safetensors_interop.py to check, bit for bit, that files cross between Python and C++.
#include <cstdio>
#include <vector>

#include "io/safetensors.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN OUT\n", argv[0]);
    return 2;
  }
  auto in = stitch::io::SafetensorsFile::open(argv[1]);
  if (!in.ok()) {
    std::fprintf(stderr, "error: %s\n", in.error().message.c_str());
    return 1;
  }
  std::vector<stitch::io::TensorView> views;
  for (const stitch::io::TensorInfo& info : in->tensors())
    views.push_back({info.name, info.dtype, info.shape, in->tensor_bytes(info)});
  stitch::Status status = stitch::io::write_safetensors(argv[2], views, in->header().metadata);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.error().message.c_str());
    return 1;
  }
  return 0;
}
