"""The README's commands are the ones CI runs, so a green CI means the README works."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ci_runs_exactly_the_readme_test_command():
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    test_command = ci_lines[-1].strip()
    assert "pytest" in test_command
    assert f"\n{test_command}\n" in (REPO / "README.md").read_text()


def test_cli_help_lists_stages_and_every_command_has_an_example():
    import typer.main
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app

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


def _readme_commands(text: str | None = None) -> list[tuple[str, list[str]]]:
    """Every `bbsard-audit ...` line of the README's bash blocks (or of `text`, part of it), shell
    variables expanded in order (continuations joined, comments dropped), as (line, argv)."""
    import re
    import shlex

    text = (REPO / "README.md").read_text() if text is None else text
    variables: dict[str, str] = {}
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m[1], m[0]), line), comments=True)
            if len(words) == 1 and re.fullmatch(r"[A-Z]+=.*", words[0]):
                name, _, value = words[0].partition("=")
                variables[name] = value
            elif words and words[0] in ("bbsard-audit", ".venv/bin/bbsard-audit"):
                commands.append((line, words[1:]))
    return commands


def test_every_readme_command_parses():
    """Each README command names existing subcommands and options with valid values (parsed by the
    CLI itself, nothing run): a renamed option cannot leave the walk-through broken."""
    import typer.main

    from bbsard_audit.app.cli import app

    root = typer.main.get_command(app)
    commands = _readme_commands()
    assert len(commands) > 20
    for line, argv in commands:
        command, rest = root, list(argv)
        while rest and rest[0] in getattr(command, "commands", {}):
            command = command.commands[rest.pop(0)]
        try:
            ctx = command.make_context(command.name, rest)
        except Exception as exc:  # typer's (vendored) click UsageError: bad option or value
            if not hasattr(exc, "format_message"):
                raise
            raise AssertionError(f"{line.strip()}: {exc.format_message()}") from None
        assert not ctx.args and not vars(ctx).get("_protected_args"), line


def test_walk_through_keeps_one_campaign_folder_and_an_active_venv():
    """The stage-by-stage walk-through runs as pasted after the install (the venv is activated) and
    every stage reads the campaign's verdicts from the folder `pull` writes them to."""
    import re

    text = (REPO / "README.md").read_text()
    walk = text[text.index("### A review campaign on the real data"):text.index("### Scoring recipe")]
    first = re.search(r"```bash\n(.*?)\n", walk)[1]
    assert first.startswith("source .venv/bin/activate")
    folders = set()
    for line, argv in _readme_commands():
        if line.strip() not in walk.replace("\\\n", " "):
            continue
        for option, value in zip(argv, argv[1:]):
            if option == "--verdicts" or (argv[:2] == ["annotate", "pull"] and option == "--out"):
                folders.add(value.rsplit("/", 1)[0])
    assert len(folders) == 1, folders


def test_audit_help_and_the_readme_describe_control_in_one_wording():
    """`audit --help` said "stratified random unflagged pairs"; the README (rightly) every other pair."""
    from typer.testing import CliRunner

    from bbsard_audit.app.cli import app
    from bbsard_audit.audit.options import CONTROL_HELP

    words = lambda text: " ".join(text.replace("#", " ").replace("│", " ").split())  # noqa: E731
    assert words(CONTROL_HELP) in words(CliRunner().invoke(app, ["audit", "--help"], terminal_width=400).output)
    assert words(CONTROL_HELP) in words((REPO / "README.md").read_text())
