"""``torch.distributed.constants``: the default timeout of a process group's collectives."""
import datetime

default_pg_timeout = datetime.timedelta(minutes=30)
default_pg_nccl_timeout = default_pg_timeout
