"""``torch.distributed.device_mesh``: ranks laid out on a named grid. The engine's world is
one process, so every mesh has one rank on each dimension (shape ``(1,)``, ``(1, 1)``, ...);
each dimension's group is the default group, as torch gives for a world of one.

>>> import gradcheck.ref as torch
>>> mesh = torch.distributed.device_mesh.init_device_mesh("cpu", (1, 1),
...                                                       mesh_dim_names=("dp", "tp"))
>>> mesh["tp"], mesh.get_coordinate()
(DeviceMesh((tp=1), 'cpu', stride=((),)), (0, 0))
>>> torch.distributed.destroy_process_group()
"""
from __future__ import annotations

import math
from typing import Any

from gradcheck.ref import distributed as dist


class DeviceMesh:
    """A grid of ranks with optional dimension names."""

    def __init__(self, device_type: str, mesh: Any, *, mesh_dim_names: tuple | None = None,
                 backend_override: Any = None, _init_backend: bool = True) -> None:
        from gradcheck import ref

        self.device_type = device_type
        self.mesh = ref.as_tensor(mesh).to(ref.int32) if not isinstance(
            mesh, ref.Tensor) else mesh.to(ref.int32)
        self.mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names else None
        if self.mesh.numel() > 1 or self.mesh.flatten().tolist() not in ([0], []):
            raise RuntimeError(f"Mesh should not be bigger than default world size 1, but "
                               f"found {self.mesh.numel()} ranks!")
        if _init_backend and not dist.is_initialized():
            dist.init_process_group(dist.get_default_backend_for_device(device_type))

    @property
    def ndim(self) -> int:
        return self.mesh.dim()

    @property
    def shape(self) -> tuple:
        return tuple(self.mesh.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        return self.mesh.numel() if mesh_dim is None else self.mesh.shape[mesh_dim]

    def get_rank(self) -> int:
        return dist.get_rank()

    def _need_dim(self, mesh_dim: Any, what: tuple) -> None:
        if mesh_dim is None and self.ndim > 1:
            raise RuntimeError((f"Found the DeviceMesh have {self.ndim} dimensions",
                                "Optional kwarg `mesh_dim` needs to be specified when "
                                "device_mesh.ndim > 1.") + what)

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        self._need_dim(mesh_dim, ())
        return 0

    def get_group(self, mesh_dim: int | str | None = None) -> Any:
        self._need_dim(mesh_dim, ("If you want to get the list of all the ProcessGroups in "
                                  "the DeviceMesh,please use `get_all_groups()` instead.",))
        return dist.group.WORLD

    def get_all_groups(self) -> list:
        return [dist.group.WORLD] * self.ndim

    def get_coordinate(self) -> tuple:
        return (0,) * self.ndim

    def __getitem__(self, names: str | tuple) -> DeviceMesh:
        wanted = (names,) if isinstance(names, str) else tuple(names)
        if not self.mesh_dim_names or any(n not in self.mesh_dim_names for n in wanted):
            raise KeyError(f"Invalid mesh_dim_names {wanted} specified. Valid mesh_dim_names "
                           f"are {self.mesh_dim_names}.")
        return DeviceMesh(self.device_type, self.mesh.reshape([1] * len(wanted)),
                          mesh_dim_names=wanted, _init_backend=False)

    def __repr__(self) -> str:
        stride = "(" + ", ".join("()" for _ in range(self.ndim)) + ("," if self.ndim == 1
                                                                      else "") + ")"
        if self.mesh_dim_names:
            layout = "(" + ", ".join(f"{n}={s}" for n, s in zip(self.mesh_dim_names,
                                                                 self.shape)) + ")"
        else:
            layout = str(self.shape)
        return f"DeviceMesh({layout}, '{self.device_type}', stride={stride})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DeviceMesh) and self.shape == other.shape
                and self.device_type == other.device_type
                and self.mesh_dim_names == other.mesh_dim_names)

    def __hash__(self) -> int:
        return hash((self.shape, self.device_type, self.mesh_dim_names))


def init_device_mesh(device_type: str, mesh_shape: tuple, *,
                     mesh_dim_names: tuple | None = None, backend_override: Any = None
                     ) -> DeviceMesh:
    """A mesh of ``mesh_shape`` over the world, starting the default group if needed."""
    if mesh_dim_names is not None and len(mesh_dim_names) != len(mesh_shape):
        raise RuntimeError("mesh_shape and mesh_dim_names should have same length!")
    size = math.prod(mesh_shape)
    if size != 1:
        raise RuntimeError(f"Mesh should not be bigger than default world size 1, but found "
                           f"{size} ranks!")
    from gradcheck import ref

    return DeviceMesh(device_type, ref.zeros(mesh_shape, dtype=ref.int32),
                      mesh_dim_names=mesh_dim_names)
