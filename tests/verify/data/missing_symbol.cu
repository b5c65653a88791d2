// Fixture: links against a device function that is declared but never defined (relocatable device
// code, so nvlink reports it) and a host function that is never defined (ld reports it).
__device__ float undefined_device_helper(float x);
float undefined_host_helper(float x);

__global__ void uses_helper(float* out) { out[threadIdx.x] = undefined_device_helper(out[threadIdx.x]); }

int main() { return static_cast<int>(undefined_host_helper(1.0f)); }
