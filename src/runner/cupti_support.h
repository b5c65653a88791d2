// Loading CUPTI at run time, shared by the launch counter and the profile tracer: the runner must
// work where libcupti is missing, so it is dlopen'ed rather than linked.
#pragma once

#include <string>

namespace stitch::runner {

// dlopen of libcupti from the usual places (soname, the toolkit the runner was built with, the
// default install). Returns the handle, or nullptr with `detail` saying why.
void* open_cupti_library(std::string& detail);

}  // namespace stitch::runner
