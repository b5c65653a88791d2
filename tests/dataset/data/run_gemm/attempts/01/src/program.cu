__global__ void mm(float* c) { c[0] = undeclared; }
