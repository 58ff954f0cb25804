"""Validation errors (422) that name the field and never echo what the client sent.

FastAPI's default answer repeats each bad value under `input`: a large body came back whole,
and a lone surrogate in a field name or value made the answer itself unencodable (a 500).
Here `input` is dropped and every string in `loc` and `ctx` is shortened and made encodable.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

MAX_ECHO_CHARS = 64
MAX_MESSAGE_CHARS = 400


def install_validation_errors(app: FastAPI) -> None:
    async def unprocessable(request: Request, exc: Exception) -> JSONResponse:
        errors = exc.errors() if isinstance(exc, RequestValidationError) else []
        return JSONResponse({"detail": [_summary(e) for e in errors]}, status_code=422)

    app.add_exception_handler(RequestValidationError, unprocessable)


def _summary(error: Any) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "type": safe_text(str(error.get("type", "value_error"))),
        "loc": [p if isinstance(p, int) else safe_text(str(p)) for p in error.get("loc", ())],
        # Messages come from the schema, not the input: shortened only as a backstop.
        "msg": safe_text(str(error.get("msg", "")), limit=MAX_MESSAGE_CHARS),
    }
    ctx = error.get("ctx")
    if ctx:
        summary["ctx"] = {safe_text(str(k)): _small(v) for k, v in ctx.items()}
    return summary


def _small(value: object) -> object:
    if isinstance(value, bool | int | float) or value is None:
        return value
    return safe_text(str(value))


def safe_text(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text` cut to `limit` characters, lone surrogates replaced, so it can be sent back."""
    short = text if len(text) <= limit else text[:limit] + "..."
    return short.encode("utf-8", "replace").decode("utf-8")
