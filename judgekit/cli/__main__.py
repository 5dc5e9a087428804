"""``python -m judgekit.cli``: the command line."""

from judgekit.cli.main import main

main()
