"""`tiered-jobs local ...` commands (placeholder until local mode lands)."""

import typer

app = typer.Typer(help="Run the real stack on an embedded AWS (moto) on 127.0.0.1.", no_args_is_help=True)
