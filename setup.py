"""Adds ``gradcheck-guard.pth`` to the wheel: with ``GRADCHECK_GUARD=1`` set, every Python process
of the environment guards its optimizers (``gradcheck.runtime.autostart``); unset, it costs one
environment lookup. Everything else is in pyproject.toml. An editable install has no .pth;
``gradcheck run`` reaches the processes it starts through ``PYTHONPATH`` instead."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH_NAME = "gradcheck-guard.pth"
PTH_LINE = (
    "import os; os.environ.get('GRADCHECK_GUARD', '0') not in ('', '0') and "
    "__import__('gradcheck.runtime.autostart', fromlist=['_']).start_at_interpreter_start()\n"
)


class BuildWithGuardPth(build_py):
    def run(self):
        super().run()
        self.mkpath(self.build_lib)
        with open(os.path.join(self.build_lib, PTH_NAME), "w", encoding="utf-8") as pth:
            pth.write(PTH_LINE)

    def get_outputs(self, include_bytecode=True):
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH_NAME)]


setup(cmdclass={"build_py": BuildWithGuardPth})
