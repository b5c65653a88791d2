#define X(a) a##\
_b
R"x(raw)x" u8"s" '\'' /* open