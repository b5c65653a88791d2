// Fixture: compiles, with front-end warnings (a #warning directive and an unused variable) and the
// ptxas report of one kernel.
#include <cuda_runtime.h>

#warning "this program is a fixture"

__global__ void copy_kernel(const float* in, float* out) {
  int unused_value = 42;
  out[threadIdx.x] = in[threadIdx.x];
}

int unused_host_variable() {
  int never_read;
  return 0;
}
