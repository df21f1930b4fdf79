#pragma once
// The optimizer's gradients between steps, alike in both libtorch configurations
// (docs/architecture.md): 1.13's zero_grad() zeroes them in place; 2.x's frees them by default
// (set_to_none). cdui keeps them, zeroed, as 1.13 does: the static estimate, measured peaks and
// cdui fit count gradients held through the next forward pass (docs/training-memory.md).

#include <torch/optim/optimizer.h>
#include <torch/version.h>

namespace cdui::torch_compat {

inline void zero_grad(torch::optim::Optimizer& optimizer) {
#if TORCH_VERSION_MAJOR >= 2
  optimizer.zero_grad(/*set_to_none=*/false);
#else
  optimizer.zero_grad();
#endif
}

} // namespace cdui::torch_compat
