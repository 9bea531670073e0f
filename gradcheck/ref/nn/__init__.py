"""`gradcheck.ref.nn`: modules, losses, initialisers and clipping, written like tiny PyTorch.

Everything here is built from the engine's public Tensor API, so it runs on whatever the engine
supports and its gradients come from the engine's derivative table.
"""
from gradcheck.ref.nn import functional, init, utils
from gradcheck.ref.nn.activation import LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from gradcheck.ref.nn.container import ModuleList, Sequential
from gradcheck.ref.nn.dropout import Dropout
from gradcheck.ref.nn.flatten import Flatten
from gradcheck.ref.nn.linear import Identity, Linear
from gradcheck.ref.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
)
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.normalization import LayerNorm
from gradcheck.ref.nn.parameter import Parameter
from gradcheck.ref.nn.sparse import Embedding

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten",
    "Identity", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "Module",
    "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh",
    "functional", "init", "utils",
]
