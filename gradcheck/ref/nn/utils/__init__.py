"""`nn.utils`: gradient clipping, weight and spectral norm, parameter vectors, and
variable-length sequences (``nn.utils.rnn``)."""
from gradcheck.ref.nn.utils import fusion, parametrize, prune, rnn  # noqa: F401
from gradcheck.ref.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from gradcheck.ref.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from gradcheck.ref.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval  # noqa: F401
from gradcheck.ref.nn.utils.init import skip_init  # noqa: F401
from gradcheck.ref.nn.utils.weight_norm import (
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "remove_spectral_norm", "remove_weight_norm", "rnn", "spectral_norm",
           "vector_to_parameters", "weight_norm"]
