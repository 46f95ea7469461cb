"""A cap on what one cell of a graded notebook may print (the sandbox's output limit): past
``Limits.output_bytes`` a cell's further outputs are dropped and one line says so. Kept apart
from the sandbox's jail so each module stays short."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmmath_course.instructor.sandbox import Limits


def _content_bytes(content: dict[str, Any]) -> int:
    """About how many bytes an output message carries (its text and its data's values)."""
    size = len(str(content.get("text", "")))
    for value in (content.get("data") or {}).values():
        size += len(value) if isinstance(value, str) else len(str(value))
    size += sum(len(line) for line in content.get("traceback") or [])
    return size


def capped_output(
    client: Any,
    output: Any,
    outs: list[Any],
    msg: dict[str, Any],
    display_id: Any,
    cell_index: int,
    limits: Limits,
) -> Any:
    """nbclient's ``output``, unless the cell already sent ``limits.output_bytes``: then the
    output is dropped and one line says so (once per cell)."""
    from nbformat.v4 import new_output

    sent = client._sent.get(cell_index, 0)
    size = _content_bytes(msg.get("content", {}))
    client._sent[cell_index] = sent + size
    if sent + size <= limits.output_bytes:
        return output(outs, msg, display_id, cell_index)
    if sent <= limits.output_bytes:  # the first output over the cap: say so
        note = new_output(
            "stream",
            name="stderr",
            text=f"\n[grader: output over {limits.output_bytes >> 10} KiB dropped]\n",
        )  # type: ignore[no-untyped-call]  # nbformat is untyped
        outs.append(note)
        return note
    return None
