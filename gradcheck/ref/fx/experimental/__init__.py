"""``torch.fx.experimental``: the symbolic-shape helpers (``symbolic_shapes``) and their flags
(``_config``). The engine's shapes are always concrete, so the helpers see plain values."""
