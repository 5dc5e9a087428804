"""The command line: ``judgekit`` (:mod:`judgekit.cli.commands`), its labelling
commands (:mod:`judgekit.cli.label`) and its table commands (:mod:`judgekit.cli.tables`).
Every command wraps a Python function; none holds logic of its own."""

__all__ = ["app", "main"]


def main() -> None:
    """The console script's entry point."""
    from judgekit.cli.commands import main as run

    run()


def __getattr__(name: str) -> object:
    if name == "app":  # the Typer application (lazy: importing judgekit.cli is cheap)
        from judgekit.cli.commands import app

        return app
    if name == "click_app":  # the same commands as a Click group (the docs' CLI reference)
        import typer

        from judgekit.cli.commands import app as typer_app

        return typer.main.get_command(typer_app)
    raise AttributeError(f"module 'judgekit.cli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
