"""``python -m gradcheck`` is the ``gradcheck`` command."""
from gradcheck.cli import main

main(prog_name="gradcheck")
