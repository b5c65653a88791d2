// Fixture: host code that the CUDA front end accepts and the host compiler (gcc) rejects: gcc's
// error/warning function attributes are checked only by gcc, after nvcc hands the host code over.
#include <cuda_runtime.h>

__attribute__((warning("deprecated helper"))) void old_helper() {}
__attribute__((error("must not be called from a program"))) void forbidden_helper();

int run_host() {
  old_helper();
  forbidden_helper();
  return 0;
}
