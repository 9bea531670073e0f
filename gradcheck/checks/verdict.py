"""Why a check is inconclusive, in words: which input, why, and what to do.

A check is inconclusive when nothing was found wrong but some entries could not be judged:
their finite-difference error estimate stayed a visible part of their size at every step of
the ladder (ladder.py), their verdict changed between two steps that both resolved them, or
they are NaN because an input is NaN. Each such input gets one sentence.

>>> import numpy as np
>>> from gradcheck.checks import check_grad
>>> coarse = lambda x: np.sin(x).astype(np.float32).astype(np.float64)  # rounds inside
>>> r = check_grad(coarse, np.array([0.3, 1.1]), vjp=lambda g, x: (g * np.cos(x),),
...                raise_on_failure=False)
>>> r.verdict, r.inconclusive[0].split(":")[0]
('inconclusive', 'input')
"""
from __future__ import annotations

from gradcheck.checks.ladder import LADDER
from gradcheck.checks.result import GradcheckResult
from gradcheck.checks.target import Target


def inconclusive_reasons(result: GradcheckResult, target: Target) -> list[str]:
    """One sentence per input whose entries could not be judged (and one per block fast
    mode could not re-check)."""
    reasons = list(result.unchecked)
    for (out, inp), seen in result.unresolved.items():
        frozen = seen["frozen"]
        still = (f"; under the default step the outputs did not move at all for {frozen} "
                 "element(s) whose gradient is not zero" if frozen else "")
        reasons.append(
            f"{inp}: the finite differences cannot resolve {seen['entries']} entr"
            f"{'y' if seen['entries'] == 1 else 'ies'} of d {out} / d {inp} (error estimate "
            f"up to {seen['worst']:.2g} of their size at the best step from "
            f"{LADDER[0]:g} to {LADDER[-1]:g} times the default{still}). The function "
            "probably rounds inside (float32 arithmetic, torch.Tensor(...) or .float() on "
            "float64 input, a quantisation) or is noisy: evaluate it in float64 throughout, "
            "or pass a larger step such as eps=1e-3, or accept this resolution with "
            "atol=/rtol=")
    count = sum(result.nan_entries.values())
    if count:
        nan_inputs = "; ".join(
            f"{target.input_names[i]} has {len(where)} NaN element(s), the first at "
            f"{[int(v) for v in where[0]]}" for i, where in target.nan_elements.items())
        reasons.append(
            f"{nan_inputs}: {count} Jacobian entr{'y is' if count == 1 else 'ies are'} NaN "
            "because of it and were not compared; pass finite inputs to check them")
    return reasons
