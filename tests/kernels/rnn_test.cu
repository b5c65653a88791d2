// kernels/rnn.cuh on the GPU against a double-precision CPU implementation of PyTorch's nn.LSTM,
// nn.GRU and nn.RNN (tanh, ReLU): multi-layer, bidirectional, batch_first, without biases, zero
// initial states (null hx / cx), outputs y, h_n and c_n; every algorithm cuDNN offers timed by
// tune, the fastest kept. FP32 FMA math must meet a tight bound; TF32 a looser one. Plus the
// parameter bookkeeping and shape checks, which need no GPU.
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_support.cuh"
#include "kernels/rnn.cuh"

namespace stitch::kernels {
namespace {

using testing::all_close;
using testing::DeviceBuffer;
using testing::Tolerance;

struct RnnCase {
  std::string name;
  RnnShape shape;
  RnnMath math = RnnMath::strict_fp32;
  bool zero_initial = false;  // hx / cx passed as null
};

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

struct Reference {
  std::vector<double> y, hy, cy;
};

// PyTorch's recurrences in double. x, hx, cx as the kernel takes them; params in PyTorch's order.
Reference reference(const RnnShape& s, const std::vector<float>& x, const std::vector<float>& hx,
                    const std::vector<float>& cx, const std::vector<std::vector<float>>& params) {
  const int dirs = rnn_directions(s), gates = rnn_gates(s.cell);
  const int64_t T = s.seq_len, B = s.batch, H = s.hidden_size;
  const int per_direction = s.has_biases ? 4 : 2;
  // layer input [T][B][in], time-major whatever the layout
  int64_t in = s.input_size;
  std::vector<double> input(T * B * in);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < in; ++k)
        input[(t * B + b) * in + k] =
            x[s.batch_first ? (b * T + t) * in + k : (t * B + b) * in + k];
  Reference out;
  out.hy.assign(s.layers * dirs * B * H, 0.0);
  out.cy.assign(s.layers * dirs * B * H, 0.0);
  std::vector<double> output;
  for (int layer = 0; layer < s.layers; ++layer) {
    output.assign(T * B * dirs * H, 0.0);
    for (int d = 0; d < dirs; ++d) {
      const int first = (layer * dirs + d) * per_direction;
      const auto& w_ih = params[first];
      const auto& w_hh = params[first + 1];
      const int64_t state = ((layer * dirs + d) * B) * H;
      std::vector<double> h(B * H), c(B * H);
      for (int64_t i = 0; i < B * H; ++i) {
        h[i] = hx.empty() ? 0.0 : hx[state + i];
        c[i] = cx.empty() ? 0.0 : cx[state + i];
      }
      for (int64_t step = 0; step < T; ++step) {
        const int64_t t = d == 0 ? step : T - 1 - step;
        std::vector<double> next_h(B * H), next_c(B * H);
        for (int64_t b = 0; b < B; ++b) {
          // pre-activations per gate: input part and recurrent part (GRU needs them apart)
          std::vector<double> wx(gates * H), wh(gates * H);
          for (int64_t r = 0; r < gates * H; ++r) {
            double a = s.has_biases ? params[first + 2][r] : 0.0;
            for (int64_t k = 0; k < in; ++k)
              a += w_ih[r * in + k] * input[(t * B + b) * in + k];
            double u = s.has_biases ? params[first + 3][r] : 0.0;
            for (int64_t k = 0; k < H; ++k)
              u += w_hh[r * H + k] * h[b * H + k];
            wx[r] = a;
            wh[r] = u;
          }
          for (int64_t j = 0; j < H; ++j) {
            double hn = 0, cn = 0;
            switch (s.cell) {
              case RnnCell::lstm: {
                const double ig = sigmoid(wx[j] + wh[j]);
                const double fg = sigmoid(wx[H + j] + wh[H + j]);
                const double gg = std::tanh(wx[2 * H + j] + wh[2 * H + j]);
                const double og = sigmoid(wx[3 * H + j] + wh[3 * H + j]);
                cn = fg * c[b * H + j] + ig * gg;
                hn = og * std::tanh(cn);
                break;
              }
              case RnnCell::gru: {
                const double r = sigmoid(wx[j] + wh[j]);
                const double z = sigmoid(wx[H + j] + wh[H + j]);
                const double n = std::tanh(wx[2 * H + j] + r * wh[2 * H + j]);
                hn = (1 - z) * n + z * h[b * H + j];
                break;
              }
              case RnnCell::rnn_tanh:
                hn = std::tanh(wx[j] + wh[j]);
                break;
              case RnnCell::rnn_relu:
                hn = std::max(0.0, wx[j] + wh[j]);
                break;
            }
            next_h[b * H + j] = hn;
            next_c[b * H + j] = cn;
            output[(t * B + b) * dirs * H + d * H + j] = hn;
          }
        }
        h = next_h;
        if (s.cell == RnnCell::lstm) c = next_c;
      }
      for (int64_t i = 0; i < B * H; ++i) {
        out.hy[state + i] = h[i];
        out.cy[state + i] = c[i];
      }
    }
    input = output;
    in = dirs * H;
  }
  out.y.resize(output.size());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < dirs * H; ++k)
        out.y[s.batch_first ? (b * T + t) * dirs * H + k : (t * B + b) * dirs * H + k] =
            output[(t * B + b) * dirs * H + k];
  return out;
}

class RnnTest : public ::testing::TestWithParam<RnnCase> {};

TEST_P(RnnTest, MatchesTheDoubleReference) {
  REQUIRE_GPU();
  const RnnCase& c = GetParam();
  const RnnShape& s = c.shape;
  const int64_t dirs = rnn_directions(s);
  const float bound = 1.0f / std::sqrt(static_cast<float>(s.hidden_size));  // PyTorch's init
  std::vector<std::vector<float>> params;
  std::vector<DeviceBuffer<float>> device_params(rnn_param_count(s));
  std::vector<const float*> pointers;
  for (int i = 0; i < rnn_param_count(s); ++i) {
    params.push_back(testing::uniform_floats(rnn_param_elements(s, i), 100 + i, -bound, bound));
    ASSERT_CUDA(device_params[i].allocate(params.back().size()));
    ASSERT_CUDA(device_params[i].upload(params.back()));
    pointers.push_back(device_params[i].data());
  }
  const auto x = testing::uniform_floats(s.seq_len * s.batch * s.input_size, 1, -1.f, 1.f);
  const int64_t states = s.layers * dirs * s.batch * s.hidden_size;
  std::vector<float> hx, cx;
  if (!c.zero_initial) {
    hx = testing::uniform_floats(states, 2, -1.f, 1.f);
    cx = testing::uniform_floats(states, 3, -1.f, 1.f);
  }
  const Reference expected = reference(s, x, hx, cx, params);

  CudnnHandle handle;
  std::string error;
  ASSERT_EQ(handle.create(error), STITCH_OK) << error;
  CudnnRnn rnn;
  ASSERT_EQ(rnn.init(handle.get(), s, c.math, error), STITCH_OK) << error;
  EXPECT_GE(rnn.candidates(), 1);
  DeviceBuffer<char> workspace(rnn.max_workspace_bytes());
  ASSERT_EQ(rnn.tune(workspace.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_EQ(rnn.load_weights(pointers.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_LE(rnn.workspace_bytes(), rnn.max_workspace_bytes());

  DeviceBuffer<float> dx(x.size()), dhx(states), dcx(states), dy(expected.y.size()),
      dhy(states), dcy(states);
  ASSERT_CUDA(dx.upload(x));
  if (!c.zero_initial) {
    ASSERT_CUDA(dhx.upload(hx));
    ASSERT_CUDA(dcx.upload(cx));
  }
  for (auto* out : {&dy, &dhy, &dcy})  // NaN: every output element must be written
    ASSERT_CUDA(cudaMemset(out->data(), 0xff, out->size() * sizeof(float)));
  const bool lstm = s.cell == RnnCell::lstm;
  ASSERT_EQ(rnn.run(dx.data(), c.zero_initial ? nullptr : dhx.data(),
                    c.zero_initial || !lstm ? nullptr : dcx.data(), dy.data(), dhy.data(),
                    lstm ? dcy.data() : nullptr, workspace.data(), nullptr, error),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  // FP32 FMA: rounding of dot products of length in + H, compounded over the steps, stays near
  // 1e-6 for these bounded (tanh / sigmoid) values; TF32 (10-bit mantissa) near 1e-3.
  const Tolerance tol = c.math == RnnMath::tf32 ? Tolerance{5e-3, 5e-3, 0} : Tolerance{2e-5, 1e-4, 0};
  EXPECT_TRUE(all_close(dy.download(), expected.y, tol)) << c.name << " y (" << rnn.algorithm_name()
                                                         << ")";
  EXPECT_TRUE(all_close(dhy.download(), expected.hy, tol)) << c.name << " h_n";
  if (lstm) EXPECT_TRUE(all_close(dcy.download(), expected.cy, tol)) << c.name << " c_n";
}

const RnnCase kCases[] = {
    {"lstm_two_layers", rnn_shape(RnnCell::lstm, 24, 3, 10, 16, 2)},
    {"lstm_bidirectional_batch_first", rnn_shape(RnnCell::lstm, 17, 4, 8, 12, 2, true, true)},
    {"lstm_zero_initial_states", rnn_shape(RnnCell::lstm, 9, 2, 5, 8, 1), RnnMath::strict_fp32,
     true},
    {"lstm_no_biases", rnn_shape(RnnCell::lstm, 12, 2, 6, 10, 1, false, false, false)},
    {"lstm_level3_like", rnn_shape(RnnCell::lstm, 64, 10, 128, 256, 2, false, true)},
    {"lstm_level3_like_tf32", rnn_shape(RnnCell::lstm, 64, 10, 128, 256, 2, false, true),
     RnnMath::tf32},
    {"gru_bidirectional", rnn_shape(RnnCell::gru, 20, 2, 6, 20, 2, true)},
    {"gru_batch_first", rnn_shape(RnnCell::gru, 15, 3, 7, 9, 1, false, true)},
    {"gru_level3_like", rnn_shape(RnnCell::gru, 48, 10, 128, 256, 3)},
    {"rnn_tanh_three_layers", rnn_shape(RnnCell::rnn_tanh, 30, 3, 12, 16, 3)},
    {"rnn_relu_no_biases", rnn_shape(RnnCell::rnn_relu, 10, 2, 4, 8, 2, true, false, false)},
};

INSTANTIATE_TEST_SUITE_P(Cells, RnnTest, ::testing::ValuesIn(kCases), testing::case_name<RnnCase>);

TEST(RnnParams, CountsAndElementsFollowPyTorchsFlatOrder) {
  // nn.LSTM(10, 16, num_layers=2, bidirectional=True): per layer and direction w_ih, w_hh, b_ih,
  // b_hh; layer 1 reads both directions' outputs (2 * 16).
  const RnnShape s = rnn_shape(RnnCell::lstm, 5, 2, 10, 16, 2, true);
  EXPECT_EQ(rnn_param_count(s), 16);
  EXPECT_EQ(rnn_param_elements(s, 0), 64 * 10);   // l0 forward w_ih
  EXPECT_EQ(rnn_param_elements(s, 1), 64 * 16);   // l0 forward w_hh
  EXPECT_EQ(rnn_param_elements(s, 2), 64);        // l0 forward b_ih
  EXPECT_EQ(rnn_param_elements(s, 4), 64 * 10);   // l0 reverse w_ih
  EXPECT_EQ(rnn_param_elements(s, 8), 64 * 32);   // l1 forward w_ih
  EXPECT_EQ(rnn_param_elements(s, 15), 64);       // l1 reverse b_hh
  const RnnShape gru = rnn_shape(RnnCell::gru, 5, 2, 7, 9, 2, false, false, false);
  EXPECT_EQ(rnn_param_count(gru), 4);
  EXPECT_EQ(rnn_param_elements(gru, 2), 27 * 9);  // l1 w_ih: input is one direction's 9
  EXPECT_EQ(rnn_gates(RnnCell::rnn_relu), 1);
}

TEST(RnnShapeCheck, RefusesShapesCudnnCannotTake) {
  EXPECT_FALSE(detail::rnn_shape_problem(rnn_shape(RnnCell::lstm, 0, 2, 4, 4, 1)).empty());
  EXPECT_FALSE(detail::rnn_shape_problem(rnn_shape(RnnCell::lstm, 3, 2, 4, 4, 0)).empty());
  EXPECT_FALSE(
      detail::rnn_shape_problem(rnn_shape(RnnCell::gru, 3, int64_t{1} << 32, 4, 4, 1)).empty());
  EXPECT_TRUE(detail::rnn_shape_problem(rnn_shape(RnnCell::gru, 3, 2, 4, 4, 1)).empty());
  CudnnRnn rnn;
  std::string error;
  EXPECT_EQ(rnn.init(nullptr, rnn_shape(RnnCell::lstm, 3, 2, 4, 4, 1), RnnMath::strict_fp32, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("null cuDNN handle"), std::string::npos);
  EXPECT_EQ(rnn.run(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, error),
            STITCH_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace stitch::kernels
