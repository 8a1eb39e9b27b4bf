"""One exception hierarchy for prefcraft. Every message says what went wrong and what to do about it."""

from __future__ import annotations


def caused_by(error: BaseException | None, kinds: type[BaseException] | tuple[type[BaseException], ...]) -> bool:
    """Whether `error`, or an error that led to it (its cause or context, all the way down), is one of `kinds`."""
    while error is not None:
        if isinstance(error, kinds):
            return True
        error = error.__cause__ or error.__context__
    return False


class PrefcraftError(Exception):
    """Base class. `hint` tells the user what to do; `retryable` says whether trying again may help."""

    retryable = False

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(f"{message}\n  hint: {hint}" if hint else message)


class ConfigError(PrefcraftError):
    """A setting is missing, malformed or inconsistent."""


class DataError(PrefcraftError):
    """A data file has a row that does not match the expected schema."""

    def __init__(self, path: object, row: int | None, field: str | None, problem: str, hint: str | None = None):
        self.path, self.row, self.field, self.problem = str(path), row, field, problem
        where = self.path
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {problem}", hint)


class ServerError(PrefcraftError):
    """A model server could not be started or reached."""


class ServerStartError(ServerError):
    """A managed server process exited or did not become ready before its deadline."""


class ServerUnreachableError(ServerError):
    """Nothing answers at a model endpoint (or it stopped answering mid-run)."""

    retryable = True

    def __init__(self, endpoint: str, detail: str, hint: str | None = None, role: str | None = None):
        self.endpoint, self.role = endpoint, role
        flags = f"--{role}-api-base" if role else "--task-api-base (--judge-api-base, --prompt-api-base: whichever " \
            "model it serves)"
        super().__init__(
            f"model server at {endpoint} is unreachable{f' (it serves the {role} model)' if role else ''}: {detail}",
            hint or f"start it with `prefcraft serve`, or point {flags} at a running server, and try again",
        )


class CompileError(PrefcraftError):
    """An optimizer stopped before it produced a program."""


class CompiledProgramError(PrefcraftError):
    """A compiled program file is missing, unreadable or was compiled for another program."""
