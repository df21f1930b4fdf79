#pragma once
// Debian's libtorch-dev ships c10d's reducer.hpp but not this header of distributed autograd (RPC),
// which reducer.hpp includes for two names only. cdui never uses distributed autograd: these are
// the two names, as reducer.hpp needs them (a callback type it checks, and a shared_ptr to an
// object cdui never creates or touches), so that the Reducer's declaration compiles against the
// library that defines it. Only torch_compat/c10d.cpp sees this folder, and only with 1.13.
#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>

namespace torch::distributed::autograd {

class DistAutogradContext {
public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;

} // namespace torch::distributed::autograd
