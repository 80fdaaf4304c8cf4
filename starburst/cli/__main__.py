"""``python -m starburst.cli``: the same entry point as the ``starburst`` command."""

from starburst.cli.main import main

main()
