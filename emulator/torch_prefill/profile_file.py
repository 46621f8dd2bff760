"""The profile TOML every measured profile is written as (tomlkit, torch-free).

One writer for `profile --import` and `profile --backend torch --config`, so both files carry
the same [profile] keys the preset loader reads (name, description, source, prefill_time,
kv_size), and what was measured, on what and how in [profile.measured]. tomlkit escapes any
Unicode as TOML allows (json.dumps would write surrogate pairs).
"""

from __future__ import annotations

from collections.abc import Sequence


def profile_toml(comment: str, name: str, description: str, source: str | None,
                 lengths: Sequence[int], seconds: Sequence[float], sizes: Sequence[float], *,
                 upper_bound: str = "", measured: dict | None = None) -> str:
    """A [profile] document; `upper_bound` (why the times are upper bounds) adds
    upper_bound = true and its reason."""
    import tomlkit

    doc = tomlkit.document()
    doc.add(tomlkit.comment(comment))
    prof = tomlkit.table()
    prof["name"] = name
    prof["description"] = description
    if source:
        prof["source"] = source
    if upper_bound:
        prof["upper_bound"] = True
        prof["upper_bound_reason"] = upper_bound
    prof["prefill_time"] = tomlkit.inline_table()
    prof["prefill_time"].update({"lengths": list(lengths), "seconds": [float(s) for s in seconds]})
    prof["kv_size"] = tomlkit.inline_table()
    prof["kv_size"].update({"lengths": list(lengths), "bytes": list(sizes)})
    if measured:
        table = tomlkit.table()
        table.update(measured)
        prof["measured"] = table
    doc["profile"] = prof
    return tomlkit.dumps(doc)
