"""`python -m bbsard_audit.app.cli`: the `bbsard-audit` command without the installed script."""

from . import main

main()
