"""The application above the stages: the `bbsard-audit` command, the demo, the report, the cleaned
release and the campaign simulator. It may import every stage and the base; nothing imports it."""
