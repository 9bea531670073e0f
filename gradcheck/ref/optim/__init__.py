"""`gradcheck.ref.optim`: torch's optimizers and LR schedulers, as readable for-loops."""
from gradcheck.ref.optim import lr_scheduler
from gradcheck.ref.optim.adagrad import Adagrad
from gradcheck.ref.optim.adam import Adam, AdamW
from gradcheck.ref.optim.adaptive import Adadelta, NAdam, RAdam
from gradcheck.ref.optim.averaged import ASGD, Adamax, SparseAdam
from gradcheck.ref.optim.lbfgs import LBFGS
from gradcheck.ref.optim.optimizer import Optimizer
from gradcheck.ref.optim.rmsprop import RMSprop
from gradcheck.ref.optim.rprop import Rprop
from gradcheck.ref.optim.sgd import SGD

__all__ = ["ASGD", "LBFGS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "SparseAdam", "lr_scheduler", "swa_utils"]

from gradcheck.ref.optim import swa_utils  # noqa: E402

# torch's per-optimizer module names (``torch.optim.adamw.AdamW``, ``torch.optim.sgd.SGD``)
from gradcheck.ref.optim import adam, sgd  # noqa: E402,F401

adamw = adam

from gradcheck.ref.optim import _multi_tensor, rprop  # noqa: E402,F401
from gradcheck.ref.optim import _functional  # noqa: E402,F401
