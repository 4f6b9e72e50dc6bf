// ComputeGradientError (see conflux/cc/gradient_checker.h).
#include "conflux/cc/gradient_checker.h"

#include <algorithm>
#include <cmath>

#include "conflux/cc/client_session.h"
#include "conflux/cc/ops/standard_ops.h"

namespace cfx {
namespace {

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == DT_DOUBLE ? t.at<double>(i) : static_cast<double>(t.at<float>(i));
}

void Set(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DT_DOUBLE) {
    t.at<double>(i) = v;
  } else {
    t.at<float>(i) = static_cast<float>(v);
  }
}

Status CheckDtype(const Output& o, const char* what) {
  if (!o.valid()) return errors::InvalidArgument("ComputeGradientError: an invalid ", what);
  const DataType t = BaseType(o.type());
  if (t != DT_FLOAT && t != DT_DOUBLE)
    return errors::InvalidArgument("ComputeGradientError: ", what, " ", o.name(), " is ",
                                   DataTypeString(t), "; float or double was expected");
  return Status();
}

}  // namespace

StatusOr<double> ComputeGradientError(const Scope& scope, Runtime* runtime,
                                      const std::vector<Output>& xs,
                                      const std::vector<Tensor>& x_values,
                                      const std::vector<Output>& ys, double delta) {
  if (xs.size() != x_values.size())
    return errors::InvalidArgument("ComputeGradientError: ", xs.size(), " xs but ", x_values.size(),
                                   " values");
  CFX_RETURN_IF_ERROR(scope.status());  // building the graph failed: ys or xs may be invalid
  for (const Output& x : xs) CFX_RETURN_IF_ERROR(CheckDtype(x, "x"));
  for (const Output& y : ys) CFX_RETURN_IF_ERROR(CheckDtype(y, "y"));
  Scope check = scope.NewSubScope("gradient_check");
  std::vector<Output> dys;
  for (const Output& y : ys) dys.push_back(ops::Placeholder(check, BaseType(y.type())));
  std::vector<Output> grads;
  CFX_RETURN_IF_ERROR(AddSymbolicGradients(check, ys, xs, dys, &grads));
  ClientSession session(scope, runtime);

  ClientSession::FeedType feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.emplace_back(xs[i], x_values[i]);
  std::vector<Tensor> y_values;
  CFX_RETURN_IF_ERROR(session.Run(feeds, ys, &y_values));

  // Symbolic: row (y j, element k) of the Jacobian is the gradient for a one-hot dy.
  // jacobian[i][j] holds d y_j / d x_i as [x elements][y elements].
  std::vector<std::vector<std::vector<double>>> symbolic(xs.size()), numeric(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    for (size_t j = 0; j < ys.size(); ++j) {
      const size_t rows = x_values[i].num_elements(), cols = y_values[j].num_elements();
      symbolic[i].emplace_back(rows * cols, 0.0);
      numeric[i].emplace_back(rows * cols, 0.0);
    }
  for (size_t j = 0; j < ys.size(); ++j) {
    for (int64_t k = 0; k < y_values[j].num_elements(); ++k) {
      ClientSession::FeedType f = feeds;
      for (size_t jj = 0; jj < ys.size(); ++jj) {
        Tensor dy(BaseType(ys[jj].type()), y_values[jj].shape());
        for (int64_t e = 0; e < dy.num_elements(); ++e) Set(dy, e, jj == j && e == k ? 1 : 0);
        f.emplace_back(dys[jj], dy);
      }
      std::vector<Tensor> g;
      CFX_RETURN_IF_ERROR(session.Run(f, grads, &g));
      const int64_t cols = y_values[j].num_elements();
      for (size_t i = 0; i < xs.size(); ++i) {
        // A gradient of another shape than its x is wrong, and would not fit the Jacobian.
        if (g[i].shape() != x_values[i].shape())
          return errors::InvalidArgument("ComputeGradientError: the gradient of x ", xs[i].name(),
                                         " has shape ", g[i].shape().ToString(), " but x has ",
                                         x_values[i].shape().ToString());
        for (int64_t e = 0; e < g[i].num_elements(); ++e)
          symbolic[i][j][e * cols + k] = Get(g[i], e);
      }
    }
  }
  // Numeric: column (x i, element e) from central differences.
  for (size_t i = 0; i < xs.size(); ++i) {
    for (int64_t e = 0; e < x_values[i].num_elements(); ++e) {
      std::vector<Tensor> plus, minus;
      for (int sign : {1, -1}) {
        ClientSession::FeedType f = feeds;
        CFX_ASSIGN_OR_RETURN(Tensor moved, x_values[i].DeepCopy());
        Set(moved, e, Get(moved, e) + sign * delta);
        f[i].second = moved;
        CFX_RETURN_IF_ERROR(session.Run(f, ys, sign == 1 ? &plus : &minus));
      }
      for (size_t j = 0; j < ys.size(); ++j) {
        const int64_t cols = y_values[j].num_elements();
        for (int64_t k = 0; k < cols; ++k)
          numeric[i][j][e * cols + k] = (Get(plus[j], k) - Get(minus[j], k)) / (2 * delta);
      }
    }
  }
  double max_error = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    for (size_t j = 0; j < ys.size(); ++j)
      for (size_t n = 0; n < symbolic[i][j].size(); ++n)
        max_error = std::max(max_error, std::abs(symbolic[i][j][n] - numeric[i][j][n]));
  return max_error;
}

}  // namespace cfx
