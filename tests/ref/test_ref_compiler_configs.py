"""``torch._inductor.config`` and ``torch._functorch.config`` against torch's: the same flags
with the same defaults, nested sections, ``patch`` and the error for an unknown flag; and
dynamo's backend registry and support check."""
from __future__ import annotations

import importlib

import pytest

import gradcheck.ref as ref

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor.config")


@pytest.mark.parametrize("name", ["_inductor.config", "_functorch.config"])
def test_every_flag_and_default_is_torchs(name):
    theirs = importlib.import_module(f"torch.{name}").get_config_copy()
    mine = importlib.import_module(f"gradcheck.ref.{name}").get_config_copy()
    assert mine.keys() == theirs.keys()
    # the CUTLASS source paths point into each package's own install
    paths = {"cuda.cutlass_dir", "cutlass.cutlass_dir"}
    assert {k: v for k, v in mine.items() if k not in paths} == \
        {k: v for k, v in theirs.items() if k not in paths}
    assert all(mine[k].endswith("cutlass") for k in paths & mine.keys())


@pytest.mark.parametrize("flag", ["coordinate_descent_tuning", "realize_opcount_threshold",
                                  "reorder_for_compute_comm_overlap_passes", "triton.cudagraphs",
                                  "cpp.threads", "max_autotune"])
def test_reading_and_patching_a_flag(flag):
    answers = []
    for module in (torch, ref):
        config = module._inductor.config
        section, _, leaf = flag.rpartition(".")
        owner = getattr(config, section) if section else config
        before = getattr(owner, leaf)
        with config.patch({flag: "patched"}):
            inside = getattr(owner, leaf)
        answers.append((before, inside, getattr(owner, leaf)))
    assert answers[0] == answers[1]


def test_unknown_flag_fails_as_in_torch():
    messages = []
    for module in (torch, ref):
        with pytest.raises(AttributeError) as error:
            module._inductor.config.no_such_flag  # noqa: B018
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_functorch_and_inductor_helpers():
    assert ref._functorch.config.cse is torch._functorch.config.cse
    assert ref._functorch.config.recompute_views is torch._functorch.config.recompute_views
    with ref._inductor.utils.fresh_inductor_cache():
        assert ref._inductor.cudagraph_mark_step_begin() is None


def test_dynamo_support_and_backend_registry():
    assert ref._dynamo.is_dynamo_supported() == torch._dynamo.is_dynamo_supported()
    assert ref._dynamo.eval_frame.is_dynamo_supported() is ref._dynamo.is_dynamo_supported()
    registry = importlib.import_module("gradcheck.ref._dynamo.backends.registry")

    @registry.register_backend(name="gradcheck_test_backend", tags=("debug",))
    def backend(graph, inputs):
        return graph

    assert "gradcheck_test_backend" not in ref.compiler.list_backends()
    assert "gradcheck_test_backend" in ref._dynamo.list_backends(exclude_tags=())
    with pytest.raises(AssertionError, match="duplicate name: gradcheck_test_backend"):
        registry.register_backend(backend, name="gradcheck_test_backend")
    with pytest.raises(AssertionError, match="compiler_fn must be callable"):
        registry.register_backend(3)
