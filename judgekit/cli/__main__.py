"""``python -m judgekit.cli``: the command line."""

from judgekit.cli.commands import main

main()
