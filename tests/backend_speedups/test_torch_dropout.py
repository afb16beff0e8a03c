import keras
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="PyTorch's dropout mask")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dropout_zeroes_rate_of_the_elements_and_scales_the_rest(dtype):
    """As `torch.nn.functional.dropout` in training: a share `rate` zeroed (within 5 standard deviations of
    a million draws), the rest x / (1 - rate) in the input's dtype, each within its rounding and on average
    within 1e-4 (a scale rounded to bfloat16 would be 0.16% low); the gradient the same mask and scale."""
    import torch

    from kbert.backend_speedups.torch_dropout import dropout

    torch.manual_seed(0)
    x = (torch.rand(1000, 1000) + 1).to(getattr(torch, dtype)).requires_grad_()
    out = dropout(x, 0.1)
    out.sum().backward()
    zeroed = (out == 0).float().mean().item()
    assert abs(zeroed - 0.1) < 5 * (0.1 * 0.9 / 1e6) ** 0.5, zeroed
    kept = out != 0
    ratio = out[kept].double() / x[kept].double()
    rounding = 2**-8 if dtype == "bfloat16" else 2**-23
    assert out.dtype == x.dtype and ((ratio - 1 / 0.9).abs() <= rounding / 0.9).all()
    assert abs(ratio.mean().item() - 1 / 0.9) < 1e-4, ratio.mean().item()
    gradient = x.grad.double()
    assert (gradient[~kept] == 0).all() and ((gradient[kept] - 1 / 0.9).abs() <= rounding / 0.9).all()


def test_the_global_seed_gives_the_same_mask():
    import torch

    from kbert.backend_speedups.torch_dropout import dropout

    x = torch.ones(64, 64)
    torch.manual_seed(1)
    first = dropout(x, 0.5)
    torch.manual_seed(1)
    again = dropout(x, 0.5)
    assert torch.equal(first, again) and not torch.equal(first, dropout(x, 0.5))
