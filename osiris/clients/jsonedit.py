"""Edit a JSON document in place, touching only the bytes of the values that change.

Client configuration files are the user's: ``~/.claude.json`` alone holds hundreds of
keys of Claude Code state, and a hand-written ``.mcp.json`` keeps its arrays on one
line. Re-serialising the whole document would reformat all of it, so
:class:`JsonDocument` splices text instead: a new member goes after the last one of
its object, written in the style of its siblings (their indentation, separators and
the file's indent unit); a deleted member takes its separator with it. Inserting and
then deleting the same member therefore gives back the original bytes.

Every edit is applied to the parsed data too, and :meth:`JsonDocument.verify` checks
that the spliced text parses to exactly that data, key order included: a splice that
went wrong raises instead of writing a damaged file.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from osiris.errors import ConfigError

Path_ = tuple[str | int, ...]
"""A location in the document: object keys and array indexes from the root."""

_WS = re.compile(r"[ \t\n\r]*")
_FIRST_INDENT = re.compile(r"\n([ \t]+)\S")
_BOM = "\ufeff"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class _Slot:
    """One member of an object (``key`` set) or item of an array, as text offsets."""

    key: str | None
    start: int  # the key's opening quote, or the item's first character
    key_end: int  # just past the key's closing quote (== start for items)
    value_start: int
    value_end: int


class JsonDocument:
    """A JSON text plus its parsed value, edited together."""

    def __init__(self, text: str, source: str = "the JSON document") -> None:
        """Parse ``text`` (:class:`json.JSONDecodeError` propagates for the caller to
        report); ``source`` names the file in errors."""
        self.source = source
        self._bom = _BOM if text.startswith(_BOM) else ""
        self.text = text[len(self._bom):]
        self.data: Any = json.loads(self.text)
        self._unit = _indent_unit(self.text)
        if self._unit is None and self.data in ({}, []):  # "{}" shows no style: the clients'
            self._unit = "  "
        self._newline = "\r\n" if "\r\n" in self.text else "\n"
        # Separators for one-line containers whose siblings show none (JSON.stringify
        # writes "," and ":", Python's json.dumps ", " and ": ").
        self._item_sep = "," if ",\"" in self.text and ", " not in self.text else ", "
        self._colon = ":" if "\":" in self.text and "\": " not in self.text else ": "

    def render(self) -> str:
        """The edited text, byte order mark included if the file had one."""
        return self._bom + self.text

    def get(self, path: Path_) -> Any:
        """The parsed value at ``path`` (KeyError/IndexError when absent)."""
        value = self.data
        for step in path:
            value = value[step]
        return value

    def set(self, path: Path_, value: Any) -> None:
        """Replace the value at ``path``, or add it as the last member of its object."""
        *parent_path, key = path
        parent = self.get(tuple(parent_path))
        start = self._locate(tuple(parent_path))
        if isinstance(key, int) or key in parent:
            slot = self._slot(start, key)
            base = _line_indent(self.text, slot.start)
            self._splice(slot.value_start, slot.value_end,
                         self._dump(value, base, self._key_sep(slot), multiline=None))
        else:
            self._insert(start, key, value)
        parent[key] = copy.deepcopy(value)

    def append(self, path: Path_, value: Any) -> None:
        """Append ``value`` to the array at ``path``."""
        array = self.get(path)
        self._insert(self._locate(path), None, value)
        array.append(copy.deepcopy(value))

    def delete(self, path: Path_) -> None:
        """Remove the member or item at ``path`` together with its separator."""
        *parent_path, key = path
        parent = self.get(tuple(parent_path))
        open_at = self._locate(tuple(parent_path))
        slots = self._slots(open_at)
        index = key if isinstance(key, int) else _last_index(slots, key)
        if len(slots) == 1:  # the container becomes empty: "{}" / "[]" as json.dumps has it
            close = self._close(open_at, slots)
            self._splice(open_at + 1, close, "")
        elif index == len(slots) - 1:  # the last one: from the end of the one before it
            self._splice(slots[index - 1].value_end, slots[index].value_end, "")
        else:  # up to the next one, leaving the whitespace before this one in place
            self._splice(slots[index].start, slots[index + 1].start, "")
        del parent[key]

    def verify(self) -> None:
        """Check that the text parses to the data, key order included (ConfigError if not:
        the edit is abandoned and nothing is written)."""
        try:
            same = json.dumps(json.loads(self.text)) == json.dumps(self.data)
        except json.JSONDecodeError:
            same = False
        if not same:
            raise ConfigError(f"could not edit {self.source} without touching other settings "
                              "(duplicate keys?); make the change by hand (`osiris "
                              "install CLIENT --dry-run` shows it). Nothing was changed.")

    # -- text offsets ---------------------------------------------------------------

    def _locate(self, path: Path_) -> int:
        """Offset of the first character of the value at ``path``."""
        at = _skip(self.text, 0)
        for step in path:
            at = self._slot(at, step).value_start
        return at

    def _slot(self, open_at: int, step: str | int) -> _Slot:
        slots = self._slots(open_at)
        return slots[step if isinstance(step, int) else _last_index(slots, step)]

    def _slots(self, open_at: int) -> list[_Slot]:
        text = self.text
        is_object = text[open_at] == "{"
        closer = "}" if is_object else "]"
        out: list[_Slot] = []
        at = _skip(text, open_at + 1)
        if text[at] == closer:
            return out
        while True:
            start = key_end = at
            key: str | None = None
            if is_object:
                key, key_end = scanstring(text, at + 1)
                at = _skip(text, _skip(text, key_end) + 1)  # past the colon
            _, end = _DECODER.raw_decode(text, at)
            out.append(_Slot(key, start, key_end, at, end))
            at = _skip(text, end)
            if text[at] == closer:
                return out
            at = _skip(text, at + 1)  # past the comma

    def _close(self, open_at: int, slots: list[_Slot]) -> int:
        return _skip(self.text, slots[-1].value_end if slots else open_at + 1)

    def _key_sep(self, slot: _Slot) -> str:
        return self.text[slot.key_end:slot.value_start] if slot.key is not None else self._colon

    def _insert(self, open_at: int, key: str | None, value: Any) -> None:
        slots = self._slots(open_at)
        if not slots:
            container: Any = {key: value} if key is not None else [value]
            base = _line_indent(self.text, open_at)
            close = self._close(open_at, slots)
            self._splice(open_at, close + 1, self._dump(container, base, self._colon,
                                                        multiline=self._unit is not None))
            return
        last = slots[-1]
        before = slots[-2].value_end if len(slots) > 1 else open_at + 1
        # The separator of the last sibling, comma included: ",\n    " or ", ".
        sep = self.text[before:last.start]
        if not sep.startswith(","):  # the only sibling: what follows the bracket
            sep = "," + sep if "\n" in sep else self._item_sep
        multiline = "\n" in sep
        indent = sep.rsplit("\n", 1)[-1] if multiline else ""
        key_sep = self._key_sep(last) if key is not None else self._colon
        member = self._dump(value, indent, key_sep, multiline=multiline,
                            item_sep=None if multiline else sep)
        if key is not None:
            member = json.dumps(key, ensure_ascii=False) + key_sep + member
        self._splice(last.value_end, last.value_end, sep + member)

    def _dump(self, value: Any, base: str, key_sep: str, *, multiline: bool | None,
              item_sep: str | None = None) -> str:
        if multiline is None:
            multiline = self._unit is not None
        if not multiline:
            return json.dumps(value, ensure_ascii=False,
                              separators=(item_sep or self._item_sep, key_sep))
        text = json.dumps(value, ensure_ascii=False, indent=self._unit or "  ",
                          separators=(",", key_sep))
        return text.replace("\n", self._newline + base)

    def _splice(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]


def _skip(text: str, at: int) -> int:
    return _WS.match(text, at).end()  # type: ignore[union-attr]


def _last_index(slots: list[_Slot], key: str | int) -> int:
    # json.loads keeps the last of duplicate keys; edit that one.
    for index in range(len(slots) - 1, -1, -1):
        if slots[index].key == key:
            return index
    raise KeyError(key)


def _indent_unit(text: str) -> str | None:
    """The file's indentation step (the first indented line's), None for one-line JSON."""
    found = _FIRST_INDENT.search(text)
    return found.group(1) if found else None


def _line_indent(text: str, at: int) -> str:
    line_start = text.rfind("\n", 0, at) + 1
    line = text[line_start:at]
    return line[:len(line) - len(line.lstrip(" \t"))]


def dumps_new(data: Any) -> str:
    """A new file's text: two-space indent and a final newline, like the clients write."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
