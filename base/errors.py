"""One error type for bad input, so the CLI can print one line and exit non-zero."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input: names the file, row and id it concerns."""

    def __init__(self, message: str, *, file: str | None = None, row: int | None = None,
                 id: object | None = None):
        self.message, self.file, self.row, self.id = message, file, row, id
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.id is not None:
            where.append(f"id {self.id}")
        return (": ".join([", ".join(where), self.message]) if where else self.message)
