"""`gradcheck.ref.nn`: modules, losses, initialisers and clipping, written like tiny PyTorch.

Everything here is built from the engine's public Tensor API, so it runs on whatever the engine
supports and its gradients come from the engine's derivative table.
"""
from gradcheck.ref.nn import functional, init, utils
from gradcheck.ref.nn.activation import LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from gradcheck.ref.nn.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from gradcheck.ref.nn.container import ModuleList, Sequential
from gradcheck.ref.nn.containers_dict import ModuleDict, ParameterDict, ParameterList
from gradcheck.ref.nn.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from gradcheck.ref.nn.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d
from gradcheck.ref.nn.flatten import Flatten, Unflatten
from gradcheck.ref.nn.rmsnorm import RMSNorm
from gradcheck.ref.nn.linear import Identity, Linear
from gradcheck.ref.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.multihead import MultiheadAttention
from gradcheck.ref.nn.nonlinear import (
    CELU,
    ELU,
    GELU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    SiLU,
    Softplus,
    Softsign,
)
from gradcheck.ref.nn.normalization import GroupNorm, LayerNorm
from gradcheck.ref.nn.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad3d,
    ReflectionPad3d,
    ReplicationPad3d,
    ZeroPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from gradcheck.ref.nn.parameter import Buffer, Parameter  # noqa: F401
from gradcheck.ref.nn.pixelshuffle import PixelShuffle, PixelUnshuffle
from gradcheck.ref.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from gradcheck.ref.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from gradcheck.ref.nn.sparse import Embedding
from gradcheck.ref.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from gradcheck.ref.nn.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from gradcheck.ref.nn import parallel
from gradcheck.ref.nn.parallel import DataParallel
from gradcheck.ref.nn.distance import CosineSimilarity, PairwiseDistance
from gradcheck.ref.nn.instancenorm import (
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LocalResponseNorm,
    SyncBatchNorm,
)
from gradcheck.ref.nn.layers_extra import (
    GLU,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    Bilinear,
    EmbeddingBag,
    Fold,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
    RReLU,
    Softmax2d,
    Softmin,
    Threshold,
    Unfold,
)
from gradcheck.ref.nn.margin_losses import (
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SoftMarginLoss,
    TripletMarginLoss,
)

__all__ = [
    "CELU", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d",
    "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "ConstantPad1d", "ConstantPad2d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "CrossEntropyLoss", "CTCLoss",
    "DataParallel",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "ELU", "Embedding", "Flatten", "GELU", "GRU", "GRUCell", "GroupNorm",
    "Hardsigmoid", "Hardswish", "Hardtanh", "HuberLoss", "Identity", "KLDivLoss", "L1Loss",
    "LSTM", "LSTMCell", "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid", "LogSoftmax",
    "MSELoss", "MaxPool1d", "MaxPool2d", "MaxPool3d", "Mish", "Module", "ModuleDict", "ModuleList",
    "MultiheadAttention",
    "NLLLoss", "PReLU", "Parameter", "PixelShuffle", "PixelUnshuffle", "ParameterDict", "ParameterList", "RNN", "RNNBase",
    "RNNCell", "ReLU", "ReLU6", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
    "ReplicationPad2d", "SELU", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax",
    "Softplus", "Softsign", "Tanh", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
    "ZeroPad1d", "ZeroPad2d", "functional", "init", "parallel", "utils",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "Bilinear", "CosineEmbeddingLoss",
    "CosineSimilarity", "EmbeddingBag", "Fold", "GLU", "GaussianNLLLoss", "HingeEmbeddingLoss",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyLinear", "LocalResponseNorm",
    "MarginRankingLoss", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "PairwiseDistance", "PoissonNLLLoss", "RReLU", "SoftMarginLoss",
    "Softmax2d", "Softmin", "SyncBatchNorm", "Threshold", "TripletMarginLoss", "Unfold",
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad3d", "ReflectionPad3d",
    "ReplicationPad3d", "ZeroPad3d", "Unflatten", "RMSNorm", "AdaptiveMaxPool3d",
]

from gradcheck.ref.nn.layers_extra import AdaptiveMaxPool3d  # noqa: E402
from gradcheck.ref.nn import attention  # noqa: E402,F401  (torch.nn.attention)
from gradcheck.ref.nn import grad  # noqa: E402,F401  (torch.nn.grad)
from gradcheck.ref.nn.cross_map_lrn import CrossMapLRN2d  # noqa: E402,F401
__all__.append("CrossMapLRN2d")
from gradcheck.ref.nn.ctc import CTCLoss  # noqa: E402,F401

from gradcheck.ref.nn import lazy  # noqa: E402
from gradcheck.ref.nn.lazy import LazyLinear  # noqa: E402
from gradcheck.ref.nn import modules  # noqa: E402,F401  (torch.nn.modules.*, built from the above)

from gradcheck.ref.nn import internals  # noqa: E402

internals.install()
