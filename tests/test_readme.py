"""The README's commands are the ones CI runs, so a green CI means the README works."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ci_runs_exactly_the_readme_test_command():
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    test_command = ci_lines[-1].strip()
    assert "pytest" in test_command
    assert f"\n{test_command}\n" in (REPO / "README.md").read_text()


def test_cli_help_lists_stages_and_every_command_has_an_example():
    import typer.main
    from typer.testing import CliRunner

    from bbsard_audit.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["--help"])
    for stage in ("validate", "audit", "annotate", "eval", "report", "release", "demo"):
        assert stage in result.output

    def walk(command, path):
        sub = runner.invoke(app, [*path, "--help"])
        assert sub.exit_code == 0 and "Example" in sub.output, " ".join(path)
        for name, child in getattr(command, "commands", {}).items():
            walk(child, [*path, name])

    walk(typer.main.get_command(app), [])
