"""The CPU work of an observed payload: scrub it, count it, pick its engagement mode and
make the preview that mode wants.

It is done outside the store's turn: by the engine just before the call's transaction
(:func:`osiris.engine.payloads.prepared`), or by a client of the home's store owner in
its own process (:class:`osiris.engine.remote.RemoteEngine`), which hands the result over
with the scrubbed text (:func:`to_wire`). The owner is one process for every agent of the
home, bound to one core by Python's lock, while its clients wait idle: work they do is
work the owner does not. The owner takes a handed result only when it was made by the
same OSIRIS, with the same secret rules and token encoding, for exactly the text it came
with (:func:`from_wire`); otherwise it does the work itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from osiris.core.engagement import Thresholds, choose_engagement
from osiris.core.hashing import sha256_hex
from osiris.core.preview import Preview, make_preview
from osiris.core.redaction import Finding, ScrubResult, scrub
from osiris.core.tokens import TokenCounter

WIRE_VERSION = 1


@dataclass(frozen=True)
class PayloadWork:
    """What :func:`payload_work` found for one payload."""

    scrubbed: ScrubResult
    tokens: int
    preview_key: tuple[Any, ...] | None
    """(preview budget, kind, path) the preview was made for; None: no preview."""
    preview: Preview | None


def path_in_args(args: dict[str, Any]) -> str | None:
    """A file path among a tool's arguments (Read's file_path, an editor's path)."""
    for key in ("file_path", "path", "filename", "notebook_path"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def payload_work(scrubbed: ScrubResult, *, kind: str, path: str | None,
                 thresholds: Thresholds, counter: TokenCounter,
                 fixed_mode: str | None = None) -> PayloadWork:
    """Count ``scrubbed`` and make the preview its engagement mode wants."""
    tokens = counter.count(scrubbed.text)
    engagement = choose_engagement(tokens, thresholds, fixed_mode)
    key = preview = None
    if engagement.externalized:
        key = (engagement.preview_tokens, kind, path)
        preview = make_preview(scrubbed.text, budget_tokens=engagement.preview_tokens,
                               counter=counter, kind=kind, path=path)
    return PayloadWork(scrubbed, tokens, key, preview)


def client_work(text: str, *, kind: str, args: object, thresholds: Thresholds,
                counter: TokenCounter) -> PayloadWork:
    """A client's work on a payload it is about to hand to the owner."""
    path = path_in_args(args) if isinstance(args, dict) else None
    return payload_work(scrub(text), kind=kind, path=path, thresholds=thresholds,
                        counter=counter)


def to_wire(work: PayloadWork, version: str, encoding: str) -> dict[str, Any]:
    """``work`` as JSON values, sent beside its scrubbed text."""
    return {"wire": WIRE_VERSION, "version": version, "encoding": encoding,
            "rules": work.scrubbed.rules_version, "digest": sha256_hex(work.scrubbed.text),
            "findings": [[f.rule_id, f.kind, f.start, f.end, f.marker]
                         for f in work.scrubbed.findings],
            "tokens": work.tokens,
            "preview_key": list(work.preview_key) if work.preview_key else None,
            "preview": None if work.preview is None else [
                work.preview.text, work.preview.strategy, work.preview.lines_total,
                work.preview.tokens]}


def from_wire(doc: object, text: str, *, version: str, rules_version: str,
              encoding: str) -> PayloadWork | None:
    """The work a client handed over for ``text`` (its scrubbed text), or None when it
    cannot be taken as is: made by another OSIRIS, other rules or another encoding, for
    another text, or malformed."""
    if not isinstance(doc, dict) or doc.get("wire") != WIRE_VERSION \
            or doc.get("version") != version or doc.get("rules") != rules_version \
            or doc.get("encoding") != encoding or doc.get("digest") != sha256_hex(text):
        return None
    try:
        findings = tuple(Finding(str(r), str(k), int(s), int(e), str(m))
                         for r, k, s, e, m in doc.get("findings") or ())
        key = doc.get("preview_key")
        raw = doc.get("preview")
        preview = None if raw is None else Preview(str(raw[0]), str(raw[1]), int(raw[2]),
                                                   int(raw[3]))
        tokens = int(doc["tokens"])
    except (KeyError, TypeError, ValueError):
        return None
    if tokens < 0 or (key is not None and not isinstance(key, list)):
        return None
    return PayloadWork(ScrubResult(text=text, findings=findings, rules_version=rules_version),
                       tokens, tuple(key) if key else None, preview)
